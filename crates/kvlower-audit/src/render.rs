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

/// [`to_json`]'s bytes written into `w` as they are produced, never held whole:
/// `kvlower check` streams a result this way into its comparison with the
/// committed file (the mutation controls are ~17 MB of JSON at 2,000
/// descriptors). The same serializer as [`to_json`], so the same bytes.
pub fn write_json<T: Serialize>(value: &T, w: &mut dyn std::io::Write) -> std::io::Result<()> {
    serde_json::to_writer_pretty(&mut *w, value)?;
    w.write_all(b"\n")
}

/// Runs a Markdown writer (which formats into a [`std::fmt::Write`]) into an
/// [`std::io::Write`], so that the same code renders a `String` for `kvlower
/// matrix` and streams into `kvlower check`'s comparison. The writer's first
/// I/O error (a byte that differs, for the comparison) is returned as is.
pub fn write_text(
    w: &mut dyn std::io::Write,
    render: impl FnOnce(&mut dyn std::fmt::Write) -> std::fmt::Result,
) -> std::io::Result<()> {
    /// Keeps the I/O error that `fmt::Write` cannot carry.
    struct Adapter<'w> {
        inner: &'w mut dyn std::io::Write,
        error: Option<std::io::Error>,
    }
    impl std::fmt::Write for Adapter<'_> {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.inner.write_all(s.as_bytes()).map_err(|e| {
                self.error = Some(e);
                std::fmt::Error
            })
        }
    }
    let mut adapter = Adapter {
        inner: w,
        error: None,
    };
    match (render(&mut adapter), adapter.error) {
        (_, Some(e)) => Err(e),
        (Ok(()), None) => Ok(()),
        (Err(std::fmt::Error), None) => Err(std::io::Error::other("formatting failed")),
    }
}

/// Obligation codes (`I`, `Pr`, …) in the order given.
pub fn codes(obligations: impl IntoIterator<Item = Obligation>) -> Vec<&'static str> {
    obligations.into_iter().map(Obligation::code).collect()
}

/// Escapes a value for a Markdown table cell.
pub fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
