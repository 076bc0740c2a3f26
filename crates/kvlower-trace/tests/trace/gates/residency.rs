//! The residency gates (`claim_protection`, `claim_demotion`, `claim_expiry`), written as
//! attacks: each test starts from a passing trace, breaks exactly one requirement the way
//! a runtime or a hostile descriptor author would, and asserts the gate names it. The
//! controls of issue 23 (no pin, pinned without action, wrong or missing blocking ids,
//! acceptance after the pressure, demotion missing / after the loss / of another claim,
//! loss before the boundary, boundary missing / of another claim) are among them.

use super::*;
use serde_json::Value;

use TraceGate::{ClaimDemotion as DEMOTION, ClaimExpiry as EXPIRY, ClaimProtection as PROTECTION};

const FOOTPRINT: u64 = 4;
const OWN_REQUEST: &str = "req-resident";
const CONFLICTING: &str = "req-conflicting";

fn ev(t: &mut Trace, claim: &str, request: &str, event: &str, fields: Value) {
    t.conn(Some((claim, "resident")), request, event, fields);
}

fn accepted(t: &mut Trace, claim: &str, mode: &str) {
    let mut fields = json!({"accepted_mode": mode, "footprint_blocks": FOOTPRINT, "accepted_at_step": 1, "engine_step": 1});
    if mode == "expiring" {
        fields["duration_steps"] = json!(6);
    }
    ev(t, claim, OWN_REQUEST, "resident_claim_accepted", fields);
}

fn materialized_only(t: &mut Trace, claim: &str) {
    ev(
        t,
        claim,
        OWN_REQUEST,
        "resident_claim_materialized",
        json!({"predicate_materialized": true, "materialized_blocks": FOOTPRINT, "engine_step": 2}),
    );
}

fn materialized(t: &mut Trace, claim: &str) {
    materialized_only(t, claim);
    ev(
        t,
        claim,
        OWN_REQUEST,
        "resident_claim_protected",
        json!({"protected_blocks": FOOTPRINT, "engine_step": 2}),
    );
}

fn pressure(t: &mut Trace, claim: &str, action: &str) {
    ev(
        t,
        claim,
        CONFLICTING,
        "allocator_victim_exclusion",
        json!({"conflicting_request_id": CONFLICTING, "need_blocks": 14, "free_blocks": 12, "excluded_blocks": FOOTPRINT, "claim_blocks_in_candidates": 0, "engine_step": 3}),
    );
    ev(
        t,
        claim,
        CONFLICTING,
        "scheduler_conflict_action",
        json!({"conflicting_request_id": CONFLICTING, "action": action, "blocking_claim_ids": [claim], "footprint_blocks": FOOTPRINT, "need_blocks": 14, "free_blocks": 12, "engine_step": 3}),
    );
}

fn lost(t: &mut Trace, claim: &str, cause: &str) {
    ev(
        t,
        claim,
        CONFLICTING,
        "resident_claim_device_copy_lost",
        json!({"lost_blocks": FOOTPRINT, "loss_cause": cause, "engine_step": 9}),
    );
}

/// Accepted, materialized, pinned, excluded from the victims, the conflicting request
/// refused naming the claim, released intact.
fn protected() -> Trace {
    let mut t = Trace::connector();
    accepted(&mut t, CLAIM_A, "hard_protected");
    materialized(&mut t, CLAIM_A);
    pressure(&mut t, CLAIM_A, "refuse");
    ev(
        &mut t,
        CLAIM_A,
        OWN_REQUEST,
        "resident_claim_released",
        json!({"release_reason": "run_end", "blocks_intact": FOOTPRINT, "engine_step": 5}),
    );
    t
}

