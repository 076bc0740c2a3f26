//! The human emitter of findings: `file:line:col: error[code]: message (at path)`,
//! the source line the finding carries with a caret under the offending span, the
//! hint; every value from the input escaped.

use kvlower_codes::Finding;
use kvlower_codes::text::escape_control;

/// Makes a source line safe to print (control characters become their
/// visible Unicode "control picture", one character each, so columns keep).
pub(super) fn visible(line: &str) -> String {
    line.chars()
        .map(|c| match c {
            '\t' => ' ',
            c if (c as u32) < 0x20 => char::from_u32(0x2400 + c as u32).unwrap_or('?'),
            '\u{7f}' => '\u{2421}',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

/// Byte range of the token starting at 1-based character column `col` of `line`.
pub(super) fn token_span(line: &str, col: usize) -> std::ops::Range<usize> {
    let start = line
        .char_indices()
        .nth(col.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i);
    let rest = &line[start..];
    let mut len = rest
        .find(|c: char| c.is_whitespace() || matches!(c, ',' | ']' | '}' | '#'))
        .unwrap_or(rest.len());
    // `key:` points at the key; a `key: value` the caret covers the key only.
    if let Some(colon) = rest[..len]
        .find(": ")
        .or_else(|| rest[..len].ends_with(':').then(|| len.saturating_sub(1)))
    {
        len = colon.max(1);
    }
    if len == 0 {
        // At the end of the line (or on a space): a one-character caret.
        let one = rest.chars().next().map_or(0, char::len_utf8);
        return start..start + one;
    }
    start..start + len
}

/// One diagnostic for people: the `file:line:col: error[code]: message (at path)`
/// line editors and problem matchers parse, then (when the finding carries its
/// source line, [`kvlower_codes::SourceLine`]) that line with a caret under the
/// offending span, then the hint. Every value from the input is escaped; no input
/// is opened again.
pub fn render_human(d: &Finding, color: bool) -> String {
    use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

    let file = escape_control(&d.file);
    let mut header = file.to_string();
    if let Some(line) = d.line() {
        header.push_str(&format!(":{line}"));
    }
    if let Some(col) = d.column() {
        header.push_str(&format!(":{col}"));
    }
    let tag = match (color, d.is_warning()) {
        (true, false) => "\x1b[1;31merror\x1b[0m",
        (true, true) => "\x1b[1;33mwarning\x1b[0m",
        (false, false) => "error",
        (false, true) => "warning",
    };
    header.push_str(&format!(
        ": {tag}[{}]: {}",
        d.code,
        escape_control(&d.message)
    ));
    if !d.yaml_path.is_empty() {
        header.push_str(&format!(" (at `{}`)", escape_control(&d.yaml_path)));
    }
    let snippet = match (&d.source, d.line(), d.column()) {
        (Some(source), Some(line), Some(col)) if source.line == line => Some({
            let text = visible(&source.text);
            let span = token_span(&text, col);
            let level = if d.is_warning() {
                Level::WARNING
            } else {
                Level::ERROR
            };
            let group = Group::with_level(level).element(
                Snippet::source(text.clone())
                    .line_start(line)
                    .path(file.to_string())
                    .annotation(AnnotationKind::Primary.span(span)),
            );
            let renderer = if color {
                Renderer::styled()
            } else {
                Renderer::plain()
            };
            renderer.render(&[group])
        }),
        _ => None,
    };
    let mut s = header;
    if let Some(snippet) = snippet {
        s.push('\n');
        s.push_str(snippet.trim_end());
    }
    if let Some(hint) = &d.hint {
        let label = if color { "\x1b[36mhint\x1b[0m" } else { "hint" };
        s.push_str(&format!("\n  {label}: {}", escape_control(hint)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caret_covers_the_token_at_the_column() {
        let line = "  source: sorce_tree  # comment";
        let span = token_span(line, 11);
        assert_eq!(&line[span], "sorce_tree");
        let span = token_span(line, 3);
        assert_eq!(&line[span], "source");
        let span = token_span("ab", 9);
        assert_eq!(span, 2..2);
    }
}
