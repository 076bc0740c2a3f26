//! `kvlower route`: the routing gate (routing_hook evidence, docs/routing-trace.md).
//!
//! `kvlower route --trace T [--format human|json]` judges every claim of the registry the
//! trace names: whether the route cost, the placement and the later reuse are attributed
//! to that accepted claim on one fixed worker cache namespace. With `--fail-on fail` a
//! claim that does not pass makes the exit 1 (the default reports and exits 0, like
//! `join`: a failing claim is a verdict, not an error).
//!
//! Exit: 0 evaluated; 1 a malformed or invalid trace or registry (a coded diagnostic:
//! file, line:col or JSON path, expected, hint), or with `--fail-on fail` a failing claim;
//! 2 usage, or a trace or registry that could not be read (missing, refused, unreadable).

use std::path::PathBuf;

use kvlower_route::RouteReport;

use crate::Exit;
use crate::output::{Form, Format, Outcome, Payload};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Exit 1 when any registered claim fails the gate
    Fail,
}

#[derive(Debug, clap::Args)]
pub struct RouteArgs {
    /// Routing trace (JSON, docs/routing-trace.md); its `registry` is relative to its folder
    #[arg(long, value_name = "FILE")]
    pub trace: PathBuf,
    /// Output: human-readable text, or the JSON evidence document
    #[arg(long, value_parser = Format::parser(Format::DOCUMENT), default_value = "human", value_name = "FORMAT")]
    pub format: Format,
    /// Make a failing claim an exit-1 outcome
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
}

/// The route report: its text for people, its own JSON (the evidence document `check`
/// re-runs, docs/routing-trace.md) under `--format json`.
#[derive(Debug, serde::Serialize)]
#[serde(transparent)]
pub struct RouteDocument(RouteReport);

impl Payload for RouteDocument {
    fn human(&self) -> String {
        crate::human::route(&self.0)
    }
    fn own_json(&self) -> Option<String> {
        serde_json::to_string_pretty(&self.0)
            .ok()
            .map(|doc| doc + "\n")
    }
}

pub fn run(args: &RouteArgs) -> anyhow::Result<Outcome<RouteDocument>> {
    match kvlower_route::evaluate_path(&args.trace) {
        Ok(report) => {
            let exit = if args.fail_on.is_some() && !report.pass {
                Exit::Findings
            } else {
                Exit::Success
            };
            let summary = format!(
                "kvlower route: {}",
                if report.pass { "pass" } else { "fail" }
            );
            Ok(Outcome::done(
                "route",
                exit,
                Form::Document,
                summary,
                RouteDocument(report),
            ))
        }
        Err(e) => {
            // A trace or registry that could not be judged: the envelope with the error as
            // a coded finding (exit 2 unread, 1 malformed); for people, the code, what was
            // expected and what to do.
            let summary = format!("kvlower route: {e}");
            let human = format!(
                "error[{}]: {e}\n  expected: {}\n  hint: {}\n",
                e.code(),
                e.expected(),
                e.hint()
            );
            Ok(Outcome::refused("route", e.finding(), summary, human))
        }
    }
}