/// Accepted demotable, materialized, offloaded whole, demoted to the host tier, then evicted.
fn demoted() -> Trace {
    let mut t = Trace::connector();
    accepted(&mut t, CLAIM_A, "demotable");
    materialized_only(&mut t, CLAIM_A);
    // The whole footprint stored in the host tier before the demotion.
    ev(
        &mut t,
        CLAIM_A,
        OWN_REQUEST,
        "resident_claim_offloaded",
        json!({"block_count_footprint": FOOTPRINT, "engine_step": 2}),
    );
    ev(
        &mut t,
        CLAIM_A,
        CONFLICTING,
        "resident_claim_demoted",
        json!({"from_tier": "gpu", "to_tier": "cpu", "demoted_blocks": FOOTPRINT, "engine_step": 3}),
    );
    lost(&mut t, CLAIM_A, "evicted_after_demotion");
    t
}

/// Accepted expiring (6 steps), protected against a conflict before the boundary, the
/// boundary at step 7, then evicted.
fn expired() -> Trace {
    let mut t = Trace::connector();
    accepted(&mut t, CLAIM_A, "expiring");
    materialized(&mut t, CLAIM_A);
    pressure(&mut t, CLAIM_A, "refuse");
    ev(
        &mut t,
        CLAIM_A,
        OWN_REQUEST,
        "resident_claim_expired",
        json!({"accepted_at_step": 1, "duration_steps": 6, "expired_at_step": 7, "engine_step": 7}),
    );
    lost(&mut t, CLAIM_A, "evicted_after_expiry");
    t
}

fn passes(t: &Trace, gate: TraceGate) -> bool {
    run(t).claim(Some(CLAIM_A)).is_some_and(|v| v.passes(gate))
}

#[test]
fn each_positive_trace_passes_its_own_gate_only() {
    for (name, t, gate) in [
        ("protected", protected(), PROTECTION),
        ("demoted", demoted(), DEMOTION),
        ("expired", expired(), EXPIRY),
    ] {
        let r = run(&t);
        assert!(r.is_valid(), "{name}: {:?}", r.diagnostics);
        for other in [PROTECTION, DEMOTION, EXPIRY] {
            let m = missing(&r, Some(CLAIM_A), other);
            assert_eq!(m.is_empty(), other == gate, "{name} / {other}: {m:?}");
        }
        // The residency run counts as a pass of the trace and in a campaign.
        assert!(r.tally.passed(), "{name}");
        assert_eq!(r.tally.residency, Some(true), "{name}");
    }
}

#[test]
fn traces_without_residency_events_have_no_residency_gates() {
    let r = run(&success());
    for gate in [PROTECTION, DEMOTION, EXPIRY] {
        assert!(!r.claims[0].gates.contains_key(&gate));
    }
    assert_eq!(r.tally.residency, None);
}

// --- protection -----------------------------------------------------------------------

#[test]
fn control_no_pin_the_claim_is_evicted() {
    let mut t = protected();
    let i = t.find("resident_claim_protected", None, 0);
    t.events.remove(i);
    let i = t.find("allocator_victim_exclusion", None, 0);
    t.events.truncate(i);
    lost(&mut t, CLAIM_A, "evicted_unprotected");
    t.renumber();
    let m = missing(&run(&t), Some(CLAIM_A), PROTECTION);
    for name in [
        "claim_blocks_protected",
        "victims_exclude_claim_blocks",
        "conflict_action_explicit",
        "no_loss_while_protected",
        "claim_end_accounted",
    ] {
        assert!(m.contains(&name), "{name}: {m:?}");
    }
}

#[test]
fn control_pinned_without_an_action_the_request_waits() {
    let mut t = protected();
    t.drop_event("scheduler_conflict_action", 0);
    t.renumber();
    assert_exactly(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        &[
            "conflict_action_explicit",
            "blocking_claim_ids_name_claim",
            "conflict_footprint_matches_acceptance",
            "ordered_protection_lifecycle",
        ],
    );
}

#[test]
fn control_action_with_wrong_blocking_ids() {
    let mut t = protected();
    t.set(
        "scheduler_conflict_action",
        0,
        "blocking_claim_ids",
        json!([CLAIM_B]),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        &["blocking_claim_ids_name_claim"],
    );
}

