//! `kvlower catalog diff`: the loaded `modes/modes.yaml` against the built-in
//! baseline, one line per difference, so a reviewer of a catalog change sees
//! exactly what moved. (The catalog pin of `results/lowering-matrix.json` that
//! `kvlower check` verifies is `crate::pin`.)

use std::path::PathBuf;

use kvlower_core::baseline::{CatalogChange, Direction};
use kvlower_load::{MODES_PATH, read_catalog};
use serde::Serialize;

use crate::Exit;
use crate::opening::stopped_by;
use crate::output::{Form, Outcome, Payload, ReportOptions, Style};
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

pub fn run(args: &CatalogArgs) -> anyhow::Result<Outcome<DiffPayload>> {
    match &args.command {
        CatalogCommand::Diff(a) => diff(a),
    }
}

/// How the verb asked for its outcome to be shown.
pub fn style(args: &CatalogArgs) -> Style {
    match &args.command {
        CatalogCommand::Diff(a) => (&a.report).into(),
    }
}

#[derive(Debug, Serialize)]
struct JsonChange {
    direction: Direction,
    path: String,
    line: Option<usize>,
    column: Option<usize>,
    what: String,
    item: String,
    source: String,
}

fn diff(args: &DiffArgs) -> anyhow::Result<Outcome<DiffPayload>> {
    let mut diagnostics = Vec::new();
    let Some((catalog, src)) = read_catalog(&args.root, &mut diagnostics) else {
        let not_done = "no catalog to compare";
        return Ok(stopped_by(
            "catalog diff",
            Form::Report,
            diagnostics,
            not_done,
        ));
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
        digest: pin.digest.clone(),
        baseline_digest: pin.baseline_digest.clone(),
        equals_baseline: pin.equals_baseline,
        changes: located
            .iter()
            .map(|(c, at)| JsonChange {
                direction: c.direction,
                path: c.path.clone(),
                line: at.map(|l| l.0),
                column: at.map(|l| l.1),
                what: c.what.clone(),
                item: c.item.clone(),
                source: c.source.to_string(),
            })
            .collect(),
        human: human_lines(&located),
        markdown: markdown_table(&located),
    };
    Ok(Outcome::done(
        "catalog diff",
        exit,
        Form::Report,
        summary,
        payload,
    ))
}

/// The payload of `catalog diff --format json` (the envelope's `summary`, `ok` and
/// `exit_code` say whether anything was weakened), and its human and Markdown text.
#[derive(Debug, Serialize)]
pub struct DiffPayload {
    digest: String,
    baseline_digest: String,
    equals_baseline: bool,
    changes: Vec<JsonChange>,
    #[serde(skip)]
    human: String,
    #[serde(skip)]
    markdown: String,
}

impl Payload for DiffPayload {
    fn human(&self) -> String {
        self.human.clone()
    }
    fn markdown(&self) -> String {
        self.markdown.clone()
    }
}

/// One line per change: `modes/modes.yaml:LINE:COL: change`.
fn human_lines(located: &[(&CatalogChange, Option<(usize, usize)>)]) -> String {
    let mut text = String::new();
    for (c, at) in located {
        let at = at.map_or(String::new(), |(l, col)| format!(":{l}:{col}"));
        text.push_str(&format!("{MODES_PATH}{at}: {c}\n"));
    }
    text
}

/// A table of the changes (none when there are none).
fn markdown_table(located: &[(&CatalogChange, Option<(usize, usize)>)]) -> String {
    if located.is_empty() {
        return String::new();
    }
    let mut text =
        String::from("| line | direction | where | change | source |\n|---|---|---|---|---|\n");
    for (c, at) in located {
        text.push_str(&format!(
            "| {} | {} | {} | {} {} | {} |\n",
            at.map_or("—".to_string(), |l| l.0.to_string()),
            direction_word(c.direction),
            crate::output::md_code(&c.path),
            crate::output::md_cell(&c.what),
            crate::output::md_code(&c.item),
            crate::output::md_cell(c.source)
        ));
    }
    text
}

fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Weakened => "weakened",
        Direction::Strengthened => "strengthened",
        Direction::Neutral => "neutral",
    }
}
