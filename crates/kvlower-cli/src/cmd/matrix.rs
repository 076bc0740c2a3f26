//! `kvlower matrix`: regenerate every result under `results/` and `schemas/`.
//!
//! Writes only when every input is valid, and the generated set as a whole, through
//! the results layout ([`crate::layout::write_set`]: staged, journaled, renamed).

use std::path::PathBuf;

use serde::Serialize;

use crate::Exit;
use crate::layout::{report_paths, write_set};
use crate::opening::{Stop, load_or_stop, stopped};
use crate::output::{Form, Format, Outcome, Payload};
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
pub struct MatrixPayload {
    pub written: Vec<String>,
    pub unchanged: usize,
    pub completed: Vec<String>,
    pub removed: Vec<String>,
}

impl Payload for MatrixPayload {
    fn human(&self) -> String {
        report_paths(&self.completed, &self.removed, &self.written)
    }
}

pub fn run(args: &MatrixArgs, ctx: &crate::ctx::Ctx) -> anyhow::Result<Outcome<MatrixPayload>> {
    let config = match crate::config::load(&args.root) {
        Ok(config) => config,
        Err(finding) => {
            let what = " in kvlower.toml; nothing written";
            return Ok(Outcome::stopped(
                "matrix",
                Form::Lines,
                vec![*finding],
                what,
            ));
        }
    };
    let repo = match load_or_stop(ctx) {
        Ok((repo, findings)) if findings.is_empty() => repo,
        loaded => {
            let stop = loaded.map_or_else(|stop| stop, |(_, findings)| Stop::Findings(findings));
            return Ok(stopped("matrix", Form::Lines, stop, "nothing written"));
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
        return Ok(Outcome::stopped(
            "matrix",
            Form::Lines,
            invalid,
            "; nothing written",
        ));
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
        return Ok(Outcome::stopped(
            "matrix",
            Form::Lines,
            refused,
            "; nothing written",
        ));
    }
    let outcome = write_set(&args.root, &files)?;
    let unchanged = files.len() - outcome.written.len();
    let summary = format!(
        "kvlower matrix: {} file(s) written, {unchanged} unchanged",
        outcome.written.len()
    );
    let payload = MatrixPayload {
        written: outcome.written,
        unchanged,
        completed: outcome.completed,
        removed: outcome.removed,
    };
    Ok(Outcome::done(
        "matrix",
        Exit::Success,
        Form::Lines,
        summary,
        payload,
    ))
}
