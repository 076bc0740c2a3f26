//! A generated file and the one JSON rendering every generated file uses.
//!
//! A leaf module: the result, schema and audit writers and the command output all
//! produce [`GeneratedFile`]s or JSON through [`to_json`], and none of them is needed
//! here, so no module cycle runs through it.

use serde::Serialize;

/// A generated file not rendered yet (the type `kvlower-audit` hands its results
/// in): `check` streams it into its comparison with the committed file, and
/// renders it whole only when that comparison fails.
pub use kvlower_audit::LazyFile;
/// Streams a Markdown writer (into a `fmt::Write`) into an `io::Write`.
pub use kvlower_audit::write_text;

/// One file the repository commits and `kvlower matrix` regenerates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Relative to the repository root.
    pub path: &'static str,
    pub contents: String,
}

impl GeneratedFile {
    /// `file` rendered whole (what `kvlower matrix` writes).
    pub fn of(file: &LazyFile<'_>) -> GeneratedFile {
        GeneratedFile {
            path: file.path,
            contents: file.render(),
        }
    }
}

/// [`to_json`]'s bytes written into `w` as they are produced (the same
/// serializer, so the same bytes), never held whole.
pub fn write_json<T: Serialize>(value: &T, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, value)?;
    w.write_all(b"\n")
}

/// Pretty JSON with a trailing newline; serialization of these plain structs cannot fail.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
