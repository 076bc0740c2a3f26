//! Synthetic trace builder for the gate's tests. Every id is obviously synthetic
//! (`fixture:claim-a`); the event shapes follow `docs/trace-format.md`.

// Test support code: panicking on a broken fixture is the point.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a broken fixture should panic"
)]

use serde_json::{Map, Value, json};

pub const CLAIM_A: &str = "fixture:claim-a";
pub const CLAIM_B: &str = "fixture:claim-b";

/// A trace under construction: a list of JSON objects with sorted keys.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub events: Vec<Map<String, Value>>,
    reference: bool,
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The identity envelope of a connector claim.
fn claim_fields(claim: &str, role: &str) -> Map<String, Value> {
    object(json!({
        "claim_id": claim,
        "resident_claim": true,
        "resident_claim_id": claim,
        "resident_claim_role": role,
        "predicate_id": format!("predicate:{claim}"),
        "materialization_predicate": "leading_prefix_at_least(1)",
        "prefix_id": format!("prefix:{claim}"),
        "reusable_object_id": format!("object:{claim}"),
        "cache_identity": "fixture-cache:v1",
        "request_token_map_id": format!("token-map:{claim}"),
    }))
}

impl Trace {
    pub fn connector() -> Self {
        Trace::default()
    }

    pub fn reference() -> Self {
        Trace {
            reference: true,
            ..Trace::default()
        }
    }

    /// Appends a connector event; `claim` is `(claim_id, role)` or `None` (unclaimed).
    pub fn conn(&mut self, claim: Option<(&str, &str)>, request: &str, event: &str, fields: Value) {
        let n = self.events.len() as u64;
        let mut m = object(json!({
            "event": event,
            "event_sequence": n,
            "hook_scope": "fixture_scope",
            "instrumentation_scope": "fixture_probe",
            "monotonic_ns": 1_000 + n,
            "wall_time_ns": 2_000 + n,
            "request_id": request,
        }));
        if let Some((id, role)) = claim {
            m.extend(claim_fields(id, role));
        }
        m.extend(object(fields));
        self.events.push(m);
    }

    /// Appends a reference event for `claim` (`None`: claim_id null).
    pub fn refev(&mut self, claim: Option<&str>, generation: u64, event: &str, fields: Value) {
        let n = self.events.len() as u64 + 1;
        let mut m = object(json!({
            "schema_version": 1,
            "timestamp_ns": 5_000 + n,
            "event_sequence": n,
            "run_id": "fixture-run",
            "event": event,
            "request_id": "fixture-request",
            "claim_id": claim,
            "policy": "fixture_policy",
            "usable_blocks": 16,
            "lifecycle_generation": 1,
            "offload_generation": generation,
        }));
        if let Some(id) = claim {
            m.extend(object(json!({
                "prefix_id": format!("prefix:{id}"),
                "predicate_id": format!("predicate:{id}"),
                "materialization_predicate": "leading_prefix_at_least(8)",
                "reusable_object_id": format!("object:{id}"),
                "request_token_map_id": format!("token-map:{id}"),
                "cache_identity": "fixture-reference-cache:v1",
            })));
        }
        m.extend(object(fields));
        self.events.push(m);
    }

    /// The trace as JSON Lines (sorted keys, one object per line).
    pub fn jsonl(&self) -> String {
        let mut s = String::new();
        for e in &self.events {
            s.push_str(&serde_json::to_string(e).unwrap());
            s.push('\n');
        }
        s
    }

    /// Renumbers `event_sequence` after a reordering (0-based connector, 1-based reference).
    pub fn renumber(&mut self) {
        let base = u64::from(self.reference);
        for (i, e) in self.events.iter_mut().enumerate() {
            e.insert("event_sequence".into(), json!(i as u64 + base));
        }
    }