#[test]
fn control_action_without_blocking_ids() {
    for ids in [json!([]), Value::Null] {
        let mut t = protected();
        t.set("scheduler_conflict_action", 0, "blocking_claim_ids", ids);
        assert_exactly(
            &t,
            Some(CLAIM_A),
            PROTECTION,
            &["blocking_claim_ids_name_claim"],
        );
    }
}

#[test]
fn control_acceptance_named_after_the_pressure() {
    let mut t = protected();
    let from = t.find("resident_claim_accepted", None, 0);
    let to = t.find("scheduler_conflict_action", None, 0);
    t.move_event(from, to);
    assert_exactly(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        &["ordered_protection_lifecycle"],
    );
}

#[test]
fn the_running_request_protecting_itself_is_not_a_conflict_action() {
    // Active no-evict: the "conflicting" request is the one that materialized the claim.
    let mut t = protected();
    t.set(
        "allocator_victim_exclusion",
        0,
        "conflicting_request_id",
        json!(OWN_REQUEST),
    );
    t.set(
        "scheduler_conflict_action",
        0,
        "conflicting_request_id",
        json!(OWN_REQUEST),
    );
    assert_exactly(&t, Some(CLAIM_A), PROTECTION, &["conflict_action_explicit"]);
}

#[test]
fn an_action_for_another_request_than_the_excluded_one_does_not_count() {
    let mut t = protected();
    t.set(
        "scheduler_conflict_action",
        0,
        "conflicting_request_id",
        json!("req-elsewhere"),
    );
    assert_exactly(&t, Some(CLAIM_A), PROTECTION, &["conflict_action_explicit"]);
}

#[test]
fn an_unknown_action_is_not_explicit() {
    for action in [json!("evict"), json!("REFUSE"), json!("")] {
        let mut t = protected();
        t.set("scheduler_conflict_action", 0, "action", action);
        assert_exactly(&t, Some(CLAIM_A), PROTECTION, &["conflict_action_explicit"]);
    }
}

#[test]
fn a_footprint_that_does_not_match_the_acceptance_fails_each_place_it_appears() {
    let cases = [
        (
            "resident_claim_materialized",
            "materialized_blocks",
            "claim_materialized_with_footprint",
        ),
        (
            "resident_claim_protected",
            "protected_blocks",
            "claim_blocks_protected",
        ),
        (
            "allocator_victim_exclusion",
            "excluded_blocks",
            "victims_exclude_claim_blocks",
        ),
        (
            "scheduler_conflict_action",
            "footprint_blocks",
            "conflict_footprint_matches_acceptance",
        ),
        (
            "resident_claim_released",
            "blocks_intact",
            "claim_end_accounted",
        ),
    ];
    for (event, field, name) in cases {
        let mut t = protected();
        t.set(event, 0, field, json!(FOOTPRINT - 1));
        assert_exactly(&t, Some(CLAIM_A), PROTECTION, &[name]);
    }
}

#[test]
fn a_claim_block_among_the_victim_candidates_is_not_excluded() {
    let mut t = protected();
    t.set(
        "allocator_victim_exclusion",
        0,
        "claim_blocks_in_candidates",
        json!(1),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        &["victims_exclude_claim_blocks"],
    );
}

#[test]
fn a_claim_refused_up_front_or_accepted_twice_or_for_another_mode_is_not_accepted() {
    let mut refused = protected();
    let i = refused.find("resident_claim_accepted", None, 0);
    refused.events[i].insert("event".into(), json!("resident_claim_refused"));
    let mut refused_after = protected();
    ev(
        &mut refused_after,
        CLAIM_A,
        OWN_REQUEST,
        "resident_claim_refused",
        json!({"accepted_mode": "hard_protected", "footprint_blocks": FOOTPRINT}),
    );
    let mut twice = protected();
    let i = twice.find("resident_claim_accepted", None, 0);
    let again = twice.events[i].clone();
    twice.events.insert(i + 1, again);
    twice.renumber();
    let mut other_mode = protected();
    other_mode.set(
        "resident_claim_accepted",
        0,
        "accepted_mode",
        json!("soft_priority"),
    );
    let mut no_footprint = protected();
    no_footprint.set("resident_claim_accepted", 0, "footprint_blocks", json!(0));
    for t in [refused, refused_after, twice, other_mode, no_footprint] {
        assert_missing(
            &t,
            Some(CLAIM_A),
            PROTECTION,
            "claim_accepted_with_footprint",
        );
    }
}

