//! Scenario verdicts and one guard per named requirement: each test removes or breaks the
//! evidence of exactly one requirement of a passing trace and asserts that name appears.

#![allow(clippy::unwrap_used, clippy::panic)] // test helpers outside #[test] fns

mod common;

use common::*;
use kvlower_trace::{Control, TraceFamily, TraceGate, TraceReport};
use serde_json::json;

use TraceGate::{
    ConnectorFailureOutcome as FAILURE, ConnectorObservation as OBSERVATION,
    MultiClaimAttribution as MULTI, ReferenceLifecycle as REFERENCE,
};

fn missing(r: &TraceReport, claim: Option<&str>, gate: TraceGate) -> Vec<&'static str> {
    let v = r
        .claim(claim)
        .unwrap_or_else(|| panic!("no row for {claim:?} in {r:#?}"));
    let g = v
        .gates
        .get(&gate)
        .unwrap_or_else(|| panic!("no {gate} for {claim:?}"));
    assert_eq!(g.pass, g.missing.is_empty());
    g.missing_names()
}

fn run(t: &Trace) -> TraceReport {
    eval(&t.jsonl())
}

/// Asserts `gate` of `claim` fails and lists `name`.
fn assert_missing(t: &Trace, claim: Option<&str>, gate: TraceGate, name: &str) {
    let r = run(t);
    let m = missing(&r, claim, gate);
    assert!(
        m.contains(&name),
        "{gate} should miss {name}, missing: {m:?}"
    );
}

/// Asserts `gate` of `claim` fails with exactly `names`.
fn assert_exactly(t: &Trace, claim: Option<&str>, gate: TraceGate, names: &[&str]) {
    let r = run(t);
    assert_eq!(missing(&r, claim, gate), names, "{gate}");
}

// --------------------------------------------------------------------------------------
// Scenario verdicts.

#[test]
fn success_passes_observation_only() {
    let r = run(&success());
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_eq!(r.family, TraceFamily::Connector);
    assert_eq!(r.claims.len(), 1);
    assert_eq!(missing(&r, Some(CLAIM_A), OBSERVATION), Vec::<&str>::new());
    assert_eq!(
        missing(&r, Some(CLAIM_A), FAILURE),
        [
            "controlled_cpu_to_gpu_load_failure",
            "claim_scoped_restoration_failed",
            "fail_closed_active_request_refused",
            "scheduler_side_restoration_failed",
            "scheduler_side_active_request_refused",
            "scheduler_side_claim_match",
            "scheduler_event_before_or_at_termination",
        ]
    );
    assert!(r.claims[0].controls_rejected.is_empty());
    assert!(!r.claims[0].gates.contains_key(&MULTI));
}

#[test]
fn same_claim_failure_passes_failure_outcome_only() {
    let r = run(&same_claim_failure());
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_eq!(r.events, 21);
    assert_eq!(missing(&r, Some(CLAIM_A), FAILURE), Vec::<&str>::new());
    assert_eq!(
        missing(&r, Some(CLAIM_A), OBSERVATION),
        ["cpu_to_gpu_restore_success"]
    );
    assert!(r.claims[0].controls_rejected.is_empty());
}

#[test]
fn wrong_claim_failure_is_a_rejected_control() {
    let r = run(&wrong_claim_failure());
    let v = r.claim(Some(CLAIM_A)).unwrap();
    assert_eq!(v.controls_rejected, [Control::WrongClaimFailure]);
    let m = missing(&r, Some(CLAIM_A), FAILURE);
    for name in [
        "controlled_cpu_to_gpu_load_failure",
        "scheduler_side_restoration_failed",
        "scheduler_side_claim_match",
        "claim_scoped_restoration_failed",
    ] {
        assert!(m.contains(&name), "{name} in {m:?}");
    }
}

#[test]
fn unclaimed_failure_is_a_rejected_control() {
    let r = run(&unclaimed_failure());
    assert_eq!(r.claims.len(), 1);
    let v = r.claim(None).unwrap();
    assert_eq!(v.controls_rejected, [Control::UnclaimedFailure]);
    assert!(missing(&r, None, FAILURE).contains(&"claim_metadata_before_lifecycle"));
    assert!(missing(&r, None, OBSERVATION).contains(&"claim_metadata_before_lifecycle"));
    assert!(!r.tally.failure_outcome_pass && r.tally.control && !r.tally.control_pass);
}

