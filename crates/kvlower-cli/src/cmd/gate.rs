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

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};

use kvlower_trace::{
    CampaignSummary, ClaimVerdict, Control, Diagnostic, GateResult, MAX_TRACE_BYTES, Problem,
    Requirement, TraceFamily, TraceGate, TraceOutline, TraceTally,
};
use rayon::prelude::*;
use serde::Serialize;

use kvlower_codes::Code;

use crate::Exit;
use crate::output::{
    Format, JsonDiagnostic, OUTPUT_SCHEMA_VERSION, ReportOptions, Stream, escape_control, md_cell,
    md_code, report_error,
};

/// Files up to this size are read whole and judged on the pool; larger ones stream alone.
const SMALL_FILE_BYTES: u64 = 16 << 20;

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
const FORMAT_HELP: &str = "Output format: human, json, github or markdown";
const FORMAT_LONG_HELP: &str = "\
Output format:
  human     one line per claim on stdout (`TRACE: claim ID [family]: GATE PASS; GATE FAIL (missing: ...); GATE n/a`),
            the campaign counts when several traces, then the tally `N runs, N passed, N failed`;
            malformed lines on stderr as `TRACE:LINE: error[code]: message`
  json      the shared envelope on stdout (payload: results and campaign; docs/output.md)
  github    `::error` annotations for malformed lines on stdout (nothing else);
            the human report on stderr
  markdown  a table of verdicts and the campaign counts on stdout";

#[derive(Debug, clap::Args)]
#[command(mut_arg("format", |a| a.help(FORMAT_HELP).long_help(FORMAT_LONG_HELP).hide_possible_values(true)))]
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
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
}

/// One trace to judge, as found on the command line or below a directory.
#[derive(Debug)]
enum Input {
    /// Standard input (`-`).
    Stdin,
    /// A regular file and its size when listed; with its metadata when a directory walk
    /// listed it as a regular file (no link) below a directory outside the kernel's
    /// pseudo-file systems, so opening it need not resolve and stat it again.
    File(PathBuf, u64, Option<Box<std::fs::Metadata>>),
    /// Refused or unreadable before reading: reported, judged as nothing.
    Refused(PathBuf, Problem),
}

impl Input {
    fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_owned(),
            Input::File(p, ..) | Input::Refused(p, _) => display(p),
        }
    }

    /// Judged on the pool (read whole) rather than alone, streaming.
    fn small(&self) -> bool {
        match self {
            Input::Stdin => false,
            Input::File(_, len, _) => *len <= SMALL_FILE_BYTES,
            Input::Refused(..) => true,
        }
    }
}

/// One judged trace with its verdicts, held until it is its turn to be written.
struct Judged {
    name: String,
    outline: TraceOutline,
    verdicts: Vec<ClaimVerdict>,
}

pub fn run(args: &GateArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    // Diagnostics are many short lines: one write each would be one system call each.
    // (stdout comes buffered from `main`.)
    let mut err = io::BufWriter::with_capacity(1 << 16, err);
    let exit = run_buffered(args, out, &mut err)?;
    err.flush()?;
    Ok(exit)
}

