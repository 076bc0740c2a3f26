//! The emitters of `kvlower gate`'s outcome, one per format: `human` (with the GitHub
//! Actions annotations of `--format github`), `json` (the shared envelope, written as
//! the verdicts come), `markdown` and `sarif`. Unlike the other commands' findings, the
//! gate's outcome streams: its verdicts are emitted trace by trace as they are judged,
//! and only the campaign counts wait for [`GateEmitter::end`].
//!
//! What is wrong with a trace reaches an emitter as a [`Finding`] (`cmd::gate` makes it
//! from the trace's problem, `kvlower_trace::LocatedProblem::finding`) and is written by
//! the shared renderers of findings: [`render_human`], [`github_annotation`], the
//! envelope's [`JsonDiagnostic`](super::JsonDiagnostic), [`markdown_finding_row`],
//! [`sarif`]. Only the verdicts and the summary lines are the gate's own.

use std::io::{self, Write};

use kvlower_codes::Finding;
use kvlower_trace::{CampaignSummary, ClaimVerdict};

use super::{Format, ReportOptions, Stream};
use crate::Exit;

mod human;
mod json;
mod markdown;

use human::HumanEmitter;
use json::JsonEmitter;
use markdown::MarkdownEmitter;

/// Where the gate's verdicts, its findings and its summary go, per output format.
pub trait GateEmitter {
    /// What comes before the first verdict (nothing, by default).
    fn begin(&mut self) -> io::Result<()> {
        Ok(())
    }
    /// One claim's verdict, as its trace is judged (dropped, by default: SARIF has no
    /// place for a verdict).
    fn verdict(&mut self, _trace: &str, _v: &ClaimVerdict) -> io::Result<()> {
        Ok(())
    }
    /// A finding of a trace, as that trace ends: written now by the formats that stream
    /// them (human, github, which override this and [`Self::wants_findings_at_end`]);
    /// the others write them at [`GateEmitter::end`].
    fn finding(&mut self, _d: &Finding) -> io::Result<()> {
        Ok(())
    }
    /// Whether [`GateEmitter::end`] writes the findings (then the caller keeps them, in
    /// the compact shape of the trace crate, until the end).
    fn wants_findings_at_end(&self) -> bool {
        true
    }
    /// The campaign counts and the summary; `findings` are the run's findings in order
    /// (made one at a time, only when [`GateEmitter::wants_findings_at_end`]), `count`
    /// how many there were.
    fn end(
        &mut self,
        summary: &CampaignSummary,
        findings: &mut dyn Iterator<Item = Finding>,
        count: usize,
        traces: usize,
        exit: Exit,
    ) -> io::Result<()>;
}

/// The emitter of `opts.format`, writing the result to the screen's stdout and the
/// human diagnostics to its stderr.
pub fn emitter<'a>(
    opts: &ReportOptions,
    screen: &'a mut super::Screen<'_>,
) -> Box<dyn GateEmitter + 'a> {
    let (out, err) = (&mut *screen.out, &mut *screen.err);
    match opts.format {
        Format::Human | Format::Github => Box::new(HumanEmitter {
            out,
            err,
            github: opts.format == Format::Github,
            quiet: opts.quiet,
            color_out: opts.color.enabled_for(Stream::Stdout),
            color_err: opts.color.enabled_for(Stream::Stderr),
        }),
        Format::Json => Box::new(JsonEmitter::new(out)),
        Format::Markdown => Box::new(MarkdownEmitter {
            out,
            quiet: opts.quiet,
        }),
        Format::Sarif => Box::new(SarifEmitter { out }),
    }
}

/// `gate --format sarif`: the run's findings as one SARIF log on stdout (a verdict is no
/// finding: SARIF has no place for it; the other formats carry the verdicts).
struct SarifEmitter<'a> {
    out: &'a mut dyn Write,
}

impl GateEmitter for SarifEmitter<'_> {
    fn end(
        &mut self,
        _summary: &CampaignSummary,
        findings: &mut dyn Iterator<Item = Finding>,
        _count: usize,
        _traces: usize,
        _exit: Exit,
    ) -> io::Result<()> {
        let findings: Vec<Finding> = findings.collect();
        write!(self.out, "{}", super::sarif(&findings, None))
    }
}

/// The last line of human output: `N runs, N passed, N failed`.
pub fn tally(s: &CampaignSummary) -> String {
    format!("{} runs, {} passed, {} failed", s.runs, s.passed, s.failed)
}