#[test]
fn fallback_recompute_is_a_rejected_control_and_still_an_observation() {
    let r = run(&fallback_recompute());
    let v = r.claim(Some(CLAIM_A)).unwrap();
    assert_eq!(v.controls_rejected, [Control::FallbackRecompute]);
    let m = missing(&r, Some(CLAIM_A), FAILURE);
    assert!(
        m.contains(&"no_fallback_recompute_counted_as_satisfaction"),
        "{m:?}"
    );
    assert!(m.contains(&"claim_scoped_restoration_failed"), "{m:?}");
    // Like the reference analyzer, observation takes the first successful CPU→GPU
    // transfer after the first load job: the retry's restore from the offload tier.
    assert_eq!(missing(&r, Some(CLAIM_A), OBSERVATION), Vec::<&str>::new());
}

#[test]
fn failed_load_then_restored_by_a_later_load_job_is_an_observation() {
    let r = run(&failed_then_restored());
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    let v = r.claim(Some(CLAIM_A)).unwrap();
    // The reference analyzer's verdicts on this shape: observation PASS, failure-outcome
    // FAIL, the fallback control rejected.
    assert!(v.passes(OBSERVATION), "{:?}", v.gates);
    assert!(!v.passes(FAILURE));
    assert_eq!(v.controls_rejected, [Control::FallbackRecompute]);
    assert_eq!(
        missing(&r, Some(CLAIM_A), FAILURE),
        ["no_fallback_recompute_counted_as_satisfaction"]
    );
    assert!(r.tally.observation_pass && !r.tally.failure_outcome_pass);
    assert!(r.tally.control && !r.tally.control_pass);
}

#[test]
fn generic_counters_only_is_a_rejected_control() {
    let r = run(&generic_counters_only());
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_eq!(r.family, TraceFamily::Connector);
    let v = r.claim(None).unwrap();
    assert_eq!(v.controls_rejected, [Control::GenericCountersOnly]);
    assert!(!v.passes(FAILURE) && !v.passes(OBSERVATION));
}

#[test]
fn ordinary_offload_without_claim_is_a_rejected_control() {
    let r = run(&ordinary_offload_without_claim());
    let v = r.claim(None).unwrap();
    assert_eq!(v.controls_rejected, [Control::OrdinaryOffloadWithoutClaim]);
    assert_eq!(
        missing(&r, None, OBSERVATION),
        [
            "claim_metadata_before_lifecycle",
            "store_offload_to_cpu_path",
            "reuse_lookup_hit_requiring_load",
            "cpu_to_gpu_restore_success"
        ]
    );
}

#[test]
fn multi_claim_attributes_only_the_target() {
    let r = run(&multi_claim());
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_eq!(r.claims.len(), 2);
    assert_eq!(
        r.claims[0].claim_id.as_deref(),
        Some(CLAIM_B),
        "first appearance order"
    );
    assert_eq!(missing(&r, Some(CLAIM_A), MULTI), Vec::<&str>::new());
    assert_eq!(missing(&r, Some(CLAIM_B), MULTI), Vec::<&str>::new());
    assert!(r.claim(Some(CLAIM_A)).unwrap().passes(FAILURE));
    assert!(r.claim(Some(CLAIM_B)).unwrap().passes(OBSERVATION));
    assert!(!r.claim(Some(CLAIM_B)).unwrap().passes(FAILURE));
    assert_eq!(r.tally.multi_claim, Some(true));
}

#[test]
fn reference_positive_and_demotion_pass() {
    for t in [reference_positive(), reference_demotion()] {
        let r = run(&t);
        assert!(r.is_valid(), "{:?}", r.diagnostics);
        assert_eq!(r.family, TraceFamily::Reference);
        assert_eq!(missing(&r, Some(REF_CLAIM), REFERENCE), Vec::<&str>::new());
        assert_eq!(r.claims[0].gates.len(), 1);
    }
}

#[test]
fn reference_false_positives_fail_by_name() {
    assert_exactly(
        &reference_post_hoc(),
        Some(REF_CLAIM),
        REFERENCE,
        &["pre_registered_accepted_claim"],
    );
    assert_exactly(
        &reference_restore_after_reuse(),
        Some(REF_CLAIM),
        REFERENCE,
        &["offload_restorability", "ordered_lifecycle_events"],
    );
    assert_exactly(
        &reference_refusal_without_blocking_claim(),
        Some(REF_CLAIM),
        REFERENCE,
        &["restoration_failure_outcome", "ordered_lifecycle_events"],
    );
    assert_exactly(
        &reference_fallback_recompute(),
        Some(REF_CLAIM),
        REFERENCE,
        &["offload_restorability", "ordered_lifecycle_events"],
    );
}

