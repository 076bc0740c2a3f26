//! Output formats and colour shared by the subcommands that report findings.

use std::io::{IsTerminal, Write};

use kvlower_load::Diagnostic;
use serde::Serialize;

use crate::results::SCHEMA_VERSION;

/// How a report is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// For people: `file:line:col: error[code]: message` and hints
    Human,
    /// One JSON document on stdout, with a `schema_version`
    Json,
    /// GitHub Actions `::error` annotations, then the human report
    Github,
    /// A Markdown summary, e.g. for `$GITHUB_STEP_SUMMARY`
    Markdown,
}

/// Whether to colour human output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// Colour when stderr is a terminal and NO_COLOR is unset
    Auto,
    Always,
    Never,
}

impl ColorChoice {
    /// Resolves `auto` against NO_COLOR (any non-empty value disables) and the terminal.
    pub fn enabled(self) -> bool {
        match self {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => {
                std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                    && std::io::stderr().is_terminal()
            }
        }
    }
}

/// Options every reporting subcommand takes.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportOptions {
    /// Output format
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Colour for human output (honours NO_COLOR)
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only the summary line
    #[arg(short, long)]
    pub quiet: bool,
}

/// A diagnostic as JSON (part of the `--format json` contract).
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic<'a> {
    pub file: &'a str,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub code: &'static str,
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
            code: d.code.as_str(),
            yaml_path: &d.yaml_path,
            message: &d.message,
            hint: d.hint.as_deref(),
        }
    }
}

/// Prints findings and the summary line in the chosen format.
pub fn report(
    opts: &ReportOptions,
    command: &str,
    diagnostics: &[Diagnostic],
    summary: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    match opts.format {
        Format::Json => {
            #[derive(Serialize)]
            struct Doc<'a> {
                schema_version: u32,
                command: &'a str,
                ok: bool,
                summary: &'a str,
                findings: Vec<JsonDiagnostic<'a>>,
            }
            let doc = Doc {
                schema_version: SCHEMA_VERSION,
                command,
                ok: diagnostics.is_empty(),
                summary,
                findings: diagnostics.iter().map(JsonDiagnostic::from).collect(),
            };
            write!(out, "{}", crate::results::to_json(&doc))
        }
        Format::Markdown => {
            writeln!(out, "### kvlower {command}\n")?;
            writeln!(out, "{summary}\n")?;
            if !diagnostics.is_empty() && !opts.quiet {
                writeln!(out, "| file | line | code | finding |\n|---|---|---|---|")?;
                for d in diagnostics {
                    let line = d
                        .location
                        .map_or(String::new(), |l| format!("{}:{}", l.0, l.1));
                    let mut finding = d.message.replace('|', "\\|");
                    if !d.yaml_path.is_empty() {
                        finding.push_str(&format!(" (at `{}`)", d.yaml_path));
                    }
                    if let Some(h) = &d.hint {
                        finding.push_str(&format!("<br>hint: {}", h.replace('|', "\\|")));
                    }
                    writeln!(
                        out,
                        "| `{}` | {} | `{}` | {} |",
                        d.file, line, d.code, finding
                    )?;
                }
            }
            Ok(())
        }
        Format::Github | Format::Human => {
            if opts.format == Format::Github {
                for d in diagnostics {
                    writeln!(out, "{}", github_annotation(d))?;
                }
            }
            if !opts.quiet {
                let color = opts.color.enabled();
                for d in diagnostics {
                    writeln!(err, "{}", paint(&d.to_string(), color))?;
                }
            }
            writeln!(out, "{summary}")
        }
    }
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
    let mut props = format!("file={}", prop(&d.file));
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
    format!("::error {props}::{}", data(&message))
}

/// Colours the `error[...]` tag red and hints cyan.
fn paint(text: &str, color: bool) -> String {
    if !color {
        return text.to_string();
    }
    text.replacen("error[", "\x1b[1;31merror\x1b[0m[", 1)
        .replacen("\n  hint:", "\n  \x1b[36mhint\x1b[0m:", 1)
}
