//! Output formats, colour, escaping and the stream policy shared by every subcommand.
//!
//! Stream policy (documented in the README, the same for every command):
//! - **stdout** carries the command's result: the payload (rows, verdicts, a
//!   scaffold, a schema) and the one-line summary; in a machine format
//!   (`json`, `sarif`, `markdown`, and the `::error` lines of `github`) it
//!   carries exactly one document and nothing else.
//! - **stderr** carries the human diagnostics (findings with their source
//!   line, hints, stale-result diffs) and error messages.
//! - With `--format json` every outcome, an exit-2 usage error included, is one
//!   JSON [`Envelope`] on stdout, so a CI step can always parse what it got.
//!
//! Text that came from input files (YAML values, file names) is escaped
//! before it is printed: control characters in human output
//! ([`escape_control`]), and `|` and line breaks in Markdown ([`md_cell`]).

use std::io::{IsTerminal, Write};

use kvlower_codes::{Code, Diagnostic};
use serde::Serialize;

use crate::Exit;

/// Version of the `--format json` envelope every command prints; bump on a breaking change.
/// (Version 1 had `findings` instead of `diagnostics` and no `payload`.)
pub const OUTPUT_SCHEMA_VERSION: u32 = 2;

/// How a command prints its outcome: the one `--format` of every command. Each
/// command accepts the formats it can print ([`Format::parser`] with one of the sets
/// below); any other value is clap's usage error (exit 2), as for any bad value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// For people: `file:line:col: error[code]: message`, the source line with a caret, a hint
    #[default]
    Human,
    /// One JSON document on stdout (the shared envelope, with a `schema_version`)
    Json,
    /// GitHub Actions `::error` annotations, then the human report
    Github,
    /// A Markdown summary, e.g. for `$GITHUB_STEP_SUMMARY`
    Markdown,
    /// SARIF 2.1.0 for GitHub code scanning (rules = diagnostic codes); `check` only
    Sarif,
}

/// One format a command accepts, with the help clap shows for it there (`None`: the
/// value is listed bare).
pub type Accepted = (Format, Option<&'static str>);

impl Format {
    /// Every format, in the order help lists them.
    pub const ALL: [Format; 5] = [
        Format::Human,
        Format::Json,
        Format::Github,
        Format::Markdown,
        Format::Sarif,
    ];

    /// The formats of the commands that report findings (`explain`, `codes`,
    /// `explain-code`, `catalog diff`, `gate`).
    pub const SHARED: &'static [Accepted] = &[
        (
            Format::Human,
            Some(
                "For people: `file:line:col: error[code]: message`, the source line with a caret, a hint",
            ),
        ),
        (
            Format::Json,
            Some("One JSON document on stdout (the shared envelope, with a `schema_version`)"),
        ),
        (
            Format::Github,
            Some("GitHub Actions `::error` annotations, then the human report"),
        ),
        (
            Format::Markdown,
            Some("A Markdown summary, e.g. for `$GITHUB_STEP_SUMMARY`"),
        ),
    ];

    /// `check`'s formats: the shared ones and SARIF.
    pub const CHECK: &'static [Accepted] = &[
        Format::SHARED[0],
        Format::SHARED[1],
        Format::SHARED[2],
        Format::SHARED[3],
        (
            Format::Sarif,
            Some("SARIF 2.1.0 for GitHub code scanning (rules = diagnostic codes)"),
        ),
    ];

    /// The formats of the commands whose only machine format is the JSON envelope
    /// (`matrix`, `bad-lowering`, `new`, `init`, `capture`).
    pub const SIMPLE: &'static [Accepted] = &[
        (
            Format::Human,
            Some("For people (unchanged from earlier releases)"),
        ),
        (
            Format::Json,
            Some("One JSON document on stdout (the shared envelope)"),
        ),
    ];

    /// `route`'s and `join`'s: human text, or the JSON evidence document.
    pub const DOCUMENT: &'static [Accepted] = &[(Format::Human, None), (Format::Json, None)];

    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Human => "human",
            Format::Json => "json",
            Format::Github => "github",
            Format::Markdown => "markdown",
            Format::Sarif => "sarif",
        }
    }

    /// The format with exactly this name.
    pub fn from_name(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The value parser of a `--format` that accepts `accepted` (and lists them, with
    /// their help, in `--help`, completions and clap's "possible values").
    pub fn parser(
        accepted: &'static [Accepted],
    ) -> impl clap::builder::TypedValueParser<Value = Format> {
        use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
        PossibleValuesParser::new(accepted.iter().map(|(format, help)| {
            let value = PossibleValue::new(format.name());
            match help {
                Some(help) => value.help(*help),
                None => value,
            }
        }))
        // Only the names listed parse, and each is a format's name.
        .map(|name| Format::from_name(&name).unwrap_or_default())
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether to colour human output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal and NO_COLOR is unset
    Auto,
    Always,
    Never,
}

/// The stream a coloured text goes to (`auto` asks whether *that* one is a terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl ColorChoice {
    /// Whether diagnostics on stderr are coloured (see [`ColorChoice::enabled_for`]).
    pub fn enabled(self) -> bool {
        self.enabled_for(Stream::Stderr)
    }

    /// Resolves `auto` against NO_COLOR (any non-empty value disables) and
    /// whether `stream` is a terminal; `always` and `never` are what they say.
    pub fn enabled_for(self, stream: Stream) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && match stream {
                        Stream::Stdout => std::io::stdout().is_terminal(),
                        Stream::Stderr => std::io::stderr().is_terminal(),
                    }
            }
        }
    }
}

