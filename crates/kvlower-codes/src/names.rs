//! The `names!` macro: every closed vocabulary of kvlower (the model's names, the
//! diagnostic codes, the trace gate's requirements, the join's reasons, ...) is declared
//! with it. It lives here, in the leaf crate, so that the codes need nothing else and the
//! model (`kvlower-core`) takes it from here.

/// Declares a closed enum together with its one name table.
///
/// Every variant is written once with its name (`Variant = "name"`), and
/// everything that spells a variant derives from that line: `name()`, `Display`, `from_name()`, `ALL` in declaration order,
/// `COUNT`, `index()`, and a `#[serde(rename)]` on each variant so that serde
/// reads and writes the same names. The caller writes its own derives and
/// must derive `serde::Serialize` or `Deserialize` (the rename is a serde
/// attribute); any serde container attribute (`tag = ...`) it adds applies.
///
/// Variants may carry fields (`Variant { field: Type } = "name"`, as in a
/// tagged enum whose tag is the name); such an enum gets `as_str()` and
/// `Display` only, since it has no list of values.
///
/// Every closed vocabulary of kvlower is declared with it, and with nothing
/// else: the model's names here and the anchor kinds, the trace gate's
/// requirements and controls, the join's preconditions and reasons, the
/// diagnostic codes and the audit's mutation kinds and outcomes. Each caller
/// writes its derives in plain sight, so what a name type can do is read at
/// its declaration.
#[macro_export]
macro_rules! names {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name { $( $(#[$vmeta])* #[serde(rename = $text)] $variant ),+ }

        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// How many variants there are (the length of [`Self::ALL`]).
            pub const COUNT: usize = Self::ALL.len();

            /// The variant's position in [`Self::ALL`], always below [`Self::COUNT`]:
            /// a table indexed by it has an entry for every variant.
            pub const fn index(self) -> usize {
                self as usize
            }

            /// The variant's name, as read and written everywhere.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The variant with exactly this name.
            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($text => Some($name::$variant),)+ _ => None }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident $({ $( $(#[$fmeta:meta])* $field:ident : $fty:ty ),* $(,)? })? = $text:literal
            ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $(
                $(#[$vmeta])*
                #[serde(rename = $text)]
                $variant $({ $( $(#[$fmeta])* $field : $fty ),* })?
            ),+
        }

        impl $name {
            /// The variant's name (its serde tag), as read and written everywhere.
            pub fn as_str(&self) -> &'static str {
                match self { $($name::$variant { .. } => $text),+ }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
