//! `gate`'s human output (`--format human`), and with `--format github` the GitHub
//! Actions annotations on stdout beside the human report on stderr: the verdict lines
//! and the summary are the gate's own; its findings are written by the shared
//! renderers ([`render_human`], [`github_annotation`]).

use std::io::{self, Write};

use kvlower_codes::Finding;
use kvlower_trace::{CampaignSummary, ClaimVerdict, GateResult, Requirement, TraceGate};

use crate::Exit;
use crate::output::{escape_control, github_annotation, render_human};

use super::{GateEmitter, tally};

pub(super) struct HumanEmitter<'a> {
    pub(super) out: &'a mut dyn Write,
    pub(super) err: &'a mut dyn Write,
    /// Also print a GitHub Actions annotation per diagnostic.
    pub(super) github: bool,
    /// Only the campaign summary and the diagnostics.
    pub(super) quiet: bool,
    /// Colour PASS/FAIL on stdout.
    pub(super) color_out: bool,
    /// Colour the diagnostics' `error` label on stderr.
    pub(super) color_err: bool,
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
pub(super) fn human_gates(v: &ClaimVerdict, color: bool) -> Vec<String> {
    v.gates
        .iter()
        .map(|(n, r)| human_gate(*n, r, gate_applies(v, *n, r), color))
        .collect()
}

impl GateEmitter for HumanEmitter<'_> {
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

    fn finding(&mut self, d: &Finding) -> io::Result<()> {
        if self.github {
            writeln!(self.out, "{}", github_annotation(d))?;
        }
        // `-q`: the tally line only (the exit code still says a trace was malformed).
        if self.quiet {
            return Ok(());
        }
        writeln!(self.err, "{}", render_human(d, self.color_err))
    }

    fn wants_findings_at_end(&self) -> bool {
        false
    }

    fn end(
        &mut self,
        s: &CampaignSummary,
        _findings: &mut dyn Iterator<Item = Finding>,
        count: usize,
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
        if traces > 1 && !self.quiet {
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
        if count > 0 && !self.quiet {
            writeln!(
                self.err,
                "kvlower gate: {count} diagnostic(s); malformed traces cannot pass"
            )?;
        }
        Ok(())
    }
}
