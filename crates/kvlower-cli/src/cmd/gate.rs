//! `kvlower gate`: evaluate runtime event traces (JSON Lines) against the claim-scoped gates.
//!
//! Each PATH is a trace file or a directory (every `*.jsonl` below it, sorted by path, so
//! the output is deterministic). Verdicts stream out trace by trace; only the campaign
//! counts and the diagnostics are held until the end.
//!
//! Exit status: `0` every trace was evaluated (a failing gate is a verdict, not an error);
//! `1` some trace is malformed (any diagnostic); `2` usage: a bad flag, a missing path, a
//! directory without `*.jsonl`.

use std::fs::File;
use std::io::{self, BufReader, Write};
use std::path::{Path, PathBuf};

use kvlower_trace::{
    CampaignSummary, ClaimVerdict, Control, Diagnostic, GateName, GateResult, Problem, TraceFamily,
    TraceOutline, TraceTally,
};
use serde::Serialize;

use crate::Exit;
use crate::output::{Format, ReportOptions};

/// Version of the `--format json` document.
const JSON_SCHEMA_VERSION: u32 = 1;

#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// human: one line per claim, then the campaign summary, diagnostics on stderr;
    /// json: {schema_version, results, summary, diagnostics}; github: `::error`
    /// annotations for malformed lines plus the human report; markdown: a table
    #[command(flatten)]
    pub report: ReportOptions,
    /// Trace files, or directories searched for *.jsonl (recursively, sorted)
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
}

pub fn run(args: &GateArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let traces = match collect_traces(&args.paths) {
        Ok(traces) => traces,
        Err(message) => {
            writeln!(err, "error: {message}")?;
            return Ok(Exit::Usage);
        }
    };
    let opts = &args.report;
    let mut sink: Box<dyn Sink + '_> = match opts.format {
        Format::Human | Format::Github => Box::new(HumanSink {
            out,
            err,
            github: opts.format == Format::Github,
            quiet: opts.quiet,
            color: opts.color.enabled(),
        }),
        Format::Json => Box::new(JsonSink::new(out)),
        Format::Markdown => Box::new(MarkdownSink {
            out,
            quiet: opts.quiet,
        }),
    };
    sink.begin()?;
    let mut summary = CampaignSummary::default();
    let mut diagnostics: Vec<(String, Diagnostic)> = Vec::new();
    for path in &traces {
        let name = display(path);
        let outline = evaluate_file(path, &name, sink.as_mut())?;
        summary.add(&outline);
        for d in outline.diagnostics {
            sink.diagnostic(&name, &d)?;
            diagnostics.push((name.clone(), d));
        }
    }
    sink.end(&summary, &diagnostics, traces.len())?;
    Ok(if diagnostics.is_empty() {
        Exit::Success
    } else {
        Exit::Findings
    })
}

/// Evaluates one file, streaming its verdicts to `sink`.
fn evaluate_file(path: &Path, name: &str, sink: &mut dyn Sink) -> anyhow::Result<TraceOutline> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) => {
            return Ok(TraceOutline {
                name: name.to_owned(),
                family: TraceFamily::Unknown,
                events: 0,
                diagnostics: vec![Diagnostic {
                    line: None,
                    problem: Problem::Read(e.to_string()),
                }],
                tally: TraceTally::default(),
            });
        }
    };
    let mut write_error: Option<io::Error> = None;
    let outline = kvlower_trace::evaluate_reader_each(
        name,
        BufReader::with_capacity(1 << 16, file),
        |verdict| {
            if write_error.is_none()
                && let Err(e) = sink.verdict(name, &verdict)
            {
                write_error = Some(e);
            }
        },
    );
    match write_error {
        Some(e) => Err(e.into()),
        None => Ok(outline),
    }
}

/// The trace files named by `paths`, in order; directories expand to their `*.jsonl`
/// files, sorted. Paths keep the form they were given in (never made absolute).
fn collect_traces(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut traces = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", display(path)))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk_jsonl(path, &mut found).map_err(|e| format!("{}: {e}", display(path)))?;
            if found.is_empty() {
                return Err(format!(
                    "{}: no *.jsonl trace below this directory",
                    display(path)
                ));
            }
            found.sort();
            traces.extend(found);
        } else {
            traces.push(path.clone());
        }
    }
    Ok(traces)
}

/// Adds every `*.jsonl` file below `dir` to `found`. Directory symlinks are not followed,
/// so a link cycle cannot loop.
fn walk_jsonl(dir: &Path, found: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            walk_jsonl(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "jsonl")
            && (kind.is_file() || path.is_file())
        {
            found.push(path);
        }
    }
    Ok(())
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
    ) -> io::Result<()>;
}