fn run_buffered(args: &GateArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let inputs = match collect_traces(&args.paths) {
        Ok(inputs) => inputs,
        Err(message) => {
            report_error(args.report.format, "gate", Exit::Usage, &message, out, err)?;
            return Ok(Exit::Usage);
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
    let sink: Box<dyn Sink + '_> = match opts.format {
        Format::Human | Format::Github => Box::new(HumanSink {
            out,
            err,
            github: opts.format == Format::Github,
            quiet: opts.quiet,
            color_out: opts.color.enabled_for(Stream::Stdout),
            color_err: opts.color.enabled_for(Stream::Stderr),
        }),
        Format::Json => Box::new(JsonSink::new(out)),
        Format::Markdown => Box::new(MarkdownSink {
            out,
            quiet: opts.quiet,
        }),
    };
    let mut report = Report {
        sink,
        summary: CampaignSummary::default(),
        diagnostics: Vec::new(),
    };
    report.sink.begin()?;
    let max_bytes = args.max_bytes;
    let mut rest = inputs.as_slice();
    while let Some(first) = rest.first() {
        let Some(pool) = pool.as_ref().filter(|_| first.small()) else {
            let name = first.name();
            let outline = judge(first, &name, max_bytes, pool.as_ref(), |v| {
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
                if let Some(done) = pending.replace(next) {
                    report.write_batch(join(done)?)?;
                }
            }
            if let Some(done) = pending {
                report.write_batch(join(done)?)?;
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
    let exit = match Exit::of_codes(report.diagnostics.iter().map(|(_, d)| code_of(&d.problem))) {
        Exit::Success if failed_runs => Exit::Findings,
        exit => exit,
    };
    report
        .sink
        .end(&report.summary, &report.diagnostics, inputs.len(), exit)?;
    Ok(exit)
}

fn join(handle: std::thread::ScopedJoinHandle<'_, Vec<Judged>>) -> anyhow::Result<Vec<Judged>> {
    handle
        .join()
        .map_err(|_| anyhow::anyhow!("a gate worker thread stopped unexpectedly"))
}

/// The sink and the running totals of one `gate` run.
struct Report<'a> {
    sink: Box<dyn Sink + 'a>,
    summary: CampaignSummary,
    diagnostics: Vec<(String, Diagnostic)>,
}

impl Report<'_> {
    fn verdict(&mut self, name: &str, v: &ClaimVerdict) -> io::Result<()> {
        self.sink.verdict(name, v)
    }

    fn finish_trace(&mut self, name: &str, outline: TraceOutline) -> io::Result<()> {
        self.summary.add(&outline);
        for d in outline.diagnostics {
            self.sink.diagnostic(name, &d)?;
            self.diagnostics.push((name.to_owned(), d));
        }
        Ok(())
    }

    fn write_batch(&mut self, batch: Vec<Judged>) -> io::Result<()> {
        for judged in batch {
            for v in &judged.verdicts {
                self.verdict(&judged.name, v)?;
            }
            self.finish_trace(&judged.name, judged.outline)?;
        }
        Ok(())
    }
}

/// Judges one input on a pool thread, collecting its verdicts.
fn judge_collected(input: &Input, max_bytes: u64) -> Judged {
    let name = input.name();
    let mut verdicts = Vec::new();
    let outline = match judge(input, &name, max_bytes, None, |v| {
        verdicts.push(v);
        Ok(())
    }) {
        Ok(outline) => outline,
        // `judge` fails only when the callback does, and this one never does.
        Err(e) => refused(&name, Problem::Read(e.to_string())),
    };
    Judged {
        name,
        outline,
        verdicts,
    }
}

/// Judges one input, handing each verdict to `on_verdict` as the trace ends. Fails only
/// when `on_verdict` does (a closed output); everything wrong with the input is a
/// diagnostic of the outline. A large file or standard input has its lines parsed on
/// `pool` when there is one (the same verdicts and diagnostics).
fn judge(
    input: &Input,
    name: &str,
    max_bytes: u64,
    pool: Option<&rayon::ThreadPool>,
    mut on_verdict: impl FnMut(ClaimVerdict) -> io::Result<()>,
) -> anyhow::Result<TraceOutline> {
    let mut write_error: Option<io::Error> = None;
    let mut each = |verdict: ClaimVerdict| {
        if write_error.is_none()
            && let Err(e) = on_verdict(verdict)
        {
            write_error = Some(e);
        }
    };
    let outline = match input {
        Input::Refused(_, problem) => refused(name, problem.clone()),
        Input::Stdin => match pool {
            Some(pool) => {
                let stdin = BufReader::with_capacity(1 << 18, io::stdin());
                kvlower_trace::evaluate_reader_pooled(name, stdin, max_bytes, pool, &mut each)
            }
            None => {
                let stdin = io::stdin().lock();
                kvlower_trace::evaluate_reader_bounded(name, stdin, max_bytes, &mut each)
            }
        },
        Input::File(path, _, listed) => {
            let opened = match listed {
                Some(meta) => open_listed(path, meta),
                None => open_regular(path),
            };
            match opened {
                Err(problem) => refused(name, problem),
                Ok((file, len)) if len <= SMALL_FILE_BYTES => SMALL_FILE.with_borrow_mut(|bytes| {
                    match read_small(file, len, max_bytes, bytes) {
                        Ok(()) => kvlower_trace::evaluate_reader_bounded(
                            name,
                            bytes.as_slice(),
                            max_bytes,
                            &mut each,
                        ),
                        Err(e) => refused(name, Problem::Read(e.to_string())),
                    }
                }),
                Ok((file, _)) => {
                    let reader = BufReader::with_capacity(1 << 18, file);
                    match pool {
                        Some(pool) => kvlower_trace::evaluate_reader_pooled(
                            name, reader, max_bytes, pool, &mut each,
                        ),
                        None => kvlower_trace::evaluate_reader_bounded(
                            name, reader, max_bytes, &mut each,
                        ),
                    }
                }
            }
        }
    };
    match write_error {
        Some(e) => Err(e.into()),
        None => Ok(outline),
    }
}

thread_local! {
    /// The bytes of the small file being judged on this thread (reused: one allocation
    /// per thread rather than one per file).
    static SMALL_FILE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads a small file whole into `buf`: at most `max_bytes` + 1 bytes (one past the
/// budget, so a file that grew past it is told), normally with one `read` of the size
/// `fstat` gave plus one byte. A read that returns exactly that size is the end of the
/// file (a regular file reads short only at its end); a file that grew since is read
/// on to its end or the budget.
fn read_small(mut file: File, len: u64, max_bytes: u64, buf: &mut Vec<u8>) -> io::Result<()> {
    let limit = max_bytes.saturating_add(1);
    let want = usize::try_from(len.saturating_add(1).min(limit)).unwrap_or(usize::MAX);
    buf.clear();
    buf.resize(want, 0);
    let mut filled = 0;
    loop {
        let Some(room) = buf.get_mut(filled..).filter(|room| !room.is_empty()) else {
            // The buffer is full: the file grew past its listed size. Read on as before.
            buf.truncate(filled);
            let rest = limit.saturating_sub(filled as u64);
            file.take(rest).read_to_end(buf)?;
            return Ok(());
        };
        match file.read(room) {
            Ok(0) => break,
            Ok(n) => {
                filled = filled.saturating_add(n);
                if filled as u64 == len && filled < buf.len() {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                buf.clear();
                return Err(e);
            }
        }
    }
    buf.truncate(filled);
    Ok(())
}

/// Opens a file a directory walk listed as regular (see [`Input::File`]), with the same
/// refusals and messages as [`open_regular`].
fn open_listed(path: &Path, listed: &std::fs::Metadata) -> Result<(File, u64), Problem> {
    kvlower_fs::open_listed_regular(path, listed).map_err(refusal_problem)
}

/// Opens `path` for reading only if it is a regular file (after links), through
/// kvlower-fs like every other input: a FIFO or a device is refused before it is
/// opened (so it cannot block), and the opened file is checked again (it may have
/// been replaced in between). The size is bounded by `--max-bytes`, not a file cap.
fn open_regular(path: &Path) -> Result<(File, u64), Problem> {
    kvlower_fs::open_regular_unbounded(path).map_err(refusal_problem)
}

fn refusal_problem(refusal: kvlower_fs::Refusal) -> Problem {
    match refusal {
        kvlower_fs::Refusal::NotRegular { what, .. } => Problem::NotRegularFile(what),
        kvlower_fs::Refusal::PseudoFile { .. } => Problem::NotRegularFile("a kernel pseudo-file"),
        other => Problem::Read(other.to_string()),
    }
}

/// What a non-regular file is, or `None` for a regular file.
fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

/// The outline of an input refused or unreadable before any line was judged.
fn refused(name: &str, problem: Problem) -> TraceOutline {
    TraceOutline {
        name: name.to_owned(),
        family: TraceFamily::Unknown,
        runtime: None,
        events: 0,
        diagnostics: vec![Diagnostic {
            line: None,
            problem,
        }],
        tally: TraceTally::default(),
    }
}

/// The traces named by `paths`, in order; directories expand to their `*.jsonl` files,
/// sorted. Paths keep the form they were given in (never made absolute). A missing PATH
/// or a directory without any `*.jsonl` is a usage error; anything unreadable or not a
/// regular file below a directory is an input of its own, refused when judged.
fn collect_traces(paths: &[PathBuf]) -> Result<Vec<Input>, String> {
    let mut traces = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            traces.push(Input::Stdin);
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", display(path)))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk_jsonl(path, kvlower_fs::outside_pseudo_fs(path), &mut found);
            if found.is_empty() {
                return Err(format!(
                    "{}: no *.jsonl trace below this directory",
                    display(path)
                ));
            }
            found.sort_by(|a, b| input_path(a).cmp(input_path(b)));
            traces.extend(found);
        } else {
            traces.push(classify(path.clone(), &meta));
        }
    }
    Ok(traces)
}

fn input_path(input: &Input) -> &Path {
    match input {
        Input::Stdin => Path::new("-"),
        Input::File(p, ..) | Input::Refused(p, _) => p,
    }
}

fn classify(path: PathBuf, meta: &std::fs::Metadata) -> Input {
    match not_regular(meta) {
        None => Input::File(path, meta.len(), None),
        Some(kind) => Input::Refused(path, Problem::NotRegularFile(kind)),
    }
}

/// Adds every `*.jsonl` below `dir` to `found`, and every directory or entry that cannot
/// be read as a refused input (so one unreadable subdirectory is reported and the rest
/// still judged). Directory symlinks are not followed, so a link cycle cannot loop.
/// `listed_ok`: `dir` is outside the kernel's pseudo-file systems, so a regular file
/// listed below it (no link) keeps its metadata, to be opened without a second look.
fn walk_jsonl(dir: &Path, listed_ok: bool, found: &mut Vec<Input>) {
    let unreadable = |e: io::Error| Problem::Read(format!("cannot read directory: {e}"));
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return found.push(Input::Refused(dir.to_path_buf(), unreadable(e))),
    };
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found.push(Input::Refused(dir.to_path_buf(), unreadable(e)));
                continue;
            }
        };
        let path = entry.path();
        let kind = match entry.file_type() {
            Ok(kind) => kind,
            Err(e) => {
                found.push(Input::Refused(path, Problem::Read(e.to_string())));
                continue;
            }
        };
        if kind.is_dir() {
            walk_jsonl(&path, listed_ok, found);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            // Follow a link to see what it names; never open it here.
            match std::fs::metadata(&path) {
                Ok(meta) if listed_ok && kind.is_file() && meta.is_file() => {
                    found.push(Input::File(path, meta.len(), Some(Box::new(meta))));
                }
                Ok(meta) => found.push(classify(path, &meta)),
                Err(e) => found.push(Input::Refused(path, Problem::Read(e.to_string()))),
            }
        }
    }
}

