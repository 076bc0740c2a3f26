//! The GitHub Actions emitter of findings: one `::error`/`::warning` workflow command
//! per finding, escaped as the runner expects.

use kvlower_codes::Finding;
use kvlower_codes::text::escape_control;

/// A GitHub Actions workflow command; properties and data escaped as the runner expects.
pub fn github_annotation(d: &Finding) -> String {
    let prop = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
            .replace(':', "%3A")
            .replace(',', "%2C")
    };
    let data = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let mut props = format!("file={}", prop(&escape_control(&d.file)));
    if let Some((line, col)) = d.location {
        props.push_str(&format!(",line={line},col={col}"));
    }
    props.push_str(&format!(",title={}", prop(&format!("kvlower {}", d.code))));
    let mut message = d.message.clone();
    if !d.yaml_path.is_empty() {
        message.push_str(&format!(" (at `{}`)", d.yaml_path));
    }
    if let Some(h) = &d.hint {
        message.push_str(&format!("\nhint: {h}"));
    }
    // `\r` and `\n` are encoded by the runner's rules; other control characters escaped.
    let message: String = message
        .split('\n')
        .map(|l| escape_control(l).into_owned())
        .collect::<Vec<_>>()
        .join("\n");
    format!("::{} {props}::{}", d.severity, data(&message))
}
