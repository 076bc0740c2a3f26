//! What every output sink of `gate` shares: the [`Sink`] trait, the stable code of a
//! diagnostic and the tally line.

use std::io;

use kvlower_codes::Code;
use kvlower_trace::{CampaignSummary, ClaimVerdict, Diagnostic, Problem};

use crate::Exit;

/// Where verdicts, diagnostics and the summary go, per output format.
pub(super) trait Sink {
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
pub(super) fn code_of(problem: &Problem) -> Code {
    match problem {
        Problem::NotRegularFile(_) => Code::NotARegularFile,
        Problem::Read(_) => Code::UnreadableFile,
        Problem::TraceTooLarge(_) => Code::FileTooLarge,
        _ => Code::MalformedTrace,
    }
}

/// The last line of human output: `N runs, N passed, N failed`.
pub(super) fn tally(s: &CampaignSummary) -> String {
    format!("{} runs, {} passed, {} failed", s.runs, s.passed, s.failed)
}
