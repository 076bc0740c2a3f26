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

/// One trace mutant: what it does (its line in the results) and how.
struct Edit {
    what: &'static str,
    op: Op,
}

/// An edit of a passing trace, as data where it can be.
enum Op {
    /// Sets `fields` on the `nth` (0-based) event named `event`.
    Set {
        event: &'static str,
        nth: usize,
        fields: Value,
    },
    /// Replaces the `nth` event named `event` by a generic `counter` carrying `field`.
    Counter {
        event: &'static str,
        nth: usize,
        counter: &'static str,
        field: &'static str,
    },
    /// Moves the `nth` event named `event` right after the `after_nth` one named
    /// `after` (to the end when there is none).
    Move {
        event: &'static str,
        nth: usize,
        after: &'static str,
        after_nth: usize,
    },
    /// An edit no row above describes.
    Code(fn(&mut Trace)),
}

impl Op {
    fn apply(&self, t: &mut Trace) {
        match self {
            Op::Set { event, nth, fields } => {
                if let (Some(i), Value::Object(m)) = (t.find(event, *nth), fields) {
                    for (k, v) in m {
                        t.set(i, k, v.clone());
                    }
                }
            }
            Op::Counter {
                event,
                nth,
                counter,
                field,
            } => {
                if let Some(i) = t.find(event, *nth)
                    && let Some(e) = t.events.get_mut(i)
                {
                    *e = generic_counter(counter, field);
                }
            }
            Op::Move {
                event,
                nth,
                after,
                after_nth,
            } => {
                if let Some(i) = t.find(event, *nth) {
                    let e = t.events.remove(i);
                    let at = t.find(after, *after_nth).map_or(t.events.len(), |j| j + 1);
                    t.events.insert(at, e);
                }
            }
            Op::Code(edit) => edit(t),
        }
    }
}

fn set(what: &'static str, event: &'static str, nth: usize, fields: Value) -> Edit {
    Edit {
        what,
        op: Op::Set { event, nth, fields },
    }
}

fn move_after(what: &'static str, event: &'static str, after: &'static str) -> Edit {
    Edit {
        what,
        op: Op::Move {
            event,
            nth: 0,
            after,
            after_nth: 0,
        },
    }
}

/// The failure events a control re-attributes or replaces: (event, which occurrence).
/// The second `offload_worker_transfer_finished` is the controlled CPU→GPU failure.
const TRANSFER_FAILURE: (&str, usize) = ("offload_worker_transfer_finished", 1);

