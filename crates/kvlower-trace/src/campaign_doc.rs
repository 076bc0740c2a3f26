//! The gate campaign document: a committed set of traces, grouped into scenarios,
//! with what each scenario must show, which `kvlower check` re-runs whole
//! (docs/trace-format.md, "Campaign documents").
//!
//! Why a document and not one trace: a claimed verdict on one hand-picked trace
//! says nothing about the runs that were left out. A campaign names every run,
//! says of each scenario which gates every run passes and which no run passes,
//! and anchors only when all of it re-runs as stated. A gate is witnessed only
//! when some scenario shows it passing in every run *and* some scenario (a
//! control) shows it passing in none: a gate never seen to fail proves nothing.

use std::collections::BTreeSet;
use std::io::BufRead;

use serde::{Deserialize, Serialize};

use crate::{TraceComponent, TraceGate};

/// The `kind` that makes a JSON object a campaign document.
pub const CAMPAIGN_KIND: &str = "kvlower-gate-campaign";
/// Scenarios and traces a document may list (bounded work for `check`).
const MAX_SCENARIOS: usize = 64;
const MAX_TRACES: usize = 10_000;

/// A committed campaign, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignDocument {
    /// Always [`CAMPAIGN_KIND`].
    pub kind: String,
    /// Always 1.
    pub schema_version: u32,
    /// The runtime every trace's header must record (and the descriptor's identity).
    pub runtime: Vec<TraceComponent>,
    pub scenarios: Vec<Scenario>,
}

/// One scenario: its runs' traces and what each gate must show across them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// Trace paths relative to the repository root, one per run.
    pub traces: Vec<String>,
    /// Gate name → expectation.
    pub expect: std::collections::BTreeMap<TraceGate, Expect>,
}

/// What a gate must show over a scenario's runs. A run passes a gate when some
/// claim of its trace (not the unclaimed events) passes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    EveryRun,
    NoRun,
}

/// What re-running a campaign showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CampaignOutcome {
    /// Every trace was read, is well formed, records the document's runtime in its
    /// header, and every expectation holds.
    pub held: bool,
    /// Why it did not hold (the first problem found), for a reviewer.
    pub problem: Option<String>,
    /// Gates with a scenario passing in every run and a scenario passing in none
    /// (empty unless `held`).
    pub witnessed: Vec<TraceGate>,
}

impl CampaignDocument {
    /// Re-runs the gate on every trace (`open` maps a recorded path to a reader,
    /// `None` when it is missing or refused) and checks every expectation.
    pub fn rerun<R: BufRead>(&self, open: &dyn Fn(&str) -> Option<R>) -> CampaignOutcome {
        match self.check(open) {
            Ok(witnessed) => CampaignOutcome {
                held: true,
                problem: None,
                witnessed,
            },
            Err(problem) => CampaignOutcome {
                held: false,
                problem: Some(problem),
                witnessed: Vec::new(),
            },
        }
    }

    fn check<R: BufRead>(
        &self,
        open: &dyn Fn(&str) -> Option<R>,
    ) -> Result<Vec<TraceGate>, String> {
        if self.kind != CAMPAIGN_KIND || self.schema_version != 1 {
            return Err("not a version-1 kvlower-gate-campaign document".into());
        }
        if self.runtime.is_empty() {
            return Err("the document records no runtime".into());
        }
        let traces: usize = self.scenarios.iter().map(|s| s.traces.len()).sum();
        if self.scenarios.is_empty() || self.scenarios.len() > MAX_SCENARIOS || traces > MAX_TRACES
        {
            return Err(format!(
                "a campaign lists 1 to {MAX_SCENARIOS} scenarios and at most {MAX_TRACES} traces"
            ));
        }
        let mut seen = BTreeSet::new();
        let mut every: BTreeSet<TraceGate> = BTreeSet::new();
        let mut none: BTreeSet<TraceGate> = BTreeSet::new();
        for scenario in &self.scenarios {
            if scenario.traces.is_empty() || scenario.expect.is_empty() {
                return Err(format!(
                    "scenario `{}` lists no trace or no expectation",
                    scenario.name
                ));
            }
            for path in &scenario.traces {
                if !seen.insert(path.as_str()) {
                    // One run counted twice would inflate "every run".
                    return Err(format!("trace `{path}` is listed twice"));
                }
                let reader = open(path).ok_or_else(|| format!("trace `{path}` cannot be read"))?;
                let report = crate::evaluate_reader(path, reader);
                if !report.is_valid() {
                    return Err(format!("trace `{path}` is malformed"));
                }
                if report.runtime.as_deref() != Some(self.runtime.as_slice()) {
                    return Err(format!(
                        "trace `{path}` does not record the document's runtime in its header"
                    ));
                }
                for (&gate, &expect) in &scenario.expect {
                    let passes = report
                        .claims
                        .iter()
                        .any(|c| c.claim_id.is_some() && c.passes(gate));
                    if passes != (expect == Expect::EveryRun) {
                        return Err(format!(
                            "scenario `{}`: `{path}` {} {gate}",
                            scenario.name,
                            if passes { "passes" } else { "does not pass" }
                        ));
                    }
                }
            }
            for (&gate, &expect) in &scenario.expect {
                match expect {
                    Expect::EveryRun => every.insert(gate),
                    Expect::NoRun => none.insert(gate),
                };
            }
        }
        Ok(every.intersection(&none).copied().collect())
    }
}

/// Whether a JSON value looks like a campaign document (recognised by content).
pub fn is_campaign_document(value: &serde_json::Value) -> bool {
    value.get("kind").and_then(serde_json::Value::as_str) == Some(CAMPAIGN_KIND)
}
