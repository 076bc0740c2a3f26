//! Counts over many traces, in the shape of the paper's Table 8 (connector repetitions).

use serde::Serialize;

use crate::family::TraceFamily;
use crate::verdict::TraceOutline;

/// Campaign counts. Each count is over traces (runs), like the paper's table: a trace
/// counts as an observation pass when some claim in it passes `connector_observation`,
/// and likewise for the other gates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CampaignSummary {
    /// Traces evaluated.
    pub runs: u64,
    /// Runs that passed (see [`crate::TraceTally::passed`]).
    pub passed: u64,
    /// Runs that did not pass: `runs - passed`.
    pub failed: u64,
    /// Traces without any diagnostic (a valid event sequence).
    pub valid_sequences: u64,
    /// Connector-family traces.
    pub connector_runs: u64,
    /// Connector traces where some claim passes `connector_observation`.
    pub observation_passes: u64,
    /// Connector traces where some claim passes `connector_failure_outcome`.
    pub failure_outcome_passes: u64,
    /// Traces with a row rejected as a control.
    pub control_runs: u64,
    /// Control traces whose control row nevertheless passes the failure gate (must be 0).
    pub control_passes: u64,
    /// Connector traces with several claims (the attribution gate applies).
    pub multi_claim_runs: u64,
    /// Multi-claim traces whose attribution gate passes.
    pub multi_claim_attributions: u64,
    /// Reference-family traces.
    pub reference_runs: u64,
    /// Reference traces where some claim passes `reference_lifecycle`.
    pub reference_passes: u64,
    /// Traces with residency events (shown only when there are some).
    #[serde(skip_serializing_if = "is_zero")]
    pub residency_runs: u64,
    /// Residency traces where some claim passes a residency gate.
    #[serde(skip_serializing_if = "is_zero")]
    pub residency_passes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl CampaignSummary {
    /// Adds one trace's outcome.
    pub fn add(&mut self, trace: &TraceOutline) {
        let t = &trace.tally;
        let count = |b: bool| u64::from(b);
        self.runs += 1;
        if t.passed() {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
        self.valid_sequences += count(t.valid);
        if trace.family == TraceFamily::Connector {
            self.connector_runs += 1;
            self.observation_passes += count(t.observation_pass);
            self.failure_outcome_passes += count(t.failure_outcome_pass);
        }
        self.control_runs += count(t.control);
        self.control_passes += count(t.control_pass);
        if let Some(pass) = t.multi_claim {
            self.multi_claim_runs += 1;
            self.multi_claim_attributions += count(pass);
        }
        if let Some(pass) = t.reference {
            self.reference_runs += 1;
            self.reference_passes += count(pass);
        }
        if let Some(pass) = t.residency {
            self.residency_runs += 1;
            self.residency_passes += count(pass);
        }
    }
}
