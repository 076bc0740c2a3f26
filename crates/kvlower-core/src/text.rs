//! What counts as "written" in a descriptor field.
//!
//! Why: `str::trim` keeps zero-width and other invisible characters, so a
//! `note` of U+200B alone looked written and anchored evidence. A field is
//! blank unless it has a character a reader can see: one that is neither
//! white space, default-ignorable, a control nor a format character by the
//! Unicode data ([`BLANK`]).

/// Every character that writes nothing a reader can see, as sorted, disjoint,
/// non-adjacent inclusive ranges: the union of the Unicode 16.0 properties
/// `White_Space` and `Default_Ignorable_Code_Point` and the general categories
/// `Cc` (control) and `Cf` (format: it adds the interlinear annotation characters
/// U+FFF9–U+FFFB, the prepended concatenation marks and the Egyptian hieroglyph
/// format controls, which `Default_Ignorable_Code_Point` leaves out), and
/// U+2800 BRAILLE PATTERN BLANK.
///
/// Generated from the Unicode Character Database as `regex-syntax` ships it
/// (its tables are `ucd-generate` output); the test
/// `the_blank_table_is_the_unicode_data` rebuilds it from
/// `[\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\x{2800}]` and
/// prints the table to paste when it differs (a newer Unicode version).
pub const BLANK: &[(char, char)] = &[
    ('\u{0}', '\u{20}'),
    ('\u{7F}', '\u{A0}'),
    ('\u{AD}', '\u{AD}'),
    ('\u{34F}', '\u{34F}'),
    ('\u{600}', '\u{605}'),
    ('\u{61C}', '\u{61C}'),
    ('\u{6DD}', '\u{6DD}'),
    ('\u{70F}', '\u{70F}'),
    ('\u{890}', '\u{891}'),
    ('\u{8E2}', '\u{8E2}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{1680}', '\u{1680}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{2000}', '\u{200F}'),
    ('\u{2028}', '\u{202F}'),
    ('\u{205F}', '\u{206F}'),
    ('\u{2800}', '\u{2800}'),
    ('\u{3000}', '\u{3000}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// True when `c` is in [`BLANK`].
pub fn is_blank_char(c: char) -> bool {
    BLANK
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// True when `s` has at least one visible character: one not in [`BLANK`].
pub fn has_visible(s: &str) -> bool {
    s.chars().any(|c| !is_blank_char(c))
}

/// True when `s` holds a control character (newlines and tabs included): not
/// allowed in names, versions, paths, commits, URLs or dates.
pub fn has_control(s: &str) -> bool {
    s.chars()
        .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_only_is_blank() {
        for s in [
            "",
            " ",
            "\u{200B}",
            "\u{FEFF}",
            "\u{2060}",
            "\u{00A0}",
            "\u{200B}\u{00A0} \t",
            "\u{3164}",
        ] {
            assert!(!has_visible(s), "{s:?} should be blank");
        }
        assert!(has_visible("\u{200B}a"));
        assert!(has_visible("§4"));
    }

    /// Issue 34, item 2: the shorthand format controls (U+1BCA0–U+1BCA3,
    /// default-ignorable) and the interlinear annotation characters
    /// (U+FFF9–U+FFFB, format) were missing from the hand list, so a reason made
    /// only of them counted as written.
    #[test]
    fn format_and_default_ignorable_characters_outside_the_old_hand_list_are_blank() {
        for s in [
            "\u{1BCA0}\u{1BCA1}\u{1BCA2}\u{1BCA3}",
            "\u{FFF9}\u{FFFA}\u{FFFB}",
            "\u{FFF9} \u{1BCA0}\u{200B}",
            "\u{13430}",
            "\u{0600}",
            "\u{E0001}\u{E007F}",
            "\u{2800}",
        ] {
            assert!(!has_visible(s), "{s:?} should be blank");
        }
    }

    /// Every character of every plane: in [`BLANK`] exactly when it is White_Space,
    /// Default_Ignorable_Code_Point, Cc, Cf or U+2800 by the Unicode data that
    /// `regex-syntax` ships; `char::is_whitespace` (White_Space by the standard
    /// library's own Unicode data) and `char::is_control` agree.
    #[test]
    fn the_blank_table_is_the_unicode_data() {
        use regex_syntax::hir::{Class, HirKind};
        let hir = regex_syntax::parse(
            r"[\p{White_Space}\p{Default_Ignorable_Code_Point}\p{Cc}\p{Cf}\x{2800}]",
        )
        .expect("a valid class");
        let HirKind::Class(Class::Unicode(class)) = hir.kind() else {
            panic!("not a Unicode class: {hir:?}");
        };
        let expected: Vec<(char, char)> = class
            .ranges()
            .iter()
            .map(|r| (r.start(), r.end()))
            .collect();
        let table: String = expected
            .iter()
            .map(|(a, b)| {
                format!(
                    "    ('\\u{{{:X}}}', '\\u{{{:X}}}'),\n",
                    *a as u32, *b as u32
                )
            })
            .collect();
        assert_eq!(BLANK, expected.as_slice(), "paste as BLANK:\n{table}");
        for c in (0..=0x10_FFFF).filter_map(char::from_u32) {
            let listed = expected.iter().any(|&(a, b)| a <= c && c <= b);
            assert_eq!(is_blank_char(c), listed, "U+{:04X}", c as u32);
            if c.is_whitespace() || c.is_control() {
                assert!(listed, "U+{:04X}", c as u32);
            }
        }
    }

    #[test]
    fn control_characters_are_found() {
        assert!(has_control("a\nb"));
        assert!(has_control("a\u{1b}[31m"));
        assert!(!has_control("owner/name"));
    }
}
