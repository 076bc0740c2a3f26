//! `gate --format markdown`: a table of verdicts and the campaign counts (the gate's
//! own), then the findings in the shared table ([`markdown_finding_row`]).

use std::io::{self, Write};

use kvlower_codes::Finding;
use kvlower_trace::{CampaignSummary, ClaimVerdict};

use crate::Exit;
use crate::output::markdown::{MARKDOWN_FINDINGS_HEAD, markdown_finding_row};
use crate::output::md_code;

use super::GateEmitter;
use super::human::human_gates;

/// A Markdown report (e.g. for `$GITHUB_STEP_SUMMARY`): a table of verdicts, the
/// campaign counts and the diagnostics.
pub(super) struct MarkdownEmitter<'a> {
    pub(super) out: &'a mut dyn Write,
    pub(super) quiet: bool,
}

impl GateEmitter for MarkdownEmitter<'_> {
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

    fn end(
        &mut self,
        s: &CampaignSummary,
        findings: &mut dyn Iterator<Item = Finding>,
        count: usize,
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
        if count > 0 {
            writeln!(
                o,
                "\n**{count} malformed-trace diagnostic(s)** (malformed traces cannot pass):\n"
            )?;
            o.write_all(MARKDOWN_FINDINGS_HEAD.as_bytes())?;
            for d in findings {
                o.write_all(markdown_finding_row(&d).as_bytes())?;
            }
        }
        Ok(())
    }
}
