//! The fast path for an ordinary event line: one pass over the bytes, straight into a
//! [`RawEvent`], for the lines serde_json would read without any question.
//!
//! It is a strict subset of serde_json's acceptance. It takes a line only when it can tell
//! for certain that serde_json would accept it and read the same values; at the first
//! thing it is not sure of it says "not mine" (`None`), and the line is parsed again by
//! serde_json ([`crate::parse`]), which decides, with its own messages. So it can only ever
//! be slower on a line, never judge one differently. It gives up on: a backslash or a control
//! character in any string (escapes, and serde_json's two rules for control characters),
//! a declared key given twice, a number a typed field might read another way (a sign, a
//! fraction or an exponent, leading zeros, more digits than fit; under `request_id`, which
//! serde_json converts, anything but an integer), a value of the wrong JSON type, nesting
//! deeper than [`MAX_DEPTH`], and any syntax it does not expect. The differential tests in
//! `scan/tests.rs` hold it to that.
//!
//! Why: serde_json's visitor machinery was most of the gate's time on a campaign of small
//! traces (`docs/performance.md`, "Gate performance").

use std::borrow::Cow;

use serde::de::IgnoredAny;

use crate::event::{LooseStr, RawEvent, Str, TransferDirection, field_table, scan_field};

/// The deepest nesting the fast path reads, the event object included; deeper lines go to
/// serde_json.
const MAX_DEPTH: u32 = 16;

/// A position in one line. Every method that returns an `Option` returns `None` for
/// "not mine".
pub(crate) struct Scanner<'a> {
    bytes: &'a [u8],
    /// The same line, known to be UTF-8: kept strings are cut from it.
    text: &'a str,
    pos: usize,
    depth: u32,
}

/// Reads `bytes` (a trimmed line, checked UTF-8 as `text`) into `event`, which must be
/// [`RawEvent::default`]. `false`: the line is not one the fast path takes, and `event` may
/// hold part of it (the caller resets it and asks serde_json).
pub(crate) fn event<'a>(bytes: &'a [u8], text: &'a str, event: &mut RawEvent<'a>) -> bool {
    let mut s = Scanner {
        bytes,
        text,
        pos: 0,
        depth: 0,
    };
    s.object(event).is_some()
}

/// One 0x01 in every byte of a word.
const ONES: u64 = u64::MAX / 255;
/// The high bit of every byte of a word.
const HIGHS: u64 = ONES << 7;

/// The bytes of `word` that end a fast string: `"`, `\` or a control character, each
/// marked by its high bit. Exact at the lowest marked byte, which is the only one read.
fn string_stops(word: u64) -> u64 {
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    let quote = word ^ (ONES * u64::from(b'"'));
    let quote = quote.wrapping_sub(ONES) & !quote;
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let backslash = backslash.wrapping_sub(ONES) & !backslash;
    (control | quote | backslash) & HIGHS
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    /// serde_json's whitespace: space, tab, line feed, carriage return.
    fn whitespace(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.next()? == byte).then_some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.pos.checked_add(word.len())?;
        (self.bytes.get(self.pos..end)? == word).then(|| self.pos = end)
    }

    /// The body of a string whose opening quote was just read, up to its closing quote
    /// (consumed): its byte range. `None` at a backslash, a control character or the end.
    fn string_body(&mut self) -> Option<(usize, usize)> {
        let start = self.pos;
        let rest = self.bytes.get(start..)?;
        let mut chunks = rest.chunks_exact(8);
        let mut offset = 0;
        for chunk in &mut chunks {
            let word = u64::from_le_bytes(chunk.try_into().ok()?);
            let stops = string_stops(word);
            if stops != 0 {
                return self.close_string(
                    start,
                    start + offset + (stops.trailing_zeros() / 8) as usize,
                );
            }
            offset += 8;
        }
        for &b in chunks.remainder() {
            if b == b'"' || b == b'\\' || b < 0x20 {
                return self.close_string(start, start + offset);
            }
            offset += 1;
        }
        None
    }

    fn close_string(&mut self, start: usize, at: usize) -> Option<(usize, usize)> {
        (*self.bytes.get(at)? == b'"').then(|| {
            self.pos = at + 1;
            (start, at)
        })
    }

    /// A string value, borrowed from the line.
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let (start, end) = self.string_body()?;
        self.text.get(start..end)
    }

    /// `null` when it is next (consumed).
    fn null(&mut self) -> bool {
        self.peek() == Some(b'n') && self.literal(b"null").is_some()
    }

    /// A non-negative integer of at most `max_digits` digits, written as serde_json reads
    /// it into an unsigned integer: no sign, no leading zero, no fraction, no exponent.
    fn unsigned(&mut self, max_digits: usize) -> Option<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        while let Some(digit @ b'0'..=b'9') = self.peek() {
            if self.pos - start == max_digits {
                return None;
            }
            value = value
                .checked_mul(10)?
                .checked_add(u64::from(digit - b'0'))?;
            self.pos += 1;
        }
        let digits = self.pos - start;
        let leading_zero = digits > 1 && self.bytes.get(start) == Some(&b'0');
        if digits == 0 || leading_zero || matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        Some(value)
    }

    /// An integer of at most 19 digits, with or without a sign: a number serde_json's
    /// `deserialize_any` reads without an error (an integer, or a float for `-0` and for
    /// a negative one below `i64::MIN`, both in range).
    fn small_integer(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        self.unsigned(19).map(drop)
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while let Some(b'0'..=b'9') = self.peek() {
            self.pos += 1;
        }
        self.pos - start
    }

    /// Any JSON number, by its grammar (what serde_json checks of a number it skips).
    fn skip_number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.next()? {
            b'0' => {
                if let Some(b'0'..=b'9') = self.peek() {
                    return None;
                }
            }
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            if self.digits() == 0 {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    /// Reads past any one JSON value, checking it as serde_json checks a value it skips.
    fn skip_value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.nested(b'}', |s| {
                s.string()?;
                s.whitespace();
                s.eat(b':')?;
                s.whitespace();
                s.skip_value()
            }),
            b'[' => self.nested(b']', Self::skip_value),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// An object or array (its opening byte next), each member read by `member`.
    fn nested(&mut self, close: u8, mut member: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if self.depth == MAX_DEPTH {
            return None;
        }
        self.depth += 1;
        self.pos += 1;
        self.whitespace();
        if self.peek() == Some(close) {
            self.pos += 1;
        } else {
            loop {
                member(self)?;
                self.whitespace();
                match self.next()? {
                    b',' => self.whitespace(),
                    b if b == close => break,
                    _ => return None,
                }
            }
        }
        self.depth -= 1;
        Some(())
    }

    /// The whole line: one object, then nothing but whitespace.
    fn object(&mut self, event: &mut RawEvent<'a>) -> Option<()> {
        let table = field_table();
        let mut seen: u64 = 0;
        self.whitespace();
        if self.peek()? != b'{' {
            return None;
        }
        self.nested(b'}', |s| {
            s.eat(b'"')?;
            let (start, end) = s.string_body()?;
            let key = s.bytes.get(start..end)?;
            s.whitespace();
            s.eat(b':')?;
            s.whitespace();
            match table.lookup(key) {
                Some(field) => {
                    let bit = 1u64 << (field as u32);
                    if seen & bit != 0 {
                        return None;
                    }
                    seen |= bit;
                    scan_field(event, field, s)
                }
                None => s.skip_value(),
            }
        })?;
        self.whitespace();
        (self.pos == self.bytes.len()).then_some(())
    }
}

/// How a declared field's value is read on the fast path: `None` when serde_json must
/// decide, else the value serde_json would give the field.
pub(crate) trait Scan<'a>: Sized {
    fn scan(s: &mut Scanner<'a>) -> Option<Self>;
}

impl<'a> Scan<'a> for Option<u64> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        // 19 digits always fit a u64; a longer number is left to serde_json.
        s.unsigned(19).map(Some)
    }
}

