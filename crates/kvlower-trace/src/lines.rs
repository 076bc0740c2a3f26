//! The trace gate's caps on what it reads; the reading itself is the one line
//! reader, [`kvlower_fs::line_reader`], which the join shares.

/// The longest line the gate reads (16 MiB); a longer one is skipped and reported, so a
/// corrupt trace cannot make the reader allocate without bound.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes the gate reads from one trace by default (4 GiB): a trace streamed from
/// a pipe, or a file that keeps growing, cannot keep the gate reading forever.
pub const MAX_TRACE_BYTES: u64 = 4 << 30;

/// `bytes` without the JSON whitespace (RFC 8259 §2: space, tab, line feed, carriage
/// return) at either end: what a trace line is trimmed by before it is parsed, so a line
/// of only that whitespace is blank. `trim_ascii` would also take a form feed, which
/// JSON does not allow around a value (nor does serde_json or Python's `json`).
pub(crate) fn trim_json_whitespace(bytes: &[u8]) -> &[u8] {
    let ws = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = bytes.iter().position(|b| !ws(b)).unwrap_or(bytes.len());
    let end = bytes.iter().rposition(|b| !ws(b)).map_or(start, |i| i + 1);
    bytes.get(start..end).unwrap_or_default()
}
