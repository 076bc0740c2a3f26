//! The engine-truth document (`kvlower-engine-truth/1`, docs/conformance.md, "The
//! engine-truth document") and the verdicts kvlower derives from it alone.
//!
//! Why: a trace is the patch's own story. A campaign counts only when, for every run and
//! every gate, the verdict the trace earns equals the one the engine's own state (recorded
//! apart from the trace, outside the patch's code) says the run should earn. The rules
//! below are kvlower's: the Python verifiers of the reference campaigns are a second,
//! independent implementation of the same rules.
//!
//! Pure: the caller read the bytes (kvlower-evidence); nothing here opens a file.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::CampaignProblem as P;
use crate::TraceComponent;
use crate::names::TraceGate;

mod consistency;
mod demotion;
mod firings;
mod outcome;
mod restore;

use consistency::{residency_consistent, served_tokens_problem};

/// The only truth schema so far.
pub const TRUTH_SCHEMA: &str = "kvlower-engine-truth/1";

/// Which gates a truth document's runs decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TruthFamily {
    Connector,
    Residency,
    /// Slot save/restore runs of an engine without an event stream (llama.cpp's
    /// `llama-server`): `crate::truth_slot`, docs/conformance.md section 6.
    Slot,
}

#[derive(Debug, Clone, Deserialize)]
struct RawTruth {
    schema: String,
    family: TruthFamily,
    runtime: Vec<TraceComponent>,
    source_digest: String,
    recorder: RecorderRef,
    loaded_files: Vec<String>,
    engine: Engine,
    runs: Vec<serde_json::Value>,
}

/// Which judging code wrote the truth: its files and their digest (computed like the
/// source digest, docs/conformance.md "Pinned judging code"). The catalog pins each file.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecorderRef {
    pub files: Vec<String>,
    pub sha256: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Engine {
    block_size: u64,
    #[serde(default)]
    claim_prefix_tokens: Option<u64>,
}

