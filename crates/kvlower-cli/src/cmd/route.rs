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

use std::io::Write;
use std::path::PathBuf;

use crate::Exit;
use crate::output::Format;

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

pub fn run(args: &RouteArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    match kvlower_route::evaluate_path(&args.trace) {
        Ok(report) => {
            match args.format {
                // Only `human` and `json` parse here (`Format::DOCUMENT`).
                Format::Human | Format::Github | Format::Markdown | Format::Sarif => {
                    write!(out, "{}", crate::human::route(&report))?
                }
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
            }
            if args.fail_on.is_some() && !report.pass {
                return Ok(Exit::Findings);
            }
            Ok(Exit::Success)
        }
        Err(e) if args.format == Format::Json => {
            // A trace or registry that could not be judged: the shared envelope, with
            // the error as a coded finding (exit 2 unread, 1 malformed).
            let finding = e.finding();
            let exit = Exit::of_codes([finding.code]);
            let message = e.to_string();
            let summary = format!("kvlower route: {message}");
            let doc = crate::output::envelope_json::<()>(
                "route",
                exit,
                &summary,
                std::slice::from_ref(&finding),
                None,
                None,
            );
            write!(out, "{doc}")?;
            Ok(exit)
        }
        Err(e) => {
            writeln!(err, "error[{}]: {e}", e.code())?;
            writeln!(err, "  expected: {}", e.expected())?;
            writeln!(err, "  hint: {}", e.hint())?;
            // A trace or registry that could not be read exits 2, a malformed one 1.
            Ok(Exit::of_codes([e.code()]))
        }
    }
}