/// Options every reporting subcommand takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportOptions {
    /// Output format
    #[arg(long, value_parser = Format::parser(Format::SHARED), default_value_t = Format::Human)]
    pub format: Format,
    /// Colour for human output (honours NO_COLOR)
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only the summary line
    #[arg(short, long)]
    pub quiet: bool,
}

// ------------------------------------------------------------------ escaping

pub use kvlower_codes::text::escape_control;

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

// ------------------------------------------------------------------ JSON envelope

/// A diagnostic as JSON (part of the `--format json` contract).
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic<'a> {
    pub file: &'a str,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub code: &'static str,
    /// `error` or `warning` (a warning fails `check` only with `--deny-warnings`).
    pub severity: &'static str,
    pub yaml_path: &'a str,
    pub message: &'a str,
    pub hint: Option<&'a str>,
}

impl<'a> From<&'a Diagnostic> for JsonDiagnostic<'a> {
    fn from(d: &'a Diagnostic) -> Self {
        JsonDiagnostic {
            file: &d.file,
            line: d.location.map(|l| l.0),
            column: d.location.map(|l| l.1),
            code: d.code.name(),
            severity: d.severity.name(),
            yaml_path: &d.yaml_path,
            message: &d.message,
            hint: d.hint.as_deref(),
        }
    }
}

/// The one top-level shape of every command's `--format json` output.
#[derive(Debug, Serialize)]
pub struct Envelope<'a, P: Serialize> {
    pub schema_version: u32,
    pub command: &'a str,
    /// `true` exactly when the exit code is 0.
    pub ok: bool,
    /// The documented exit code the process ends with.
    pub exit_code: u8,
    pub summary: &'a str,
    /// Input findings (empty when there are none).
    pub diagnostics: Vec<JsonDiagnostic<'a>>,
    /// A usage error or an error outside the inputs (exit 2, or an I/O failure).
    pub error: Option<&'a str>,
    /// The command's result (rows, verdicts, ...), `null` when there is none.
    pub payload: Option<P>,
}

/// Serializes the shared envelope (pretty, trailing newline).
pub fn envelope_json<P: Serialize>(
    command: &str,
    exit: Exit,
    summary: &str,
    diagnostics: &[Diagnostic],
    error: Option<&str>,
    payload: Option<P>,
) -> String {
    crate::generated::to_json(&envelope(
        command,
        exit,
        summary,
        diagnostics.iter().map(JsonDiagnostic::from).collect(),
        error,
        payload,
    ))
}

/// The shared envelope, for a command whose diagnostics are not YAML findings
/// (`gate`'s malformed traces).
pub fn envelope<'a, P: Serialize>(
    command: &'a str,
    exit: Exit,
    summary: &'a str,
    diagnostics: Vec<JsonDiagnostic<'a>>,
    error: Option<&'a str>,
    payload: Option<P>,
) -> Envelope<'a, P> {
    Envelope {
        schema_version: OUTPUT_SCHEMA_VERSION,
        command,
        ok: exit == Exit::Success,
        exit_code: exit.as_u8(),
        summary,
        diagnostics,
        error,
        payload,
    }
}

