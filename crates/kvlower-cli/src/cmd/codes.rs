//! `kvlower codes` and `kvlower explain-code CODE`: the stable diagnostic codes.

use std::io::Write;

use kvlower_codes::Code;

use serde::Serialize;

use crate::Exit;
use crate::output::{Format, envelope_json, report_error};

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
#[derive(Serialize)]
struct JsonCode {
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

pub fn run_codes(
    args: &CodesArgs,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    if args.format == Format::Json {
        let summary = format!("kvlower codes: {} code(s)", Code::ALL.len());
        let payload: Vec<JsonCode> = Code::ALL.iter().map(|c| json_code(*c)).collect();
        write!(
            out,
            "{}",
            envelope_json("codes", Exit::Success, &summary, &[], None, Some(payload))
        )?;
        return Ok(Exit::Success);
    }
    for code in Code::ALL {
        let tag = if code.severity() == kvlower_codes::Severity::Warning {
            "(warning) "
        } else {
            ""
        };
        writeln!(out, "{:<26} {tag}{}", code.name(), code.explanation())?;
    }
    Ok(Exit::Success)
}

pub fn run_explain_code(
    args: &ExplainCodeArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    if let Some(code) = Code::ALL.iter().find(|c| c.name() == args.code) {
        if args.format == Format::Json {
            let summary = format!("kvlower explain-code: {}", code.name());
            write!(
                out,
                "{}",
                envelope_json(
                    "explain-code",
                    Exit::Success,
                    &summary,
                    &[],
                    None,
                    Some(json_code(*code))
                )
            )?;
        } else {
            write!(out, "{}", code_text(*code))?;
        }
        return Ok(Exit::Success);
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
    report_error(args.format, "explain-code", Exit::Usage, &message, out, err)?;
    Ok(Exit::Usage)
}
