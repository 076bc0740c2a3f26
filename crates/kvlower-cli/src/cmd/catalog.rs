//! `kvlower catalog diff`: the loaded `modes/modes.yaml` against the built-in
//! baseline, one line per difference, so a reviewer of a catalog change sees
//! exactly what moved. (The catalog pin of `results/lowering-matrix.json` that
//! `kvlower check` verifies is `crate::pin`.)

use std::io::Write;
use std::path::PathBuf;

use kvlower_core::baseline::{CatalogChange, Direction};
use kvlower_load::{MODES_PATH, read_catalog};
use serde::Serialize;

use crate::Exit;
use crate::opening::report_findings_stop;
use crate::output::{Outcome, Payload, ReportOptions, report};
use crate::pin::short;
use crate::results::CatalogPin;

#[derive(Debug, clap::Args)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: CatalogCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// Print modes/modes.yaml against the built-in baseline, one line per difference
    Diff(DiffArgs),
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// Repository root holding modes/modes.yaml
    /// [default: the nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
    #[command(flatten)]
    pub report: ReportOptions,
}

pub fn run(args: &CatalogArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    match &args.command {
        CatalogCommand::Diff(a) => diff(a, out, err),
    }
}

#[derive(Debug, Serialize)]
struct JsonChange<'a> {
    direction: Direction,
    path: &'a str,
    line: Option<usize>,
    column: Option<usize>,
    what: &'a str,
    item: &'a str,
    source: &'a str,
}

fn diff(args: &DiffArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let mut diagnostics = Vec::new();
    let Some((catalog, src)) = read_catalog(&args.root, &mut diagnostics) else {
        let not_done = "no catalog to compare";
        return Ok(report_findings_stop(
            &args.report,
            "catalog diff",
            diagnostics,
            not_done,
            out,
            err,
        )?);
    };
    let changes = catalog.changes();
    let located: Vec<(&CatalogChange, Option<(usize, usize)>)> = changes
        .iter()
        .map(|c| (c, kvlower_load::catalog_location(&src, &c.path)))
        .collect();
    let count = |d: Direction| changes.iter().filter(|c| c.direction == d).count();
    let (weakened, strengthened, neutral) = (
        count(Direction::Weakened),
        count(Direction::Strengthened),
        count(Direction::Neutral),
    );
    let pin = CatalogPin::of(&catalog);
    let summary = if changes.is_empty() {
        format!(
            "{MODES_PATH} equals the built-in baseline ({})",
            short(&pin.digest)
        )
    } else {
        format!(
            "{MODES_PATH} against the built-in baseline: {weakened} weakened, {strengthened} strengthened, {neutral} neutral"
        )
    };
    let exit = if weakened == 0 {
        Exit::Success
    } else {
        Exit::Findings
    };
    let payload = DiffPayload {
        digest: &pin.digest,
        baseline_digest: &pin.baseline_digest,
        equals_baseline: pin.equals_baseline,
        changes: located
            .iter()
            .map(|(c, at)| JsonChange {
                direction: c.direction,
                path: &c.path,
                line: at.map(|l| l.0),
                column: at.map(|l| l.1),
                what: &c.what,
                item: &c.item,
                source: c.source,
            })
            .collect(),
        located: &located,
    };
    let outcome = Outcome {
        command: "catalog diff",
        exit,
        findings: Vec::new(),
        summary,
        error: None,
        payload: Some(payload),
    };
    report(&args.report, &outcome, out, err)?;
    Ok(exit)
}

/// The payload of `catalog diff --format json` (the envelope's `summary`, `ok` and
/// `exit_code` say whether anything was weakened), and its human and Markdown text.
#[derive(Serialize)]
struct DiffPayload<'a> {
    digest: &'a str,
    baseline_digest: &'a str,
    equals_baseline: bool,
    changes: Vec<JsonChange<'a>>,
    /// The changes with where they are in the catalog, for the text.
    #[serde(skip)]
    located: &'a [(&'a CatalogChange, Option<(usize, usize)>)],
}

impl Payload for DiffPayload<'_> {
    /// One line per change: `modes/modes.yaml:LINE:COL: change`.
    fn human(&self, out: &mut dyn Write) -> std::io::Result<()> {
        for (c, at) in self.located {
            let at = at.map_or(String::new(), |(l, col)| format!(":{l}:{col}"));
            writeln!(out, "{MODES_PATH}{at}: {c}")?;
        }
        Ok(())
    }

    /// A table of the changes (none when there are none).
    fn markdown(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.located.is_empty() {
            return Ok(());
        }
        writeln!(out, "| line | direction | where | change | source |")?;
        writeln!(out, "|---|---|---|---|---|")?;
        for (c, at) in self.located {
            writeln!(
                out,
                "| {} | {} | {} | {} {} | {} |",
                at.map_or("—".to_string(), |l| l.0.to_string()),
                direction_word(c.direction),
                crate::output::md_code(&c.path),
                crate::output::md_cell(&c.what),
                crate::output::md_code(&c.item),
                crate::output::md_cell(c.source)
            )?;
        }
        Ok(())
    }
}

fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Weakened => "weakened",
        Direction::Strengthened => "strengthened",
        Direction::Neutral => "neutral",
    }
}
