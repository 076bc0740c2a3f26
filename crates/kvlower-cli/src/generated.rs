//! A generated file and the one JSON rendering every generated file uses.
//!
//! A leaf module: the result, schema and audit writers and the command output all
//! produce [`GeneratedFile`]s or JSON through [`to_json`], and none of them is needed
//! here, so no module cycle runs through it.

use serde::Serialize;

/// One file the repository commits and `kvlower matrix` regenerates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedFile {
    /// Relative to the repository root.
    pub path: &'static str,
    pub contents: String,
}

/// Pretty JSON with a trailing newline; serialization of these plain structs cannot fail.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}