/// The last line of human output: `N runs, N passed, N failed`.
fn tally(s: &CampaignSummary) -> String {
    format!("{} runs, {} passed, {} failed", s.runs, s.passed, s.failed)
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// Where verdicts, diagnostics and the summary go, per output format.
trait Sink {
    fn begin(&mut self) -> io::Result<()>;
    fn verdict(&mut self, trace: &str, v: &ClaimVerdict) -> io::Result<()>;
    fn diagnostic(&mut self, trace: &str, d: &Diagnostic) -> io::Result<()>;
    fn end(
        &mut self,
        summary: &CampaignSummary,
        diagnostics: &[(String, Diagnostic)],
        traces: usize,
        exit: Exit,
    ) -> io::Result<()>;
}

/// The stable code of a gate diagnostic: the file-level refusals share the
/// codes `check` uses for them; anything wrong inside a trace is `malformed-trace`.
fn code_of(problem: &Problem) -> Code {
    match problem {
        Problem::NotRegularFile(_) => Code::NotARegularFile,
        Problem::Read(_) => Code::UnreadableFile,
        Problem::TraceTooLarge(_) => Code::FileTooLarge,
        _ => Code::MalformedTrace,
    }
}

/// A gate diagnostic for people, in `check`'s shape:
/// `trace:line: error[code]: message` (the trace name and message escaped).
fn human_diagnostic(trace: &str, d: &Diagnostic, color: bool) -> String {
    let tag = if color {
        "\x1b[1;31merror\x1b[0m"
    } else {
        "error"
    };
    let at = d.line.map_or(String::new(), |line| format!(":{line}"));
    format!(
        "{}{at}: {tag}[{}]: {}",
        escape_control(trace),
        code_of(&d.problem),
        escape_control(&d.message())
    )
}

struct HumanSink<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// Also print a GitHub Actions annotation per diagnostic.
    github: bool,
    /// Only the campaign summary and the diagnostics.
    quiet: bool,
    /// Colour PASS/FAIL on stdout.
    color_out: bool,
    /// Colour the diagnostics' `error` label on stderr.
    color_err: bool,
}

