//! `kvlower bad-lowering`: run the bad-lowering counterexamples of
//! `bad_lowering/*.yaml` through the real checker and gate and write
//! `results/bad-lowering-counterexamples.{md,json}`.
//!
//! The suite's bridge to `kvlower-audit` for every other command is
//! [`crate::suites`].

use std::io::Write;
use std::path::PathBuf;

use kvlower_audit::BAD_LOWERING_DIR;

use crate::Exit;
use crate::generated::GeneratedFile;
use crate::layout::{WriteOutcome, report_outcome, write_set};
use crate::opening::{Stop, load_or_stop, report_stop};
use crate::output::outcome::{Outcome, Payload, emit};
use crate::output::{Format, report_error};
use crate::suites::read_cases;

#[derive(Debug, clap::Args)]
pub struct BadLoweringArgs {
    /// Repository root holding modes/, capabilities/, bad_lowering/ and results/
    /// [default: the nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
    /// Output format (`json`: the shared envelope, the cases as its payload)
    #[arg(long, value_parser = Format::parser(Format::SIMPLE), default_value_t = Format::Human)]
    pub format: Format,
}

/// The `payload` of `bad-lowering --format json`.
#[derive(Debug, serde::Serialize)]
struct SuitePayload<'a> {
    /// Result files replaced, relative to the root.
    written: &'a [String],
    /// Every case with its expected and actual outcome.
    cases: &'a [kvlower_audit::bad_lowering::CaseResult],
    /// What [`write_set`] did, for the human text.
    #[serde(skip)]
    outcome: &'a WriteOutcome,
}

impl Payload for SuitePayload<'_> {
    /// The files written, then one line per case.
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        report_outcome(self.outcome, out)?;
        for c in self.cases {
            writeln!(
                out,
                "{} {}: expected {}, got {}",
                if c.pass { "ok  " } else { "FAIL" },
                c.id,
                c.expected
                    .map_or("(unreadable)".to_string(), |e| e.to_string()),
                c.actual
            )?;
        }
        Ok(())
    }
}

pub fn run(
    args: &BadLoweringArgs,
    ctx: &crate::ctx::Ctx,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    let repo = match load_or_stop(ctx) {
        Ok((repo, findings)) if findings.is_empty() => repo,
        loaded => {
            let stop = match loaded {
                Ok((_, findings)) => Stop::Findings(findings),
                Err(stop) => stop,
            };
            let exit = report_stop(
                args.format,
                "bad-lowering",
                stop,
                "nothing written",
                out,
                err,
            )?;
            return Ok(exit);
        }
    };
    // The load's environment (the run's `Ctx`): what loading re-ran is not re-run.
    let env = ctx.env();
    let cases = read_cases(&repo.root).unwrap_or_default();
    if cases.is_empty() {
        let message = format!(
            "no counterexamples found in {}",
            repo.root.join(BAD_LOWERING_DIR).display()
        );
        report_error(args.format, "bad-lowering", Exit::Usage, &message, out, err)?;
        return Ok(Exit::Usage);
    }
    let suite = kvlower_audit::bad_lowering::run(&repo.catalog, &cases, env);
    let files = [
        GeneratedFile {
            path: kvlower_audit::BAD_LOWERING_JSON,
            contents: suite.json(),
        },
        GeneratedFile {
            path: kvlower_audit::BAD_LOWERING_MD,
            contents: suite.markdown(),
        },
    ];
    let refused = crate::write_guard::generated_set(&args.root, "bad-lowering", &files);
    if !refused.is_empty() {
        let stopped = Outcome::<()>::stopped("bad-lowering", refused, "; nothing written");
        return Ok(emit(args.format, &stopped, out, err)?);
    }
    let outcome = write_set(&args.root, &files)?;
    let done = Outcome {
        command: "bad-lowering",
        exit: if suite.failures().is_empty() {
            Exit::Success
        } else {
            Exit::Findings
        },
        findings: Vec::new(),
        error: None,
        summary: format!("kvlower bad-lowering: {}", suite.summary()),
        payload: Some(SuitePayload {
            written: &outcome.written,
            cases: &suite.cases,
            outcome: &outcome,
        }),
    };
    Ok(emit(args.format, &done, out, err)?)
}