    /// Index of the `nth` (0-based) event named `event` (of `claim`, when given).
    pub fn find(&self, event: &str, claim: Option<&str>, nth: usize) -> usize {
        self.events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.get("event").and_then(Value::as_str) == Some(event))
            .filter(|(_, e)| claim.is_none() || e.get("claim_id").and_then(Value::as_str) == claim)
            .nth(nth)
            .map(|(i, _)| i)
            .unwrap_or_else(|| panic!("no event {event} #{nth}"))
    }

    /// Removes the `nth` event named `event` (sequence numbers keep their gap).
    pub fn drop_event(&mut self, event: &str, nth: usize) -> &mut Self {
        let i = self.find(event, None, nth);
        self.events.remove(i);
        self
    }

    /// Sets `field` on the `nth` event named `event`.
    pub fn set(&mut self, event: &str, nth: usize, field: &str, value: Value) -> &mut Self {
        let i = self.find(event, None, nth);
        self.events[i].insert(field.into(), value);
        self
    }

    /// Removes `field` from every event.
    pub fn remove_field_everywhere(&mut self, field: &str) -> &mut Self {
        for e in &mut self.events {
            e.remove(field);
        }
        self
    }

    /// Moves the event at `from` so it lands at index `to`, then renumbers.
    pub fn move_event(&mut self, from: usize, to: usize) -> &mut Self {
        let e = self.events.remove(from);
        self.events.insert(to, e);
        self.renumber();
        self
    }
}

// ---------------------------------------------------------------------------------------
// Connector scenarios (`docs/trace-format.md`, "The witness paths as event sequences").

/// The resident request: metadata, store/offload GPU→CPU, store completed, finished.
pub fn resident_store(t: &mut Trace, claim: Option<&str>, req: &str, job: u64) {
    let c = claim.map(|id| (id, "resident"));
    t.conn(c, req, "request_initialized", json!({"has_kv_transfer_params": claim.is_some(), "cache_salt": null, "num_block_hashes": 30, "num_prompt_tokens": 480}));
    t.conn(
        c,
        req,
        "offload_lookup_result",
        json!({"num_hit_tokens": 0, "num_computed_tokens": 0, "will_load_async": false}),
    );
    t.conn(c, req, "offload_store_job_created", json!({"job_id": job, "key_count": 7, "num_offloadable_tokens": 480, "src_block_count": 28, "offload_generation": 0, "transfer_type": ["GPU", "CPU"]}));
    t.conn(
        c,
        req,
        "offload_worker_transfer_submitted",
        json!({"job_id": job, "submitted": true, "transfer_type": ["GPU", "CPU"]}),
    );
    t.conn(c, req, "offload_worker_transfer_finished", json!({"job_id": job, "success": true, "transfer_size": 1024, "transfer_time": 0.001, "transfer_type": ["GPU", "CPU"]}));
    if claim.is_some() {
        t.conn(c, req, "resident_claim_offloaded", json!({"cache_tier_from": "gpu_kv_cache", "cache_tier_to": "host_offload_tier", "source_tier": "GPU", "destination_tier": "CPU", "restoration_required": true, "block_count_footprint": 7, "job_id": job, "key_count": 7, "transfer_type": ["GPU", "CPU"]}));
    }
    t.conn(c, req, "offload_job_completed", json!({"is_store": true, "job_id": job, "key_count": 7, "offload_generation": 0, "restoration_generation": null}));
    t.conn(
        c,
        req,
        "offload_request_finished_no_pending_jobs",
        json!({}),
    );
}

/// The reuse request up to the load submission: metadata, lookup hit, restore required,
/// load job, submitted.
pub fn reuse_until_load(t: &mut Trace, claim: Option<&str>, req: &str, job: u64) {
    let c = claim.map(|id| (id, "reuse"));
    t.conn(c, req, "request_initialized", json!({"has_kv_transfer_params": claim.is_some(), "cache_salt": null, "num_block_hashes": 30, "num_prompt_tokens": 481}));
    t.conn(
        c,
        req,
        "offload_lookup_result",
        json!({"num_hit_tokens": 448, "num_computed_tokens": 0, "will_load_async": true}),
    );
    if claim.is_some() {
        t.conn(c, req, "resident_claim_restore_required", json!({"reuse_requires_restoration": true, "restoration_required": true, "predicate_satisfied_from_primary": false, "restoration_generation": 1, "job_id": job, "num_external_tokens": 448, "transfer_type": ["CPU", "GPU"]}));
    }
    t.conn(c, req, "offload_load_job_created", json!({"job_id": job, "dst_block_count": 28, "num_external_tokens": 448, "restoration_generation": 1, "transfer_type": ["CPU", "GPU"]}));
    t.conn(
        c,
        req,
        "offload_worker_transfer_submitted",
        json!({"job_id": job, "submitted": true, "transfer_type": ["CPU", "GPU"]}),
    );
}

