//! `kvlower join`: join a pre-registered claim registry to a runtime's KV event stream.
//!
//! Two forms:
//! - `kvlower join --registry R --events E --events-format vllm|sglang|trtllm
//!   [--format human|json]` judges every claim at its observation point (E is a capture
//!   file or JSON Lines). `--format vllm|...` and `--output` still work, with a note;
//! - `kvlower join --pressure-controls C` runs the soft_priority pressure controls named
//!   in `C` (original, swapped-priority and equal-priority trials) and derives the atoms.
//!
//! Exit: 0 evaluated (a claim that is not materialized is a verdict, not an error);
//! 1 malformed registry, controls or events; 2 usage, or an input that could not be
//! read (missing, unreadable, refused: not a regular file, over its cap).

use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use kvlower_join::EventFormat;
use kvlower_join::pressure::PressureReport;

use crate::Exit;
use crate::output::{Form, Format, Outcome, Payload};

/// The event formats, by the name `--events-format` takes (each `EventFormat`'s own).
const EVENT_FORMATS: [(&str, EventFormat); 3] = [
    ("vllm", EventFormat::Vllm),
    ("sglang", EventFormat::Sglang),
    ("trtllm", EventFormat::Trtllm),
];

/// The event format named `name` (one of [`EVENT_FORMATS`]; the parsers below accept
/// no other name).
fn event_format(name: &str) -> EventFormat {
    EVENT_FORMATS
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(EventFormat::Vllm, |(_, f)| f)
}

/// `--events-format`: the runtime that wrote the events.
fn events_format_parser() -> impl TypedValueParser<Value = EventFormat> {
    PossibleValuesParser::new(EVENT_FORMATS.map(|(name, _)| name)).map(|name| event_format(&name))
}

/// A value of `join --format`: the output format (as for every command), or, still
/// accepted for one release with a note, an event format (the flag used to mean them).
type FormatValue = Result<Format, EventFormat>;

/// `--format`: `human` or `json`, and the hidden deprecated event formats.
fn format_parser() -> impl TypedValueParser<Value = FormatValue> {
    let output = Format::DOCUMENT
        .iter()
        .map(|(f, _)| PossibleValue::new(f.name()));
    let legacy = EVENT_FORMATS.map(|(name, _)| PossibleValue::new(name).hide(true));
    PossibleValuesParser::new(output.chain(legacy))
        .map(|name| Format::from_name(&name).ok_or_else(|| event_format(&name)))
}

/// The two forms are an `ArgGroup`: exactly one of `--registry` (with `--events`) or
/// `--pressure-controls`. The event format alone is checked in [`run`], because the
/// deprecated `--format vllm|sglang|trtllm` may still supply it.
#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("input")
        .required(true)
        .args(["registry", "pressure_controls"])
))]
pub struct JoinArgs {
    /// Claim registry (YAML), written before the run
    #[arg(long, value_name = "FILE", requires = "events")]
    pub registry: Option<PathBuf>,
    /// Runtime KV events: a capture file (`kvlower capture`) or JSON Lines
    /// (vLLM/SGLang: one EventBatch per line), told apart by content
    #[arg(long, value_name = "FILE", requires = "registry")]
    pub events: Option<PathBuf>,
    /// Event stream format
    #[arg(long, value_parser = events_format_parser(), value_name = "RUNTIME")]
    pub events_format: Option<EventFormat>,
    /// Output: human-readable text, or the JSON evidence document
    #[arg(long, value_parser = format_parser(), value_name = "FORMAT")]
    pub format: Option<FormatValue>,
    /// Deprecated spelling of --format human|json
    #[arg(long, value_parser = Format::parser(Format::DOCUMENT), hide = true)]
    pub output: Option<Format>,
    /// Pressure-controls file (YAML) for soft_priority: runs every trial it names
    #[arg(long, value_name = "FILE", conflicts_with_all = ["registry", "events", "events_format"])]
    pub pressure_controls: Option<PathBuf>,
}

