//! A generated file and the one JSON rendering every generated file uses.
//!
//! A leaf module: the result, schema and audit writers and the command output all
//! produce [`GeneratedFile`]s or JSON through [`to_json`], and none of them is needed
//! here, so no module cycle runs through it.

/// A generated file not rendered yet (the type `kvlower-audit` hands its results
/// in): `check` streams it into its comparison with the committed file, and
/// renders it whole only when that comparison fails.
pub use kvlower_audit::LazyFile;
/// Streams a Markdown writer (into a `fmt::Write`) into an `io::Write`.
pub use kvlower_audit::write_text;
/// The one JSON rendering of every generated file (pretty, a trailing newline),
/// whole or streamed: the audit's results and the CLI's files share it.
pub use kvlower_audit::{to_json, write_json};

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
