//! One trace line parsed into a [`RawEvent`], or what is wrong with it, with serde_json's
//! acceptance and messages (the evaluator judges what this gives it).

use crate::event::{InPlace, RawEvent};
use crate::problem::Problem;

/// One line, parsed.
// Nearly every line is an event, so boxing it would only add an allocation per line.
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every line is an event, so boxing it would add an allocation per line"
)]
pub(crate) enum Parsed<'b> {
    Blank,
    Event(RawEvent<'b>),
    Problem(LineProblem),
}

/// What is wrong with a line, and where when the parser can tell: `at` is the 0-based
/// offset of the offending byte in the trimmed line (the first invalid UTF-8 byte, the
/// byte serde_json stopped at, the first byte of a line that is not an object). The
/// evaluator adds the whitespace trimmed before it, to give the column in the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LineProblem {
    pub(crate) problem: Problem,
    pub(crate) at: Option<usize>,
}

impl LineProblem {
    fn at(problem: Problem, at: usize) -> LineProblem {
        LineProblem {
            problem,
            at: Some(at),
        }
    }

    /// A problem of serde_json's, at the byte its (1-based) column names, if any.
    fn from_serde(problem: Problem, e: &serde_json::Error) -> LineProblem {
        LineProblem {
            problem,
            at: e.column().checked_sub(1),
        }
    }
}

/// Parses one trimmed line.
pub(crate) fn parse(bytes: &[u8]) -> Parsed<'_> {
    if bytes.is_empty() {
        return Parsed::Blank;
    }
    match parse_line(bytes) {
        Ok(event) => Parsed::Event(event),
        Err(problem) => Parsed::Problem(problem),
    }
}

/// Parses one non-blank line into a typed event, or says what is wrong with it.
pub(crate) fn parse_line(bytes: &[u8]) -> Result<RawEvent<'_>, LineProblem> {
    let mut event = RawEvent::default();
    parse_line_into(bytes, &mut event)?;
    Ok(event)
}

/// [`parse_line`] into `event`, which must be [`RawEvent::default`] (a line judged where
/// it is parsed need not move its event, about a kilobyte, through the results). On an
/// error `event` holds what was read before it, to be dropped.
pub(crate) fn parse_line_into<'b>(
    bytes: &'b [u8],
    event: &mut RawEvent<'b>,
) -> Result<(), LineProblem> {
    // JSON text is UTF-8. Checked once per line here, so string values need no check of
    // their own (see `event::Str`).
    // The SIMD check only says yes or no; std finds the position of a bad byte.
    let Ok(text) = simdutf8::basic::from_utf8(bytes) else {
        let at = utf8_error_at(bytes);
        let problem = Problem::NotJson(format!("invalid UTF-8 at byte {at}"));
        return Err(LineProblem::at(problem, at));
    };
    // The ordinary line, read in one pass; anything it is not sure of goes to serde_json.
    if crate::scan::event(bytes, text, event) {
        return Ok(());
    }
    *event = RawEvent::default();
    parse_with_serde_json(bytes, text, event)
}

/// [`parse_line_into`] without the fast path: serde_json decides, with its messages.
pub(crate) fn parse_with_serde_json<'b>(
    bytes: &'b [u8],
    text: &'b str,
    event: &mut RawEvent<'b>,
) -> Result<(), LineProblem> {
    // What `serde_json::from_slice` does, with the event filled in place (the bytes are
    // still read as bytes: `from_str` would check strings serde_json's own way).
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let error = match serde::de::DeserializeSeed::deserialize(InPlace(event, text), &mut de)
        .and_then(|()| de.end())
    {
        Ok(()) => return strict_strings(bytes),
        Err(e) => e,
    };
    let first = bytes.first().copied().unwrap_or(b' ');
    if first != b'{' {
        if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() {
            let problem = Problem::NotJson(without_position(&error));
            return Err(LineProblem::from_serde(problem, &error));
        }
        let found = Problem::NotObject(match first {
            b'[' => "an array",
            b'"' => "a string",
            b't' | b'f' => "a boolean",
            b'n' => "null",
            _ => "a number",
        });
        return Err(LineProblem::at(found, 0));
    }
    if !error.is_data() {
        let problem = Problem::NotJson(without_position(&error));
        return Err(LineProblem::from_serde(problem, &error));
    }
    // The event visitor prefixes a value's error with its field name.
    let problem = Problem::FieldType(without_position(&error));
    Err(LineProblem::from_serde(problem, &error))
}

/// RFC 8259 forbids a raw control character (U+0000 to U+001F) inside a string, a key or a
/// value. The event is read with `deserialize_bytes` for keys and kept strings (no UTF-8
/// check per string: the line is checked once), and serde_json's bytes path does not
/// refuse one there, where its `str` path and every skipped value do. So a line serde_json
/// took that holds such a byte anywhere (rare: the fast path takes the ordinary lines, and
/// gives up on any control character in a string) is read once more as a value serde_json
/// checks whole ([`IgnoredAny`](serde::de::IgnoredAny): every string checked, escapes
/// decoded), and refused with its message when that fails.
fn strict_strings(bytes: &[u8]) -> Result<(), LineProblem> {
    if !bytes.iter().any(|&b| b < 0x20) {
        return Ok(());
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => Ok(()),
        Err(e) => Err(LineProblem::from_serde(
            Problem::NotJson(without_position(&e)),
            &e,
        )),
    }
}

/// Where the first invalid UTF-8 byte of `bytes` is.
fn utf8_error_at(bytes: &[u8]) -> usize {
    std::str::from_utf8(bytes)
        .err()
        .map_or(bytes.len(), |e| e.valid_up_to())
}

/// serde_json's message without its "at line 1 column N" (the trace line is reported
/// separately), with the column kept.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let message = text
        .rfind(" at line ")
        .map_or(text.as_str(), |i| text.get(..i).unwrap_or(""));
    if e.column() > 0 {
        format!("{message} (column {})", e.column())
    } else {
        message.to_owned()
    }
}

/// `bytes` without the JSON whitespace (RFC 8259 §2: space, tab, line feed, carriage
/// return) at either end: what a trace line is trimmed by before it is parsed, so a line
/// of only that whitespace is blank. `trim_ascii` would also take a form feed, which
/// JSON does not allow around a value (nor does serde_json or Python's `json`).
pub(crate) fn trim_json_whitespace(bytes: &[u8]) -> &[u8] {
    let start = leading_json_whitespace(bytes);
    let end = bytes
        .iter()
        .rposition(|b| !is_json_whitespace(b))
        .map_or(start, |i| i + 1);
    bytes.get(start..end).unwrap_or_default()
}

/// How many bytes [`trim_json_whitespace`] takes from the start of `bytes`: where the
/// trimmed line starts in the line, so that a byte's column in it is exact.
pub(crate) fn leading_json_whitespace(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|b| !is_json_whitespace(b))
        .unwrap_or(bytes.len())
}

fn is_json_whitespace(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// The 1-based column in its line of the byte `problem` points at, `lead` bytes of
/// whitespace having been trimmed before it; `None` when it points at none.
pub(crate) fn column_in_line(problem: &LineProblem, lead: usize) -> Option<u32> {
    let at = problem.at?;
    u32::try_from(lead.checked_add(at)?.checked_add(1)?).ok()
}