/// The trace mutants of `kind`, each with the passing baseline it edits.
fn edits(kind: MutationKind) -> Vec<(Baseline, Vec<Edit>)> {
    match kind {
        MutationKind::WrongClaimIdInFailureAttribution => {
            vec![(failure_baseline(), wrong_claim_edits())]
        }
        MutationKind::PostHocClaimNaming => vec![(
            reference_baseline(),
            vec![
                set(
                    "claim registered `post_hoc`",
                    "resident_claim_accepted",
                    0,
                    json!({"claim_registration": "post_hoc"}),
                ),
                move_after(
                    "claim accepted only after its lifecycle (named after the fact)",
                    "resident_claim_accepted",
                    "active_request_refused",
                ),
            ],
        )],
        MutationKind::RestoreAfterReuseOrdering => vec![(
            reference_baseline(),
            vec![
                move_after(
                    "predicate-satisfying reuse before the restore (swapped)",
                    "resident_claim_restored",
                    "resident_claim_reuse_after_restore",
                ),
                move_after(
                    "reuse right after the offload, before restore_required and restore",
                    "resident_claim_reuse_after_restore",
                    "resident_claim_offloaded",
                ),
            ],
        )],
        MutationKind::FallbackRecompute => fallback_edits(),
        MutationKind::GenericCounters => vec![(failure_baseline(), generic_counter_edits())],
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

/// Failure evidence re-attributed to another claim, one event at a time.
fn wrong_claim_edits() -> Vec<Edit> {
    let other = json!(OTHER_CLAIM);
    let names_other = json!({"outcome_claim_id": other, "blocking_claim_ids": [other]});
    let (transfer, nth) = TRANSFER_FAILURE;
    vec![
        set(
            "CPU→GPU failure injection matched another claim",
            transfer,
            nth,
            json!({"failure_target_claim_id": other, "failure_matched_claim_id": other}),
        ),
        set(
            "scheduler restoration_failed names another claim",
            "scheduler_resident_claim_restoration_failed",
            0,
            names_other.clone(),
        ),
        set(
            "scheduler refusal names another claim",
            "scheduler_active_request_refused",
            0,
            names_other.clone(),
        ),
        set(
            "scheduler refusal's blocking_claim_ids name another claim",
            "scheduler_active_request_refused",
            0,
            json!({"blocking_claim_ids": [other]}),
        ),
        set(
            "resident_claim_restoration_failed names another claim",
            "resident_claim_restoration_failed",
            0,
            names_other.clone(),
        ),
        set(
            "active_request_refused names another claim",
            "active_request_refused",
            0,
            names_other,
        ),
    ]
}

/// A fallback recompute passed off as a restore, on both connector baselines.
fn fallback_edits() -> Vec<(Baseline, Vec<Edit>)> {
    vec![
        (
            failure_baseline(),
            vec![
                Edit {
                    what: "a CPU→GPU retry and a fallback-recompute restore after the failure",
                    op: Op::Code(|t| {
                        let success = connector_observation(CLAIM);
                        if let Some(tail) = success.events.get(13..15) {
                            t.events.extend(tail.iter().cloned());
                        }
                        if let Some(i) = t.find("resident_claim_restored", 0) {
                            t.set(i, "restoration_source", json!("fallback_recompute"));
                            t.set(i, "restored_from_offload_tier", json!(false));
                        }
                    }),
                },
                Edit {
                    what: "scheduler failure policy `recompute`",
                    op: Op::Code(|t| {
                        for name in [
                            "scheduler_resident_claim_restoration_failed",
                            "scheduler_active_request_refused",
                        ] {
                            if let Some(i) = t.find(name, 0) {
                                t.set(i, "scheduler_failure_policy", json!("recompute"));
                            }
                        }
                    }),
                },
                set(
                    "outcome counts a fallback recompute as satisfaction",
                    "resident_claim_restoration_failed",
                    0,
                    json!({
                        "claim_scoped_outcome_type": "fallback_recompute_without_claim_satisfaction",
                        "fallback_recompute_counted_as_satisfaction": true,
                    }),
                ),
            ],
        ),
        (
            observation_baseline(),
            vec![set(
                "the restore is a fallback recompute, not a load from the offload tier",
                "resident_claim_restored",
                0,
                json!({"restoration_source": "fallback_recompute", "restored_from_offload_tier": false}),
            )],
        ),
    ]
}

/// Each claim-scoped failure event replaced by the generic counter a runtime
/// without claim scoping would emit: (what, event, occurrence, counter, field).
const GENERIC_REPLACEMENTS: [(&str, &str, usize, &str, &str); 6] = [
    (
        "the controlled CPU→GPU failure replaced by a generic transfer-failure counter",
        TRANSFER_FAILURE.0,
        TRANSFER_FAILURE.1,
        "generic_kv_transfer_failed_counter",
        "failure_count",
    ),
    (
        "scheduler restoration_failed replaced by a generic request-error counter",
        "scheduler_resident_claim_restoration_failed",
        0,
        "generic_request_error_counter",
        "request_failures",
    ),
    (
        "scheduler refusal replaced by a generic request-error counter",
        "scheduler_active_request_refused",
        0,
        "generic_request_error_counter",
        "request_failures",
    ),
    (
        "load job failure replaced by a generic transfer-failure counter",
        "offload_load_job_failed",
        0,
        "generic_kv_transfer_failed_counter",
        "failure_count",
    ),
    (
        "resident_claim_restoration_failed replaced by a generic request-error counter",
        "resident_claim_restoration_failed",
        0,
        "generic_request_error_counter",
        "request_failures",
    ),
    (
        "active_request_refused replaced by a generic request-error counter",
        "active_request_refused",
        0,
        "generic_request_error_counter",
        "request_failures",
    ),
];

/// [`GENERIC_REPLACEMENTS`], then the failure tail and the whole trace as counters.
fn generic_counter_edits() -> Vec<Edit> {
    let mut edits: Vec<Edit> = GENERIC_REPLACEMENTS
        .iter()
        .map(|&(what, event, nth, counter, field)| Edit {
            what,
            op: Op::Counter {
                event,
                nth,
                counter,
                field,
            },
        })
        .collect();
    edits.push(Edit {
        what: "the whole failure tail replaced by generic onboard/failure counters",
        op: Op::Code(|t| {
            let (transfer, nth) = TRANSFER_FAILURE;
            if let Some(i) = t.find(transfer, nth) {
                t.events.truncate(i);
            }
            t.events.extend([
                generic_counter("generic_kv_blocks_onboarded", "generic_onboard_blocks"),
                generic_counter("generic_kv_transfer_failed_counter", "failure_count"),
                generic_counter("generic_request_error_counter", "request_failures"),
            ]);
        }),
    });
    edits.push(Edit {
        what: "generic counters only",
        op: Op::Code(|t| {
            t.events = vec![
                generic_counter("generic_kv_blocks_offloaded", "generic_offload_blocks"),
                generic_counter("generic_kv_blocks_onboarded", "generic_onboard_blocks"),
                generic_counter("generic_kv_transfer_failed_counter", "failure_count"),
                generic_counter("generic_request_error_counter", "request_failures"),
            ];
        }),
    });
    edits
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
                    target: target.as_str().into(),
                    mutation: "baseline (unmutated)".into(),
                    result: format!("baseline does not pass {}", baseline.gate).into(),
                    failed_closed: false,
                },
            ));
            continue;
        }
        for Edit { what, op } in edits {
            let mut t = baseline.trace.clone();
            op.apply(&mut t);
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
                    target: target.as_str().into(),
                    mutation: what.to_string(),
                    result: result.into(),
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
        controls.extend(c.controls_rejected.iter().map(|c| c.name()));
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
