//! Text a finding may repeat from its input: escaped (no line break or terminal escape
//! reaches a CI log) and cut to a cap.

use std::borrow::Cow;

/// The most characters of a quoted value a diagnostic repeats (longer than
/// any name kvlower knows, so "expected one of" lists stay whole).
pub const VALUE_MAX_CHARS: usize = 64;
/// The most characters of a whole diagnostic message (a backstop: the
/// longest "expected one of" list is under 1,000).
pub const MESSAGE_MAX_CHARS: usize = 2000;

/// `text` with control characters escaped (no line breaks or terminal
/// escapes reach a CI log) and cut to `max` characters, marked with `…`.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Escapes control characters (`\n`, `\r`, `\t`, ESC, DEL, C1, ...) so a value
/// read from a file can neither move the cursor, colour the terminal nor
/// forge a line of output. Printable text is returned unchanged.
pub fn escape_control(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The most characters of a source line a finding carries (and shows under its
/// caret): a descriptor linked to a secret file must not be echoed into CI logs
/// through its source line (the message caps values too).
pub const SOURCE_MAX_CHARS: usize = 64;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_and_cut() {
        assert_eq!(excerpt("a\nb\u{1b}[31m", 100), "a\\nb\\u{1b}[31m");
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }
}