/// The event format after the deprecated spellings are resolved, and the notes they
/// call for (on stderr), or why the command line is wrong.
fn resolve(args: &JoinArgs, notes: &mut Vec<String>) -> Result<Option<EventFormat>, String> {
    if args.output.is_some() {
        notes.push(
            "note: --output is deprecated; use --format human|json (as for every command)\n".into(),
        );
    }
    if args.output.is_some() && matches!(args.format, Some(Ok(_))) {
        return Err("give the output format once: --format human|json".into());
    }
    let mut events = args.events_format;
    if let Some(Err(l)) = args.format {
        if events.is_some_and(|e| e != l) {
            return Err("--format names an event format that contradicts --events-format".into());
        }
        notes.push(format!(
            "note: `--format {l}` is deprecated: --format is the output format (human|json); use --events-format {l}\n"
        ));
        events = Some(l);
    }
    Ok(events)
}

/// The output format: `json` when `--format json` (or the deprecated `--output json`)
/// is given; a result is then the evidence document (its own contract, docs/join.md)
/// and an error the shared envelope, like every command's.
pub fn output_format(args: &JoinArgs) -> Format {
    if matches!(args.format, Some(Ok(Format::Json))) || args.output == Some(Format::Json) {
        Format::Json
    } else {
        Format::Human
    }
}

/// What `join` reports: the join of a registry and its events, or the pressure
/// controls' trials.
#[derive(Debug, serde::Serialize)]
#[serde(untagged)]
pub enum JoinDocument {
    Join(Box<kvlower_join::JoinReport>),
    Pressure(PressureReport),
}

impl Payload for JoinDocument {
    fn human(&self) -> String {
        match self {
            JoinDocument::Join(r) => crate::human::join(r),
            JoinDocument::Pressure(r) => crate::human::pressure(r),
        }
    }
    fn own_json(&self) -> Option<String> {
        serde_json::to_string_pretty(self)
            .ok()
            .map(|doc| doc + "\n")
    }
}

pub fn run(args: &JoinArgs) -> anyhow::Result<Outcome<JoinDocument>> {
    let mut notes = Vec::new();
    let resolved = resolve(args, &mut notes);
    let outcome = judged(args, resolved)?;
    Ok(outcome.with_notes(notes))
}

fn judged(
    args: &JoinArgs,
    resolved: Result<Option<EventFormat>, String>,
) -> anyhow::Result<Outcome<JoinDocument>> {
    let done = |document| {
        Outcome::done(
            "join",
            Exit::Success,
            Form::Document,
            "kvlower join: joined".into(),
            document,
        )
    };
    let events_format = match resolved {
        Ok(v) => v,
        Err(e) => return Ok(Outcome::error("join", Exit::Usage, &e)),
    };
    if let Some(controls) = &args.pressure_controls {
        if events_format.is_some() {
            let message = "--pressure-controls names its own event formats";
            return Ok(Outcome::error("join", Exit::Usage, message));
        }
        return Ok(match kvlower_join::pressure::run_controls(controls) {
            Ok(report) => done(JoinDocument::Pressure(report)),
            Err(e) => refused(&e),
        });
    }
    // The group makes --registry (with --events) present whenever --pressure-controls
    // is not; the event format may come from the deprecated --format spelling.
    let (Some(registry), Some(events), Some(format)) =
        (&args.registry, &args.events, events_format)
    else {
        let message = "kvlower join --registry needs --events-format vllm|sglang|trtllm \
                       (the runtime that wrote the events; docs/join.md)";
        return Ok(Outcome::error("join", Exit::Usage, message));
    };
    Ok(match kvlower_join::join_paths(registry, events, format) {
        Ok(report) => done(JoinDocument::Join(Box::new(report))),
        Err(e) => refused(&e),
    })
}

/// A join error as its coded finding (`JoinError::finding`): under `--format json` the
/// shared envelope with the finding, otherwise `error[code]: ...` on stderr. The exit
/// follows from the code: 2 for an input that could not be read, 1 for one read and
/// found malformed.
fn refused(e: &kvlower_join::JoinError) -> Outcome<JoinDocument> {
    let finding = e.finding();
    let message = e.to_string();
    let human = format!(
        "error[{}]: {}\n",
        finding.code,
        crate::output::escape_control(&message)
    );
    let summary = format!("kvlower join: {message}");
    let mut outcome = Outcome::refused("join", finding, summary, human);
    outcome.error = Some(message);
    outcome
}
