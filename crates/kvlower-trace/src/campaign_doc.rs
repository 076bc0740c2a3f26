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

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::{CampaignProblem as P, TraceComponent, TraceGate};

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
    /// 2 (a version-1 document, without engine truth, parses but never holds).
    pub schema_version: u32,
    /// The runtime every trace's header must record (and the descriptor's identity).
    pub runtime: Vec<TraceComponent>,
    /// The engine-truth document (docs/conformance.md); required from version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth: Option<TruthRef>,
    /// The patch's and the recorder's source files and their digest; required from version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceRef>,
    pub scenarios: Vec<Scenario>,
}

/// Where the campaign's engine truth is, and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TruthRef {
    pub path: String,
    pub sha256: String,
}

/// The source files whose code decides what the engine did and what the truth says, and
/// their digest (docs/conformance.md, "The source digest").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceRef {
    pub files: Vec<String>,
    pub sha256: String,
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

use crate::CampaignProblem;
use crate::campaign_files::relative;
pub use crate::campaign_files::{CampaignFiles, FileId, source_digest};

/// What re-running a campaign showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CampaignOutcome {
    /// Every trace was read, is well formed, records the document's runtime in its
    /// header, every expectation holds, and every verdict agrees with the engine's truth.
    pub held: bool,
    /// Why it did not hold (the first problem found), for a reviewer.
    pub problem: Option<CampaignProblem>,
    /// Gates with a scenario passing in every run and a scenario passing in none
    /// (empty unless `held`).
    pub witnessed: Vec<TraceGate>,
    /// Per gate: positive runs and control runs by kind (empty unless `held`).
    pub gates: BTreeMap<TraceGate, GateCounts>,
    /// The judging code that wrote the truth: (path, SHA-256 of its bytes now), each of
    /// which the catalog must pin (empty unless `held`).
    pub recorder: Vec<(String, String)>,
}

/// What a campaign showed of one gate (the catalog's minimums judge it).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct GateCounts {
    /// Runs of scenarios expecting the gate in every run.
    pub positives: u32,
    /// Control kind → runs of scenarios expecting the gate in no run of that kind.
    pub controls: BTreeMap<String, u32>,
    /// Control kind → the outcome the engine showed in the run (its truth) → runs: the
    /// catalog names the outcome a run of the kind must show to count.
    pub outcomes: BTreeMap<String, BTreeMap<String, u32>>,
}

/// The control kinds a run that fails `gate` is, by its content: every control the gate
/// rejected one of its rows as, and for each claim the gate applies to and that was not
/// rejected, the first requirement (in the gate's order) it misses: it passed every one
/// before. A trace without a row the gate applies to (empty, header only) is no control.
pub fn control_kinds(report: &crate::TraceReport, gate: TraceGate) -> BTreeSet<String> {
    let mut kinds = BTreeSet::new();
    for row in &report.claims {
        let Some(result) = row.gates.get(&gate) else {
            continue;
        };
        if result.pass {
            continue;
        }
        if !row.controls_rejected.is_empty() {
            kinds.extend(row.controls_rejected.iter().map(|c| c.name().to_owned()));
        } else if row.claim_id.is_some()
            && let Some(first) = crate::residency::first_in_gate_order(gate, &result.missing)
        {
            kinds.insert(first.name().to_owned());
        }
    }
    kinds
}

impl CampaignDocument {
    /// Re-runs the gate on every trace, checks every expectation, and every verdict
    /// against the engine's truth.
    pub fn rerun(&self, files: &dyn CampaignFiles) -> CampaignOutcome {
        match self.check(files) {
            Ok((witnessed, gates, recorder)) => CampaignOutcome {
                held: true,
                problem: None,
                witnessed,
                gates,
                recorder,
            },
            Err(problem) => CampaignOutcome {
                held: false,
                problem: Some(problem),
                witnessed: Vec::new(),
                gates: BTreeMap::new(),
                recorder: Vec::new(),
            },
        }
    }

    /// Reads the source files and compares their digest.
    fn check_source(&self, files: &dyn CampaignFiles) -> Result<String, CampaignProblem> {
        let source = self.source.as_ref().ok_or(P::NoSourceDigest)?;
        if source.files.is_empty() || source.files.len() > MAX_TRACES {
            return Err(P::SourceFilesCount);
        }
        let mut ids = BTreeSet::new();
        let mut read = Vec::with_capacity(source.files.len());
        for path in &source.files {
            if !relative(path) || files.is_own_file(path) {
                return Err(P::SourceFileNotRepoFile { path: path.clone() });
            }
            let id = files
                .identify(path)
                .ok_or_else(|| P::SourceFileUnreadable { path: path.clone() })?;
            if !ids.insert(id) {
                return Err(P::SourceFileListedTwice { path: path.clone() });
            }
            let bytes = files
                .read(path)
                .ok_or_else(|| P::SourceFileUnreadable { path: path.clone() })?;
            read.push((path.as_str(), bytes));
        }
        let digest = source_digest(read.iter().map(|(p, b)| (*p, b.as_slice())));
        if digest != source.sha256 {
            return Err(P::SourceDigestChanged {
                digest,
                recorded: source.sha256.clone(),
            });
        }
        Ok(digest)
    }

