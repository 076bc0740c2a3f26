//! `kvlower join`: join a pre-registered claim registry to a runtime's KV event stream.
//!
//! Two forms:
//! - `kvlower join --registry R --events E --format vllm|sglang|trtllm` judges every
//!   claim at its observation point;
//! - `kvlower join --pressure-controls C` runs the soft_priority pressure controls named
//!   in `C` (original, swapped-priority and equal-priority trials) and derives the atoms.
//!
//! Exit: 0 evaluated (a claim that is not materialized is a verdict, not an error);
//! 1 malformed registry, controls or events; 2 usage.

use std::io::Write;
use std::path::PathBuf;

use kvlower_join::EventFormat;

use crate::Exit;

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

#[derive(Debug, clap::Args)]
pub struct JoinArgs {
    /// Claim registry (YAML), written before the run
    #[arg(long, value_name = "FILE")]
    pub registry: Option<PathBuf>,
    /// Runtime KV events, JSON Lines (vLLM/SGLang: one EventBatch per line; msgpack
    /// converted to JSON)
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Event stream format
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Pressure-controls file (YAML) for soft_priority: runs every trial it names
    #[arg(long, value_name = "FILE", conflicts_with_all = ["registry", "events", "format"])]
    pub pressure_controls: Option<PathBuf>,
    /// Output: human-readable text, or the JSON evidence document
    #[arg(long, value_enum, default_value_t = OutputArg::Human)]
    pub output: OutputArg,
}

pub fn run(args: &JoinArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    if let Some(controls) = &args.pressure_controls {
        return match kvlower_join::pressure::run_controls(controls) {
            Ok(report) => {
                match args.output {
                    OutputArg::Human => write!(out, "{}", report.render_human())?,
                    OutputArg::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
                }
                Ok(Exit::Success)
            }
            Err(e) => {
                writeln!(err, "error: {e}")?;
                Ok(Exit::Findings)
            }
        };
    }
    let (Some(registry), Some(events), Some(format)) = (&args.registry, &args.events, args.format)
    else {
        writeln!(
            err,
            "error: kvlower join needs --registry, --events and --format (or --pressure-controls)"
        )?;
        return Ok(Exit::Usage);
    };
    match kvlower_join::join_paths(registry, events, format.into()) {
        Ok(report) => {
            match args.output {
                OutputArg::Human => write!(out, "{}", report.render_human())?,
                OutputArg::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
            }
            Ok(Exit::Success)
        }
        Err(e) => {
            writeln!(err, "error: {e}")?;
            Ok(Exit::Findings)
        }
    }
}
