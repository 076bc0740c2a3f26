//! `kvlower bad-lowering`: run the bad-lowering counterexamples of
//! `bad_lowering/*.yaml` through the real checker and gate and write
//! `results/bad-lowering-counterexamples.{md,json}`.
//!
//! The suite's bridge to `kvlower-audit` for every other command is
//! [`crate::suites`].

use std::path::PathBuf;

use kvlower_audit::BAD_LOWERING_DIR;

use crate::Exit;
use crate::generated::GeneratedFile;
use crate::layout::{report_paths, write_set};
use crate::opening::{Stop, load_or_stop, stopped};
use crate::output::{Form, Format, Outcome, Payload};
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
pub struct SuitePayload {
    written: Vec<String>,
    cases: Vec<kvlower_audit::bad_lowering::CaseResult>,
    #[serde(skip)]
    completed: Vec<String>,
    #[serde(skip)]
    removed: Vec<String>,
}

impl Payload for SuitePayload {
    fn human(&self) -> String {
        let mut text = report_paths(&self.completed, &self.removed, &self.written);
        for c in &self.cases {
            text.push_str(&format!(
                "{} {}: expected {}, got {}\n",
                if c.pass { "ok  " } else { "FAIL" },
                c.id,
                c.expected
                    .map_or("(unreadable)".to_string(), |e| e.to_string()),
                c.actual
            ));
        }
        text
    }
}

pub fn run(args: &BadLoweringArgs, ctx: &crate::ctx::Ctx) -> anyhow::Result<Outcome<SuitePayload>> {
    let repo = match load_or_stop(ctx) {
        Ok((repo, findings)) if findings.is_empty() => repo,
        loaded => {
            let stop = match loaded {
                Ok((_, findings)) => Stop::Findings(findings),
                Err(stop) => stop,
            };
            return Ok(stopped(
                "bad-lowering",
                Form::Lines,
                stop,
                "nothing written",
            ));
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
        return Ok(Outcome::error("bad-lowering", Exit::Usage, &message));
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
        let what = "; nothing written";
        return Ok(Outcome::stopped("bad-lowering", Form::Lines, refused, what));
    }
    let outcome = write_set(&args.root, &files)?;
    let exit = if suite.failures().is_empty() {
        Exit::Success
    } else {
        Exit::Findings
    };
    let summary = format!("kvlower bad-lowering: {}", suite.summary());
    let payload = SuitePayload {
        written: outcome.written,
        cases: suite.cases,
        completed: outcome.completed,
        removed: outcome.removed,
    };
    Ok(Outcome::done(
        "bad-lowering",
        exit,
        Form::Lines,
        summary,
        payload,
    ))
}