    /// Reads the truth document and checks its digest, schema, runtime and source.
    fn check_truth(
        &self,
        files: &dyn CampaignFiles,
        digest: &str,
    ) -> Result<crate::truth::TruthDocument, CampaignProblem> {
        let truth = self.truth.as_ref().ok_or(P::NoTruth)?;
        if !relative(&truth.path) || files.is_own_file(&truth.path) {
            return Err(P::TruthNotRepoFile {
                path: truth.path.clone(),
            });
        }
        let bytes = files.read(&truth.path).ok_or_else(|| P::TruthUnreadable {
            path: truth.path.clone(),
        })?;
        let sha = kvlower_core::catalog::sha256_hex(&bytes);
        if sha != truth.sha256 {
            return Err(P::TruthDigestDiffers {
                path: truth.path.clone(),
                sha,
                recorded: truth.sha256.clone(),
            });
        }
        let doc = crate::truth::read_truth(&bytes)?;
        if doc.runtime != self.runtime {
            return Err(P::TruthOtherRuntime);
        }
        if doc.source_digest != digest {
            return Err(P::TruthOtherSourceDigest);
        }
        Ok(doc)
    }

    #[expect(clippy::type_complexity, reason = "one private result, read once")]
    fn check(
        &self,
        files: &dyn CampaignFiles,
    ) -> Result<
        (
            Vec<TraceGate>,
            BTreeMap<TraceGate, GateCounts>,
            Vec<(String, String)>,
        ),
        CampaignProblem,
    > {
        if self.kind != CAMPAIGN_KIND || self.schema_version != 2 {
            return Err(P::NotVersion2);
        }
        if self.runtime.is_empty() {
            return Err(P::NoRuntime);
        }
        let traces: usize = self.scenarios.iter().map(|s| s.traces.len()).sum();
        if self.scenarios.is_empty() || self.scenarios.len() > MAX_SCENARIOS || traces > MAX_TRACES
        {
            return Err(P::TooManyScenarios {
                max_scenarios: MAX_SCENARIOS,
                max_traces: MAX_TRACES,
            });
        }
        let digest = self.check_source(files)?;
        let truth = self.check_truth(files, &digest)?;
        let source_files = self.source.as_ref().map(|s| s.files.as_slice());
        let recorder = crate::campaign_bind::check_recorder(
            &truth.recorder,
            source_files.unwrap_or_default(),
            files,
        )?;
        let allowed: Vec<&str> = source_files
            .unwrap_or_default()
            .iter()
            .chain(&truth.recorder.files)
            .map(String::as_str)
            .collect();
        crate::import_closure::check_closure(&allowed, &truth.loaded_files, files)?;
        // Truth runs by the identity of the trace file they name.
        let mut truth_by_file: std::collections::BTreeMap<FileId, usize> =
            std::collections::BTreeMap::new();
        for (i, run) in truth.runs.iter().enumerate() {
            let id = files
                .identify(&run.trace)
                .ok_or_else(|| P::TruthRunTraceUnreadable {
                    run: run.run.clone(),
                    trace: run.trace.clone(),
                })?;
            if truth_by_file.insert(id, i).is_some() {
                return Err(P::TruthRunsShareATrace {
                    run: run.run.clone(),
                });
            }
        }
        let mut seen: BTreeSet<FileId> = BTreeSet::new();
        let mut claim_runs: BTreeMap<String, String> = BTreeMap::new();
        let mut truth_claims: BTreeMap<&str, &str> = BTreeMap::new();
        let mut counts: BTreeMap<TraceGate, GateCounts> = BTreeMap::new();
        let mut every: BTreeSet<TraceGate> = BTreeSet::new();
        let mut none: BTreeSet<TraceGate> = BTreeSet::new();
        for scenario in &self.scenarios {
            if scenario.traces.is_empty() || scenario.expect.is_empty() {
                return Err(P::ScenarioEmpty {
                    scenario: scenario.name.clone(),
                });
            }
            let control_scenario = scenario.expect.values().all(|e| *e == Expect::NoRun);
            for path in &scenario.traces {
                if !relative(path) || files.is_own_file(path) {
                    return Err(P::TraceNotRepoFile { path: path.clone() });
                }
                let id = files
                    .identify(path)
                    .ok_or_else(|| P::TraceUnreadable { path: path.clone() })?;
                if !seen.insert(id) {
                    // One run counted twice (another spelling, a link) would inflate "every run".
                    return Err(P::TraceListedTwice { path: path.clone() });
                }
                let reader = files
                    .open_trace(path)
                    .ok_or_else(|| P::TraceUnreadable { path: path.clone() })?;
                let report = crate::evaluate_reader(path, reader);
                if !report.is_valid() {
                    return Err(P::TraceMalformed { path: path.clone() });
                }
                if report.runtime.as_deref() != Some(self.runtime.as_slice()) {
                    return Err(P::TraceOtherRuntime { path: path.clone() });
                }
                if report.source_digest.as_deref() != Some(digest.as_str()) {
                    return Err(P::TraceOtherSourceDigest { path: path.clone() });
                }
                // A claim belongs to one run: the same claim in two traces is one run's
                // story told twice (a copied trace), which would count toward the minimums
                // once per copy.
                for claim in report.claims.iter().filter_map(|c| c.claim_id.as_deref()) {
                    if let Some(first) = claim_runs.insert(claim.to_owned(), path.clone()) {
                        return Err(P::ClaimInTwoRuns {
                            claim: claim.to_owned(),
                            first,
                            path: path.clone(),
                        });
                    }
                }
                let run = truth_by_file
                    .get(&id)
                    .and_then(|&i| truth.runs.get(i))
                    .ok_or_else(|| P::TraceWithoutTruthRun { path: path.clone() })?;
                // Bound before anything is counted: a run without truth about its own
                // claims counts toward no minimum.
                crate::campaign_bind::bind_run(path, run, &report, &mut truth_claims)?;
                for (&gate, &expect) in &scenario.expect {
                    let passes = report
                        .claims
                        .iter()
                        .any(|c| c.claim_id.is_some() && c.passes(gate));
                    if passes != (expect == Expect::EveryRun) {
                        return Err(P::ExpectationUnmet {
                            scenario: scenario.name.clone(),
                            path: path.clone(),
                            passes,
                            gate,
                        });
                    }
                    let tally = counts.entry(gate).or_default();
                    if expect == Expect::EveryRun {
                        tally.positives = tally.positives.saturating_add(1);
                    } else if control_scenario && !run.record_level_injection {
                        // Only a scenario built as a control (no gate expected in every
                        // run) supplies controls: a positive run of another gate's
                        // scenario is not a control of this one. A record-level injection
                        // (the driver edited the trace's story) is no control either: the
                        // engine did nothing the gate had to catch.
                        for kind in control_kinds(&report, gate) {
                            let by = tally.outcomes.entry(kind.clone()).or_default();
                            let m = by.entry(run.outcome.to_owned()).or_insert(0);
                            *m = m.saturating_add(1);
                            let n = tally.controls.entry(kind).or_insert(0);
                            *n = n.saturating_add(1);
                        }
                    }
                }
                if run.scenario != scenario.name {
                    return Err(P::TruthRunOfAnotherScenario {
                        run: run.run.clone(),
                        scenario: run.scenario.clone(),
                        listed: scenario.name.clone(),
                    });
                }
                agree(run, &report)?;
            }
            for (&gate, &expect) in &scenario.expect {
                match expect {
                    Expect::EveryRun => every.insert(gate),
                    Expect::NoRun => none.insert(gate),
                };
            }
        }
        if seen.len() != truth.runs.len() {
            return Err(P::RunMissingFromCampaign {
                truth_runs: truth.runs.len(),
                listed: seen.len(),
            });
        }
        Ok((
            every.intersection(&none).copied().collect(),
            counts,
            recorder,
        ))
    }
}

