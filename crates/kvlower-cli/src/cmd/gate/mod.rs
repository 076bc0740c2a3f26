//! `kvlower gate`: evaluate runtime event traces (JSON Lines) against the claim-scoped gates.
//!
//! Each PATH is a trace file, `-` (standard input), or a directory (every `*.jsonl` below
//! it, sorted by path, so the output is deterministic). Verdicts stream out trace by trace,
//! always in that order; only the campaign counts and the diagnostics are held until the
//! end.
//!
//! Files are judged on `-j N` threads (default: one per core). Small files are judged in
//! batches on the pool and written in input order, so the output is byte-identical for
//! every `-j`; a large file (or standard input) is judged alone, streaming its verdicts.
//!
//! What is refused, fail-closed, as a diagnostic of that input (the rest is still judged):
//! a PATH or `*.jsonl` entry that is not a regular file after links (a FIFO, a device, a
//! socket, a directory named `*.jsonl`) is never opened; a subdirectory that cannot be
//! read is reported; a trace longer than `--max-bytes` (default 4 GiB) stops there and
//! cannot pass.
//!
//! Exit status: `0` every trace was evaluated (a failing gate is a verdict, not an error);
//! `1` some trace line is malformed, or, with `--fail-on fail` (`--strict`), some run did
//! not pass; `2` usage (a bad flag, a missing path, a directory without `*.jsonl`), or
//! some input could not be read: refused (a FIFO, a device, over `--max-bytes`) or
//! unreadable (an unreadable directory, a read error).
//!
//! A run *passes* when it is well-formed, some claim in it passes some gate, the
//! multi-claim attribution gate (where it applies) passes, and no control row passes the
//! failure gate. The last line of human output tallies them: `N runs, N passed, N failed`.
//!
//! Here: the arguments and `run`. `inputs` finds, opens and judges the traces; the
//! outcome is written by the emitter of the chosen format (`crate::output::gate`). Each
//! problem of a trace becomes a [`Finding`] here (`LocatedProblem::finding`, with its
//! line and byte column), written by the shared renderers of findings: as its trace
//! ends (human, github), or at the end (json, markdown, sarif), the problems kept until
//! then in the trace crate's compact shape, made into findings one at a time.

mod campaign;
mod inputs;

use std::io;
use std::num::NonZeroUsize;
use std::path::PathBuf;

use kvlower_codes::Finding;
use kvlower_trace::{CampaignSummary, ClaimVerdict, LocatedProblem, MAX_TRACE_BYTES, TraceOutline};
use rayon::prelude::*;

use crate::Exit;
use crate::output::gate::{GateEmitter, emitter};
use crate::output::{Format, Outcome, ReportOptions, Screen};

use inputs::{Done, Input, Judged, collect_traces, judge, judge_collected, open};

/// Small files judged per batch (the verdicts of at most a few batches are held at once).
const BATCH: usize = 256;

/// When `kvlower gate` exits non-zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FailOn {
    /// Exit 1 only for malformed input, 2 for refused or unreadable input (a failing gate is a verdict)
    Malformed,
    /// Also exit 1 when some run did not pass
    Fail,
}

/// `gate --format`'s help: what gate itself prints (not `check`'s findings).
const FORMAT_HELP: &str = "Output format: human, json, github, markdown or sarif";
const FORMAT_LONG_HELP: &str = "\
Output format:
  human     one line per claim on stdout (`TRACE: claim ID [family]: GATE PASS; GATE FAIL (missing: ...); GATE n/a`),
            the campaign counts when several traces, then the tally `N runs, N passed, N failed`;
            malformed lines on stderr as `TRACE:LINE[:COL]: error[code]: message`
  json      the shared envelope on stdout (payload: results and campaign; docs/output.md)
  github    `::error` annotations for malformed lines on stdout (nothing else);
            the human report on stderr
  markdown  a table of verdicts and the campaign counts on stdout
  sarif     a SARIF 2.1.0 log of the malformed lines on stdout (no verdicts)";