#[test]
fn a_loss_while_protected_fails_even_when_released_later() {
    let mut t = protected();
    let i = t.find("resident_claim_released", None, 0);
    let mut extra = Trace::connector();
    lost(&mut extra, CLAIM_A, "evicted_unprotected");
    t.events.insert(i, extra.events.remove(0));
    t.renumber();
    assert_exactly(&t, Some(CLAIM_A), PROTECTION, &["no_loss_while_protected"]);
}

#[test]
fn a_later_good_action_does_not_repair_a_bad_first_one() {
    let mut t = protected();
    t.set(
        "scheduler_conflict_action",
        0,
        "blocking_claim_ids",
        json!([CLAIM_B]),
    );
    let i = t.find("scheduler_conflict_action", None, 0);
    let mut good = t.events[i].clone();
    good.insert("blocking_claim_ids".into(), json!([CLAIM_A]));
    t.events.insert(i + 1, good);
    t.renumber();
    assert_missing(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        "blocking_claim_ids_name_claim",
    );
}

#[test]
fn residency_events_without_a_claim_never_pass() {
    let mut t = protected();
    t.remove_field_everywhere("claim_id")
        .remove_field_everywhere("resident_claim_id");
    let r = run(&t);
    assert!(
        r.claims
            .iter()
            .all(|v| ![PROTECTION, DEMOTION, EXPIRY].iter().any(|&g| v.passes(g)))
    );
    assert_eq!(r.tally.residency, Some(false));
}

#[test]
fn a_malformed_line_or_an_identity_conflict_fails_every_residency_gate() {
    let mut bad = protected().jsonl();
    bad.push_str("{not json\n");
    let r = eval(&bad);
    assert!(!r.claim(Some(CLAIM_A)).unwrap().passes(PROTECTION));
    let mut t = protected();
    t.set(
        "resident_claim_released",
        0,
        "cache_identity",
        json!("another-cache:v1"),
    );
    assert_missing(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        "ambiguous_claim_cache_identity",
    );
}

#[test]
fn another_claims_protection_is_not_this_claims() {
    // Claim B's whole protection is in the trace; claim A only has its acceptance.
    let mut t = Trace::connector();
    accepted(&mut t, CLAIM_A, "hard_protected");
    for e in protected().events.into_iter() {
        let mut e = e;
        for key in ["claim_id", "resident_claim_id"] {
            e.insert(key.into(), json!(CLAIM_B));
        }
        for key in [
            "predicate_id",
            "prefix_id",
            "reusable_object_id",
            "request_token_map_id",
        ] {
            let v = e
                .get(key)
                .and_then(Value::as_str)
                .unwrap()
                .replace(CLAIM_A, CLAIM_B);
            e.insert(key.into(), json!(v));
        }
        if e.get("event").and_then(Value::as_str) == Some("scheduler_conflict_action") {
            e.insert("blocking_claim_ids".into(), json!([CLAIM_A, CLAIM_B]));
        }
        t.events.push(e);
    }
    t.renumber();
    let r = run(&t);
    assert!(r.claim(Some(CLAIM_B)).unwrap().passes(PROTECTION));
    assert!(!r.claim(Some(CLAIM_A)).unwrap().passes(PROTECTION));
}

// --- demotion -------------------------------------------------------------------------

