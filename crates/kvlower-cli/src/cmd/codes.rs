//! `kvlower codes` and `kvlower explain-code CODE`: the stable diagnostic codes.

use kvlower_codes::Code;

use serde::Serialize;

use crate::Exit;
use crate::output::{Form, Format, Outcome, Payload};

#[derive(Debug, clap::Args)]
pub struct CodesArgs {
    /// Output format (`json`: the shared envelope, the codes as its payload)
    #[arg(long, value_parser = Format::parser(Format::SHARED), default_value_t = Format::Human)]
    pub format: Format,
}

#[derive(Debug, clap::Args)]
pub struct ExplainCodeArgs {
    /// A diagnostic code, e.g. anchor-incomplete
    pub code: String,
    /// Output format (`json`: the shared envelope, the code as its payload)
    #[arg(long, value_parser = Format::parser(Format::SHARED), default_value_t = Format::Human)]
    pub format: Format,
}

/// One code in the JSON payload.
#[derive(Debug, Serialize)]
pub struct JsonCode {
    #[serde(skip)]
    of: Code,
    code: &'static str,
    severity: &'static str,
    explanation: &'static str,
    what: &'static str,
    why: &'static str,
    example: &'static str,
    fix: &'static str,
}

fn json_code(c: Code) -> JsonCode {
    let doc = c.doc();
    JsonCode {
        of: c,
        code: c.name(),
        severity: c.severity().name(),
        explanation: c.explanation(),
        what: doc.what,
        why: doc.why,
        example: doc.example,
        fix: doc.fix,
    }
}

/// `explain-code CODE` for people: `code: what` (the one-line summary; a warning
/// says so), then why / example / fix.
pub fn code_text(c: Code) -> String {
    let doc = c.doc();
    let warning = if c.severity() == kvlower_codes::Severity::Warning {
        " (a warning: `check` fails on it only with --deny-warnings)"
    } else {
        ""
    };
    format!(
        "{}: {}{warning}\n\nWhy:     {}\nExample: {}\nFix:     {}\n",
        c.name(),
        doc.what,
        doc.why,
        doc.example,
        doc.fix
    )
}

/// docs/diagnostic-codes.md: every code with what / why / example / fix (the
/// help text of `check --format sarif`; a test keeps the file equal to this).
pub fn codes_markdown() -> String {
    let mut s = String::from(
        "# Diagnostic codes\n\nGenerated from `crates/kvlower-codes/src/code_doc.rs` (`kvlower explain-code CODE` prints the same).\n\
         Warnings (inert evidence) fail `kvlower check` only with `--deny-warnings`.\n",
    );
    for c in Code::ALL {
        let doc = c.doc();
        s.push_str(&format!(
            "\n## {}\n\n*{}.* {}\n\n- **Why:** {}\n- **Example:** {}\n- **Fix:** {}\n",
            c.name(),
            c.severity(),
            doc.what,
            doc.why,
            doc.example,
            doc.fix
        ));
    }
    s
}

/// `kvlower codes`: every code, one line each (`(warning)` before a warning's).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct CodeList(Vec<JsonCode>);

impl Payload for CodeList {
    fn human(&self) -> String {
        let mut text = String::new();
        for c in &self.0 {
            let tag = if c.of.severity() == kvlower_codes::Severity::Warning {
                "(warning) "
            } else {
                ""
            };
            text.push_str(&format!("{:<26} {tag}{}\n", c.code, c.explanation));
        }
        text
    }
    fn markdown(&self) -> String {
        self.human()
    }
}

impl Payload for JsonCode {
    fn human(&self) -> String {
        code_text(self.of)
    }
    fn markdown(&self) -> String {
        self.human()
    }
}

pub fn run_codes(_args: &CodesArgs) -> anyhow::Result<Outcome<CodeList>> {
    let summary = format!("kvlower codes: {} code(s)", Code::ALL.len());
    let payload = CodeList(Code::ALL.iter().map(|c| json_code(*c)).collect());
    Ok(Outcome::done(
        "codes",
        Exit::Success,
        Form::Document,
        summary,
        payload,
    ))
}

pub fn run_explain_code(args: &ExplainCodeArgs) -> anyhow::Result<Outcome<JsonCode>> {
    if let Some(code) = Code::ALL.iter().find(|c| c.name() == args.code) {
        let summary = format!("kvlower explain-code: {}", code.name());
        let payload = json_code(*code);
        return Ok(Outcome::done(
            "explain-code",
            Exit::Success,
            Form::Document,
            summary,
            payload,
        ));
    }
    let closest = Code::ALL
        .iter()
        .map(|c| (strsim::jaro_winkler(&args.code, c.name()), c.name()))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let shown = crate::output::escape_control(&args.code);
    let message = match closest {
        Some((score, name)) if score > 0.8 => {
            format!("unknown diagnostic code `{shown}`; did you mean `{name}`?")
        }
        _ => format!("unknown diagnostic code `{shown}`; `kvlower codes` lists them"),
    };
    Ok(Outcome::error("explain-code", Exit::Usage, &message))
}