impl<'a> Scan<'a> for Option<f64> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        // serde_json reads a non-negative integer as a u64 and converts it; up to 15
        // digits the conversion is exact. Fractions are left to serde_json's own float
        // parser, whose rounding this does not repeat.
        #[expect(
            clippy::cast_precision_loss,
            reason = "at most 15 digits, below 2^53: exact, and what serde_json's conversion gives"
        )]
        s.unsigned(15).map(|v| Some(v as f64))
    }
}

impl<'a> Scan<'a> for Option<bool> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        match s.peek()? {
            b'n' => s.literal(b"null").map(|()| None),
            b't' => s.literal(b"true").map(|()| Some(true)),
            b'f' => s.literal(b"false").map(|()| Some(false)),
            _ => None,
        }
    }
}

impl<'a> Scan<'a> for Option<IgnoredAny> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        s.skip_value().map(|()| Some(IgnoredAny))
    }
}

impl<'a> Scan<'a> for Option<Str<'a>> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        s.string().map(|v| Some(Str(Cow::Borrowed(v))))
    }
}

impl<'a> Scan<'a> for Option<LooseStr<'a>> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        match s.peek()? {
            b'"' => s.string().map(|v| Some(LooseStr(Some(Cow::Borrowed(v))))),
            // serde_json reads this value with `deserialize_any`, which converts a number
            // (and refuses one out of f64's range), where a skipped number is only checked
            // for its grammar: so only an integer that surely fits is taken here.
            b'-' | b'0'..=b'9' => s.small_integer().map(|()| Some(LooseStr(None))),
            _ => s.skip_value().map(|()| Some(LooseStr(None))),
        }
    }
}

impl<'a> Scan<'a> for Option<Vec<Str<'a>>> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        if s.peek()? != b'[' {
            return None;
        }
        let mut items = Vec::new();
        s.nested(b']', |s| {
            items.push(Str(Cow::Borrowed(s.string()?)));
            Some(())
        })?;
        Some(Some(items))
    }
}

impl<'a> Scan<'a> for Option<TransferDirection> {
    fn scan(s: &mut Scanner<'a>) -> Option<Self> {
        if s.null() {
            return Some(None);
        }
        match s.peek()? {
            b'"' => s.string().map(|_| Some(TransferDirection::Other)),
            b'[' => {
                // As the serde visitor: the first two items must be strings, the rest are
                // read past; only exactly ["GPU","CPU"] or ["CPU","GPU"] is a direction.
                let mut index = 0usize;
                let mut pair: [Option<&str>; 2] = [None, None];
                s.nested(b']', |s| {
                    match pair.get_mut(index) {
                        Some(slot) => *slot = Some(s.string()?),
                        None => s.skip_value()?,
                    }
                    index += 1;
                    Some(())
                })?;
                Some(Some(match (pair, index) {
                    ([Some("GPU"), Some("CPU")], 2) => TransferDirection::GpuToCpu,
                    ([Some("CPU"), Some("GPU")], 2) => TransferDirection::CpuToGpu,
                    _ => TransferDirection::Other,
                }))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
