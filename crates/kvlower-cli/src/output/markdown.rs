//! The Markdown emitter of findings (a table for `$GITHUB_STEP_SUMMARY`), and the
//! escaping every Markdown output of kvlower uses for a cell or a code span.

use kvlower_codes::Finding;

/// Text for one Markdown table cell: `|` escaped, line breaks as `<br>`, HTML's
/// `<`, `>` and `&` as entities (GitHub renders raw HTML in a step summary, so a
/// value could otherwise inject an `<img onerror=...>`), other control characters
/// escaped: no value can end the cell or the row, or become markup. A value is
/// never put between backticks by hand: that is [`md_code`]'s job, whose fence
/// outgrows any backtick run inside.
pub fn md_cell(s: &str) -> String {
    let s = s.replace("\r\n", "\n");
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push_str("<br>"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            c if c.is_control() => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// An inline code span for a Markdown table cell (`` `x` ``), with `|` and line
/// breaks neutralised and a fence longer than any backtick run inside. Inside a
/// code span HTML is not interpreted (and entities would show literally), so
/// only the table's own syntax is escaped.
pub fn md_code(s: &str) -> String {
    let mut inner = String::with_capacity(s.len());
    for c in s.replace("\r\n", "\n").chars() {
        match c {
            '|' => inner.push_str("\\|"),
            '\n' | '\r' => inner.push(' '),
            c if c.is_control() => inner.push_str(&c.escape_unicode().to_string()),
            c => inner.push(c),
        }
    }
    let longest = inner.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if longest == 0 {
        format!("{fence}{inner}{fence}")
    } else {
        format!("{fence} {inner} {fence}")
    }
}

/// The head of [`markdown_findings`]' table.
pub const MARKDOWN_FINDINGS_HEAD: &str = "| file | line | code | finding |\n|---|---|---|---|\n";

/// The findings as a Markdown table (every cell escaped).
pub fn markdown_findings(diagnostics: &[Finding]) -> String {
    let mut s = String::from(MARKDOWN_FINDINGS_HEAD);
    for d in diagnostics {
        s.push_str(&markdown_finding_row(d));
    }
    s
}

/// One row of [`markdown_findings`]' table (for a report that streams its findings).
pub fn markdown_finding_row(d: &Finding) -> String {
    let line = match (d.line(), d.column()) {
        (Some(line), Some(col)) => format!("{line}:{col}"),
        (Some(line), None) => line.to_string(),
        (None, _) => String::new(),
    };
    let mut finding = md_cell(&d.message);
    if !d.yaml_path.is_empty() {
        finding.push_str(&format!(" (at {})", md_code(&d.yaml_path)));
    }
    if let Some(h) = &d.hint {
        finding.push_str(&format!("<br>hint: {}", md_cell(h)));
    }
    let code = if d.is_warning() {
        format!("`{}` (warning)", d.code)
    } else {
        format!("`{}`", d.code)
    };
    format!(
        "| {} | {} | {code} | {} |\n",
        // A name's line break shown as `\n` (as in human output), not the space a code
        // span makes of it: the reader must be able to find the file.
        md_code(&kvlower_codes::text::escape_control(&d.file)),
        line,
        finding
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cells_cannot_break_the_table() {
        assert_eq!(md_cell("a|b\nc"), "a\\|b<br>c");
        assert_eq!(
            md_cell("x<img src=x onerror=alert(1)>&"),
            "x&lt;img src=x onerror=alert(1)&gt;&amp;"
        );
        assert_eq!(md_code("x|y"), "`x\\|y`");
        assert_eq!(md_code("a`b"), "`` a`b ``");
    }
}