/// The trace's verdicts agree with the truth, per claim and per gate of the run's family
/// (docs/conformance.md, "Agreement").
fn agree(run: &crate::truth::TruthRun, report: &crate::TraceReport) -> Result<(), CampaignProblem> {
    for (claim, gates) in &run.expected {
        for (&gate, want) in gates {
            let got = report.claim(Some(claim)).is_some_and(|c| c.passes(gate));
            if got != want.pass {
                return Err(P::VerdictDisagrees {
                    run: run.run.clone(),
                    claim: claim.clone(),
                    gate,
                    passes: got,
                    should_pass: want.pass,
                    fact: want.fact.clone(),
                });
            }
        }
    }
    for verdict in &report.claims {
        let Some(claim) = verdict.claim_id.as_deref() else {
            continue;
        };
        if run.expected.contains_key(claim) {
            continue;
        }
        if let Some(gate) = run.gates.iter().find(|&&g| verdict.passes(g)) {
            return Err(P::UnnamedClaimPasses {
                run: run.run.clone(),
                claim: claim.to_owned(),
                gate: *gate,
            });
        }
    }
    Ok(())
}

/// Whether a JSON value looks like a campaign document (recognised by content).
pub fn is_campaign_document(value: &serde_json::Value) -> bool {
    value.get("kind").and_then(serde_json::Value::as_str) == Some(CAMPAIGN_KIND)
}
