//! Splits a byte stream into lines without loading it whole, with a cap on line length.

use std::io::{self, BufRead, Read};

/// The longest line the gate reads (16 MiB); a longer one is skipped and reported, so a
/// corrupt trace cannot make the reader allocate without bound.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// What reading one line produced.
pub(crate) enum Line {
    /// A line (without its terminator) is in the buffer.
    Text,
    /// The line was longer than the cap; it was skipped.
    TooLong,
    /// End of input.
    End,
}

/// Reads the next line into `buf` (cleared first), never holding more than `cap` bytes.
pub(crate) fn next_line<R: BufRead>(r: &mut R, buf: &mut Vec<u8>, cap: usize) -> io::Result<Line> {
    buf.clear();
    let limit = u64::try_from(cap).unwrap_or(u64::MAX).saturating_add(1);
    let n = r.by_ref().take(limit).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(Line::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        return Ok(Line::Text);
    }
    if buf.len() <= cap {
        // The last line of the input, without a terminator.
        return Ok(Line::Text);
    }
    buf.clear();
    skip_rest_of_line(r)?;
    Ok(Line::TooLong)
}

fn skip_rest_of_line<R: BufRead>(r: &mut R) -> io::Result<()> {
    loop {
        let available = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(());
        }
        match available.iter().position(|&b| b == b'\n') {
            Some(i) => {
                r.consume(i.saturating_add(1));
                return Ok(());
            }
            None => {
                let n = available.len();
                r.consume(n);
            }
        }
    }
}