fn human_gate(name: TraceGate, result: &GateResult, applies: bool, color: bool) -> String {
    let (pass, fail) = if color {
        ("\x1b[32mPASS\x1b[0m", "\x1b[31mFAIL\x1b[0m")
    } else {
        ("PASS", "FAIL")
    };
    if result.pass {
        format!("{name} {pass}")
    } else if !applies {
        format!("{name} n/a")
    } else {
        let missing: Vec<&str> = result.missing.iter().map(|r| r.name()).collect();
        format!("{name} {fail} (missing: {})", missing.join(", "))
    }
}

/// The requirements that only a run with an injected restore failure can show.
const FAILURE_ONLY: [Requirement; 5] = [
    Requirement::ControlledCpuToGpuLoadFailure,
    Requirement::ClaimScopedRestorationFailed,
    Requirement::FailClosedActiveRequestRefused,
    Requirement::SchedulerSideRestorationFailed,
    Requirement::SchedulerSideActiveRequestRefused,
];

/// The residency gates: a claim is accepted for one mode, so passing one makes the
/// others not apply.
const RESIDENCY: [TraceGate; 3] = [
    TraceGate::ClaimProtection,
    TraceGate::ClaimDemotion,
    TraceGate::ClaimExpiry,
];

/// Whether a failing gate applies to this run, for human and Markdown output only
/// (the verdicts, the JSON and the tally are unchanged). The two connector paths
/// exclude each other: the observation gate does not apply to a run whose failure
/// outcome passed, and the failure-outcome gate not to a run whose observation
/// passed or that shows none of what only an injected failure shows. A control
/// row keeps every gate: why it failed is the point of the control.
fn gate_applies(v: &ClaimVerdict, gate: TraceGate, result: &GateResult) -> bool {
    if result.pass || !v.controls_rejected.is_empty() {
        return true;
    }
    // A row that passes one residency gate was accepted for that mode: the other
    // residency gates and the connector paths do not apply to it.
    let residency_pass = RESIDENCY.iter().any(|&g| v.passes(g));
    match gate {
        TraceGate::ConnectorObservation => {
            !v.passes(TraceGate::ConnectorFailureOutcome) && !residency_pass
        }
        TraceGate::ConnectorFailureOutcome => {
            !v.passes(TraceGate::ConnectorObservation)
                && !residency_pass
                && !FAILURE_ONLY.iter().all(|r| result.missing.contains(r))
        }
        TraceGate::ClaimProtection | TraceGate::ClaimDemotion | TraceGate::ClaimExpiry => {
            !residency_pass
        }
        _ => true,
    }
}