#[test]
fn reference_generic_substrate_is_unclaimed() {
    let r = run(&reference_generic_substrate());
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert_eq!(r.family, TraceFamily::Reference);
    let v = r.claim(None).unwrap();
    assert_eq!(v.controls_rejected, [Control::GenericCountersOnly]);
    assert!(!v.passes(REFERENCE));
}

// --------------------------------------------------------------------------------------
// One guard per connector observation requirement (base: `success`).

#[test]
fn obs_claim_metadata_before_lifecycle() {
    let mut t = success();
    t.drop_event("request_initialized", 1)
        .drop_event("request_initialized", 0);
    assert_exactly(
        &t,
        Some(CLAIM_A),
        OBSERVATION,
        &["claim_metadata_before_lifecycle"],
    );
}

#[test]
fn obs_ambiguous_claim_cache_identity() {
    let mut t = success();
    t.set(
        "offload_job_completed",
        1,
        "prefix_id",
        json!("prefix:other"),
    );
    let r = run(&t);
    assert_eq!(
        missing(&r, Some(CLAIM_A), OBSERVATION),
        ["ambiguous_claim_cache_identity"]
    );
    assert_eq!(
        missing(&r, Some(CLAIM_A), FAILURE)[0],
        "ambiguous_claim_cache_identity"
    );
    assert_eq!(r.diagnostics.len(), 1);
    assert!(r.diagnostics[0].message().contains("prefix_id"));
}

#[test]
fn obs_store_offload_to_cpu_path() {
    let mut t = success();
    t.drop_event("resident_claim_offloaded", 0);
    assert_exactly(
        &t,
        Some(CLAIM_A),
        OBSERVATION,
        &["store_offload_to_cpu_path"],
    );
    let mut t = success();
    t.set(
        "offload_worker_transfer_finished",
        0,
        "success",
        json!(false),
    );
    assert_missing(&t, Some(CLAIM_A), OBSERVATION, "store_offload_to_cpu_path");
}

#[test]
fn obs_reuse_lookup_hit_requiring_load() {
    let mut t = success();
    t.set("offload_lookup_result", 1, "will_load_async", json!(false));
    assert_missing(
        &t,
        Some(CLAIM_A),
        OBSERVATION,
        "reuse_lookup_hit_requiring_load",
    );
    let mut t = success();
    t.drop_event("offload_load_job_created", 0);
    assert_missing(
        &t,
        Some(CLAIM_A),
        OBSERVATION,
        "reuse_lookup_hit_requiring_load",
    );
}

#[test]
fn obs_cpu_to_gpu_restore_success() {
    let mut t = success();
    t.drop_event("resident_claim_restored", 0);
    assert_exactly(
        &t,
        Some(CLAIM_A),
        OBSERVATION,
        &["cpu_to_gpu_restore_success"],
    );
    let mut t = success();
    t.set(
        "resident_claim_restored",
        0,
        "restoration_source",
        json!("fallback_recompute"),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        OBSERVATION,
        &["cpu_to_gpu_restore_success"],
    );
}

#[test]
fn obs_claim_metadata_ordering() {
    let mut t = success();
    let init = t.find("request_initialized", None, 0);
    let store = t.find("offload_store_job_created", None, 0);
    t.move_event(init, store);
    assert_exactly(&t, Some(CLAIM_A), OBSERVATION, &["claim_metadata_ordering"]);
}

// --------------------------------------------------------------------------------------
// One guard per connector failure-outcome requirement (base: `same_claim_failure`).

#[test]
fn fail_claim_metadata_before_lifecycle() {
    let mut t = same_claim_failure();
    t.drop_event("request_initialized", 1)
        .drop_event("request_initialized", 0);
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &["claim_metadata_before_lifecycle"],
    );
}

#[test]
fn fail_ambiguous_claim_cache_identity() {
    let mut t = same_claim_failure();
    t.set(
        "offload_load_job_failed",
        0,
        "cache_identity",
        json!("fixture-cache:v2"),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &["ambiguous_claim_cache_identity"],
    );
}

#[test]
fn fail_store_offload_to_cpu_path() {
    let mut t = same_claim_failure();
    t.drop_event("offload_worker_transfer_finished", 0);
    assert_exactly(&t, Some(CLAIM_A), FAILURE, &["store_offload_to_cpu_path"]);
}