#[derive(Debug, Clone, Deserialize)]
struct Fired {
    request_claim_id: Option<String>,
    failure_target_claim_id: Option<String>,
    failure_matched_claim_id: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct ConnectorRequest {
    request: String,
    role: String,
    claim_id: Option<String>,
    finish_reason: Option<String>,
    engine_finish_reason: Option<String>,
    external_tokens_served: u64,
    blocks_reported_failed: Vec<u64>,
    num_cached_tokens: Option<u64>,
    prefills: Vec<Prefill>,
    /// SHA-256 of each of the request's full prompt blocks, in order, read from the engine's
    /// KV tensors when the engine stored them to the tier (a resident request; null: none).
    kv_blocks_stored: Option<Vec<String>>,
    /// The same after the engine restored them from the tier (a reuse; null: none).
    kv_blocks_restored: Option<Vec<String>>,
    /// The client's output (null: none reached it).
    output: Option<restore::Output>,
    /// A no-reuse reference run of the same request (a reuse; null: none).
    reference: Option<restore::Reference>,
}

/// One prefill's statistics, as the engine reported them.
#[derive(Debug, Clone, Copy, Deserialize)]
struct Prefill {
    local: u64,
    external: u64,
}

/// The load or store jobs the engine handed its offloading worker during a run.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
struct Transfers {
    blocks: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct EngineTransfers {
    #[serde(default)]
    load_jobs: Transfers,
}

#[derive(Debug, Clone, Deserialize)]
struct ConnectorRun {
    claims: Vec<String>,
    scheduler_failure_policy: String,
    injection_target_claim_id: Option<String>,
    injection_fired: Vec<Fired>,
    requests: Vec<ConnectorRequest>,
    engine_transfers: EngineTransfers,
}

#[derive(Debug, Clone, Deserialize)]
struct ClaimInput {
    mode: String,
    footprint_blocks: u64,
    duration_steps: Option<u64>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct PatchControls {
    #[serde(default = "yes")]
    accept: bool,
    #[serde(default = "yes")]
    demote: bool,
}

#[derive(Debug, Clone, Deserialize)]
struct ResidencyRequest {
    request: String,
    role: String,
    finish_reason: Option<String>,
    engine_finish_reason: Option<String>,
    first_scheduled_step: Option<u64>,
    finished_step: Option<u64>,
    local_tokens_served: u64,
    external_tokens_served: u64,
    aborted_by_campaign: bool,
    num_cached_tokens: Option<u64>,
    prefills: Vec<Prefill>,
    /// The claim's footprint blocks this request's load jobs restored, digested as
    /// `kv_blocks_restored` of connector runs, paired by block hash (null: none).
    #[serde(default)]
    kv_blocks_restored: Option<Vec<Option<String>>>,
    #[serde(default)]
    output: Option<restore::Output>,
    /// A no-reuse reference of the probe (null: none).
    #[serde(default)]
    reference: Option<restore::Reference>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
struct Step {
    step: u64,
    device_cached: u64,
    evictable: u64,
    host_tier: u64,
    pinned: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct ClaimBlocks {
    per_step: Vec<Step>,
    /// Each footprint block's digest when last stored to the host tier (null: never).
    #[serde(default)]
    kv_stored: Option<Vec<Option<String>>>,
}

#[derive(Debug, Clone, Deserialize)]
struct ResidencyRun {
    claim_id: String,
    claim_input: ClaimInput,
    patch_controls: PatchControls,
    injected_misbehaviour: Option<String>,
    /// The other claims a record-level injection wrote into the trace (an input).
    injected_claim_ids: Vec<String>,
    requests: Vec<ResidencyRequest>,
    engine_transfers: EngineTransfers,
    claim_blocks: ClaimBlocks,
}

/// The keys every run has, whatever its family.
#[derive(Debug, Clone, Deserialize)]
struct RunKeys {
    run: String,
    scenario: String,
    trace: String,
    /// What the recorder says the engine showed (docs/conformance.md, "Control outcomes");
    /// kvlower derives it again and requires the two equal.
    engine_outcome: String,
}

/// What the truth says one claim of one run should show, per gate, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub pass: bool,
    /// The engine fact the expectation rests on, for a reviewer.
    pub fact: String,
}

/// One run as the truth describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruthRun {
    pub run: String,
    pub scenario: String,
    /// The trace path, repository-relative (the same file the campaign lists).
    pub trace: String,
    /// Claim → gate → what the run should show.
    pub expected: BTreeMap<String, BTreeMap<TraceGate, Expected>>,
    /// The gates this run's family decides (a trace claim the truth does not name must
    /// pass none of them).
    pub gates: Vec<TraceGate>,
    /// The driver injected a record-level misbehaviour (`injected_misbehaviour`): the run's
    /// failure is the trace's story, not the engine's, so it witnesses no control
    /// (docs/conformance.md, "Controls").
    pub record_level_injection: bool,
    /// Claims the driver's record-level injection wrote into the trace besides the run's
    /// own (the truth is about them too: they must pass no gate).
    pub injected_claims: Vec<String>,
    /// Claim ids the truth run names besides its claims (a connector injector's configured
    /// target: the wrong claim of a `wrong_claim_failure` control). They are
    /// not rows of the trace, but they are this run's: no other truth run may name them
    /// (docs/conformance.md, "Every run is judged by its own truth").
    pub also_named: Vec<String>,
    /// What the engine showed in the run, derived from the truth's facts (and equal to the
    /// recorder's `engine_outcome`): a control counts only with its kind's outcome.
    pub outcome: &'static str,
}

impl TruthRun {
    /// The claim ids this truth run is about: the claims it derives verdicts for, and the
    /// claims a record-level injection wrote into the trace.
    pub fn claims(&self) -> impl Iterator<Item = &str> {
        self.expected
            .keys()
            .chain(&self.injected_claims)
            .map(String::as_str)
    }
}

/// A read, self-consistent truth document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruthDocument {
    pub family: TruthFamily,
    pub runtime: Vec<TraceComponent>,
    pub source_digest: String,
    /// The judging code that wrote it.
    pub recorder: RecorderRef,
    /// The repository files the recorder saw loaded as modules during the run.
    pub loaded_files: Vec<String>,
    pub runs: Vec<TruthRun>,
}

/// Reads a truth document: `Err(why)` when it is malformed (a repeated key, a listed key
/// missing or of the wrong type, another schema) or contradicts itself.
pub fn read_truth(bytes: &[u8]) -> Result<TruthDocument, P> {
    crate::strict_json::check_no_repeated_keys(bytes).map_err(|why| P::TruthMalformed { why })?;
    let raw: RawTruth =
        serde_json::from_slice(bytes).map_err(|e| P::TruthMalformed { why: e.to_string() })?;
    if raw.schema != TRUTH_SCHEMA {
        return Err(P::TruthSchema {
            schema: raw.schema,
            expected: TRUTH_SCHEMA,
        });
    }
    if raw.engine.block_size == 0 {
        return Err(P::TruthBlockSizeZero);
    }
    let mut runs = Vec::with_capacity(raw.runs.len());
    let mut names = std::collections::BTreeSet::new();
    for value in raw.runs {
        let keys: RunKeys = serde_json::from_value(value.clone())
            .map_err(|e| P::TruthRunKeysMalformed { why: e.to_string() })?;
        if !names.insert(keys.run.clone()) {
            return Err(P::TruthRunListedTwice { run: keys.run });
        }
        let mut record_level_injection = false;
        let mut injected_claims = Vec::new();
        let mut also_named = Vec::new();
        let outcome;
        let (expected, gates) = match raw.family {
            TruthFamily::Connector => {
                let prefix = raw
                    .engine
                    .claim_prefix_tokens
                    .filter(|&p| p > 0)
                    .ok_or(P::TruthNoClaimPrefix)?;
                let run: ConnectorRun =
                    serde_json::from_value(value).map_err(|e| P::TruthRunMalformed {
                        run: keys.run.clone(),
                        why: e.to_string(),
                    })?;
                outcome = outcome::connector_outcome(&run, prefix, raw.engine.block_size);
                firings::bind_firings(&run).map_err(P::in_run(&keys.run))?;
                // The target the run configured its injector with: the run's too (its
                // firings name nothing else, `bind_firings`).
                also_named = run
                    .injection_target_claim_id
                    .iter()
                    .filter(|c| !run.claims.contains(c))
                    .cloned()
                    .collect();
                connector_expected(&run, prefix, raw.engine.block_size)
                    .map_err(P::in_run(&keys.run))?
            }
            TruthFamily::Slot => {
                outcome = crate::truth_slot::slot_outcome(&value).map_err(P::in_run(&keys.run))?;
                let verdicts =
                    crate::truth_slot::slot_expected(value).map_err(P::in_run(&keys.run))?;
                let expected = verdicts
                    .into_iter()
                    .map(|(claim, (pass, fact))| {
                        let gate = TraceGate::ReferenceLifecycle;
                        (claim, BTreeMap::from([(gate, Expected { pass, fact })]))
                    })
                    .collect();
                (expected, vec![TraceGate::ReferenceLifecycle])
            }
            TruthFamily::Residency => {
                let run: ResidencyRun =
                    serde_json::from_value(value).map_err(|e| P::TruthRunMalformed {
                        run: keys.run.clone(),
                        why: e.to_string(),
                    })?;
                record_level_injection = run.injected_misbehaviour.is_some();
                if !record_level_injection && !run.injected_claim_ids.is_empty() {
                    return Err(P::InjectedClaimsWithoutMisbehaviour { run: keys.run });
                }
                injected_claims.clone_from(&run.injected_claim_ids);
                outcome = outcome::residency_outcome(&run);
                residency_expected(&run, raw.engine.block_size).map_err(P::in_run(&keys.run))?
            }
        };
        if keys.engine_outcome != outcome {
            return Err(P::EngineOutcomeDiffers {
                run: keys.run,
                recorded: keys.engine_outcome,
                shown: outcome,
            });
        }
        runs.push(TruthRun {
            run: keys.run,
            scenario: keys.scenario,
            trace: keys.trace,
            expected,
            gates,
            record_level_injection,
            injected_claims,
            also_named,
            outcome,
        });
    }
    Ok(TruthDocument {
        family: raw.family,
        runtime: raw.runtime,
        source_digest: raw.source_digest,
        recorder: raw.recorder,
        loaded_files: raw.loaded_files,
        runs,
    })
}

type Derived = (
    BTreeMap<String, BTreeMap<TraceGate, Expected>>,
    Vec<TraceGate>,
);

fn is_served(finish: Option<&str>) -> bool {
    matches!(finish, Some("length" | "stop"))
}

/// docs/conformance.md, "Connector runs".
fn connector_expected(run: &ConnectorRun, prefix: u64, block_size: u64) -> Result<Derived, P> {
    use TraceGate::{ConnectorFailureOutcome as Fail, ConnectorObservation as Obs};
    let blocks = usize::try_from(prefix.div_ceil(block_size)).unwrap_or(usize::MAX);
    for r in &run.requests {
        restore::shape_problem(r)?;
        if r.finish_reason != r.engine_finish_reason {
            return Err(P::FinishReasonDiffers {
                request: r.request.clone(),
                client: r.finish_reason.clone(),
                engine: r.engine_finish_reason.clone(),
            });
        }
        if r.finish_reason.as_deref() == Some("error") && r.blocks_reported_failed.is_empty() {
            return Err(P::ErrorWithoutFailedBlock {
                request: r.request.clone(),
            });
        }
        served_tokens_problem(
            &r.request,
            r.finish_reason.as_deref(),
            None,
            r.external_tokens_served,
            r.num_cached_tokens,
            &r.prefills,
        )?;
        if r.external_tokens_served > 0 && run.engine_transfers.load_jobs.blocks == 0 {
            return Err(P::ServedWithoutLoadJob {
                request: r.request.clone(),
                tokens: r.external_tokens_served,
            });
        }
    }
    let mut listed = std::collections::BTreeSet::new();
    if let Some(twice) = run.claims.iter().find(|c| !listed.insert(c.as_str())) {
        return Err(P::ClaimListedTwiceInClaims {
            claim: twice.clone(),
        });
    }
    let mut out: BTreeMap<String, BTreeMap<TraceGate, Expected>> = BTreeMap::new();
    let mut own_failed: BTreeMap<&str, bool> = BTreeMap::new();
    for claim in &run.claims {
        let reuse: Vec<&ConnectorRequest> = run
            .requests
            .iter()
            .filter(|r| r.claim_id.as_deref() == Some(claim.as_str()) && r.role == "reuse")
            .collect();
        let mut gates = BTreeMap::new();
        let [r] = reuse.as_slice() else {
            let fact = format!("{} reuse requests carry the claim (not one)", reuse.len());
            gates.insert(
                Obs,
                Expected {
                    pass: false,
                    fact: fact.clone(),
                },
            );
            gates.insert(Fail, Expected { pass: false, fact });
            out.insert(claim.clone(), gates);
            own_failed.insert(claim, true);
            continue;
        };
        let finish = r.finish_reason.as_deref();
        let served = is_served(finish) && r.external_tokens_served >= prefix;
        // Served from the tier counts only with the content restored as stored and the
        // output of a no-reuse reference (issue 43 item 4).
        let content = restore::restored_as_stored(run, Some(claim), r, blocks);
        gates.insert(
            Obs,
            Expected {
                pass: served && content.is_ok(),
                fact: format!(
                    "the reuse finished {finish:?} with {} tokens loaded from the tier (the claim's prefix is {prefix}); {}",
                    r.external_tokens_served,
                    content.err().unwrap_or_else(|| "the restored KV equals the stored KV and the output the no-reuse reference's".into())
                ),
            },
        );
        let hits: Vec<&Fired> = run
            .injection_fired
            .iter()
            .filter(|f| f.request_claim_id.as_deref() == Some(claim.as_str()))
            .collect();
        let same_claim = !hits.is_empty()
            && hits.iter().all(|f| {
                f.failure_target_claim_id.as_deref() == Some(claim.as_str())
                    && f.failure_matched_claim_id.as_deref() == Some(claim.as_str())
            });
        let fail = finish == Some("error")
            && run.scheduler_failure_policy == "fail"
            && !r.blocks_reported_failed.is_empty()
            && same_claim;
        gates.insert(
            Fail,
            Expected {
                pass: fail,
                fact: format!(
                    "the reuse finished {finish:?}, policy `{}`, {} blocks reported failed, {} injected failure(s) of this claim{}",
                    run.scheduler_failure_policy,
                    r.blocks_reported_failed.len(),
                    hits.len(),
                    if same_claim { "" } else { " (not all targeting and matching it)" }
                ),
            },
        );
        own_failed.insert(claim, !r.blocks_reported_failed.is_empty());
        out.insert(claim.clone(), gates);
    }
    let mut gates = vec![Obs, Fail];
    if run.claims.len() > 1 {
        let target = run.injection_target_claim_id.as_deref();
        let target_failed = target
            .and_then(|t| out.get(t))
            .and_then(|g| g.get(&Fail))
            .is_some_and(|e| e.pass);
        let bystanders_ok = run
            .claims
            .iter()
            .filter(|c| Some(c.as_str()) != target)
            .all(|c| {
                out.get(c).and_then(|g| g.get(&Obs)).is_some_and(|e| e.pass)
                    && !own_failed.get(c.as_str()).copied().unwrap_or(true)
            });
        let pass = target_failed && bystanders_ok;
        let fact = format!(
            "target {target:?} failed closed: {target_failed}; every other claim served from the tier with no failed block: {bystanders_ok}"
        );
        for g in out.values_mut() {
            g.insert(
                TraceGate::MultiClaimAttribution,
                Expected {
                    pass,
                    fact: fact.clone(),
                },
            );
        }
        gates.push(TraceGate::MultiClaimAttribution);
    }
    Ok((out, gates))
}

/// The gate a record-level injection breaks (`None`: every gate, for an unknown name).
fn injection_breaks(name: &str) -> Option<TraceGate> {
    match name {
        "wrong_blocking_ids"
        | "no_blocking_ids"
        | "accepted_after_pressure"
        | "no_release_record" => Some(TraceGate::ClaimProtection),
        "demotion_after_loss" | "demotion_other_claim" | "demotion_before_offload" => {
            Some(TraceGate::ClaimDemotion)
        }
        "boundary_other_claim" | "loss_dated_before_boundary" => Some(TraceGate::ClaimExpiry),
        _ => None,
    }
}

/// docs/conformance.md, "Residency runs".
fn residency_expected(run: &ResidencyRun, block_size: u64) -> Result<Derived, P> {
    use TraceGate::{ClaimDemotion as Dem, ClaimExpiry as Exp, ClaimProtection as Prot};
    for r in &run.requests {
        if r.aborted_by_campaign {
            continue;
        }
        if r.finish_reason.is_none() || r.finish_reason != r.engine_finish_reason {
            return Err(P::FinishReasonDiffers {
                request: r.request.clone(),
                client: r.finish_reason.clone(),
                engine: r.engine_finish_reason.clone(),
            });
        }
    }
    residency_consistent(run, block_size)?;
    demotion::shape_problem(run)?;
    let claim_requests: Vec<&ResidencyRequest> =
        run.requests.iter().filter(|r| r.role == "claim").collect();
    let [claim_request] = claim_requests.as_slice() else {
        return Err(P::ClaimRequestsNotOne {
            count: claim_requests.len(),
        });
    };
    if !is_served(claim_request.finish_reason.as_deref()) {
        return Err(P::ClaimRequestNotServed);
    }
    let steps = &run.claim_blocks.per_step;
    if steps.windows(2).any(|w| w[0].step >= w[1].step) {
        return Err(P::StepsNotIncreasing);
    }
    let f = run.claim_input.footprint_blocks;
    if f == 0 {
        return Err(P::FootprintZero);
    }
    let tokens = f.saturating_mul(block_size);
    let materialized = steps.iter().find(|s| s.device_cached >= f).map(|s| s.step);
    let after = |m: u64| steps.iter().filter(move |s| s.step >= m);
    let unprotected = materialized.and_then(|m| {
        after(m)
            .find(|s| s.evictable > 0 || s.device_cached < f)
            .map(|s| s.step)
    });
    let loss = materialized.and_then(|m| after(m).find(|s| s.device_cached < f).map(|s| s.step));
    let host_before = |at: u64| {
        steps
            .iter()
            .take_while(|s| s.step < at)
            .last()
            .map_or(0, |s| s.host_tier)
    };
    let refused = |r: &ResidencyRequest| {
        r.finish_reason.as_deref() == Some("error")
            && r.engine_finish_reason.as_deref() == Some("error")
    };
    let served = |r: &ResidencyRequest| {
        is_served(r.finish_reason.as_deref()) && r.finish_reason == r.engine_finish_reason
    };
    let pressure: Vec<&ResidencyRequest> = run
        .requests
        .iter()
        .filter(|r| r.role == "pressure")
        .collect();
    let probe = run.requests.iter().rfind(|r| r.role == "probe");
    let mode = run.claim_input.mode.as_str();
    let accepted = run.patch_controls.accept;
    let broken = run.injected_misbehaviour.as_deref().map(injection_breaks);
    let not_broken = |g: TraceGate| match broken {
        None => true,
        Some(Some(b)) => b != g,
        Some(None) => false,
    };
    let inputs = format!(
        "mode {mode}, accept {accepted}, injected {:?}",
        run.injected_misbehaviour
    );
    let state = format!(
        "materialized at {materialized:?}, unprotected from {unprotected:?}, lost at {loss:?}, footprint {f}"
    );

    let prot = mode == "hard_protected"
        && materialized.is_some()
        && !pressure.is_empty()
        && pressure.iter().all(|r| refused(r))
        && unprotected.is_none()
        && probe.is_some_and(|p| p.local_tokens_served >= tokens);
    let prot_fact = format!(
        "{inputs}; {state}; {} pressure request(s), refused: {}; the probe hit {:?} tokens locally (needs {tokens})",
        pressure.len(),
        pressure.iter().filter(|r| refused(r)).count(),
        probe.map(|p| p.local_tokens_served)
    );

    let host_at_unprotected = unprotected.map(host_before);
    let host_at_loss = loss.map(host_before);
    let dem = mode == "demotable"
        && run.patch_controls.demote
        && materialized.is_some()
        && !pressure.is_empty()
        && pressure.iter().all(|r| served(r))
        && loss.is_some()
        && host_at_unprotected == Some(f)
        && host_at_loss == Some(f)
        && probe.is_some_and(|p| served(p) && p.external_tokens_served >= tokens);
    // ... and only with the content restored as stored and the reference's output.
    let content = demotion::restored_as_stored(run, probe);
    let dem_fact = format!(
        "{inputs}, demote {}; {state}; the host tier held {host_at_unprotected:?} blocks before the claim's blocks became evictable and {host_at_loss:?} before the loss (needs {f}); the probe loaded {:?} tokens from the host tier (needs {tokens}); {}",
        run.patch_controls.demote,
        probe.map(|p| p.external_tokens_served),
        content.as_ref().err().map_or(
            "the restored KV equals the stored KV and the output the no-reuse reference's",
            String::as_str
        )
    );
    let dem = dem && content.is_ok();

    let duration = run.claim_input.duration_steps.filter(|&d| d > 0);
    let boundary = duration
        .zip(claim_request.first_scheduled_step)
        .and_then(|(d, s)| s.checked_add(d));
    let boundary_ok = matches!((unprotected, boundary), (Some(u), Some(b)) if u >= b)
        && matches!((loss, unprotected), (Some(l), Some(u)) if l > u);
    let before: Vec<&&ResidencyRequest> = pressure
        .iter()
        .filter(|r| matches!((r.finished_step, unprotected), (Some(fin), Some(u)) if fin < u))
        .collect();
    let after_boundary: Vec<&&ResidencyRequest> = pressure
        .iter()
        .filter(|r| matches!((r.first_scheduled_step, unprotected), (Some(s), Some(u)) if s >= u))
        .collect();
    let exp = mode == "expiring"
        && materialized.is_some()
        && boundary_ok
        && !before.is_empty()
        && before.iter().all(|r| refused(r))
        && !after_boundary.is_empty()
        && after_boundary.iter().all(|r| served(r));
    let exp_fact = format!(
        "{inputs}; {state}; the accepted end is step {boundary:?}; {} pressure request(s) before the boundary ({} refused), {} after it ({} served)",
        before.len(),
        before.iter().filter(|r| refused(r)).count(),
        after_boundary.len(),
        after_boundary.iter().filter(|r| served(r)).count()
    );

    let mut gates = BTreeMap::new();
    for (gate, pass, fact) in [
        (Prot, prot, prot_fact),
        (Dem, dem, dem_fact),
        (Exp, exp, exp_fact),
    ] {
        gates.insert(
            gate,
            Expected {
                pass: pass && accepted && not_broken(gate),
                fact,
            },
        );
    }
    let mut out = BTreeMap::new();
    out.insert(run.claim_id.clone(), gates);
    Ok((out, vec![Prot, Dem, Exp]))
}
