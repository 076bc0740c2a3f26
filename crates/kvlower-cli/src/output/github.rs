//! The GitHub Actions emitter of findings: one `::error`/`::warning` workflow command
//! per finding, escaped as the runner expects. The one escaper of workflow commands:
//! every command that prints annotations (`check` and the other finding reports,
//! `gate --format github`) writes a [`Finding`] through [`github_annotation`]
//! (docs/output.md).

use kvlower_codes::Finding;
use kvlower_codes::text::escape_control;

/// A workflow command's data (its message), escaped as GitHub's own toolkit does
/// (actions/toolkit `escapeData`: `%` `%25`, CR `%0D`, LF `%0A`) so the runner reads it
/// back unchanged and on one line.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`file=`, `title=`), escaped as the toolkit's
/// `escapeProperty`: [`escape_data`], then `:` `%3A` and `,` `%2C`. Other control
/// characters (an escape, a tab) are then shown escaped (`\u{1b}`), as in every kvlower
/// report, so a name cannot drive the log's terminal.
pub fn escape_property(s: &str) -> String {
    let s = escape_data(s).replace(':', "%3A").replace(',', "%2C");
    escape_control(&s).into_owned()
}

/// `::SEVERITY file=...,line=N[,col=M],title=kvlower CODE::MESSAGE`: one annotation, on
/// one line, whatever `file` and `message` hold. `location` is the line and, when
/// known, the column.
fn annotation(
    severity: &str,
    file: &str,
    location: Option<(u64, Option<u64>)>,
    code: &str,
    message: &str,
) -> String {
    let mut props = format!("file={}", escape_property(file));
    match location {
        Some((line, Some(col))) => props.push_str(&format!(",line={line},col={col}")),
        Some((line, None)) => props.push_str(&format!(",line={line}")),
        None => {}
    }
    props.push_str(&format!(
        ",title={}",
        escape_property(&format!("kvlower {code}"))
    ));
    // CR and LF are encoded by the runner's rules; other control characters escaped.
    let mut shown = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find(['\r', '\n']) {
        shown.push_str(&escape_control(&rest[..at]));
        shown.push_str(&rest[at..=at]);
        rest = &rest[at + 1..];
    }
    shown.push_str(&escape_control(rest));
    format!("::{severity} {props}::{}", escape_data(&shown))
}

/// A finding as a GitHub Actions workflow command ([`annotation`]).
pub fn github_annotation(d: &Finding) -> String {
    let mut message = d.message.clone();
    if !d.yaml_path.is_empty() {
        message.push_str(&format!(" (at `{}`)", d.yaml_path));
    }
    if let Some(h) = &d.hint {
        message.push_str(&format!("\nhint: {h}"));
    }
    let location = d
        .line()
        .map(|line| (line as u64, d.column().map(|col| col as u64)));
    annotation(
        d.severity.name(),
        &d.file,
        location,
        d.code.name(),
        &message,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The toolkit's escaping, exactly: `%` first, so an escape is never escaped twice.
    #[test]
    fn the_escapes_are_the_toolkits() {
        assert_eq!(escape_data("a%0A\r\nb:,"), "a%250A%0D%0Ab:,");
        assert_eq!(escape_property("a%\r\n:,b"), "a%25%0D%0A%3A%2Cb");
        assert_eq!(escape_property("e\u{1b}[31m"), "e\\u{1b}[31m");
        let a = annotation("error", "x\ny", Some((3, None)), "c", "m\nn\r");
        assert_eq!(a, "::error file=x%0Ay,line=3,title=kvlower c::m%0An%0D");
    }
}
