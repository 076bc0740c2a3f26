//! `kvlower matrix`: regenerate every result under `results/` and `schemas/`.
//!
//! Writes only when every input is valid, and the generated set as a whole, through
//! the results layout ([`crate::layout::write_set`]: staged, journaled, renamed).

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::Exit;
use crate::layout::{WriteOutcome, report_outcome, write_set};
use crate::opening::{Stop, load_or_stop, report_stop};
use crate::output::Format;
use crate::output::outcome::{Outcome, Payload, emit};
use crate::results::generate_in;

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
    /// What [`write_set`] did, for the human text.
    #[serde(skip)]
    pub outcome: &'a WriteOutcome,
}

impl Payload for MatrixPayload<'_> {
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        report_outcome(self.outcome, out)
    }
}

pub fn run(
    args: &MatrixArgs,
    ctx: &crate::ctx::Ctx,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    let config = match crate::config::load(&args.root) {
        Ok(config) => config,
        Err(finding) => {
            let what = " in kvlower.toml; nothing written";
            let stopped = Outcome::<()>::stopped("matrix", vec![*finding], what);
            return Ok(emit(args.format, &stopped, out, err)?);
        }
    };
    let repo = match load_or_stop(ctx) {
        Ok((repo, findings)) if findings.is_empty() => repo,
        // Invalid inputs, in human text: the findings, then `nothing written` (the
        // summary with the count is the envelope's only).
        Err(Stop::Findings(findings)) if args.format != Format::Json => {
            for d in &findings {
                writeln!(err, "{d}")?;
            }
            writeln!(err, "kvlower matrix: nothing written")?;
            return Ok(Exit::stopped_by(&findings));
        }
        loaded => {
            let stop = loaded.map_or_else(|stop| stop, |(_, findings)| Stop::Findings(findings));
            let exit = report_stop(args.format, "matrix", stop, "nothing written", out, err)?;
            return Ok(exit);
        }
    };
    // Invalid means one thing (crate::validity): a descriptor `check` counts invalid
    // for a judged row stops matrix as a loading finding does, before anything is written.
    // The load's environment (the run's `Ctx`): what loading re-ran is not re-run.
    let env = ctx.env();
    let rows = crate::results::judge_rows(&repo, env);
    let invalid = crate::validity::findings(
        &repo.root,
        &repo.descriptors,
        &rows,
        config.check.require_verified,
    );
    if !invalid.is_empty() {
        let stopped = Outcome::<()>::stopped("matrix", invalid, "; nothing written");
        return Ok(emit(args.format, &stopped, out, err)?);
    }
    let files = generate_in(&repo, &config, &rows, env).files;
    drop(rows);
    // A link where it writes, or a file `check` would refuse to read back: nothing written.
    let mut refused = crate::write_guard::generated_set(&args.root, "matrix", &files);
    // A README it cannot read would silently keep its old table (crate::readme::refusal).
    if config.keeps(crate::readme::README) {
        refused.extend(crate::readme::refusal(&args.root));
    }
    if !refused.is_empty() {
        let stopped = Outcome::<()>::stopped("matrix", refused, "; nothing written");
        return Ok(emit(args.format, &stopped, out, err)?);
    }
    let outcome = write_set(&args.root, &files)?;
    let unchanged = files.len() - outcome.written.len();
    let done = Outcome {
        command: "matrix",
        exit: Exit::Success,
        findings: Vec::new(),
        error: None,
        summary: format!(
            "kvlower matrix: {} file(s) written, {unchanged} unchanged",
            outcome.written.len()
        ),
        payload: Some(MatrixPayload {
            written: &outcome.written,
            unchanged,
            completed: &outcome.completed,
            removed: &outcome.removed,
            outcome: &outcome,
        }),
    };
    Ok(emit(args.format, &done, out, err)?)
}
