//! Small rendering helpers shared by the suites' Markdown and JSON outputs.
//!
//! Outputs are pure functions of their inputs: pretty JSON with a trailing
//! newline, no timestamps, no absolute paths.

use kvlower_core::Obligation;
use serde::Serialize;

/// Pretty JSON with a trailing newline. Serializing these plain structs cannot
/// fail; if it ever did, the error is written into the file (and so shows up as
/// a stale result) rather than panicking.
pub fn to_json<T: Serialize>(value: &T) -> String {
    let mut s =
        serde_json::to_string_pretty(value).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

/// Obligation codes (`I`, `Pr`, …) in the order given.
pub fn codes(obligations: impl IntoIterator<Item = Obligation>) -> Vec<&'static str> {
    obligations.into_iter().map(Obligation::code).collect()
}

/// Escapes a value for a Markdown table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
