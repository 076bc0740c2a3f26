//! What the gate says about one trace: per-claim verdicts and malformed-line diagnostics.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::family::TraceFamily;
use crate::names::{Control, Requirement, TraceGate};
use crate::problem::LocatedProblem;

/// One gate's verdict for one claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GateResult {
    /// True only when `missing` is empty.
    pub pass: bool,
    /// The requirements that do not hold, by their exact names, sorted and unique.
    pub missing: Vec<Requirement>,
}

impl GateResult {
    /// A verdict from the missing requirements (sorted, deduplicated; passes when empty).
    pub fn from_missing(mut missing: Vec<Requirement>) -> Self {
        missing.sort_unstable();
        missing.dedup();
        GateResult {
            pass: missing.is_empty(),
            missing,
        }
    }

    /// The missing requirement names as strings, for callers that want text.
    pub fn missing_names(&self) -> Vec<&'static str> {
        self.missing.iter().map(|r| r.name()).collect()
    }
}

/// The gates' verdicts for one claim of one trace (or for the trace's unclaimed events).
///
/// Fail-closed invariant: when any diagnostic of the trace touches this claim (a malformed
/// or out-of-order line attributed to it, an identity conflict), or touches no claim in
/// particular (a line that could not be read at all), no gate of this verdict passes; the
/// missing list then includes `well_formed_trace` (or `ambiguous_claim_cache_identity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClaimVerdict {
    /// The claim (`claim_id` / `resident_claim_id`); `None` for the trace's unclaimed events.
    pub claim_id: Option<String>,
    /// The family of the trace the claim is in (which decides the gates that apply).
    pub family: TraceFamily,
    /// The gates that apply to this claim and their verdicts.
    pub gates: BTreeMap<TraceGate, GateResult>,
    /// The false-positive controls this claim (or the unclaimed events) matched, sorted.
    pub controls_rejected: Vec<Control>,
}

impl ClaimVerdict {
    /// Whether the named gate applies to this claim and passes.
    pub fn passes(&self, gate: TraceGate) -> bool {
        self.gates.get(&gate).is_some_and(|g| g.pass)
    }
}

/// Per-trace facts a campaign summary counts, computed while the verdicts stream out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct TraceTally {
    /// The trace has no diagnostics (its event sequence is valid).
    pub valid: bool,
    /// Some claim passes `connector_observation`.
    pub observation_pass: bool,
    /// Some claim passes `connector_failure_outcome`.
    pub failure_outcome_pass: bool,
    /// Some row of the trace was rejected as a control.
    pub control: bool,
    /// Some control row nevertheless passes `connector_failure_outcome` (must never happen).
    pub control_pass: bool,
    /// `Some(pass)` when the trace has several claims and the attribution gate applies.
    pub multi_claim: Option<bool>,
    /// `Some(pass)` for a reference-family trace: whether some claim passes `reference_lifecycle`.
    pub reference: Option<bool>,
    /// `Some(pass)` for a trace with residency events: whether some claim passes
    /// `claim_protection`, `claim_demotion` or `claim_expiry`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residency: Option<bool>,
}

impl TraceTally {
    /// Whether the run *passed*, as `kvlower gate --fail-on fail` counts it: the trace is
    /// well-formed, some claim passes some gate, the multi-claim attribution gate (where
    /// it applies) passes, and no control row passes the failure gate. A trace that only
    /// shows a rejected control, or whose every gate fails, did not pass.
    pub fn passed(&self) -> bool {
        let some_gate = self.observation_pass
            || self.failure_outcome_pass
            || self.reference == Some(true)
            || self.multi_claim == Some(true)
            || self.residency == Some(true);
        self.valid && some_gate && self.multi_claim != Some(false) && !self.control_pass
    }

    pub(crate) fn add_verdict(&mut self, v: &ClaimVerdict) {
        self.observation_pass |= v.passes(TraceGate::ConnectorObservation);
        let failure_pass = v.passes(TraceGate::ConnectorFailureOutcome);
        self.failure_outcome_pass |= failure_pass;
        if !v.controls_rejected.is_empty() {
            self.control = true;
            self.control_pass |= failure_pass;
        }
        if let Some(g) = v.gates.get(&TraceGate::MultiClaimAttribution) {
            self.multi_claim = Some(self.multi_claim.unwrap_or(true) && g.pass);
        }
        if let Some(g) = v.gates.get(&TraceGate::ReferenceLifecycle) {
            self.reference = Some(self.reference.unwrap_or(false) || g.pass);
        }
        if v.gates.contains_key(&TraceGate::ClaimProtection) {
            let pass = v.claim_id.is_some()
                && [
                    TraceGate::ClaimProtection,
                    TraceGate::ClaimDemotion,
                    TraceGate::ClaimExpiry,
                ]
                .iter()
                .any(|&g| v.passes(g));
            self.residency = Some(self.residency.unwrap_or(false) || pass);
        }
    }
}

/// Everything about a trace except the per-claim verdicts (which may be streamed out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceOutline {
    /// The name the caller gave the trace (a path, usually).
    pub name: String,
    /// The trace's family.
    pub family: TraceFamily,
    /// The runtime its header records (`None`: no header; it then anchors nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Vec<crate::TraceComponent>>,
    /// The source digest its header records (docs/conformance.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_digest: Option<String>,
    /// Events judged (non-blank lines that parsed and passed the envelope checks).
    pub events: u64,
    /// Malformed-line and trace-level diagnostics, in line order (capped; see
    /// [`crate::MAX_DIAGNOSTICS`]).
    pub diagnostics: Vec<LocatedProblem>,
    /// Campaign counts for this trace.
    pub tally: TraceTally,
}

/// The gate's full answer for one trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TraceReport {
    /// The name the caller gave the trace (a path, usually).
    pub name: String,
    /// The trace's family.
    pub family: TraceFamily,
    /// The runtime its header records (`None`: no header; it then anchors nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Vec<crate::TraceComponent>>,
    /// The source digest its header records (docs/conformance.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_digest: Option<String>,
    /// Events judged.
    pub events: u64,
    /// One verdict per claim, in order of first appearance; the unclaimed row (if any) last.
    pub claims: Vec<ClaimVerdict>,
    /// Malformed-line and trace-level diagnostics. Any diagnostic makes the trace invalid.
    pub diagnostics: Vec<LocatedProblem>,
    /// Campaign counts for this trace.
    pub tally: TraceTally,
}

impl TraceReport {
    pub(crate) fn from_outline(outline: TraceOutline, claims: Vec<ClaimVerdict>) -> Self {
        TraceReport {
            name: outline.name,
            family: outline.family,
            runtime: outline.runtime,
            source_digest: outline.source_digest,
            events: outline.events,
            claims,
            diagnostics: outline.diagnostics,
            tally: outline.tally,
        }
    }

    /// The verdict for `claim_id` (`None`: the unclaimed row).
    pub fn claim(&self, claim_id: Option<&str>) -> Option<&ClaimVerdict> {
        self.claims
            .iter()
            .find(|c| c.claim_id.as_deref() == claim_id)
    }

    /// Whether the trace is free of diagnostics.
    pub fn is_valid(&self) -> bool {
        self.diagnostics.is_empty()
    }
}