#[test]
fn control_evicted_without_demotion() {
    let mut t = demoted();
    t.drop_event("resident_claim_demoted", 0);
    t.renumber();
    assert_exactly(
        &t,
        Some(CLAIM_A),
        DEMOTION,
        &[
            "claim_scoped_demotion_to_lower_tier",
            "footprint_offloaded_before_demotion",
            "ordered_demotion_lifecycle",
        ],
    );
}

#[test]
fn control_demotion_recorded_after_the_loss() {
    let mut t = demoted();
    let from = t.find("resident_claim_demoted", None, 0);
    let to = t.find("resident_claim_device_copy_lost", None, 0);
    t.move_event(from, to);
    assert_exactly(&t, Some(CLAIM_A), DEMOTION, &["ordered_demotion_lifecycle"]);
}

#[test]
fn control_demotion_of_another_claim() {
    let mut t = demoted();
    let i = t.find("resident_claim_demoted", None, 0);
    t.events[i].insert("claim_id".into(), json!(CLAIM_B));
    t.events[i].insert("resident_claim_id".into(), json!(CLAIM_B));
    let r = run(&t);
    assert_eq!(
        missing(&r, Some(CLAIM_A), DEMOTION),
        [
            "claim_scoped_demotion_to_lower_tier",
            "footprint_offloaded_before_demotion",
            "ordered_demotion_lifecycle"
        ]
    );
    assert!(!r.claim(Some(CLAIM_B)).unwrap().passes(DEMOTION));
}

#[test]
fn a_demotion_sideways_upwards_or_to_an_unknown_tier_is_not_a_demotion() {
    for (from, to) in [
        ("gpu", "gpu"),
        ("cpu", "gpu"),
        ("gpu", "tape"),
        ("GPU", "CPU"),
    ] {
        let mut t = demoted();
        t.set("resident_claim_demoted", 0, "from_tier", json!(from));
        t.set("resident_claim_demoted", 0, "to_tier", json!(to));
        assert_exactly(
            &t,
            Some(CLAIM_A),
            DEMOTION,
            &["claim_scoped_demotion_to_lower_tier"],
        );
    }
}

#[test]
fn a_partial_demotion_is_not_the_claims_demotion() {
    let mut t = demoted();
    t.set(
        "resident_claim_demoted",
        0,
        "demoted_blocks",
        json!(FOOTPRINT - 1),
    );
    assert_exactly(
        &t,
        Some(CLAIM_A),
        DEMOTION,
        &["claim_scoped_demotion_to_lower_tier"],
    );
}

#[test]
fn a_demotion_without_the_loss_it_precedes_or_with_an_unattributed_loss_witnesses_nothing() {
    let mut no_loss = demoted();
    no_loss.drop_event("resident_claim_device_copy_lost", 0);
    assert_exactly(
        &no_loss,
        Some(CLAIM_A),
        DEMOTION,
        &["device_copy_loss_observed", "ordered_demotion_lifecycle"],
    );
    let mut unattributed = demoted();
    let i = unattributed.find("resident_claim_device_copy_lost", None, 0);
    unattributed.events[i].remove("loss_cause");
    assert_exactly(
        &unattributed,
        Some(CLAIM_A),
        DEMOTION,
        &["device_copy_loss_observed"],
    );
}

#[test]
fn a_demotable_claim_is_not_a_protected_one() {
    let mut t = demoted();
    t.set(
        "resident_claim_accepted",
        0,
        "accepted_mode",
        json!("hard_protected"),
    );
    assert_missing(&t, Some(CLAIM_A), DEMOTION, "claim_accepted_with_footprint");
}

// --- expiry ---------------------------------------------------------------------------

#[test]
fn control_loss_before_the_boundary() {
    let mut t = expired();
    let from = t.find("resident_claim_device_copy_lost", None, 0);
    let to = t.find("resident_claim_expired", None, 0);
    t.move_event(from, to);
    assert_exactly(&t, Some(CLAIM_A), EXPIRY, &["ordered_expiry_lifecycle"]);
}

