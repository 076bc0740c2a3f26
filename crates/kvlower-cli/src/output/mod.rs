//! Output formats, colour, escaping and the stream policy shared by every subcommand,
//! and one emitter per format for a command's findings: [`human`] (for people, with
//! the source line and caret), [`github`] (workflow annotations), [`markdown`] (a
//! step summary), [`sarif`] (code scanning), and the JSON envelope here; and
//! [`gate`], the emitters of `kvlower gate`'s streamed verdicts (its problems come as
//! findings, written by these same renderers).
//!
//! The stream policy (docs/output.md, "Streams"; the same for every command) is
//! written once, in [`outcome::render`]: every command returns an [`Outcome`] and
//! `lib.rs` renders it there.
//!
//! Text that came from input files (YAML values, file names) is escaped
//! before it is printed: control characters in human output
//! ([`escape_control`]), and `|` and line breaks in Markdown ([`md_cell`]).

use std::io::IsTerminal;

use kvlower_codes::Finding;
use serde::Serialize;

use crate::Exit;

pub mod gate;
pub mod github;
pub mod human;
pub mod markdown;
pub mod outcome;
pub mod sarif;

pub use github::github_annotation;
pub use human::render_human;
pub use markdown::{markdown_findings, md_cell, md_code};
pub use outcome::{Form, Outcome, Payload, Screen, Style, Text, render};
pub use sarif::{CODES_DOC, sarif};

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

impl<'a> From<&'a Finding> for JsonDiagnostic<'a> {
    fn from(d: &'a Finding) -> Self {
        JsonDiagnostic {
            file: &d.file,
            line: d.line(),
            column: d.column(),
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
    diagnostics: &[Finding],
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(escape_control("a\x1b[2Jb\r\n"), "a\\u{1b}[2Jb\\r\\n");
        assert_eq!(escape_control("plain"), "plain");
    }
}
