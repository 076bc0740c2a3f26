//! The emitters of `kvlower gate`'s outcome, one per format: `human` (with the GitHub
//! Actions annotations of `--format github`), `json` (the shared envelope, written as
//! the verdicts come) and `markdown`. Unlike the other commands' findings, the gate's
//! outcome streams: its verdicts are emitted trace by trace as they are judged, and
//! only the campaign counts and the malformed-trace problems wait for
//! [`GateEmitter::end`]. A problem's code is its own (`kvlower_trace::Problem::code`).

use std::io::{self, Write};

use kvlower_trace::{CampaignSummary, ClaimVerdict, LocatedProblem};

use super::{Format, ReportOptions, Stream};
use crate::Exit;

mod human;
mod json;
mod markdown;

use human::HumanEmitter;
use json::JsonEmitter;
use markdown::MarkdownEmitter;

/// Where the gate's verdicts, its problems and its summary go, per output format.
pub trait GateEmitter {
    fn begin(&mut self) -> io::Result<()>;
    fn verdict(&mut self, trace: &str, v: &ClaimVerdict) -> io::Result<()>;
    fn diagnostic(&mut self, trace: &str, d: &LocatedProblem) -> io::Result<()>;
    fn end(
        &mut self,
        summary: &CampaignSummary,
        diagnostics: &[(String, LocatedProblem)],
        traces: usize,
        exit: Exit,
    ) -> io::Result<()>;
}

/// The emitter of `opts.format` (`sarif`, which `gate` does not accept, is the human
/// one), writing the result to `out` and the human diagnostics to `err`.
pub fn emitter<'a>(
    opts: &ReportOptions,
    out: &'a mut dyn Write,
    err: &'a mut dyn Write,
) -> Box<dyn GateEmitter + 'a> {
    match opts.format {
        Format::Human | Format::Github | Format::Sarif => Box::new(HumanEmitter {
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
    }
}

/// The last line of human output: `N runs, N passed, N failed`.
pub fn tally(s: &CampaignSummary) -> String {
    format!("{} runs, {} passed, {} failed", s.runs, s.passed, s.failed)
}
