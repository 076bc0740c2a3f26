//! `gate --format markdown`: a table of verdicts and the campaign counts.

use std::io::{self, Write};

use kvlower_trace::{CampaignSummary, ClaimVerdict, LocatedProblem};

use crate::Exit;
use crate::output::{md_cell, md_code};

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

    fn diagnostic(&mut self, _trace: &str, _d: &LocatedProblem) -> io::Result<()> {
        Ok(())
    }

    fn end(
        &mut self,
        s: &CampaignSummary,
        diagnostics: &[(String, LocatedProblem)],
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
                    d.code(),
                    md_cell(&d.message())
                )?;
            }
        }
        Ok(())
    }
}