#[test]
fn fail_restore_required_before_failure() {
    let mut t = same_claim_failure();
    t.drop_event("resident_claim_restore_required", 0);
    assert_missing(
        &t,
        Some(CLAIM_A),
        FAILURE,
        "restore_required_before_failure",
    );
}

#[test]
fn fail_controlled_cpu_to_gpu_load_failure() {
    let mut t = same_claim_failure();
    t.drop_event("offload_load_job_failed", 0);
    assert_missing(
        &t,
        Some(CLAIM_A),
        FAILURE,
        "controlled_cpu_to_gpu_load_failure",
    );
    // An uncontrolled failure (no injection markers) is not the controlled failure.
    let mut t = same_claim_failure();
    for field in [
        "controlled_restoration_unavailable",
        "failure_injection_flag",
        "injected_restoration_failure",
    ] {
        t.set("offload_worker_transfer_finished", 1, field, json!(false));
    }
    assert_missing(
        &t,
        Some(CLAIM_A),
        FAILURE,
        "controlled_cpu_to_gpu_load_failure",
    );
}

#[test]
fn fail_claim_scoped_restoration_failed() {
    let mut t = same_claim_failure();
    t.set(
        "resident_claim_restoration_failed",
        0,
        "claim_scoped_outcome_type",
        json!("degraded"),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &[
            "claim_scoped_restoration_failed",
            "fail_closed_active_request_refused",
        ],
    );
}

#[test]
fn fail_fail_closed_active_request_refused() {
    let mut t = same_claim_failure();
    t.set("active_request_refused", 0, "blocking_claim_ids", json!([]));
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &["fail_closed_active_request_refused"],
    );
}

#[test]
fn fail_scheduler_side_restoration_failed() {
    let mut t = same_claim_failure();
    t.set(
        "scheduler_resident_claim_restoration_failed",
        0,
        "finish_status",
        json!(null),
    );
    assert_missing(
        &t,
        Some(CLAIM_A),
        FAILURE,
        "scheduler_side_restoration_failed",
    );
}

#[test]
fn fail_scheduler_side_active_request_refused() {
    let mut t = same_claim_failure();
    t.drop_event("scheduler_active_request_refused", 0);
    assert_missing(
        &t,
        Some(CLAIM_A),
        FAILURE,
        "scheduler_side_active_request_refused",
    );
}

#[test]
fn fail_scheduler_side_claim_match() {
    // Failure evidence of this claim that names another claim spoils the match.
    let mut t = same_claim_failure();
    t.set(
        "offload_worker_load_failed",
        0,
        "failure_matched_claim_id",
        json!(CLAIM_B),
    );
    let r = run(&t);
    assert_eq!(
        missing(&r, Some(CLAIM_A), FAILURE),
        ["scheduler_side_claim_match"]
    );
    assert_eq!(r.claims[0].controls_rejected, [Control::WrongClaimFailure]);
}

#[test]
fn fail_scheduler_event_before_or_at_termination() {
    let mut t = same_claim_failure();
    t.set(
        "scheduler_active_request_refused",
        0,
        "scheduler_event_before_finish_requests",
        json!(false),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &["scheduler_event_before_or_at_termination"],
    );
    // The request terminates before the scheduler outcome.
    let mut t = same_claim_failure();
    let end = t.find("offload_request_finished_pending_jobs", None, 0);
    let failed = t.find("offload_worker_load_failed", None, 0);
    t.move_event(end, failed);
    assert_missing(
        &t,
        Some(CLAIM_A),
        FAILURE,
        "scheduler_event_before_or_at_termination",
    );
}

#[test]
fn fail_native_scheduler_admission_refusal_misclassified() {
    let mut t = same_claim_failure();
    t.set(
        "scheduler_resident_claim_restoration_failed",
        0,
        "native_scheduler_admission_refusal",
        json!(true),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &["native_scheduler_admission_refusal_misclassified"],
    );
}

#[test]
fn fail_no_fallback_recompute_counted_as_satisfaction() {
    let mut t = same_claim_failure();
    t.conn(
        Some((CLAIM_A, "reuse")),
        "1-fixture",
        "resident_claim_restored",
        json!({"restored_from_offload_tier": true, "restoration_source": "offload_tier"}),
    );
    let r = run(&t);
    assert_eq!(
        missing(&r, Some(CLAIM_A), FAILURE),
        ["no_fallback_recompute_counted_as_satisfaction"]
    );
    assert_eq!(r.claims[0].controls_rejected, [Control::FallbackRecompute]);
    let mut t = same_claim_failure();
    t.set(
        "resident_claim_restoration_failed",
        0,
        "fallback_recompute_counted_as_satisfaction",
        json!(true),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        FAILURE,
        &["no_fallback_recompute_counted_as_satisfaction"],
    );
}

