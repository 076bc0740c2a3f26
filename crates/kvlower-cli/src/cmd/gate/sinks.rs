//! What every output sink of `gate` shares: the [`Sink`] trait and the tally line (a
//! diagnostic's code is its own, `kvlower_trace::Problem::code`).

use std::io;

use kvlower_trace::{CampaignSummary, ClaimVerdict, LocatedProblem};

use crate::Exit;

/// Where verdicts, diagnostics and the summary go, per output format.
pub(super) trait Sink {
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

/// The last line of human output: `N runs, N passed, N failed`.
pub(super) fn tally(s: &CampaignSummary) -> String {
    format!("{} runs, {} passed, {} failed", s.runs, s.passed, s.failed)
}