/// Reports an error that ends a command before any judgment (usually exit 2):
/// a JSON envelope on stdout in JSON mode, `error: ...` on stderr otherwise.
pub fn report_error(
    format: Format,
    command: &str,
    exit: Exit,
    message: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    if format == Format::Json {
        let summary = format!("kvlower {command}: {message}");
        write!(
            out,
            "{}",
            envelope_json::<()>(command, exit, &summary, &[], Some(message), None)
        )
    } else {
        writeln!(err, "error: {}", escape_control(message))
    }
}

// ------------------------------------------------------------------ human rendering

/// Makes a source line safe to print (control characters become their
/// visible Unicode "control picture", one character each, so columns keep).
fn visible(line: &str) -> String {
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
fn token_span(line: &str, col: usize) -> std::ops::Range<usize> {
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
pub fn render_human(d: &Diagnostic, color: bool) -> String {
    use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

    let file = escape_control(&d.file);
    let mut header = file.to_string();
    if let Some((line, col)) = d.location {
        header.push_str(&format!(":{line}:{col}"));
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
    let snippet = match (&d.source, d.location) {
        (Some(source), Some((line, col))) if source.line == line => Some({
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

// ------------------------------------------------------------------ reports

/// Prints findings and the summary line in the chosen format (each finding carries
/// its own source line: nothing is read again).
pub fn report(
    opts: &ReportOptions,
    command: &str,
    exit: Exit,
    diagnostics: &[Diagnostic],
    summary: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    match opts.format {
        Format::Json => write!(
            out,
            "{}",
            envelope_json::<()>(command, exit, summary, diagnostics, None, None)
        ),
        Format::Markdown => {
            writeln!(out, "### kvlower {command}\n")?;
            writeln!(out, "{}\n", md_cell(summary))?;
            if !diagnostics.is_empty() && !opts.quiet {
                write!(out, "{}", markdown_findings(diagnostics))?;
            }
            Ok(())
        }
        Format::Sarif => write!(out, "{}", sarif(diagnostics, None)),
        Format::Github | Format::Human => {
            if opts.format == Format::Github {
                for d in diagnostics {
                    writeln!(out, "{}", github_annotation(d))?;
                }
            }
            if !opts.quiet {
                let color = opts.color.enabled();
                for d in diagnostics {
                    writeln!(err, "{}", render_human(d, color))?;
                }
            }
            writeln!(out, "{}", escape_control(summary))
        }
    }
}

/// The findings as a Markdown table (every cell escaped).
pub fn markdown_findings(diagnostics: &[Diagnostic]) -> String {
    let mut s = String::from("| file | line | code | finding |\n|---|---|---|---|\n");
    for d in diagnostics {
        let line = d
            .location
            .map_or(String::new(), |l| format!("{}:{}", l.0, l.1));
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
        s.push_str(&format!(
            "| {} | {} | {code} | {} |\n",
            md_code(&d.file),
            line,
            finding
        ));
    }
    s
}

/// A GitHub Actions workflow command; properties and data escaped as the runner expects.
pub fn github_annotation(d: &Diagnostic) -> String {
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

// ------------------------------------------------------------------ SARIF

/// A SARIF 2.1.0 log for GitHub code scanning: one rule per diagnostic code
/// (its `explain-code` text), one result per finding with its location.
/// `error` marks a run that could not judge (exit 2): the invocation is then
/// `executionSuccessful: false` with the message as a notification.
pub fn sarif(diagnostics: &[Diagnostic], error: Option<&str>) -> String {
    use serde_json::{Value, json};
    let rules: Vec<Value> = Code::ALL
        .iter()
        .map(|c| {
            json!({
                "id": c.name(),
                "shortDescription": {"text": c.explanation()},
                "fullDescription": {"text": c.explanation()},
                // No helpUri: SARIF needs an absolute URI, and kvlower has no public
                // one yet (naming an unreachable URL is worse than none). The help
                // text points at the repository's own page and command instead.
                "help": {"text": format!(
                    "{}\nRun `kvlower explain-code {}`, or see {CODES_DOC}#{} in the kvlower repository.",
                    c.explanation(),
                    c.name(),
                    c.name()
                )},
                "defaultConfiguration": {"level": c.severity().name()}
            })
        })
        .collect();
    let results: Vec<Value> = diagnostics
        .iter()
        .map(|d| {
            let mut text = d.message.clone();
            if !d.yaml_path.is_empty() {
                text.push_str(&format!(" (at `{}`)", d.yaml_path));
            }
            if let Some(h) = &d.hint {
                text.push_str(&format!("\nhint: {h}"));
            }
            let mut physical = json!({
                "artifactLocation": {"uri": sarif_uri(&d.file), "uriBaseId": "%SRCROOT%"}
            });
            if let Some((line, col)) = d.location {
                physical["region"] = sarif_region(d, line, col);
            }
            let mut result = json!({
                "ruleId": d.code.name(),
                "ruleIndex": Code::ALL.iter().position(|c| *c == d.code).unwrap_or(0),
                "level": d.severity.name(),
                "message": {"text": text},
                "locations": [{"physicalLocation": physical}]
            });
            if !d.yaml_path.is_empty() {
                result["locations"][0]["logicalLocations"] =
                    json!([{"fullyQualifiedName": d.yaml_path, "kind": "member"}]);
            }
            if !d.related.is_empty() {
                result["relatedLocations"] = d
                    .related
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        json!({
                            "id": i,
                            "physicalLocation": {"artifactLocation": {"uri": sarif_uri(f), "uriBaseId": "%SRCROOT%"}},
                            "message": {"text": "a descriptor whose rows changed"}
                        })
                    })
                    .collect();
            }
            result
        })
        .collect();
    let mut invocation = json!({"executionSuccessful": error.is_none()});
    if let Some(message) = error {
        invocation["toolExecutionNotifications"] =
            json!([{"level": "error", "message": {"text": message}}]);
    }
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "kvlower",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository root (--root)"}}},
            "invocations": [invocation],
            "results": results
        }]
    });
    crate::generated::to_json(&log)
}

/// Where every diagnostic code is documented, relative to the repository root.
pub const CODES_DOC: &str = "docs/diagnostic-codes.md";

/// A SARIF region for a finding at `line`:`col` of `file`: the token the caret of
/// the human report covers (end column exclusive, 1-based), one character when the
/// finding carries no source line.
fn sarif_region(d: &Diagnostic, line: usize, col: usize) -> serde_json::Value {
    let end = d
        .source
        .as_ref()
        .filter(|source| source.line == line)
        .map(|source| {
            let text = visible(&source.text);
            let span = token_span(&text, col);
            col + text[span].chars().count().max(1)
        })
        .unwrap_or(col + 1);
    serde_json::json!({"startLine": line, "startColumn": col, "endLine": line, "endColumn": end})
}

/// A relative path as a URI reference: every byte but unreserved characters and
/// the `/` separator percent-encoded. A backslash is a byte of the name on Unix
/// (and the escape of a control character kvlower printed), never a separator.
fn sarif_uri(path: &str) -> String {
    let mut out = String::new();
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 38: the caret is drawn from the source line the finding carries; the
    /// renderer opens nothing (the file named here does not exist, and before this
    /// change the source line was read from it, so no caret was drawn).
    #[test]
    fn the_caret_comes_from_the_finding_not_the_file() {
        let src = "runtime:\n  name: vllm\n  version: [\n";
        let d = Diagnostic::new(Code::WrongType, "no/such/file.yaml", "expected a string")
            .at_path("runtime.version")
            .located_in(src);
        let shown = render_human(&d, false);
        assert!(shown.contains("  version: ["), "{shown}");
        assert!(shown.contains('^'), "{shown}");
        let sarif: serde_json::Value =
            serde_json::from_str(&sarif(std::slice::from_ref(&d), None)).unwrap_or_default();
        let region = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
        assert_eq!(region["startColumn"], 3);
        assert_eq!(region["endColumn"], 10, "{region}");
        // A finding without its source line has no caret (and a one-character region).
        let mut bare = d.clone();
        bare.source = None;
        assert!(!render_human(&bare, false).contains('^'));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_control("a\x1b[2Jb\r\n"), "a\\u{1b}[2Jb\\r\\n");
        assert_eq!(escape_control("plain"), "plain");
    }

    #[test]
    fn sarif_uris_percent_encode_every_byte_of_a_name() {
        // An escaped control character is a backslash in the name, not a separator.
        assert_eq!(
            sarif_uri("capabilities/nl\\nx.yaml"),
            "capabilities/nl%5Cnx.yaml"
        );
        assert_eq!(
            sarif_uri("capabilities/nl\nx.yaml"),
            "capabilities/nl%0Ax.yaml"
        );
        assert_eq!(sarif_uri("a b/ü.yaml"), "a%20b/%C3%BC.yaml");
    }

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