#[derive(Debug, clap::Args)]
#[command(mut_arg("format", |a| a.value_parser(Format::parser(Format::CHECK)).help(FORMAT_HELP).long_help(FORMAT_LONG_HELP).hide_possible_values(true)))]
pub struct GateArgs {
    #[command(flatten)]
    pub report: ReportOptions,
    /// Exit 1 also when some run did not pass (`fail`), for CI
    #[arg(long, value_enum, default_value_t = FailOn::Malformed, value_name = "WHEN")]
    pub fail_on: FailOn,
    /// Same as `--fail-on fail`
    #[arg(long, conflicts_with = "fail_on")]
    pub strict: bool,
    /// Threads judging trace files (default: one per core; `-j 1` judges in one thread)
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<NonZeroUsize>,
    /// Read at most this many bytes of one trace; a longer trace cannot pass
    #[arg(long, value_name = "BYTES", default_value_t = MAX_TRACE_BYTES)]
    pub max_bytes: u64,
    /// Trace files, `-` for standard input, or directories searched for *.jsonl
    /// (recursively, sorted)
    #[arg(
        value_name = "PATH",
        required_unless_present = "campaign",
        conflicts_with = "campaign"
    )]
    pub paths: Vec<PathBuf>,
    /// Instead of traces: re-run this gate campaign document (with its engine truth and
    /// source digest, as `check` does) and print, per gate, witnessed or not and what is
    /// missing (docs/conformance.md)
    #[arg(long, value_name = "DOC")]
    pub campaign: Option<PathBuf>,
    /// Repository root for `--campaign` (holding modes/modes.yaml and the files the
    /// campaign names) [default: the nearest directory, from here up, holding
    /// kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
}

/// How a `gate` run ended: its verdicts streamed to the screen (the exit), or an
/// outcome to render like every command's (an error before the first trace; the
/// `--campaign` report).
#[derive(Debug)]
pub enum GateRun {
    Streamed(Exit),
    Stopped(Outcome<()>),
    Campaign(Outcome<campaign::CampaignReport>),
}

/// Judges the traces, streaming verdicts and findings to `screen` through the emitter
/// of the chosen format (`crate::output::gate`), which alone writes to it.
pub fn run(args: &GateArgs, screen: &mut Screen<'_>) -> anyhow::Result<GateRun> {
    if let Some(doc) = &args.campaign {
        return Ok(GateRun::Campaign(campaign::run(&args.root, doc)?));
    }
    let inputs = match collect_traces(&args.paths) {
        Ok(inputs) => inputs,
        Err(message) => {
            return Ok(GateRun::Stopped(Outcome::error(
                "gate",
                Exit::Usage,
                &message,
            )));
        }
    };
    let jobs = args
        .jobs
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get);
    let pool = if jobs > 1 {
        Some(rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?)
    } else {
        None
    };
    let opts = &args.report;
    let mut report = Report {
        emitter: emitter(opts, screen),
        summary: CampaignSummary::default(),
        kept: Vec::new(),
        count: 0,
        unread_input: false,
    };
    report.emitter.begin()?;
    let max_bytes = args.max_bytes;
    let mut rest = inputs.as_slice();
    while let Some(first) = rest.first() {
        let Some(pool) = pool.as_ref().filter(|_| first.small()) else {
            let name = first.name();
            let outline = judge(open(first), &name, max_bytes, pool.as_ref(), |v| {
                report.verdict(&name, &v)
            })?;
            report.finish_trace(&name, outline)?;
            rest = rest.get(1..).unwrap_or_default();
            continue;
        };
        // The run of small inputs from here, in batches: batch k+1 is judged on the pool
        // while batch k is written here, in input order.
        let small = rest.iter().take_while(|i| i.small()).count();
        let (run_of_small, after) = rest.split_at(small);
        std::thread::scope(|scope| -> anyhow::Result<()> {
            let mut pending = None;
            for batch in run_of_small.chunks(BATCH) {
                let next = scope.spawn(move || {
                    pool.install(|| {
                        batch
                            .par_iter()
                            .map(|input| judge_collected(input, max_bytes))
                            .collect::<Vec<_>>()
                    })
                });
                if let Some((inputs, done)) = pending.replace((batch, next)) {
                    report.write_batch(inputs, join(done)?, max_bytes, pool)?;
                }
            }
            if let Some((inputs, done)) = pending {
                report.write_batch(inputs, join(done)?, max_bytes, pool)?;
            }
            Ok(())
        })?;
        rest = after;
    }
    let fail_on = if args.strict {
        FailOn::Fail
    } else {
        args.fail_on
    };
    let failed_runs = fail_on == FailOn::Fail && report.summary.failed > 0;
    // A refused or unreadable input exits 2, a malformed line (or a failed run) 1.
    let exit = if report.unread_input {
        Exit::Error
    } else if report.count > 0 || failed_runs {
        Exit::Findings
    } else {
        Exit::Success
    };
    let Report {
        mut emitter,
        summary,
        kept,
        count,
        ..
    } = report;
    let mut findings = kept
        .iter()
        .flat_map(|(name, problems)| problems.iter().map(|d| d.finding(name)));
    emitter.end(&summary, &mut findings, count, inputs.len(), exit)?;
    Ok(GateRun::Streamed(exit))
}

