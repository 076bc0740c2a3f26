//! Trace-shaped mutation controls: a synthetic trace that passes the real gate
//! ([`crate::synthetic`]) is mutated in one attribution, order or source-shape
//! detail and handed to `kvlower_trace::evaluate_reader`; the mutant fails
//! closed when the trace is still well formed (so the rejection is not a
//! parse accident) and no row of it passes the gate under test.
//!
//! These back the positive `offloadable` backend_patch row: its restoration
//! evidence is exactly what the connector and reference gates witness.

use kvlower_trace::{TraceGate, TraceReport, evaluate_reader};
use serde_json::{Value, json};

use crate::mutation::{MutantOutcome, MutationKind};
use crate::synthetic::{
    CLAIM, OTHER_CLAIM, Trace, connector_failure, connector_observation, generic_counter,
    reference_lifecycle,
};

/// Evaluates a trace with the real gate.
pub fn evaluate(name: &str, trace: &Trace) -> TraceReport {
    evaluate_reader(name, trace.jsonl().as_bytes())
}

/// Whether any row of the report passes `gate`.
pub fn any_passes(report: &TraceReport, gate: TraceGate) -> bool {
    report.claims.iter().any(|c| c.passes(gate))
}

/// The baseline a kind mutates, and the gate it must pass.
struct Baseline {
    name: &'static str,
    trace: Trace,
    gate: TraceGate,
}

fn failure_baseline() -> Baseline {
    Baseline {
        name: "synthetic connector failure trace",
        trace: connector_failure(CLAIM),
        gate: TraceGate::ConnectorFailureOutcome,
    }
}

fn observation_baseline() -> Baseline {
    Baseline {
        name: "synthetic connector observation trace",
        trace: connector_observation(CLAIM),
        gate: TraceGate::ConnectorObservation,
    }
}

fn reference_baseline() -> Baseline {
    Baseline {
        name: "synthetic reference lifecycle trace",
        trace: reference_lifecycle(CLAIM),
        gate: TraceGate::ReferenceLifecycle,
    }
}

