//! Splits a byte stream into lines without loading it whole, with a cap on line length
//! and on the bytes read: the one line reader of the trace gate and the join.
//!
//! A line that lies whole in the reader's buffer is handed out in place (no copy); only a
//! line that straddles a buffer refill is assembled in a side buffer, which never grows
//! past the cap, so a hostile line cannot make the reader allocate without bound.

use std::io::{self, BufRead};
use std::ops::ControlFlow;

/// One line as read.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'b> {
    /// A line with its `\n` when it had one (the last line of an input may not); a
    /// trailing `\r` is left to the caller's trimming. At most the cap long, not
    /// counting the `\n`.
    Text(&'b [u8]),
    /// The line was longer than the cap; it was skipped.
    TooLong,
}

impl<'b> Line<'b> {
    /// The line's text without its `\n`.
    pub fn content(bytes: &'b [u8]) -> &'b [u8] {
        bytes.strip_suffix(b"\n").unwrap_or(bytes)
    }
}

/// How reading ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The whole input was read.
    Complete,
    /// The input held more than the byte budget; reading stopped at the budget.
    TooLarge,
    /// The caller's callback asked to stop.
    Stopped,
}

/// Calls `f` with every line of `r`, in order, reading at most `budget` bytes; a line
/// longer than `cap` bytes (its `\n` not counted) is handed out as [`Line::TooLong`].
/// `f` returns [`ControlFlow::Break`] to stop reading.
pub fn for_each_line<R: BufRead>(
    mut r: R,
    cap: usize,
    budget: u64,
    mut f: impl FnMut(Line<'_>) -> ControlFlow<()>,
) -> io::Result<End> {
    let mut partial: Vec<u8> = Vec::new();
    let mut overflowed = false;
    let mut consumed: u64 = 0;
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            // End of input: a last line without a terminator.
            let last = if overflowed {
                f(Line::TooLong)
            } else if !partial.is_empty() {
                f(Line::Text(&partial))
            } else {
                ControlFlow::Continue(())
            };
            return Ok(match last {
                ControlFlow::Continue(()) => End::Complete,
                ControlFlow::Break(()) => End::Stopped,
            });
        }
        let room = budget.saturating_sub(consumed);
        if room == 0 {
            return Ok(End::TooLarge);
        }
        let within = usize::try_from(room).map_or(available.len(), |n| n.min(available.len()));
        let available = available.get(..within).unwrap_or(available);
        let Some(end) = memchr::memchr(b'\n', available) else {
            let n = available.len();
            if !overflowed {
                if partial.len().saturating_add(n) > cap {
                    overflowed = true;
                    partial = Vec::new();
                } else {
                    partial.extend_from_slice(available);
                }
            }
            r.consume(n);
            consumed = consumed.saturating_add(n as u64);
            continue;
        };
        let line = available.get(..=end).unwrap_or(available);
        let flow = if overflowed || partial.len().saturating_add(end) > cap {
            f(Line::TooLong)
        } else if partial.is_empty() {
            f(Line::Text(line))
        } else {
            partial.extend_from_slice(line);
            f(Line::Text(&partial))
        };
        partial.clear();
        overflowed = false;
        r.consume(end.saturating_add(1));
        consumed = consumed.saturating_add(end as u64).saturating_add(1);
        if flow.is_break() {
            return Ok(End::Stopped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &[u8], cap: usize, budget: u64) -> (Vec<Option<Vec<u8>>>, End) {
        let mut out = Vec::new();
        // A tiny buffer makes lines straddle refills.
        let r = io::BufReader::with_capacity(3, input);
        let end = for_each_line(r, cap, budget, |l| {
            out.push(match l {
                Line::Text(t) => Some(t.to_vec()),
                Line::TooLong => None,
            });
            ControlFlow::Continue(())
        })
        .unwrap_or(End::Stopped);
        (out, end)
    }

    #[test]
    fn lines_keep_their_newline_and_the_cap_counts_content_only() {
        let (out, end) = lines(b"abcd\nabcde\nab", 4, u64::MAX);
        assert_eq!(
            out,
            vec![Some(b"abcd\n".to_vec()), None, Some(b"ab".to_vec())]
        );
        assert_eq!(end, End::Complete);
        assert_eq!(Line::content(b"ab\n"), b"ab");
    }

    #[test]
    fn the_budget_stops_reading() {
        let (out, end) = lines(b"ab\ncd\nef\n", 16, 4);
        assert_eq!(out, vec![Some(b"ab\n".to_vec())]);
        assert_eq!(end, End::TooLarge);
    }

    #[test]
    fn the_callback_stops_reading() {
        let mut seen = 0;
        let end = for_each_line(&b"a\nb\nc\n"[..], 16, u64::MAX, |_| {
            seen += 1;
            if seen == 2 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(end.ok(), Some(End::Stopped));
        assert_eq!(seen, 2);
    }
}