/// The success tail: CPU→GPU ok, restored from the offload tier, load completed, finished.
pub fn success_tail(t: &mut Trace, claim: Option<&str>, req: &str, job: u64) {
    let c = claim.map(|id| (id, "reuse"));
    t.conn(c, req, "offload_worker_transfer_finished", json!({"job_id": job, "success": true, "transfer_size": 1024, "transfer_time": 0.001, "transfer_type": ["CPU", "GPU"]}));
    if claim.is_some() {
        t.conn(c, req, "resident_claim_restored", json!({"restored_from_offload_tier": true, "restoration_source": "offload_tier", "restoration_completed": true, "cache_tier_from": "host_offload_tier", "cache_tier_to": "gpu_kv_cache", "job_id": job}));
    }
    t.conn(c, req, "offload_job_completed", json!({"is_store": false, "job_id": job, "key_count": 7, "offload_generation": null, "restoration_generation": 1}));
    t.conn(
        c,
        req,
        "offload_request_finished_no_pending_jobs",
        json!({}),
    );
}

/// The failure tail, attributed to `target` (the claim the injection and outcomes name).
pub fn failure_tail(t: &mut Trace, claim: Option<&str>, target: Option<&str>, req: &str, job: u64) {
    let c = claim.map(|id| (id, "reuse"));
    let reason = "controlled_resident_claim_cpu_to_gpu_load_failure";
    let blocking: Vec<&str> = target.into_iter().collect();
    t.conn(c, req, "offload_worker_transfer_finished", json!({"job_id": job, "success": false, "transfer_size": 1024, "transfer_time": 0.001, "transfer_type": ["CPU", "GPU"], "controlled_restoration_unavailable": true, "failure_injection_flag": true, "injected_restoration_failure": true, "failure_mode": "refusal", "failure_reason": reason, "failure_target_claim_id": target, "failure_matched_claim_id": target}));
    t.conn(c, req, "offload_worker_load_failed", json!({"job_id": job, "invalid_block_ids": [32, 33], "failure_injection_flag": true, "failure_reason": reason}));
    t.conn(c, req, "scheduler_resident_claim_restoration_failed", json!({"scheduler_side_failure_outcome": true, "scheduler_side_refusal": true, "scheduler_failure_policy": "fail", "scheduler_failure_branch": "_handle_invalid_blocks", "scheduler_event_before_finish_requests": true, "finish_status": "FINISHED_ERROR", "finish_reason": "error", "invalid_block_ids": [32, 33], "invalid_block_count": 2, "total_scheduler_failed_tokens": 448, "native_scheduler_refusal": false, "native_scheduler_admission_refusal": false, "outcome_claim_id": target, "blocking_claim_ids": blocking, "claim_scoped_outcome_type": "refusal"}));
    t.conn(c, req, "scheduler_active_request_refused", json!({"scheduler_side_failure_outcome": true, "scheduler_side_refusal": true, "scheduler_failure_policy": "fail", "scheduler_event_before_finish_requests": true, "finish_status": "FINISHED_ERROR", "native_scheduler_refusal": false, "native_scheduler_admission_refusal": false, "outcome_claim_id": target, "blocking_claim_ids": blocking, "claim_scoped_outcome_type": "refusal", "arbiter_action": "scheduler_invalid_kv_load_fail_closed", "feasibility": "infeasible_restore_claimed_kv"}));
    t.conn(
        c,
        req,
        "offload_request_finished_pending_jobs",
        json!({"pending_job_ids": [job]}),
    );
    t.conn(c, req, "offload_load_job_failed", json!({"is_store": false, "failure_injection_flag": true, "failure_reason": reason, "job_id": job}));
    t.conn(c, req, "resident_claim_restoration_failed", json!({"claim_scoped_outcome": true, "claim_scoped_outcome_type": "refusal", "outcome_type": "refusal", "outcome_claim_id": target, "controlled_restoration_unavailable": true, "injected_restoration_failure": true, "restoration_failure_reason": reason, "failure_injection_flag": true, "blocking_claim_ids": blocking, "restored_from_offload_tier": false, "fallback_recompute_counted_as_satisfaction": false}));
    t.conn(c, req, "active_request_refused", json!({"blocking_claim_ids": blocking, "outcome_claim_id": target, "outcome_type": "refusal", "arbiter_action": "restore_unavailable_refuse", "feasibility": "infeasible_restore_claimed_kv", "native_scheduler_refusal": false, "scheduler_finish_status": "FINISHED_ERROR"}));
}