#[test]
fn control_boundary_missing_duration_metadata_alone() {
    let mut t = expired();
    t.drop_event("resident_claim_expired", 0);
    t.renumber();
    assert_exactly(
        &t,
        Some(CLAIM_A),
        EXPIRY,
        &["claim_scoped_expiry_boundary", "ordered_expiry_lifecycle"],
    );
}

#[test]
fn control_boundary_of_another_claim() {
    let mut t = expired();
    let i = t.find("resident_claim_expired", None, 0);
    t.events[i].insert("claim_id".into(), json!(CLAIM_B));
    t.events[i].insert("resident_claim_id".into(), json!(CLAIM_B));
    let r = run(&t);
    assert_eq!(
        missing(&r, Some(CLAIM_A), EXPIRY),
        ["claim_scoped_expiry_boundary", "ordered_expiry_lifecycle"]
    );
    assert!(!r.claim(Some(CLAIM_B)).unwrap().passes(EXPIRY));
}

#[test]
fn a_boundary_before_the_accepted_duration_ends_or_for_another_duration_is_not_the_claims() {
    for (field, value) in [
        ("expired_at_step", json!(6)),
        ("duration_steps", json!(5)),
        ("accepted_at_step", json!(0)),
    ] {
        let mut t = expired();
        t.set("resident_claim_expired", 0, field, value);
        assert_exactly(&t, Some(CLAIM_A), EXPIRY, &["claim_scoped_expiry_boundary"]);
    }
}

#[test]
fn expiry_without_protection_before_the_boundary_is_ttl_metadata() {
    let mut t = expired();
    t.drop_event("scheduler_conflict_action", 0);
    t.renumber();
    assert_exactly(
        &t,
        Some(CLAIM_A),
        EXPIRY,
        &[
            "protection_held_before_boundary",
            "ordered_expiry_lifecycle",
        ],
    );
}

#[test]
fn an_expiring_claim_needs_a_duration() {
    let mut t = expired();
    let i = t.find("resident_claim_accepted", None, 0);
    t.events[i].remove("duration_steps");
    assert_missing(&t, Some(CLAIM_A), EXPIRY, "claim_accepted_with_duration");
}

#[test]
fn the_positive_traces_do_not_pass_by_accident() {
    // Guard on the fixtures themselves: dropping any one event of a positive trace fails
    // its gate (every event is needed, none is decoration), except the expiring claim's
    // pin and victim exclusion, which show how the patch protects it but which the
    // expiry gate does not require (its conflict action does).
    for (t, gate) in [
        (protected(), PROTECTION),
        (demoted(), DEMOTION),
        (expired(), EXPIRY),
    ] {
        for i in 0..t.events.len() {
            let name = t.events[i]
                .get("event")
                .and_then(Value::as_str)
                .unwrap_or("");
            if gate == EXPIRY
                && ["resident_claim_protected", "allocator_victim_exclusion"].contains(&name)
            {
                continue;
            }
            let mut cut = t.clone();
            cut.events.remove(i);
            cut.renumber();
            assert!(!passes(&cut, gate), "{gate} passes without event {i}");
        }
    }
}

#[test]
fn a_numbered_request_id_is_read_past_and_names_no_request() {
    // Leniency: other gates' lines stay well formed when a runtime numbers its requests.
    let mut numbered = success();
    for e in &mut numbered.events {
        e.insert("request_id".into(), json!(7));
    }
    let r = run(&numbered);
    assert!(r.is_valid(), "{:?}", r.diagnostics);
    assert!(r.claim(Some(CLAIM_A)).unwrap().passes(OBSERVATION));
    // Fail closed: a materialization without a request that is a string names no request.
    let mut t = protected();
    t.set("resident_claim_materialized", 0, "request_id", json!(7));
    assert_exactly(
        &t,
        Some(CLAIM_A),
        PROTECTION,
        &["claim_materialized_with_footprint"],
    );
}