#[test]
fn fail_ordered_failure_semantics() {
    // The request terminates after the load job failed: every step exists, out of order.
    let mut t = same_claim_failure();
    let end = t.find("offload_request_finished_pending_jobs", None, 0);
    t.move_event(end, end + 1);
    assert_exactly(&t, Some(CLAIM_A), FAILURE, &["ordered_failure_semantics"]);
    // The reuse lookup hit precedes the store transfer.
    let mut t = same_claim_failure();
    let hit = t.find("offload_lookup_result", None, 1);
    let store = t.find("offload_worker_transfer_finished", None, 0);
    t.move_event(hit, store);
    assert_exactly(&t, Some(CLAIM_A), FAILURE, &["ordered_failure_semantics"]);
}

// --------------------------------------------------------------------------------------
// One guard per reference lifecycle requirement (base: `reference_positive`).

#[test]
fn ref_pre_registered_accepted_claim() {
    let mut t = reference_positive();
    t.drop_event("resident_claim_accepted", 0);
    assert_missing(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        "pre_registered_accepted_claim",
    );
}

#[test]
fn ref_stable_claim_id_and_fixed_materialization_predicate() {
    let mut t = reference_positive();
    let i = t.find("resident_claim_restored", None, 0);
    t.events[i].remove("predicate_id");
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["stable_claim_id_and_fixed_materialization_predicate"],
    );
    let mut t = reference_positive();
    t.set(
        "resident_claim_restored",
        0,
        "materialization_predicate",
        json!("leading_prefix_at_least(4)"),
    );
    assert_missing(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        "stable_claim_id_and_fixed_materialization_predicate",
    );
}

#[test]
fn ref_reusable_object_id() {
    let mut t = reference_positive();
    t.remove_field_everywhere("reusable_object_id");
    assert_exactly(&t, Some(REF_CLAIM), REFERENCE, &["reusable_object_id"]);
}

#[test]
fn ref_fixed_cache_identity_and_deterministic_request_token_map() {
    let mut t = reference_positive();
    t.remove_field_everywhere("request_token_map_id");
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["fixed_cache_identity_and_deterministic_request_token_map"],
    );
}

#[test]
fn ref_materialization_predicate() {
    let mut t = reference_positive();
    t.set(
        "resident_claim_materialized",
        0,
        "predicate_materialized",
        json!(false),
    );
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["materialization_predicate"],
    );
}

#[test]
fn ref_offload_restorability() {
    let mut t = reference_positive();
    t.set(
        "resident_claim_reuse_after_restore",
        0,
        "predicate_satisfied",
        json!(false),
    );
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["offload_restorability", "ordered_lifecycle_events"],
    );
}

#[test]
fn ref_restoration_failure_outcome() {
    let mut t = reference_positive();
    t.set(
        "resident_claim_restoration_failed",
        0,
        "outcome_claim_id",
        json!("fixture:claim-wrong"),
    );
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["restoration_failure_outcome", "ordered_lifecycle_events"],
    );
}

/// A refusal whose `blocking_claim_ids` lists the claim *and* others (or a wildcard) is
/// smeared across claims: it witnesses no same-claim outcome, exactly as the connector
/// gate's `scheduler_side_claim_match` rejects it.
#[test]
fn ref_restoration_failure_outcome_rejects_smeared_blocking_claim_ids() {
    for blocking in [
        json!([REF_CLAIM, "fixture:another-claim", "*"]),
        json!([REF_CLAIM, "*"]),
        json!(["fixture:another-claim", REF_CLAIM]),
        json!([REF_CLAIM, ""]),
    ] {
        let mut t = reference_positive();
        t.set(
            "active_request_refused",
            0,
            "blocking_claim_ids",
            blocking.clone(),
        );
        assert_exactly(
            &t,
            Some(REF_CLAIM),
            REFERENCE,
            &["restoration_failure_outcome"],
        );
    }
    // A demotion (or a restoration failure) naming another claim is smeared too.
    let mut t = reference_positive();
    t.set(
        "resident_claim_restoration_failed",
        0,
        "blocking_claim_ids",
        json!([REF_CLAIM, "fixture:another-claim"]),
    );
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["restoration_failure_outcome"],
    );
    // The same smearing is rejected by the connector gate.
    let mut c = same_claim_failure();
    c.set(
        "scheduler_active_request_refused",
        0,
        "blocking_claim_ids",
        json!([CLAIM_A, "fixture:another-claim", "*"]),
    );
    assert!(missing(&run(&c), Some(CLAIM_A), FAILURE).contains(&"scheduler_side_claim_match"));
}

