//! Small synthetic traces, written here from `docs/trace-format.md` (never copied
//! from published traces), that pass the real gate — so that mutating them
//! tests the gate's sensitivity rather than an already-failing input.
//!
//! A trace is a list of events (JSON objects without envelope); rendering adds
//! the family's envelope and a strictly increasing `event_sequence`, so a
//! mutation can insert, drop or reorder events freely.

use serde_json::{Map, Value, json};

/// One event: its fields, without the envelope.
pub type Event = Map<String, Value>;

/// The two published trace families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Connector,
    Reference,
}

/// A synthetic trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub family: Family,
    pub events: Vec<Event>,
}

/// The claim every synthetic trace is about, and a second one for wrong-claim mutants.
pub const CLAIM: &str = "audit:claim:target";
pub const OTHER_CLAIM: &str = "audit:claim:other";

impl Trace {
    /// JSON Lines with the family's envelope (connector: 0-based sequence,
    /// `monotonic_ns`, `hook_scope`; reference: 1-based, `schema_version`, `timestamp_ns`).
    pub fn jsonl(&self) -> String {
        let mut out = String::new();
        for (i, e) in self.events.iter().enumerate() {
            let mut e = e.clone();
            let n = u64::try_from(i).unwrap_or(u64::MAX);
            match self.family {
                Family::Connector => {
                    e.insert("event_sequence".into(), json!(n));
                    e.insert("monotonic_ns".into(), json!(1_000_000 + n * 1_000));
                    e.insert("hook_scope".into(), json!("kvlower_audit_synthetic"));
                }
                Family::Reference => {
                    e.insert("event_sequence".into(), json!(n + 1));
                    e.insert("schema_version".into(), json!(1));
                    e.insert("timestamp_ns".into(), json!(2_000_000 + n * 1_000));
                    e.insert("run_id".into(), json!("kvlower-audit-synthetic"));
                }
            }
            out.push_str(&Value::Object(e).to_string());
            out.push('\n');
        }
        out
    }

    /// Index of the `nth` (0-based) event named `name`.
    pub fn find(&self, name: &str, nth: usize) -> Option<usize> {
        self.events
            .iter()
            .enumerate()
            .filter(|(_, e)| e.get("event").and_then(Value::as_str) == Some(name))
            .nth(nth)
            .map(|(i, _)| i)
    }

    /// Sets `key` on the event at `index` (no-op when out of range).
    pub fn set(&mut self, index: usize, key: &str, value: Value) {
        if let Some(e) = self.events.get_mut(index) {
            e.insert(key.into(), value);
        }
    }
}

fn event(name: &str, claim: Option<&str>, fields: Value) -> Event {
    let mut e = Map::new();
    e.insert("event".into(), json!(name));
    if let Some(claim) = claim {
        for (k, v) in claim_metadata(claim) {
            e.insert(k, v);
        }
    }
    if let Value::Object(extra) = fields {
        e.extend(extra);
    }
    e
}

