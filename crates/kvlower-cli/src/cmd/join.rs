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

use kvlower_join::EventFormat;

use crate::Exit;
use crate::output::{Format, report_error};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Vllm,
    Sglang,
    Trtllm,
}

impl From<FormatArg> for EventFormat {
    fn from(f: FormatArg) -> EventFormat {
        match f {
            FormatArg::Vllm => EventFormat::Vllm,
            FormatArg::Sglang => EventFormat::Sglang,
            FormatArg::Trtllm => EventFormat::Trtllm,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum OutputArg {
    #[default]
    Human,
    Json,
}

/// `--format`: the output format, like every other command. The event formats are
/// still accepted here for one release (the flag used to mean them), with a note.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatFlag {
    Human,
    Json,
    #[value(hide = true)]
    Vllm,
    #[value(hide = true)]
    Sglang,
    #[value(hide = true)]
    Trtllm,
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
    #[arg(long, value_enum, value_name = "RUNTIME")]
    pub events_format: Option<FormatArg>,
    /// Output: human-readable text, or the JSON evidence document
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<FormatFlag>,
    /// Deprecated spelling of --format human|json
    #[arg(long, value_enum, hide = true)]
    pub output: Option<OutputArg>,
    /// Pressure-controls file (YAML) for soft_priority: runs every trial it names
    #[arg(long, value_name = "FILE", conflicts_with_all = ["registry", "events", "events_format"])]
    pub pressure_controls: Option<PathBuf>,
}

/// The output and event formats after the deprecated spellings are resolved.
fn resolve(
    args: &JoinArgs,
    err: &mut dyn Write,
) -> anyhow::Result<Result<(OutputArg, Option<FormatArg>), String>> {
    let mut output = args.output.unwrap_or_default();
    if args.output.is_some() {
        writeln!(
            err,
            "note: --output is deprecated; use --format human|json (as for every command)"
        )?;
    }
    if args.output.is_some() && matches!(args.format, Some(FormatFlag::Human | FormatFlag::Json)) {
        return Ok(Err(
            "give the output format once: --format human|json".into()
        ));
    }
    let mut events = args.events_format;
    let legacy = match args.format {
        None => None,
        Some(FormatFlag::Human) => {
            output = OutputArg::Human;
            None
        }
        Some(FormatFlag::Json) => {
            output = OutputArg::Json;
            None
        }
        Some(FormatFlag::Vllm) => Some(FormatArg::Vllm),
        Some(FormatFlag::Sglang) => Some(FormatArg::Sglang),
        Some(FormatFlag::Trtllm) => Some(FormatArg::Trtllm),
    };
    if let Some(l) = legacy {
        if events.is_some_and(|e| e != l) {
            return Ok(Err(
                "--format names an event format that contradicts --events-format".into(),
            ));
        }
        writeln!(
            err,
            "note: `--format {}` is deprecated: --format is the output format (human|json); use --events-format {}",
            EventFormat::from(l),
            EventFormat::from(l)
        )?;
        events = Some(l);
    }
    Ok(Ok((output, events)))
}

pub fn run(args: &JoinArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    // A result is the evidence document (its own contract, docs/join.md); an error
    // under `--format json` is the shared envelope, like every command's.
    let asked_json = matches!(args.format, Some(FormatFlag::Json))
        || matches!(args.output, Some(OutputArg::Json));
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
                    OutputArg::Human => write!(out, "{}", crate::human::pressure(&report))?,
                    OutputArg::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
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
    match kvlower_join::join_paths(registry, events, format.into()) {
        Ok(report) => {
            match output {
                OutputArg::Human => write!(out, "{}", crate::human::join(&report))?,
                OutputArg::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
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