/// Path A for claim A.
pub fn success() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, Some(CLAIM_A), "0-fixture", 0);
    reuse_until_load(&mut t, Some(CLAIM_A), "1-fixture", 1);
    success_tail(&mut t, Some(CLAIM_A), "1-fixture", 1);
    t
}

/// Path B for claim A (21 events, the canonical same-claim failure run).
pub fn same_claim_failure() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, Some(CLAIM_A), "0-fixture", 0);
    reuse_until_load(&mut t, Some(CLAIM_A), "1-fixture", 1);
    failure_tail(&mut t, Some(CLAIM_A), Some(CLAIM_A), "1-fixture", 1);
    t
}

/// The injection, and every outcome, name another claim than the one that failed.
pub fn wrong_claim_failure() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, Some(CLAIM_A), "0-fixture", 0);
    reuse_until_load(&mut t, Some(CLAIM_A), "1-fixture", 1);
    failure_tail(
        &mut t,
        Some(CLAIM_A),
        Some("fixture:claim-wrong"),
        "1-fixture",
        1,
    );
    t
}

/// A load failure on requests that carry no claim metadata at all.
pub fn unclaimed_failure() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, None, "0-fixture", 0);
    reuse_until_load(&mut t, None, "1-fixture", 1);
    failure_tail(&mut t, None, None, "1-fixture", 1);
    t
}

/// The claim's load fails, the scheduler recomputes, and a retry "restores" it.
pub fn fallback_recompute() -> Trace {
    let mut t = Trace::connector();
    let c = Some((CLAIM_A, "reuse"));
    let req = "1-fixture";
    resident_store(&mut t, Some(CLAIM_A), "0-fixture", 0);
    reuse_until_load(&mut t, Some(CLAIM_A), req, 1);
    let reason = "controlled_resident_claim_cpu_to_gpu_load_failure";
    t.conn(c, req, "offload_worker_transfer_finished", json!({"job_id": 1, "success": false, "transfer_type": ["CPU", "GPU"], "controlled_restoration_unavailable": true, "failure_injection_flag": true, "injected_restoration_failure": true, "failure_reason": reason, "failure_target_claim_id": CLAIM_A, "failure_matched_claim_id": CLAIM_A}));
    t.conn(
        c,
        req,
        "offload_worker_load_failed",
        json!({"job_id": 1, "invalid_block_ids": [32], "failure_injection_flag": true}),
    );
    t.conn(c, req, "scheduler_resident_claim_restoration_failed", json!({"scheduler_side_failure_outcome": true, "scheduler_side_refusal": false, "scheduler_failure_policy": "recompute", "finish_status": null, "outcome_claim_id": CLAIM_A, "blocking_claim_ids": [], "claim_scoped_outcome_type": "fallback_recompute_without_claim_satisfaction", "native_scheduler_admission_refusal": false}));
    t.conn(
        c,
        req,
        "offload_load_job_failed",
        json!({"is_store": false, "failure_injection_flag": true, "job_id": 1}),
    );
    t.conn(c, req, "resident_claim_restoration_failed", json!({"claim_scoped_outcome_type": "fallback_recompute_without_claim_satisfaction", "outcome_claim_id": CLAIM_A, "controlled_restoration_unavailable": true, "failure_injection_flag": true, "blocking_claim_ids": [CLAIM_A], "fallback_recompute_counted_as_satisfying_claim": false}));
    t.conn(
        c,
        req,
        "offload_lookup_result",
        json!({"num_hit_tokens": 448, "will_load_async": true}),
    );
    t.conn(
        c,
        req,
        "resident_claim_restore_required",
        json!({"reuse_requires_restoration": true, "job_id": 2}),
    );
    t.conn(
        c,
        req,
        "offload_load_job_created",
        json!({"job_id": 2, "transfer_type": ["CPU", "GPU"]}),
    );
    success_tail(&mut t, Some(CLAIM_A), req, 2);
    t
}

/// The claim's first load job fails (CPU→GPU `success: false`, scheduler restoration
/// failure with a refusal), and a later load job of the same claim restores from the
/// offload tier. The reference analyzer's observation takes the first successful CPU→GPU
/// transfer after the first load job, so observation passes; the failure path does not.
pub fn failed_then_restored() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, Some(CLAIM_A), "0-fixture", 0);
    reuse_until_load(&mut t, Some(CLAIM_A), "1-fixture", 1);
    failure_tail(&mut t, Some(CLAIM_A), Some(CLAIM_A), "1-fixture", 1);
    reuse_until_load(&mut t, Some(CLAIM_A), "2-fixture", 2);
    success_tail(&mut t, Some(CLAIM_A), "2-fixture", 2);
    t
}