/// The gates of a verdict, each with its PASS / FAIL (missing ...) / n/a.
fn human_gates(v: &ClaimVerdict, color: bool) -> Vec<String> {
    v.gates
        .iter()
        .map(|(n, r)| human_gate(*n, r, gate_applies(v, *n, r), color))
        .collect()
}

impl Sink for HumanSink<'_> {
    fn begin(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn verdict(&mut self, trace: &str, v: &ClaimVerdict) -> io::Result<()> {
        if self.quiet {
            return Ok(());
        }
        let who = match &v.claim_id {
            Some(id) => format!("claim {id}"),
            None => "unclaimed events".to_owned(),
        };
        let gates = human_gates(v, self.color_out);
        let github = self.github;
        let o: &mut dyn Write = if github { self.err } else { self.out };
        write!(
            o,
            "{}: {} [{}]: {}",
            escape_control(trace),
            escape_control(&who),
            v.family,
            gates.join("; ")
        )?;
        if !v.controls_rejected.is_empty() {
            let controls: Vec<&str> = v.controls_rejected.iter().map(|c| c.name()).collect();
            write!(o, "; rejected as control: {}", controls.join(", "))?;
        }
        writeln!(o)
    }

    fn diagnostic(&mut self, trace: &str, d: &Diagnostic) -> io::Result<()> {
        if self.github {
            let file = trace
                .replace('%', "%25")
                .replace(',', "%2C")
                .replace(':', "%3A");
            let message = d.message().replace('%', "%25").replace('\n', "%0A");
            let code = code_of(&d.problem);
            match d.line {
                Some(line) => writeln!(
                    self.out,
                    "::error file={file},line={line},title=kvlower {code}::{message}"
                )?,
                None => writeln!(
                    self.out,
                    "::error file={file},title=kvlower {code}::{message}"
                )?,
            }
        }
        writeln!(self.err, "{}", human_diagnostic(trace, d, self.color_err))
    }

    fn end(
        &mut self,
        s: &CampaignSummary,
        diagnostics: &[(String, Diagnostic)],
        traces: usize,
        _exit: Exit,
    ) -> io::Result<()> {
        // With `github`, stdout carries the annotations only (one document); the
        // human report goes to stderr (docs/output.md).
        let o: &mut dyn Write = if self.github {
            &mut *self.err
        } else {
            &mut *self.out
        };
        if traces > 1 || self.quiet {
            writeln!(o, "campaign: {} runs", s.runs)?;
            writeln!(
                o,
                "  event-sequence validity    {}/{} valid",
                s.valid_sequences, s.runs
            )?;
            writeln!(
                o,
                "  observation passes         {}/{} connector runs",
                s.observation_passes, s.connector_runs
            )?;
            writeln!(
                o,
                "  failure-outcome passes     {}/{} connector runs",
                s.failure_outcome_passes, s.connector_runs
            )?;
            writeln!(
                o,
                "  control passes             {}/{} control runs (must be 0)",
                s.control_passes, s.control_runs
            )?;
            writeln!(
                o,
                "  multi-claim attributions   {}/{} multi-claim runs",
                s.multi_claim_attributions, s.multi_claim_runs
            )?;
            writeln!(
                o,
                "  reference lifecycle passes {}/{} reference runs",
                s.reference_passes, s.reference_runs
            )?;
            if s.residency_runs > 0 {
                writeln!(
                    o,
                    "  residency gate passes      {}/{} residency runs",
                    s.residency_passes, s.residency_runs
                )?;
            }
        }
        writeln!(o, "{}", tally(s))?;
        if !diagnostics.is_empty() {
            writeln!(
                self.err,
                "kvlower gate: {} diagnostic(s); malformed traces cannot pass",
                diagnostics.len()
            )?;
        }
        Ok(())
    }
}