fn join(handle: std::thread::ScopedJoinHandle<'_, Vec<Judged>>) -> anyhow::Result<Vec<Judged>> {
    handle
        .join()
        .map_err(|_| anyhow::anyhow!("a gate worker thread stopped unexpectedly"))
}

/// The emitter and the running totals of one `gate` run.
struct Report<'a> {
    emitter: Box<dyn GateEmitter + 'a>,
    summary: CampaignSummary,
    /// Each trace with problems and its problems, when the emitter writes them at the
    /// end (held compact, as the trace crate keeps them, not as findings).
    kept: Vec<(String, Vec<LocatedProblem>)>,
    /// Problems seen, and whether one says an input could not be read (exit 2).
    count: usize,
    unread_input: bool,
}

impl Report<'_> {
    fn verdict(&mut self, name: &str, v: &ClaimVerdict) -> io::Result<()> {
        self.emitter.verdict(name, v)
    }

    fn finish_trace(&mut self, name: &str, outline: TraceOutline) -> io::Result<()> {
        self.summary.add(&outline);
        for d in &outline.diagnostics {
            let finding: Finding = d.finding(name);
            self.emitter.finding(&finding)?;
            self.count = self.count.saturating_add(1);
            self.unread_input |= finding.code.is_unread_input();
        }
        if self.emitter.wants_findings_at_end() && !outline.diagnostics.is_empty() {
            self.kept.push((name.to_owned(), outline.diagnostics));
        }
        Ok(())
    }

    /// Writes a judged batch (`batch`, judged from `inputs`) in order; a file found large
    /// when opened is opened again and judged here, in its turn, with its lines parsed on
    /// `pool`.
    fn write_batch(
        &mut self,
        inputs: &[Input],
        batch: Vec<Judged>,
        max_bytes: u64,
        pool: &rayon::ThreadPool,
    ) -> anyhow::Result<()> {
        for (input, Judged { name, done }) in inputs.iter().zip(batch) {
            let outline = match done {
                Done::Judged { outline, verdicts } => {
                    for v in &verdicts {
                        self.verdict(&name, v)?;
                    }
                    outline
                }
                Done::Large => judge(open(input), &name, max_bytes, Some(pool), |v| {
                    self.verdict(&name, &v)
                })?,
            };
            self.finish_trace(&name, outline)?;
        }
        Ok(())
    }
}
