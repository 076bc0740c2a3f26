//! The JSON Lines driver: one event batch (vLLM, SGLang) or poll (TensorRT-LLM) per
//! line, read through kvlower's one line reader, so that a hostile line cannot
//! exhaust memory; the first malformed line stops the join with its line number.

use std::io::BufRead;
use std::ops::ControlFlow;
use std::path::Path;

use kvlower_fs::line_reader::Line;

use super::stream_error;
use crate::document::JoinReport;
use crate::engine::Engine;
use crate::error::JoinError;
use crate::events::Decoder;

/// The longest event line the join reads (one event batch), its `\n` not counted;
/// longer lines are malformed.
pub const MAX_EVENT_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Replays a JSON Lines event stream, line by line; blank lines are counted and
/// skipped. An event's `line` is its line's number (1-based).
pub(super) fn join_lines<R: BufRead>(
    mut engine: Engine<'_>,
    mut decoder: Decoder,
    mut events: R,
    registry_path: &Path,
    events_path: &Path,
) -> Result<JoinReport, JoinError> {
    let mut line: u64 = 0;
    let mut failed: Option<JoinError> = None;
    let event_error = |line: u64, json_path: Option<String>, message: String| JoinError::Event {
        path: events_path.to_path_buf(),
        line,
        json_path,
        message,
    };
    // The one line reader (shared with the trace gate): a hostile line cannot exhaust
    // memory, and the first malformed line stops the join.
    kvlower_fs::line_reader::for_each_line(&mut events, MAX_EVENT_LINE_BYTES, u64::MAX, |l| {
        line += 1;
        let bytes = match l {
            Line::Text(bytes) => bytes,
            Line::TooLong => {
                let message = format!("line longer than {MAX_EVENT_LINE_BYTES} bytes");
                failed = Some(event_error(line, None, message));
                return ControlFlow::Break(());
            }
        };
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                failed = Some(event_error(line, None, format!("not UTF-8: {e}")));
                return ControlFlow::Break(());
            }
        };
        // Blank: only JSON whitespace (RFC 8259: space, tab, line feed, carriage return).
        // A form feed, a no-break space or a line separator is no blank line: it goes to
        // the JSON parser, which refuses it.
        if text
            .bytes()
            .all(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            return ControlFlow::Continue(());
        }
        match decoder.decode_line(text, line) {
            Ok(decoded) => {
                engine.feed(decoded);
                ControlFlow::Continue(())
            }
            Err(e) => {
                failed = Some(event_error(line, e.json_path, e.message));
                ControlFlow::Break(())
            }
        }
    })
    .map_err(|e| stream_error(events_path, e))?;
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(engine.finish(
        line,
        registry_path.display().to_string(),
        events_path.display().to_string(),
    ))
}