#[test]
fn ref_ordered_lifecycle_events() {
    let mut t = reference_positive();
    let m = t.find("resident_claim_materialized", None, 0);
    let first_offload = t.find("resident_claim_offloaded", None, 0);
    t.move_event(m, first_offload);
    assert_exactly(
        &t,
        Some(REF_CLAIM),
        REFERENCE,
        &["ordered_lifecycle_events"],
    );
}

// --------------------------------------------------------------------------------------
// One guard per multi-claim attribution requirement (base: `multi_claim`).

fn multi_missing(t: &Trace) -> Vec<&'static str> {
    let r = run(t);
    let a = missing(&r, Some(CLAIM_A), MULTI);
    assert_eq!(
        a,
        missing(&r, Some(CLAIM_B), MULTI),
        "one verdict per trace"
    );
    a
}

#[test]
fn multi_target_claim_failure_outcome_gate() {
    let mut t = multi_claim();
    t.drop_event("active_request_refused", 0);
    assert_eq!(multi_missing(&t), ["target_claim_failure_outcome_gate"]);
}

#[test]
fn multi_scheduler_targets() {
    let mut t = multi_claim();
    t.set(
        "scheduler_active_request_refused",
        0,
        "scheduler_side_refusal",
        json!(false),
    );
    let m = multi_missing(&t);
    assert!(
        m.contains(&"scheduler_active_request_refused_target"),
        "{m:?}"
    );
    let mut t = multi_claim();
    t.set(
        "scheduler_resident_claim_restoration_failed",
        0,
        "scheduler_side_failure_outcome",
        json!(false),
    );
    let m = multi_missing(&t);
    assert!(
        m.contains(&"scheduler_resident_claim_restoration_failed_target"),
        "{m:?}"
    );
}

#[test]
fn multi_scheduler_failure_events_name_only_target() {
    let mut t = multi_claim();
    let i = t.find("scheduler_active_request_refused", None, 0);
    let mut extra = t.events[i].clone();
    for (k, v) in [("claim_id", CLAIM_B), ("resident_claim_id", CLAIM_B)] {
        extra.insert(k.into(), json!(v));
    }
    t.events.push(extra);
    t.renumber();
    let m = multi_missing(&t);
    assert!(
        m.contains(&"scheduler_failure_events_name_only_target"),
        "{m:?}"
    );
    assert!(
        m.contains(&"non_target_failure_or_refusal_attribution"),
        "{m:?}"
    );
}

#[test]
fn multi_blocking_claim_ids_name_only_target() {
    let mut t = multi_claim();
    t.set(
        "scheduler_resident_claim_restoration_failed",
        0,
        "blocking_claim_ids",
        json!([CLAIM_A, CLAIM_B]),
    );
    let m = multi_missing(&t);
    assert!(m.contains(&"blocking_claim_ids_name_only_target"), "{m:?}");
}

#[test]
fn multi_non_target_failure_or_refusal_attribution() {
    let mut t = multi_claim();
    t.conn(
        Some((CLAIM_B, "reuse")),
        "1-fixture-b",
        "active_request_refused",
        json!({"blocking_claim_ids": [CLAIM_B], "outcome_claim_id": CLAIM_B}),
    );
    assert_eq!(
        multi_missing(&t),
        ["non_target_failure_or_refusal_attribution"]
    );
}

#[test]
fn multi_non_target_restore_success_or_not_failed() {
    let mut t = multi_claim();
    let i = t.find("offload_worker_transfer_finished", Some(CLAIM_B), 1);
    t.events[i].insert("success".into(), json!(false));
    assert_eq!(
        multi_missing(&t),
        ["non_target_restore_success_or_not_failed"]
    );
}

#[test]
fn multi_claim_with_a_diagnostic_cannot_pass() {
    let mut text = multi_claim().jsonl();
    text.push_str("not json\n");
    let r = eval(&text);
    // The unreadable line touches every claim, the target included.
    assert_eq!(
        missing(&r, Some(CLAIM_A), MULTI),
        ["target_claim_failure_outcome_gate", "well_formed_trace"]
    );
    assert_eq!(missing(&r, Some(CLAIM_A), FAILURE), ["well_formed_trace"]);
}

#[path = "gates/residency.rs"]
mod residency;
