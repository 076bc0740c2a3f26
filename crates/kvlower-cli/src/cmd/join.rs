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

use std::io::Write;
use std::path::PathBuf;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use kvlower_join::EventFormat;

use crate::Exit;
use crate::output::{Format, report_error};

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

/// The output and event formats after the deprecated spellings are resolved.
fn resolve(
    args: &JoinArgs,
    err: &mut dyn Write,
) -> anyhow::Result<Result<(Format, Option<EventFormat>), String>> {
    let mut output = args.output.unwrap_or_default();
    if args.output.is_some() {
        writeln!(
            err,
            "note: --output is deprecated; use --format human|json (as for every command)"
        )?;
    }
    if args.output.is_some() && matches!(args.format, Some(Ok(_))) {
        return Ok(Err(
            "give the output format once: --format human|json".into()
        ));
    }
    let mut events = args.events_format;
    let legacy = match args.format {
        None => None,
        Some(Ok(format)) => {
            output = format;
            None
        }
        Some(Err(legacy)) => Some(legacy),
    };
    if let Some(l) = legacy {
        if events.is_some_and(|e| e != l) {
            return Ok(Err(
                "--format names an event format that contradicts --events-format".into(),
            ));
        }
        writeln!(
            err,
            "note: `--format {l}` is deprecated: --format is the output format (human|json); use --events-format {l}"
        )?;
        events = Some(l);
    }
    Ok(Ok((output, events)))
}

pub fn run(args: &JoinArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    // A result is the evidence document (its own contract, docs/join.md); an error
    // under `--format json` is the shared envelope, like every command's.
    let asked_json =
        matches!(args.format, Some(Ok(Format::Json))) || args.output == Some(Format::Json);
    let fail = |exit: Exit, message: &str, out: &mut dyn Write, err: &mut dyn Write| {
        let format = if asked_json {
            Format::Json
        } else {
            Format::Human
        };
        report_error(format, "join", exit, message, out, err).map(|()| exit)
    };
    let (output, events_format) = match resolve(args, err)? {
        Ok(v) => v,
        Err(e) => return Ok(fail(Exit::Usage, &e, out, err)?),
    };
    if let Some(controls) = &args.pressure_controls {
        if events_format.is_some() {
            let message = "--pressure-controls names its own event formats";
            return Ok(fail(Exit::Usage, message, out, err)?);
        }
        return match kvlower_join::pressure::run_controls(controls) {
            Ok(report) => {
                match output {
                    // Only `human` and `json` parse here (`Format::DOCUMENT`).
                    Format::Human | Format::Github | Format::Markdown | Format::Sarif => {
                        write!(out, "{}", crate::human::pressure(&report))?
                    }
                    Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
                }
                Ok(Exit::Success)
            }
            Err(e) => Ok(fail_with(asked_json, &e, out, err)?),
        };
    }
    // The group makes --registry (with --events) present whenever --pressure-controls
    // is not; the event format may come from the deprecated --format spelling.
    let (Some(registry), Some(events), Some(format)) =
        (&args.registry, &args.events, events_format)
    else {
        let message = "kvlower join --registry needs --events-format vllm|sglang|trtllm \
                       (the runtime that wrote the events; docs/join.md)";
        return Ok(fail(Exit::Usage, message, out, err)?);
    };
    match kvlower_join::join_paths(registry, events, format) {
        Ok(report) => {
            match output {
                // Only `human` and `json` parse here (`Format::DOCUMENT`).
                Format::Human | Format::Github | Format::Markdown | Format::Sarif => {
                    write!(out, "{}", crate::human::join(&report))?
                }
                Format::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
            }
            Ok(Exit::Success)
        }
        Err(e) => Ok(fail_with(asked_json, &e, out, err)?),
    }
}

/// Reports a join error as its coded finding (`JoinError::finding`): under `--format
/// json` the shared envelope with the finding, otherwise `error[code]: ...` on stderr.
/// The exit follows from the code: 2 for an input that could not be read, 1 for one
/// read and found malformed.
fn fail_with(
    json: bool,
    e: &kvlower_join::JoinError,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<Exit> {
    let finding = e.finding();
    let exit = Exit::of_codes([finding.code]);
    let message = e.to_string();
    if !json {
        writeln!(
            err,
            "error[{}]: {}",
            finding.code,
            crate::output::escape_control(&message)
        )?;
        return Ok(exit);
    }
    let summary = format!("kvlower join: {message}");
    write!(
        out,
        "{}",
        crate::output::envelope_json::<()>(
            "join",
            exit,
            &summary,
            std::slice::from_ref(&finding),
            Some(&message),
            None
        )
    )?;
    Ok(exit)
}