/// One trace mutant: a description and the edit.
type Edit = (&'static str, Box<dyn Fn(&mut Trace)>);

fn set_at(name: &'static str, nth: usize, fields: Value) -> Box<dyn Fn(&mut Trace)> {
    Box::new(move |t: &mut Trace| {
        if let (Some(i), Value::Object(m)) = (t.find(name, nth), &fields) {
            for (k, v) in m {
                t.set(i, k, v.clone());
            }
        }
    })
}

fn replace_with_counter(
    name: &'static str,
    nth: usize,
    counter: &'static str,
    field: &'static str,
) -> Box<dyn Fn(&mut Trace)> {
    Box::new(move |t: &mut Trace| {
        if let Some(i) = t.find(name, nth)
            && let Some(e) = t.events.get_mut(i)
        {
            *e = generic_counter(counter, field);
        }
    })
}

fn move_event(
    name: &'static str,
    nth: usize,
    after: &'static str,
    after_nth: usize,
) -> Box<dyn Fn(&mut Trace)> {
    Box::new(move |t: &mut Trace| {
        if let Some(i) = t.find(name, nth) {
            let e = t.events.remove(i);
            let at = t.find(after, after_nth).map_or(t.events.len(), |j| j + 1);
            t.events.insert(at, e);
        }
    })
}

fn edits(kind: MutationKind) -> Vec<(Baseline, Vec<Edit>)> {
    let other = json!(OTHER_CLAIM);
    match kind {
        MutationKind::WrongClaimIdInFailureAttribution => vec![(
            failure_baseline(),
            vec![
                (
                    "CPU→GPU failure injection matched another claim",
                    set_at(
                        "offload_worker_transfer_finished",
                        1,
                        json!({"failure_target_claim_id": other, "failure_matched_claim_id": other}),
                    ),
                ),
                (
                    "scheduler restoration_failed names another claim",
                    set_at(
                        "scheduler_resident_claim_restoration_failed",
                        0,
                        json!({"outcome_claim_id": other, "blocking_claim_ids": [other]}),
                    ),
                ),
                (
                    "scheduler refusal names another claim",
                    set_at(
                        "scheduler_active_request_refused",
                        0,
                        json!({"outcome_claim_id": other, "blocking_claim_ids": [other]}),
                    ),
                ),
                (
                    "scheduler refusal's blocking_claim_ids name another claim",
                    set_at(
                        "scheduler_active_request_refused",
                        0,
                        json!({"blocking_claim_ids": [other]}),
                    ),
                ),
                (
                    "resident_claim_restoration_failed names another claim",
                    set_at(
                        "resident_claim_restoration_failed",
                        0,
                        json!({"outcome_claim_id": other, "blocking_claim_ids": [other]}),
                    ),
                ),
                (
                    "active_request_refused names another claim",
                    set_at(
                        "active_request_refused",
                        0,
                        json!({"outcome_claim_id": other, "blocking_claim_ids": [other]}),
                    ),
                ),
            ],
        )],
        MutationKind::PostHocClaimNaming => vec![(
            reference_baseline(),
            vec![
                (
                    "claim registered `post_hoc`",
                    set_at(
                        "resident_claim_accepted",
                        0,
                        json!({"claim_registration": "post_hoc"}),
                    ),
                ),
                (
                    "claim accepted only after its lifecycle (named after the fact)",
                    move_event("resident_claim_accepted", 0, "active_request_refused", 0),
                ),
            ],
        )],
        MutationKind::RestoreAfterReuseOrdering => vec![(
            reference_baseline(),
            vec![
                (
                    "predicate-satisfying reuse before the restore (swapped)",
                    move_event(
                        "resident_claim_restored",
                        0,
                        "resident_claim_reuse_after_restore",
                        0,
                    ),
                ),
                (
                    "reuse right after the offload, before restore_required and restore",
                    move_event(
                        "resident_claim_reuse_after_restore",
                        0,
                        "resident_claim_offloaded",
                        0,
                    ),
                ),
            ],
        )],
        MutationKind::FallbackRecompute => vec![
            (
                failure_baseline(),
                vec![
                    (
                        "a CPU→GPU retry and a fallback-recompute restore after the failure",
                        Box::new(|t: &mut Trace| {
                            let success = connector_observation(CLAIM);
                            if let Some(tail) = success.events.get(13..15) {
                                t.events.extend(tail.iter().cloned());
                            }
                            if let Some(i) = t.find("resident_claim_restored", 0) {
                                t.set(i, "restoration_source", json!("fallback_recompute"));
                                t.set(i, "restored_from_offload_tier", json!(false));
                            }
                        }),
                    ),
                    (
                        "scheduler failure policy `recompute`",
                        Box::new(|t: &mut Trace| {
                            for name in [
                                "scheduler_resident_claim_restoration_failed",
                                "scheduler_active_request_refused",
                            ] {
                                if let Some(i) = t.find(name, 0) {
                                    t.set(i, "scheduler_failure_policy", json!("recompute"));
                                }
                            }
                        }),
                    ),
                    (
                        "outcome counts a fallback recompute as satisfaction",
                        set_at(
                            "resident_claim_restoration_failed",
                            0,
                            json!({
                                "claim_scoped_outcome_type": "fallback_recompute_without_claim_satisfaction",
                                "fallback_recompute_counted_as_satisfaction": true,
                            }),
                        ),
                    ),
                ],
            ),
            (
                observation_baseline(),
                vec![(
                    "the restore is a fallback recompute, not a load from the offload tier",
                    set_at(
                        "resident_claim_restored",
                        0,
                        json!({"restoration_source": "fallback_recompute", "restored_from_offload_tier": false}),
                    ),
                )],
            ),
        ],
        MutationKind::GenericCounters => vec![(
            failure_baseline(),
            vec![
                (
                    "the controlled CPU→GPU failure replaced by a generic transfer-failure counter",
                    replace_with_counter(
                        "offload_worker_transfer_finished",
                        1,
                        "generic_kv_transfer_failed_counter",
                        "failure_count",
                    ),
                ),
                (
                    "scheduler restoration_failed replaced by a generic request-error counter",
                    replace_with_counter(
                        "scheduler_resident_claim_restoration_failed",
                        0,
                        "generic_request_error_counter",
                        "request_failures",
                    ),
                ),
                (
                    "scheduler refusal replaced by a generic request-error counter",
                    replace_with_counter(
                        "scheduler_active_request_refused",
                        0,
                        "generic_request_error_counter",
                        "request_failures",
                    ),
                ),
                (
                    "load job failure replaced by a generic transfer-failure counter",
                    replace_with_counter(
                        "offload_load_job_failed",
                        0,
                        "generic_kv_transfer_failed_counter",
                        "failure_count",
                    ),
                ),
                (
                    "resident_claim_restoration_failed replaced by a generic request-error counter",
                    replace_with_counter(
                        "resident_claim_restoration_failed",
                        0,
                        "generic_request_error_counter",
                        "request_failures",
                    ),
                ),
                (
                    "active_request_refused replaced by a generic request-error counter",
                    replace_with_counter(
                        "active_request_refused",
                        0,
                        "generic_request_error_counter",
                        "request_failures",
                    ),
                ),
                (
                    "the whole failure tail replaced by generic onboard/failure counters",
                    Box::new(|t: &mut Trace| {
                        if let Some(i) = t.find("offload_worker_transfer_finished", 1) {
                            t.events.truncate(i);
                        }
                        t.events.extend([
                            generic_counter(
                                "generic_kv_blocks_onboarded",
                                "generic_onboard_blocks",
                            ),
                            generic_counter("generic_kv_transfer_failed_counter", "failure_count"),
                            generic_counter("generic_request_error_counter", "request_failures"),
                        ]);
                    }),
                ),
                (
                    "generic counters only",
                    Box::new(|t: &mut Trace| {
                        t.events = vec![
                            generic_counter(
                                "generic_kv_blocks_offloaded",
                                "generic_offload_blocks",
                            ),
                            generic_counter(
                                "generic_kv_blocks_onboarded",
                                "generic_onboard_blocks",
                            ),
                            generic_counter("generic_kv_transfer_failed_counter", "failure_count"),
                            generic_counter("generic_request_error_counter", "request_failures"),
                        ];
                    }),
                ),
            ],
        )],
        // Descriptor-shaped kinds: `crate::mutation` mutates the descriptor, not a trace.
        MutationKind::AnchorDeleted
        | MutationKind::AnchorEmptied
        | MutationKind::SupportedToPartial
        | MutationKind::SupportedToUnknown
        | MutationKind::SupportedToMissing
        | MutationKind::PressureAtomsWithoutAnchors
        | MutationKind::AdapterScopeDocsOnly
        | MutationKind::AdapterScopeSourceInspection
        | MutationKind::TelemetryJoinPreconditionRemoved
        | MutationKind::RoutingOnlyEvidence
        | MutationKind::StorageOnlyOffloadEvidence => Vec::new(),
    }
}

/// The gate outcomes of every trace mutant of `kind`, as `(target, outcome)`.
/// A baseline that does not pass its own gate is reported as a failing outcome:
/// mutating an already-failing trace would prove nothing.
pub fn outcomes(kind: MutationKind) -> Vec<(String, MutantOutcome)> {
    let mut out = Vec::new();
    for (baseline, edits) in edits(kind) {
        let target = format!("{} ({})", baseline.name, baseline.gate);
        let base = evaluate(baseline.name, &baseline.trace);
        if !(base.is_valid() && any_passes(&base, baseline.gate)) {
            out.push((
                target.clone(),
                MutantOutcome {
                    target: target.clone(),
                    mutation: "baseline (unmutated)".into(),
                    result: format!("baseline does not pass {}", baseline.gate),
                    failed_closed: false,
                },
            ));
            continue;
        }
        for (what, edit) in edits {
            let mut t = baseline.trace.clone();
            edit(&mut t);
            let unchanged = t == baseline.trace;
            let report = evaluate(baseline.name, &t);
            let passes = any_passes(&report, baseline.gate);
            let (result, failed_closed) = if unchanged {
                ("the edit changed nothing".to_string(), false)
            } else if !report.is_valid() {
                (
                    "trace became malformed (rejection proves nothing)".to_string(),
                    false,
                )
            } else if passes {
                (format!("{} still passes", baseline.gate), false)
            } else {
                (rejection(&report, baseline.gate), true)
            };
            out.push((
                target.clone(),
                MutantOutcome {
                    target: target.clone(),
                    mutation: what.to_string(),
                    result,
                    failed_closed,
                },
            ));
        }
    }
    out
}

/// "rejected by <gate>: missing …; controls …" for the claim rows of a report.
fn rejection(report: &TraceReport, gate: TraceGate) -> String {
    let mut missing: Vec<&str> = Vec::new();
    let mut controls: Vec<&str> = Vec::new();
    for c in &report.claims {
        if let Some(g) = c.gates.get(&gate) {
            missing.extend(g.missing_names());
        }
        controls.extend(c.controls_rejected.iter().map(|c| c.as_str()));
    }
    missing.sort_unstable();
    missing.dedup();
    controls.sort_unstable();
    controls.dedup();
    let mut s = format!("rejected by {gate}: missing {}", missing.join(", "));
    if !controls.is_empty() {
        s.push_str(&format!("; controls {}", controls.join(", ")));
    }
    s
}
