//! Splits a byte stream into lines without loading it whole, with a cap on line length.
//!
//! A line that lies whole in the reader's buffer is handed out in place (no copy); only a
//! line that straddles a buffer refill is assembled in a side buffer.

use std::io::{self, BufRead};

/// The longest line the gate reads (16 MiB); a longer one is skipped and reported, so a
/// corrupt trace cannot make the reader allocate without bound.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line as read.
pub(crate) enum Line<'b> {
    /// A line, without its `\n` (a trailing `\r` is left to the caller's trimming).
    Text(&'b [u8]),
    /// The line was longer than the cap; it was skipped.
    TooLong,
}

/// The most bytes the gate reads from one trace by default (4 GiB): a trace streamed from
/// a pipe, or a file that keeps growing, cannot keep the gate reading forever.
pub const MAX_TRACE_BYTES: u64 = 4 << 30;

/// How reading a trace ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The whole input was read.
    Complete,
    /// The input held more than the byte budget; reading stopped at the budget.
    TooLarge,
}

/// Calls `f` with every line of `r`, in order, reading at most `budget` bytes.
pub(crate) fn for_each_line<R: BufRead>(
    mut r: R,
    cap: usize,
    budget: u64,
    mut f: impl FnMut(Line<'_>),
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
            if overflowed {
                f(Line::TooLong);
            } else if !partial.is_empty() {
                f(Line::Text(&partial));
            }
            return Ok(End::Complete);
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
        let (head, _) = available.split_at(end);
        if overflowed || partial.len().saturating_add(head.len()) > cap {
            f(Line::TooLong);
        } else if partial.is_empty() {
            f(Line::Text(head));
        } else {
            partial.extend_from_slice(head);
            f(Line::Text(&partial));
        }
        partial.clear();
        overflowed = false;
        r.consume(end.saturating_add(1));
        consumed = consumed.saturating_add(end as u64).saturating_add(1);
    }
}
