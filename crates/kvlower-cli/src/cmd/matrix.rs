//! `kvlower matrix`: regenerate every result under `results/` and `schemas/`.
//!
//! Writes only when every input is valid, and the generated set as a whole, through
//! the results layout ([`crate::layout::write_set`]: staged, journaled, renamed).

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::Exit;
use crate::layout::{report_outcome, write_set};
use crate::opening::{Stop, load_or_stop, report_stop};
use crate::output::{Format, envelope_json};
use crate::results::generate;

#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// Repository root holding modes/, capabilities/ and results/
    /// [default: the nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
    /// Output format (`json`: the shared envelope, the files written as its payload)
    #[arg(long, value_parser = Format::parser(Format::SIMPLE), default_value_t = Format::Human)]
    pub format: Format,
}

/// The `payload` of `matrix --format json`: what [`write_set`] did.
#[derive(Debug, Serialize)]
pub struct MatrixPayload<'a> {
    /// Files replaced, relative to the root.
    pub written: &'a [String],
    /// How many generated files were already up to date.
    pub unchanged: usize,
    /// Files an interrupted earlier run had staged, renamed into place now.
    pub completed: &'a [String],
    /// Leftover temporary files of an earlier run, removed.
    pub removed: &'a [String],
}

pub fn run(args: &MatrixArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let json = args.format == Format::Json;
    let config = match crate::config::load(&args.root) {
        Ok(config) => config,
        Err(finding) => {
            let summary = "kvlower matrix: 1 finding(s) in kvlower.toml; nothing written";
            let findings = [*finding];
            let exit = Exit::stopped_by(&findings);
            if json {
                write!(
                    out,
                    "{}",
                    envelope_json::<()>("matrix", exit, summary, &findings, None, None)
                )?;
            } else {
                print_findings(err, &findings)?;
                writeln!(err, "{summary}")?;
            }
            return Ok(exit);
        }
    };
    let repo = match load_or_stop(&args.root) {
        Ok((repo, findings)) if findings.is_empty() => repo,
        Ok((_, findings)) => {
            let stop = Stop::Findings(findings);
            return Ok(report_stop(
                args.format,
                "matrix",
                &stop,
                "nothing written",
                out,
                err,
            )?);
        }
        // Invalid inputs: the findings, then `nothing written` (the summary is the
        // envelope's only).
        Err(Stop::Findings(findings)) if !json => {
            print_findings(err, &findings)?;
            writeln!(err, "kvlower matrix: nothing written")?;
            return Ok(Exit::stopped_by(&findings));
        }
        Err(stop) => {
            return Ok(report_stop(
                args.format,
                "matrix",
                &stop,
                "nothing written",
                out,
                err,
            )?);
        }
    };
    let files = generate(&repo, &config).files;
    let outcome = write_set(&args.root, &files)?;
    let unchanged = files.len() - outcome.written.len();
    let summary = format!(
        "kvlower matrix: {} file(s) written, {unchanged} unchanged",
        outcome.written.len()
    );
    if json {
        let payload = MatrixPayload {
            written: &outcome.written,
            unchanged,
            completed: &outcome.completed,
            removed: &outcome.removed,
        };
        write!(
            out,
            "{}",
            envelope_json("matrix", Exit::Success, &summary, &[], None, Some(payload))
        )?;
    } else {
        report_outcome(&outcome, out)?;
        writeln!(out, "{summary}")?;
    }
    Ok(Exit::Success)
}

fn print_findings(
    err: &mut dyn Write,
    diagnostics: &[kvlower_codes::Finding],
) -> std::io::Result<()> {
    for d in diagnostics {
        writeln!(err, "{d}")?;
    }
    Ok(())
}