/// Only generic counters, no claim, no connector envelope (like the published control).
pub fn generic_counters_only() -> Trace {
    let mut t = Trace::connector();
    let mut a = object(
        json!({"event": "generic_kv_transfer_failed_counter", "event_sequence": 1, "failure_count": 1, "run_id": "fixture-run", "timestamp_ns": 10, "transfer_type": ["CPU", "GPU"]}),
    );
    t.events.push(std::mem::take(&mut a));
    t.events.push(object(json!({"event": "generic_request_error_counter", "event_sequence": 2, "request_failures": 1, "run_id": "fixture-run", "timestamp_ns": 11})));
    t
}

/// A full offload/load round trip without any claim metadata.
pub fn ordinary_offload_without_claim() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, None, "0-fixture", 0);
    reuse_until_load(&mut t, None, "1-fixture", 1);
    success_tail(&mut t, None, "1-fixture", 1);
    t
}

/// Path C: claim B (non-target) restores; claim A (target) fails and is refused.
pub fn multi_claim() -> Trace {
    let mut t = Trace::connector();
    resident_store(&mut t, Some(CLAIM_B), "0-fixture-b", 0);
    resident_store(&mut t, Some(CLAIM_A), "0-fixture-a", 1);
    reuse_until_load(&mut t, Some(CLAIM_B), "1-fixture-b", 2);
    success_tail(&mut t, Some(CLAIM_B), "1-fixture-b", 2);
    reuse_until_load(&mut t, Some(CLAIM_A), "1-fixture-a", 3);
    failure_tail(&mut t, Some(CLAIM_A), Some(CLAIM_A), "1-fixture-a", 3);
    t
}

// ---------------------------------------------------------------------------------------
// Reference scenarios.

pub const REF_CLAIM: &str = "fixture:reference-claim";

fn ref_head(t: &mut Trace, registration: &str) {
    t.refev(Some(REF_CLAIM), 0, "resident_claim_accepted", json!({"claim_registration": registration, "resident_blocks_required": 8, "protection_mode": "offloadable_reference"}));
    t.refev(Some(REF_CLAIM), 0, "resident_claim_materialized", json!({"predicate": "leading_prefix_at_least", "predicate_materialized": true, "leading_blocks_survived": 8, "useful_threshold_blocks": 8, "block_ids": [1, 2, 3], "cache_tier": "gpu_kv_cache"}));
}

fn ref_offload(t: &mut Trace, g: u64) {
    t.refev(Some(REF_CLAIM), g, "resident_claim_offloaded", json!({"cache_tier_from": "gpu_kv_cache", "cache_tier_to": "host_offload_tier", "restoration_required": true}));
    t.refev(Some(REF_CLAIM), g, "resident_claim_restore_required", json!({"reuse_requires_restoration": true, "restoration_required": true, "predicate_satisfied_from_primary": false}));
}

fn ref_restore(t: &mut Trace, g: u64, source: &str) {
    let from_offload = source == "offload_tier";
    t.refev(Some(REF_CLAIM), g, "resident_claim_restored", json!({"restored_from_offload_tier": from_offload, "restoration_source": source, "restoration_completed": true, "cache_tier_from": "host_offload_tier", "cache_tier_to": "gpu_kv_cache"}));
}

fn ref_reuse(t: &mut Trace, g: u64) {
    t.refev(
        Some(REF_CLAIM),
        g,
        "resident_claim_reuse_after_restore",
        json!({"predicate_satisfied": true, "reuse_requires_restoration": true}),
    );
}

fn ref_failure(t: &mut Trace, g: u64, outcome: &str, blocking: Value) {
    t.refev(Some(REF_CLAIM), g, "resident_claim_restoration_failed", json!({"claim_scoped_outcome": true, "claim_scoped_outcome_type": outcome, "outcome_type": outcome, "outcome_claim_id": REF_CLAIM, "controlled_restoration_unavailable": true, "injected_restoration_failure": true, "restoration_failure_reason": "controlled_unavailable"}));
    let event = match outcome {
        "refusal" => "active_request_refused",
        "demotion" => "resident_claim_demoted",
        "expiry" => "resident_claim_expired",
        _ => "resident_claim_harmed",
    };
    t.refev(Some(REF_CLAIM), g, event, json!({"blocking_claim_ids": blocking, "outcome_claim_id": REF_CLAIM, "outcome_type": outcome}));
}

