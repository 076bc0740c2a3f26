//! `kvlower codes` and `kvlower explain-code CODE`: the stable diagnostic codes.

use std::io::Write;

use kvlower_load::Code;

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct CodesArgs {}

#[derive(Debug, clap::Args)]
pub struct ExplainCodeArgs {
    /// A diagnostic code, e.g. anchor-incomplete
    pub code: String,
}

pub fn run_codes(
    _args: &CodesArgs,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    for code in Code::ALL {
        writeln!(out, "{:<26} {}", code.as_str(), code.explanation())?;
    }
    Ok(Exit::Success)
}

pub fn run_explain_code(
    args: &ExplainCodeArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    if let Some(code) = Code::ALL.iter().find(|c| c.as_str() == args.code) {
        writeln!(out, "{}: {}", code.as_str(), code.explanation())?;
        return Ok(Exit::Success);
    }
    let closest = Code::ALL
        .iter()
        .map(|c| (strsim::jaro_winkler(&args.code, c.as_str()), c.as_str()))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    write!(err, "error: unknown diagnostic code `{}`", args.code)?;
    match closest {
        Some((score, name)) if score > 0.8 => writeln!(err, "; did you mean `{name}`?")?,
        _ => writeln!(err, "; `kvlower codes` lists them")?,
    }
    Ok(Exit::Usage)
}
