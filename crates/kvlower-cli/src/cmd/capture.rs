//! `kvlower capture`: record a runtime's raw KV-event stream into a capture file.
//!
//! ```text
//! kvlower capture --endpoint tcp://HOST:PORT [--endpoint ...] --out FILE
//!                 [--duration S | --until-idle S] [--meta KEY=VALUE ...]
//! ```
//!
//! Rank = endpoint order. Prints `kvlower capture: subscribed` on stderr once every
//! socket is connected and subscribed, then records until the stop condition (or
//! Ctrl-C / SIGTERM), and writes the file atomically. `join --events FILE` reads it.
//!
//! Exit: 0 the capture was written; 2 usage, or nothing could be recorded: a
//! publisher could not be reached, a peer was refused (not a ZMTP 3 publisher, or over
//! a cap of docs/capture-format.md) or the file could not be written, printed as
//! `error[code]: ...` (`kvlower codes`). capture judges nothing, so it never exits 1.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use kvlower_capture::subscribe::{CaptureOptions, capture, check_endpoint};

use crate::Exit;
use crate::output::{Form, Format, Outcome, Payload};

/// How to turn on the KV-event publisher `capture` subscribes to (`kvlower capture --help`).
const AFTER_HELP: &str = "\
Turning on KV events (the publisher kvlower capture subscribes to):
  vLLM:  vllm serve MODEL --kv-events-config \\
           '{\"enable_kv_cache_events\": true, \"publisher\": \"zmq\", \"endpoint\": \"tcp://*:5557\"}'
         then: kvlower capture --endpoint tcp://127.0.0.1:5557 --out run.kvcap --until-idle 5
         (in Python, the same fields as vllm.config.KVEventsConfig: scripts/kvlower_scripts/vllm_engine.py)
  SGLang, TensorRT-LLM: their KV-event options differ by version; see the runtime's own
         server arguments and KV-cache-event documentation. `kvlower join` reads their events
         as a capture or as JSON Lines (docs/join.md).
Start the capture before the engine serves its first request (sequence 0).
File format, ranks, stop conditions and caps: docs/capture-format.md";

#[derive(Debug, clap::Args)]
#[command(after_help = AFTER_HELP)]
pub struct CaptureArgs {
    /// A publisher, tcp://HOST:PORT (repeat once per data-parallel rank, in rank order)
    #[arg(long = "endpoint", value_name = "tcp://HOST:PORT", required = true)]
    pub endpoints: Vec<String>,
    /// The capture file to write (atomically: it appears complete or not at all)
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Stop this many seconds after subscribing
    #[arg(long, value_name = "S")]
    pub duration: Option<f64>,
    /// Stop after this many seconds without a frame (from subscribing while none came)
    #[arg(long, value_name = "S")]
    pub until_idle: Option<f64>,
    /// Engine facts to record in the header, e.g. kv_cache_report_mode=incremental
    #[arg(long = "meta", value_name = "KEY=VALUE")]
    pub meta: Vec<String>,
    /// Seconds to wait for the publishers to accept the connection and complete the
    /// ZMTP handshake (at most --duration)
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    pub connect_timeout: f64,
    /// Output format (`json`: the shared envelope on stdout, the capture's counts as its payload)
    #[arg(long, value_parser = Format::parser(Format::SIMPLE), default_value_t = Format::Human)]
    pub format: Format,
}

/// The payload of `capture --format json`.
#[derive(Debug, serde::Serialize)]
pub struct CapturePayload {
    out: String,
    frames: u64,
    per_rank: Vec<u64>,
    dropped: u64,
    truncated: u64,
    stop: String,
}

fn seconds(name: &str, v: Option<f64>) -> Result<Option<Duration>, String> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(format!("--{name} {s}: give a positive number of seconds")),
    }
}

fn parse_meta(items: &[String]) -> Result<BTreeMap<String, String>, String> {
    let mut meta = BTreeMap::new();
    for m in items {
        let (k, v) = m
            .split_once('=')
            .ok_or_else(|| format!("--meta `{m}`: write KEY=VALUE"))?;
        let k = k.trim();
        if k.is_empty() || k.chars().any(char::is_control) || v.chars().any(char::is_control) {
            return Err(format!(
                "--meta `{}`: the key must be non-empty, and neither may hold control characters",
                m.escape_debug()
            ));
        }
        if meta.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("--meta: `{k}` given twice"));
        }
    }
    Ok(meta)
}

/// Nothing but the summary line for people: the counts are in it.
impl Payload for CapturePayload {
    fn human(&self) -> String {
        String::new()
    }
}

/// Records the capture; `announce` is called once every socket is subscribed (the one
/// line capture says while it runs, `kvlower capture: subscribed`).
pub fn run(
    args: &CaptureArgs,
    announce: &mut dyn FnMut(),
) -> anyhow::Result<Outcome<CapturePayload>> {
    let checked = (|| -> Result<_, String> {
        for e in &args.endpoints {
            check_endpoint(e)?;
        }
        let duration = seconds("duration", args.duration)?;
        let until_idle = seconds("until-idle", args.until_idle)?;
        let connect_timeout = seconds("connect-timeout", Some(args.connect_timeout))?
            .unwrap_or(Duration::from_secs(60));
        Ok((
            duration,
            until_idle,
            connect_timeout,
            parse_meta(&args.meta)?,
        ))
    })();
    let (duration, until_idle, connect_timeout, meta) = match checked {
        Ok(v) => v,
        Err(e) => return Ok(Outcome::error("capture", Exit::Usage, &e)),
    };
    let opts = CaptureOptions {
        endpoints: args.endpoints.clone(),
        out: args.out.clone(),
        duration,
        until_idle,
        connect_timeout,
        meta,
        writer: format!("kvlower {}", env!("CARGO_PKG_VERSION")),
    };
    let shown = args.out.display().to_string();
    Ok(match capture(&opts, announce) {
        Ok(s) => {
            let per_rank: Vec<String> = s
                .per_rank
                .iter()
                .enumerate()
                .map(|(r, n)| format!("rank {r}: {n}"))
                .collect();
            let summary = format!(
                "kvlower capture: {} frames ({}), {} dropped as oversized, {} cut off by the publisher; stopped: {}; wrote {shown}",
                s.frames,
                per_rank.join(", "),
                s.dropped,
                s.truncated,
                s.stop,
            );
            let payload = CapturePayload {
                out: shown,
                frames: s.frames,
                per_rank: s.per_rank.clone(),
                dropped: s.dropped,
                truncated: s.truncated,
                stop: s.stop.to_string(),
            };
            Outcome::done("capture", Exit::Success, Form::Lines, summary, payload)
        }
        Err(e) => {
            // Nothing was recorded: the publisher or the output failed (an unread input,
            // exit 2).
            let summary = format!("kvlower capture: nothing written ({})", e.code());
            let human = format!("error[{}]: {e}\n  hint: {}\n", e.code(), e.hint());
            let mut outcome = Outcome::refused("capture", e.finding(shown), summary, human);
            outcome.error = Some(e.to_string());
            outcome
        }
    })
}