/// The reference bundle: a pre-registered claim; generation 1 offloaded, restored from
/// `restore` and reused; generation 2 offloaded and failing with `outcome`, its
/// `blocking_claim_ids` set to `blocking`.
fn reference_bundle(restore: &str, outcome: &str, blocking: Value) -> Trace {
    let mut t = Trace::reference();
    ref_head(&mut t, "pre_registered");
    ref_offload(&mut t, 1);
    ref_restore(&mut t, 1, restore);
    ref_reuse(&mut t, 1);
    ref_offload(&mut t, 2);
    ref_failure(&mut t, 2, outcome, blocking);
    t
}

/// The reference positive bundle: success generation 1, failing generation 2 → refusal.
pub fn reference_positive() -> Trace {
    reference_bundle("offload_tier", "refusal", json!([REF_CLAIM]))
}

/// Like the positive bundle, but the failing generation ends in a demotion.
pub fn reference_demotion() -> Trace {
    reference_bundle("offload_tier", "demotion", json!(null))
}

/// The claim is named after the fact.
pub fn reference_post_hoc() -> Trace {
    let mut t = reference_positive();
    t.set(
        "resident_claim_accepted",
        0,
        "claim_registration",
        json!("post_hoc"),
    );
    t
}

/// The reuse happens before the restoration.
pub fn reference_restore_after_reuse() -> Trace {
    let mut t = Trace::reference();
    ref_head(&mut t, "pre_registered");
    ref_offload(&mut t, 1);
    ref_reuse(&mut t, 1);
    ref_restore(&mut t, 1, "offload_tier");
    ref_offload(&mut t, 2);
    ref_failure(&mut t, 2, "refusal", json!([REF_CLAIM]));
    t
}

/// The refusal does not list the claim in blocking_claim_ids.
pub fn reference_refusal_without_blocking_claim() -> Trace {
    reference_bundle("offload_tier", "refusal", json!(["fixture:someone-else"]))
}

/// The "restoration" is a recompute.
pub fn reference_fallback_recompute() -> Trace {
    reference_bundle("fallback_recompute", "refusal", json!([REF_CLAIM]))
}

/// Generic substrate counters in the reference envelope, no claim.
pub fn reference_generic_substrate() -> Trace {
    let mut t = Trace::reference();
    t.refev(
        None,
        0,
        "generic_kv_blocks_offloaded",
        json!({"generic_offload_blocks": 8, "cache_tier_to": "host_offload_tier"}),
    );
    t.refev(
        None,
        0,
        "generic_kv_blocks_onboarded",
        json!({"generic_onboard_blocks": 8, "cache_tier_to": "gpu_kv_cache"}),
    );
    t
}

/// Every scenario, by fixture name.
pub fn all_scenarios() -> Vec<(&'static str, Trace)> {
    vec![
        ("connector_success", success()),
        ("connector_same_claim_failure", same_claim_failure()),
        ("connector_wrong_claim_failure", wrong_claim_failure()),
        ("connector_unclaimed_failure", unclaimed_failure()),
        ("connector_fallback_recompute", fallback_recompute()),
        ("connector_failed_then_restored", failed_then_restored()),
        ("connector_generic_counters_only", generic_counters_only()),
        (
            "connector_ordinary_offload_without_claim",
            ordinary_offload_without_claim(),
        ),
        ("connector_multi_claim", multi_claim()),
        ("reference_positive", reference_positive()),
        ("reference_demotion", reference_demotion()),
        ("reference_post_hoc", reference_post_hoc()),
        (
            "reference_restore_after_reuse",
            reference_restore_after_reuse(),
        ),
        (
            "reference_refusal_without_blocking_claim",
            reference_refusal_without_blocking_claim(),
        ),
        (
            "reference_fallback_recompute",
            reference_fallback_recompute(),
        ),
        ("reference_generic_substrate", reference_generic_substrate()),
    ]
}

/// Evaluates a trace given as text.
pub fn eval(text: &str) -> kvlower_trace::TraceReport {
    kvlower_trace::evaluate_reader("fixture", text.as_bytes())
}