/// Writes the shared envelope incrementally: the payload's results one per line as
/// they come, then the campaign counts, the tally as `summary`, the exit and the
/// diagnostics (keys in that order; a JSON reader does not depend on it).
struct JsonSink<'a> {
    out: &'a mut dyn Write,
    rows: u64,
}

impl<'a> JsonSink<'a> {
    fn new(out: &'a mut dyn Write) -> Self {
        JsonSink { out, rows: 0 }
    }
}

#[derive(Serialize)]
struct JsonRow<'a> {
    trace: &'a str,
    claim_id: Option<&'a str>,
    family: TraceFamily,
    gates: &'a std::collections::BTreeMap<TraceGate, GateResult>,
    controls_rejected: &'a [Control],
}

impl Sink for JsonSink<'_> {
    fn begin(&mut self) -> io::Result<()> {
        write!(
            self.out,
            "{{\"schema_version\":{OUTPUT_SCHEMA_VERSION},\"command\":\"gate\",\"payload\":{{\"results\":["
        )
    }

    fn verdict(&mut self, trace: &str, v: &ClaimVerdict) -> io::Result<()> {
        let row = JsonRow {
            trace,
            claim_id: v.claim_id.as_deref(),
            family: v.family,
            gates: &v.gates,
            controls_rejected: &v.controls_rejected,
        };
        let sep = if self.rows == 0 { "\n" } else { ",\n" };
        self.out.write_all(sep.as_bytes())?;
        serde_json::to_writer(&mut *self.out, &row)?;
        self.rows += 1;
        Ok(())
    }

    fn diagnostic(&mut self, _trace: &str, _d: &Diagnostic) -> io::Result<()> {
        Ok(())
    }

    fn end(
        &mut self,
        summary: &CampaignSummary,
        diagnostics: &[(String, Diagnostic)],
        _traces: usize,
        exit: Exit,
    ) -> io::Result<()> {
        write!(self.out, "\n],\"campaign\":")?;
        serde_json::to_writer(&mut *self.out, summary)?;
        write!(self.out, "}},\"summary\":")?;
        serde_json::to_writer(&mut *self.out, &tally(summary))?;
        write!(
            self.out,
            ",\"ok\":{},\"exit_code\":{},\"diagnostics\":[",
            exit == Exit::Success,
            exit.as_u8()
        )?;
        let messages: Vec<String> = diagnostics.iter().map(|(_, d)| d.message()).collect();
        for (i, ((file, d), message)) in diagnostics.iter().zip(&messages).enumerate() {
            let sep = if i == 0 { "\n" } else { ",\n" };
            self.out.write_all(sep.as_bytes())?;
            let row = JsonDiagnostic {
                file,
                line: d.line.and_then(|l| usize::try_from(l).ok()),
                column: None,
                code: code_of(&d.problem).name(),
                severity: code_of(&d.problem).severity().name(),
                yaml_path: "",
                message,
                hint: None,
            };
            serde_json::to_writer(&mut *self.out, &row)?;
        }
        writeln!(self.out, "\n],\"error\":null}}")
    }
}