struct HumanSink<'a> {
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
    /// Also print a GitHub Actions annotation per diagnostic.
    github: bool,
    /// Only the campaign summary and the diagnostics.
    quiet: bool,
    color: bool,
}

fn human_gate(name: GateName, result: &GateResult, color: bool) -> String {
    let (pass, fail) = if color {
        ("\x1b[32mPASS\x1b[0m", "\x1b[31mFAIL\x1b[0m")
    } else {
        ("PASS", "FAIL")
    };
    if result.pass {
        format!("{name} {pass}")
    } else {
        let missing: Vec<&str> = result.missing.iter().map(|r| r.as_str()).collect();
        format!("{name} {fail} (missing: {})", missing.join(", "))
    }
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
        let gates: Vec<String> = v
            .gates
            .iter()
            .map(|(n, r)| human_gate(*n, r, self.color))
            .collect();
        write!(
            self.out,
            "{trace}: {who} [{}]: {}",
            v.family,
            gates.join("; ")
        )?;
        if !v.controls_rejected.is_empty() {
            let controls: Vec<&str> = v.controls_rejected.iter().map(|c| c.as_str()).collect();
            write!(self.out, "; rejected as control: {}", controls.join(", "))?;
        }
        writeln!(self.out)
    }

    fn diagnostic(&mut self, trace: &str, d: &Diagnostic) -> io::Result<()> {
        if self.github {
            let file = trace
                .replace('%', "%25")
                .replace(',', "%2C")
                .replace(':', "%3A");
            let message = d.message().replace('%', "%25").replace('\n', "%0A");
            match d.line {
                Some(line) => writeln!(
                    self.out,
                    "::error file={file},line={line},title=kvlower gate::{message}"
                )?,
                None => writeln!(
                    self.out,
                    "::error file={file},title=kvlower gate::{message}"
                )?,
            }
        }
        match d.line {
            Some(line) => writeln!(self.err, "{trace}:{line}: {}", d.message()),
            None => writeln!(self.err, "{trace}: {}", d.message()),
        }
    }

    fn end(
        &mut self,
        s: &CampaignSummary,
        diagnostics: &[(String, Diagnostic)],
        traces: usize,
    ) -> io::Result<()> {
        if traces > 1 || self.quiet {
            let o = &mut self.out;
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
        }
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

/// Writes one JSON document incrementally: results one per line as they come, then the
/// summary and the diagnostics.
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
    gates: &'a std::collections::BTreeMap<GateName, GateResult>,
    controls_rejected: &'a [Control],
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    file: &'a str,
    line: Option<u64>,
    message: String,
}

impl Sink for JsonSink<'_> {
    fn begin(&mut self) -> io::Result<()> {
        write!(
            self.out,
            "{{\"schema_version\":{JSON_SCHEMA_VERSION},\"results\":["
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
    ) -> io::Result<()> {
        write!(self.out, "\n],\"summary\":")?;
        serde_json::to_writer(&mut *self.out, summary)?;
        write!(self.out, ",\"diagnostics\":[")?;
        for (i, (file, d)) in diagnostics.iter().enumerate() {
            let sep = if i == 0 { "\n" } else { ",\n" };
            self.out.write_all(sep.as_bytes())?;
            let row = JsonDiagnostic {
                file,
                line: d.line,
                message: d.message(),
            };
            serde_json::to_writer(&mut *self.out, &row)?;
        }
        writeln!(self.out, "\n]}}")
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
        let gates: Vec<String> = v
            .gates
            .iter()
            .map(|(n, r)| human_gate(*n, r, false))
            .collect();
        let controls: Vec<&str> = v.controls_rejected.iter().map(|c| c.as_str()).collect();
        writeln!(
            self.out,
            "| `{trace}` | {} | {} | {} | {} |",
            v.claim_id
                .as_deref()
                .map_or("(unclaimed)".to_string(), |c| format!("`{c}`")),
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
    ) -> io::Result<()> {
        let o = &mut self.out;
        writeln!(o, "\n| campaign | count |\n|---|---|")?;
        writeln!(o, "| runs | {} |", s.runs)?;
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
        if !diagnostics.is_empty() {
            writeln!(
                o,
                "\n**{} malformed-trace diagnostic(s)** (malformed traces cannot pass):\n",
                diagnostics.len()
            )?;
            for (file, d) in diagnostics {
                match d.line {
                    Some(line) => writeln!(o, "- `{file}:{line}`: {}", d.message())?,
                    None => writeln!(o, "- `{file}`: {}", d.message())?,
                }
            }
        }
        Ok(())
    }
}