/// The ResidentClaim metadata a claimed connector event carries.
fn claim_metadata(claim: &str) -> Map<String, Value> {
    let v = json!({
        "claim_id": claim,
        "resident_claim": true,
        "resident_claim_id": claim,
        "predicate_id": "predicate:audit-leading-prefix",
        "materialization_predicate": "leading_prefix_at_least(2)",
        "prefix_id": "prefix:audit",
        "reusable_object_id": "object:audit-prefix",
        "cache_identity": "cache:audit-model:v1",
        "request_token_map_id": "token-map:audit",
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The shared prefix of connector paths A and B: claimed request, store to CPU,
/// reuse request with a lookup hit, restore required, load job submitted.
fn connector_prefix(claim: &str) -> Vec<Event> {
    let c = Some(claim);
    vec![
        event(
            "request_initialized",
            c,
            json!({"request_id": "req-1", "resident_claim_role": "resident", "num_prompt_tokens": 64}),
        ),
        event(
            "offload_lookup_result",
            c,
            json!({"request_id": "req-1", "num_hit_tokens": 0, "will_load_async": false}),
        ),
        event(
            "offload_store_job_created",
            c,
            json!({"request_id": "req-1", "job_id": 0, "transfer_type": ["GPU", "CPU"]}),
        ),
        event(
            "offload_worker_transfer_submitted",
            c,
            json!({"job_id": 0, "submitted": true, "transfer_type": ["GPU", "CPU"]}),
        ),
        event(
            "offload_worker_transfer_finished",
            c,
            json!({"job_id": 0, "success": true, "transfer_type": ["GPU", "CPU"]}),
        ),
        event(
            "resident_claim_offloaded",
            c,
            json!({"job_id": 0, "cache_tier_from": "gpu", "cache_tier_to": "cpu", "restoration_required": true}),
        ),
        event(
            "offload_job_completed",
            c,
            json!({"job_id": 0, "is_store": true}),
        ),
        event(
            "offload_request_finished_no_pending_jobs",
            c,
            json!({"request_id": "req-1"}),
        ),
        event(
            "request_initialized",
            c,
            json!({"request_id": "req-2", "resident_claim_role": "reuse", "num_prompt_tokens": 64}),
        ),
        event(
            "offload_lookup_result",
            c,
            json!({"request_id": "req-2", "num_hit_tokens": 32, "will_load_async": true}),
        ),
        event(
            "resident_claim_restore_required",
            c,
            json!({"request_id": "req-2", "reuse_requires_restoration": true, "job_id": 1, "transfer_type": ["CPU", "GPU"]}),
        ),
        event(
            "offload_load_job_created",
            c,
            json!({"request_id": "req-2", "job_id": 1, "transfer_type": ["CPU", "GPU"]}),
        ),
        event(
            "offload_worker_transfer_submitted",
            c,
            json!({"job_id": 1, "submitted": true, "transfer_type": ["CPU", "GPU"]}),
        ),
    ]
}

/// Connector path A: the load succeeds and the claim is restored from the offload tier.
pub fn connector_observation(claim: &str) -> Trace {
    let c = Some(claim);
    let mut events = connector_prefix(claim);
    events.extend([
        event(
            "offload_worker_transfer_finished",
            c,
            json!({"job_id": 1, "success": true, "transfer_type": ["CPU", "GPU"]}),
        ),
        event(
            "resident_claim_restored",
            c,
            json!({"restored_from_offload_tier": true, "restoration_source": "offload_tier", "restoration_completed": true}),
        ),
        event(
            "offload_job_completed",
            c,
            json!({"job_id": 1, "is_store": false}),
        ),
        event(
            "offload_request_finished_no_pending_jobs",
            c,
            json!({"request_id": "req-2"}),
        ),
    ]);
    Trace {
        family: Family::Connector,
        events,
    }
}

/// Connector path B: a controlled CPU→GPU load failure of the claim becomes a
/// claim-scoped scheduler-boundary failure and refusal, in order.
pub fn connector_failure(claim: &str) -> Trace {
    let c = Some(claim);
    let failure = json!({
        "injected_restoration_failure": true,
        "failure_injection_flag": true,
        "controlled_restoration_unavailable": true,
        "failure_target_claim_id": claim,
        "failure_matched_claim_id": claim,
    });
    let mut events = connector_prefix(claim);
    let mut transfer = json!({"job_id": 1, "success": false, "transfer_type": ["CPU", "GPU"]});
    merge(&mut transfer, &failure);
    let mut worker = json!({"job_id": 1, "invalid_block_ids": [3, 4]});
    merge(&mut worker, &failure);
    let scheduler = json!({
        "outcome_claim_id": claim,
        "blocking_claim_ids": [claim],
        "scheduler_side_failure_outcome": true,
        "scheduler_side_refusal": true,
        "scheduler_failure_policy": "fail",
        "scheduler_event_before_finish_requests": true,
        "finish_status": "FINISHED_ERROR",
        "native_scheduler_refusal": false,
        "native_scheduler_admission_refusal": false,
    });
    events.extend([
        event("offload_worker_transfer_finished", c, transfer),
        event("offload_worker_load_failed", c, worker),
        event(
            "scheduler_resident_claim_restoration_failed",
            c,
            scheduler.clone(),
        ),
        event("scheduler_active_request_refused", c, scheduler),
        event(
            "offload_request_finished_pending_jobs",
            c,
            json!({"request_id": "req-2", "pending_job_ids": [1]}),
        ),
        event(
            "offload_load_job_failed",
            c,
            json!({"job_id": 1, "is_store": false, "failure_injection_flag": true}),
        ),
        event(
            "resident_claim_restoration_failed",
            c,
            json!({
                "outcome_claim_id": claim,
                "blocking_claim_ids": [claim],
                "claim_scoped_outcome": true,
                "claim_scoped_outcome_type": "refusal",
                "controlled_restoration_unavailable": true,
                "failure_injection_flag": true,
                "injected_restoration_failure": true,
                "restored_from_offload_tier": false,
                "fallback_recompute_counted_as_satisfaction": false,
            }),
        ),
        event(
            "active_request_refused",
            c,
            json!({"outcome_claim_id": claim, "blocking_claim_ids": [claim], "native_scheduler_refusal": false}),
        ),
    ]);
    Trace {
        family: Family::Connector,
        events,
    }
}

/// The reference lifecycle: accepted (pre-registered) → materialized → generation 1
/// offloaded, restored from the offload tier before a predicate-satisfying reuse →
/// generation 2 offloaded, controlled restoration failure → same-claim refusal.
pub fn reference_lifecycle(claim: &str) -> Trace {
    let c = Some(claim);
    let ev = |name: &str, fields: Value| {
        let mut e = event(name, c, fields);
        e.insert("request_id".into(), json!("req-ref"));
        e.insert("policy".into(), json!("resident_claim_reference"));
        e
    };
    let events = vec![
        ev(
            "resident_claim_accepted",
            json!({"claim_registration": "pre_registered", "offload_generation": 0, "resident_blocks_required": 2}),
        ),
        ev(
            "resident_claim_materialized",
            json!({"predicate_materialized": true, "offload_generation": 0, "cache_tier": "gpu_kv_cache"}),
        ),
        ev(
            "resident_claim_offloaded",
            json!({"offload_generation": 1, "cache_tier_from": "gpu_kv_cache", "cache_tier_to": "host_offload_tier"}),
        ),
        ev(
            "resident_claim_restore_required",
            json!({"offload_generation": 1, "reuse_requires_restoration": true}),
        ),
        ev(
            "resident_claim_restored",
            json!({
                "offload_generation": 1,
                "restored_from_offload_tier": true,
                "restoration_source": "offload_tier",
                "cache_tier_from": "host_offload_tier",
                "cache_tier_to": "gpu_kv_cache",
            }),
        ),
        ev(
            "resident_claim_reuse_after_restore",
            json!({"offload_generation": 1, "predicate_satisfied": true}),
        ),
        ev(
            "resident_claim_offloaded",
            json!({"offload_generation": 2, "cache_tier_from": "gpu_kv_cache", "cache_tier_to": "host_offload_tier"}),
        ),
        ev(
            "resident_claim_restore_required",
            json!({"offload_generation": 2, "reuse_requires_restoration": true}),
        ),
        ev(
            "resident_claim_restoration_failed",
            json!({
                "offload_generation": 2,
                "outcome_claim_id": claim,
                "claim_scoped_outcome_type": "refusal",
                "controlled_restoration_unavailable": true,
                "injected_restoration_failure": true,
                "blocking_claim_ids": [claim],
            }),
        ),
        ev(
            "active_request_refused",
            json!({"offload_generation": 2, "outcome_claim_id": claim, "blocking_claim_ids": [claim]}),
        ),
    ];
    Trace {
        family: Family::Reference,
        events,
    }
}

/// A generic counter event (no claim).
pub fn generic_counter(name: &str, count_field: &str) -> Event {
    let mut e = event(name, None, json!({"claim_id": null}));
    e.insert(count_field.into(), json!(1));
    e
}

fn merge(into: &mut Value, from: &Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, from) {
        for (k, v) in b {
            a.insert(k.clone(), v.clone());
        }
    }
}