/// A Markdown report (e.g. for `$GITHUB_STEP_SUMMARY`): a table of verdicts, the
/// campaign counts and the diagnostics.
struct MarkdownSink<'a> {
    out: &'a mut dyn Write,
    quiet: bool,
}

impl Sink for MarkdownSink<'_> {
    fn begin(&mut self) -> io::Result<()> {
        writeln!(self.out, "### kvlower gate\n")?;
        if !self.quiet {
            writeln!(
                self.out,
                "| trace | claim | family | gates | rejected as control |"
            )?;
            writeln!(self.out, "|---|---|---|---|---|")?;
        }
        Ok(())
    }

    fn verdict(&mut self, trace: &str, v: &ClaimVerdict) -> io::Result<()> {
        if self.quiet {
            return Ok(());
        }
        let gates = human_gates(v, false);
        let controls: Vec<&str> = v.controls_rejected.iter().map(|c| c.name()).collect();
        writeln!(
            self.out,
            "| {} | {} | {} | {} | {} |",
            md_code(trace),
            v.claim_id
                .as_deref()
                .map_or("(unclaimed)".to_string(), md_code),
            v.family,
            gates.join("<br>"),
            controls.join(", ")
        )
    }

    fn diagnostic(&mut self, _trace: &str, _d: &Diagnostic) -> io::Result<()> {
        Ok(())
    }

    fn end(
        &mut self,
        s: &CampaignSummary,
        diagnostics: &[(String, Diagnostic)],
        _traces: usize,
        _exit: Exit,
    ) -> io::Result<()> {
        let o = &mut self.out;
        writeln!(o, "\n| campaign | count |\n|---|---|")?;
        writeln!(o, "| runs | {} |", s.runs)?;
        writeln!(o, "| passed runs | {}/{} |", s.passed, s.runs)?;
        writeln!(o, "| failed runs | {}/{} |", s.failed, s.runs)?;
        writeln!(o, "| valid sequences | {}/{} |", s.valid_sequences, s.runs)?;
        writeln!(
            o,
            "| observation passes | {}/{} |",
            s.observation_passes, s.connector_runs
        )?;
        writeln!(
            o,
            "| failure-outcome passes | {}/{} |",
            s.failure_outcome_passes, s.connector_runs
        )?;
        writeln!(
            o,
            "| control passes (must be 0) | {}/{} |",
            s.control_passes, s.control_runs
        )?;
        writeln!(
            o,
            "| multi-claim attributions | {}/{} |",
            s.multi_claim_attributions, s.multi_claim_runs
        )?;
        writeln!(
            o,
            "| reference lifecycle passes | {}/{} |",
            s.reference_passes, s.reference_runs
        )?;
        if s.residency_runs > 0 {
            writeln!(
                o,
                "| residency gate passes | {}/{} |",
                s.residency_passes, s.residency_runs
            )?;
        }
        if !diagnostics.is_empty() {
            writeln!(
                o,
                "\n**{} malformed-trace diagnostic(s)** (malformed traces cannot pass):\n",
                diagnostics.len()
            )?;
            for (file, d) in diagnostics {
                let at = d.line.map_or(file.clone(), |line| format!("{file}:{line}"));
                writeln!(
                    o,
                    "- {} `{}`: {}",
                    md_code(&at),
                    code_of(&d.problem),
                    md_cell(&d.message())
                )?;
            }
        }
        Ok(())
    }
}
