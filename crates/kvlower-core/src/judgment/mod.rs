//! The lowering judgment (paper §4; `docs/model.md`):
//!
//! ```text
//! Lower(d, a, E, m) iff for every o in O[m] there is e in d.native ∪ d.adapters[≤a] ∪ E
//!     with supports(e, o) ∧ anchored(e) ∧ depth_allowed(a, o)
//! ```
//!
//! [`judge`] returns a [`Judgment`] that carries its reasons: for every
//! obligation the evidence that satisfied it or, for each candidate, every
//! reason it did not count; the atoms, signals and proposals that decided the
//! label. Nothing here can raise a label from missing or doubtful input: every
//! defect only removes a candidate.

use serde::Serialize;

use crate::anchor_form::AnchorDefect;
use crate::anchoring::{AnchorUse, Grade, anchor_counts, rerun};
use crate::catalog::Catalog;
use crate::descriptor::{Adapter, Descriptor, EvidenceItem};
use crate::environment::Environment;
use crate::vocab::{
    Ambiguity, Atom, Depth, Label, Mode, Obligation, Precondition, Signal, Status, Subtype,
};

mod anchored;
mod defeats;
mod findings;
mod inert;

pub use anchored::Anchored;
use defeats::{Contradictions, ListId, adapter_defeats, item_defeats};
pub use findings::*;
pub use inert::{Inert, InertEvidence, inert_evidence};

/// The row depths a descriptor is judged at: `none`, each represented adapter
/// depth, and each depth a proposal names (so a forbidden proposal is judged
/// at its depth even when no adapter sits there).
pub fn row_depths(descriptor: &Descriptor) -> Vec<Depth> {
    let mut depths: Vec<Depth> = std::iter::once(Depth::None)
        .chain(descriptor.adapters.iter().map(|a| a.depth))
        .chain(descriptor.proposals.iter().map(|p| p.depth))
        .collect();
    depths.sort();
    depths.dedup();
    depths
}

/// Judges one row. Pure and total: every input gives a judgment.
pub fn judge(
    catalog: &Catalog,
    descriptor: &Descriptor,
    mode: Mode,
    depth: Depth,
    env: &dyn Environment,
) -> Judgment {
    judge_anchored(
        catalog,
        &Anchored::new(catalog, descriptor, env),
        mode,
        depth,
    )
}

/// The defects of an anchor [`Anchored`] has no judgment for (never the case:
/// it judges every anchor of its descriptor); fail-closed, it does not count.
const NOT_JUDGED: &[AnchorDefect] = &[AnchorDefect::NoKind];

/// [`judge`] with the descriptor's anchors already judged: pure, no environment.
pub fn judge_anchored(
    catalog: &Catalog,
    anchored: &Anchored<'_>,
    mode: Mode,
    depth: Depth,
) -> Judgment {
    let descriptor = anchored.descriptor;
    let anchored_atoms: Vec<Atom> = descriptor
        .atoms
        .iter()
        .enumerate()
        .filter(|(i, _)| anchored.atom_defects(*i).is_empty())
        .map(|(_, a)| a.atom)
        .collect();
    let contradictions = Contradictions::of(descriptor);
    let obligations: Vec<ObligationFinding> = catalog
        .bundle(mode)
        .iter()
        .map(|&o| {
            judge_obligation(
                catalog,
                anchored,
                o,
                mode,
                depth,
                &anchored_atoms,
                &contradictions,
            )
        })
        .collect();
    let atoms: Vec<AtomFinding> = catalog
        .mode(mode)
        .required_atoms
        .iter()
        .map(|&atom| judge_atom(anchored, atom))
        .collect();
    let mut signals: Vec<Signal> = descriptor
        .signals
        .iter()
        .enumerate()
        .filter(|(_, s)| catalog.signal_suggests(s.signal, mode))
        .filter(|(i, _)| anchored.signal_counts(*i))
        .map(|(_, s)| s.signal)
        .collect();
    signals.sort();
    signals.dedup();
    let proposals = proposals_for(catalog, descriptor, mode, depth);

    let lower = lower_of(&obligations, &atoms);
    let critical = &catalog.mode(mode).enforcement_critical;
    let missing_critical: Vec<Obligation> = obligations
        .iter()
        .filter(|f| f.satisfied_by.is_none() && critical.contains(&f.obligation))
        .map(|f| f.obligation)
        .collect();
    let proposed = Proposed::of(&proposals);
    let (label, reason) = decide(lower, proposed, &missing_critical, &signals);
    let subtype =
        (label == Label::SoundWithAdapter).then(|| subtype_of(catalog, mode, &obligations));
    let grade = label
        .is_positive()
        .then(|| grade_of(anchored, &obligations, &atoms));

    Judgment {
        mode,
        depth,
        label,
        subtype,
        grade,
        reason,
        obligations,
        atoms,
        signals,
        proposals,
    }
}

/// Whether Lower(d, a, E, m) holds for a row, and on what evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lower {
    /// Every obligation and required atom is supplied, each obligation by native evidence.
    HoldsNatively,
    /// Every obligation and required atom is supplied, some obligation by an adapter or patch.
    HoldsWithAdapter,
    /// Some obligation or required atom is not supplied.
    Fails,
}

fn lower_of(obligations: &[ObligationFinding], atoms: &[AtomFinding]) -> Lower {
    let all_satisfied = obligations.iter().all(|f| f.satisfied_by.is_some());
    let atoms_ok = atoms.iter().all(|f| f.anchored_by.is_some());
    let all_native = obligations.iter().all(|f| {
        f.satisfied_by
            .as_ref()
            .is_some_and(|e| e.depth == EvidenceDepth::Native)
    });
    match (all_satisfied && atoms_ok, all_native) {
        (true, true) => Lower::HoldsNatively,
        (true, false) => Lower::HoldsWithAdapter,
        (false, true | false) => Lower::Fails,
    }
}

/// What the row's applicable proposals amount to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proposed {
    /// Nothing is offered as the mode at this row.
    Nothing,
    /// Something is offered as the mode and no offer is a forbidden lowering.
    Allowed,
    /// This (the first forbidden offer) is a forbidden lowering of the mode.
    Forbidden(Offered),
}

impl Proposed {
    fn of(proposals: &[ProposalFinding]) -> Proposed {
        match (
            proposals.iter().find(|p| p.forbidden_because.is_some()),
            proposals,
        ) {
            (Some(p), _) => Proposed::Forbidden(p.offered),
            (None, []) => Proposed::Nothing,
            (None, [_, ..]) => Proposed::Allowed,
        }
    }
}

/// The label truth table (paper §4, Table 3; `docs/model.md`, "Labels").
///
/// Every input is in the matched tuple and every arm lists every input, so
/// the arms are disjoint: none relies on an earlier one having failed, and
/// their order does not matter. In the slice positions `[]` is "none" and
/// `[_, ..]` is "at least one". Arms marked *fail-closed* are the ways a row
/// that Lower does not hold for ends: never positive, and `rejected` only when
/// something was offered as the mode.
pub fn decide(
    lower: Lower,
    proposed: Proposed,
    missing_critical: &[Obligation],
    signals: &[Signal],
) -> (Label, LabelReason) {
    use Proposed::{Allowed, Forbidden, Nothing};
    match (lower, proposed, missing_critical, signals) {
        // Native evidence alone supplies every obligation and atom; what was
        // offered or suggested cannot take a supplied obligation away.
        (Lower::HoldsNatively, Nothing | Allowed | Forbidden(_), [] | [_, ..], [] | [_, ..]) => {
            (Label::NativeSound, LabelReason::LowerHoldsNatively)
        }
        // Adapter or patch evidence, each at an allowed depth, completes Lower.
        (Lower::HoldsWithAdapter, Nothing | Allowed | Forbidden(_), [] | [_, ..], [] | [_, ..]) => {
            (Label::SoundWithAdapter, LabelReason::LowerHoldsWithAdapter)
        }
        // Fail-closed: something was offered as this mode that must never be.
        (Lower::Fails, Forbidden(offered), [] | [_, ..], [] | [_, ..]) => {
            (Label::Rejected, LabelReason::ForbiddenLowering { offered })
        }
        // Fail-closed: an offered mapping lacks the mode's enforcement.
        (Lower::Fails, Allowed, missing @ [_, ..], [] | [_, ..]) => (
            Label::Rejected,
            LabelReason::ProposalLacksEnforcement {
                missing: missing.to_vec(),
            },
        ),
        // Fail-closed: related primitives make the row plausible, nothing more
        // (an offer that lacks no enforcement is not a misrepresentation).
        (Lower::Fails, Allowed, [], signals @ [_, ..])
        | (Lower::Fails, Nothing, [] | [_, ..], signals @ [_, ..]) => (
            Label::Approximate,
            LabelReason::SignalsWithoutObligations {
                signals: signals.to_vec(),
            },
        ),
        // Fail-closed: nothing related was exercised; no classification claim.
        (Lower::Fails, Allowed, [], []) | (Lower::Fails, Nothing, [] | [_, ..], []) => {
            (Label::Unknown, LabelReason::Inconclusive)
        }
    }
}

/// The deepest kind of evidence a positive adapter row rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Some obligation is supplied by a `backend_patch` adapter.
    Patch,
    /// Some obligation is supplied by an adapter other than a patch or a telemetry join.
    Hook,
    /// Every obligation is supplied natively or by a telemetry join.
    Telemetry,
}

/// What a positive adapter row establishes, from the evidence that made it
/// (paper §4, Table 3; `docs/model.md`, "Subtypes").
fn subtype_of(catalog: &Catalog, mode: Mode, obligations: &[ObligationFinding]) -> Subtype {
    let depths: Vec<EvidenceDepth> = obligations
        .iter()
        .filter_map(|f| f.satisfied_by.as_ref().map(|e| e.depth))
        .collect();
    let needs_pressure_atoms = !catalog.mode(mode).required_atoms.is_empty();
    subtype_for(&depths, needs_pressure_atoms)
}

/// [`subtype_of`] on the depths that supplied the obligations.
fn subtype_for(depths: &[EvidenceDepth], needs_pressure_atoms: bool) -> Subtype {
    let reach = if depths.contains(&EvidenceDepth::Adapter(Depth::BackendPatch)) {
        Reach::Patch
    } else if depths.iter().all(|d| {
        matches!(
            d,
            EvidenceDepth::Native | EvidenceDepth::Adapter(Depth::TelemetryJoin)
        )
    }) {
        Reach::Telemetry
    } else {
        Reach::Hook
    };
    match (reach, needs_pressure_atoms) {
        // A modified backend path supplies an obligation: whatever else the row
        // uses, what it establishes is the patch on the exercised path.
        (Reach::Patch, true | false) => Subtype::BackendPatchWitness,
        // The mode needs observed pressure atoms (soft_priority): without a
        // patch, the row reconstructs policy behaviour in the tested
        // controlled-pressure regime only.
        (Reach::Hook | Reach::Telemetry, true) => Subtype::AdapterPolicyControlledPressure,
        // Only native evidence and a telemetry join: selected claim-scoped
        // observations, reconstructed outside the runtime.
        (Reach::Telemetry, false) => Subtype::AdapterObservational,
        // A represented hook (registry, storage, routing, scheduler,
        // allocator) supplies obligations outside the backend.
        (Reach::Hook, false) => Subtype::AdapterHookMechanism,
    }
}

/// A positive row is `verified` only when every anchor it rests on was re-run:
/// the satisfying items, the required atoms, and every precondition of each
/// adapter that supplied an obligation.
fn grade_of(
    anchored: &Anchored<'_>,
    obligations: &[ObligationFinding],
    atoms: &[AtomFinding],
) -> Grade {
    let items_rerun = obligations
        .iter()
        .all(|f| f.satisfied_by.as_ref().is_some_and(|e| e.rerun));
    let atoms_rerun = atoms
        .iter()
        .all(|f| f.anchored_by.as_ref().is_some_and(|e| e.rerun));
    let contributing: Vec<Depth> = obligations
        .iter()
        .filter_map(|f| match f.satisfied_by.as_ref()?.depth {
            EvidenceDepth::Adapter(d) => Some(d),
            EvidenceDepth::Native => None,
        })
        .collect();
    // Every precondition of each contributing adapter re-run (a depth without
    // rules fails closed: see `precondition_anchors`).
    let preconditions_rerun = anchored
        .descriptor
        .adapters
        .iter()
        .enumerate()
        .filter(|(_, a)| contributing.contains(&a.depth))
        .all(|(ai, _)| anchored.adapter(ai).is_some_and(|a| a.preconditions_rerun));
    if items_rerun && atoms_rerun && preconditions_rerun {
        Grade::Verified
    } else {
        Grade::Cited
    }
}

/// Rule 3: an atom counts only when anchored to a runtime trace.
fn atom_defects(
    catalog: &Catalog,
    atom: &crate::descriptor::AtomEvidence,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> Vec<AnchorDefect> {
    let mut defects = anchor_counts(
        catalog,
        &atom.anchor,
        AnchorUse::Atom { scope: atom.scope },
        subject,
        env,
    );
    if !atom.scope.is_runtime_observed() {
        // A docs or source fact is not an observation; say so as an order/scope defect.
        defects.push(AnchorDefect::TraceOrderNotPreserved);
    }
    defects
}

fn judge_atom(anchored: &Anchored<'_>, atom: Atom) -> AtomFinding {
    let descriptor = anchored.descriptor;
    let mut anchored_by = None;
    let mut rejected = Vec::new();
    for (i, a) in descriptor
        .atoms
        .iter()
        .enumerate()
        .filter(|(_, a)| a.atom == atom)
    {
        let r = EvidenceRef {
            depth: EvidenceDepth::Native,
            path: format!("atoms[{i}]"),
            anchor: a.anchor.target(),
            rerun: rerun(&a.anchor, AnchorUse::Atom { scope: a.scope }),
        };
        let defects = anchored.atom_defects(i);
        if defects.is_empty() && anchored_by.is_none() {
            anchored_by = Some(r);
        } else if !defects.is_empty() {
            rejected.push((r, defects.to_vec()));
        }
    }
    AtomFinding {
        atom,
        anchored_by,
        rejected,
    }
}

fn judge_obligation(
    catalog: &Catalog,
    anchored: &Anchored<'_>,
    obligation: Obligation,
    mode: Mode,
    row_depth: Depth,
    anchored_atoms: &[Atom],
    contradictions: &Contradictions,
) -> ObligationFinding {
    let descriptor = anchored.descriptor;
    let mut candidates: Vec<(EvidenceRef, Vec<Defeat>)> = Vec::new();
    for (i, item) in descriptor.native.iter().enumerate() {
        if item.obligation != obligation {
            continue;
        }
        let at = EvidenceDepth::Native;
        let r = evidence_ref(at, format!("native[{i}]"), item);
        let mut defeats = item_defeats(item, mode, anchored.native_defects(i));
        defeats.extend(contradictions.of_item(ListId::Native, item));
        candidates.push((r, defeats));
    }
    for (ai, adapter) in descriptor.adapters.iter().enumerate() {
        // Judged once per adapter by `Anchored`; fail-closed when absent (never).
        let unmet = anchored
            .adapter(ai)
            .map_or(Precondition::ALL, |a| a.unmet.as_slice());
        for (i, item) in adapter.evidence.iter().enumerate() {
            if item.obligation != obligation {
                continue;
            }
            let at = EvidenceDepth::Adapter(adapter.depth);
            let r = evidence_ref(at, format!("adapters[{ai}].evidence[{i}]"), item);
            let mut defeats = item_defeats(item, mode, anchored.adapter_item_defects(ai, i));
            defeats.extend(contradictions.of_item(ListId::Adapter(ai), item));
            defeats.extend(adapter_defeats(
                catalog,
                adapter,
                item,
                row_depth,
                anchored_atoms,
                unmet,
            ));
            candidates.push((r, defeats));
        }
    }
    // Shallowest winning candidate first: native, then up the ladder.
    candidates.sort();
    let mut satisfied_by = None;
    let mut also_satisfied_by = Vec::new();
    let mut rejected = Vec::new();
    for (r, mut defeats) in candidates {
        if defeats.is_empty() {
            if satisfied_by.is_none() {
                satisfied_by = Some(r);
            } else {
                also_satisfied_by.push(r);
            }
        } else {
            defeats.sort();
            defeats.dedup();
            rejected.push((r, defeats));
        }
    }
    ObligationFinding {
        obligation,
        satisfied_by,
        also_satisfied_by,
        rejected,
    }
}

fn evidence_ref(depth: EvidenceDepth, path: String, item: &EvidenceItem) -> EvidenceRef {
    EvidenceRef {
        depth,
        path,
        anchor: item.anchor.target(),
        rerun: rerun(&item.anchor, item_use(item, depth)),
    }
}

fn item_use(item: &EvidenceItem, depth: EvidenceDepth) -> AnchorUse {
    AnchorUse::Obligation {
        obligation: item.obligation,
        depth,
        scope: item.scope,
    }
}

/// The preconditions the catalog sets for the adapter's depth that no counting
/// anchor of the adapter meets (rule 5). A depth the catalog does not describe
/// sets none here; its items are defeated by `DepthCannotSupply`.
fn unmet_preconditions(
    catalog: &Catalog,
    adapter: &Adapter,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> Vec<Precondition> {
    let depth = adapter.depth;
    catalog.depth(depth).map_or_else(Vec::new, |spec| {
        spec.preconditions
            .iter()
            .filter(|p| {
                adapter.preconditions.get(p).is_none_or(|anchor| {
                    let use_ = AnchorUse::Precondition {
                        precondition: **p,
                        depth,
                    };
                    !anchor_counts(catalog, anchor, use_, subject, env).is_empty()
                })
            })
            .copied()
            .collect()
    })
}

/// Proposals that apply to this row: explicit ones at or below the row depth,
/// and any selected adapter that claims one of the mode's enforcement-critical
/// obligations (an adapter offering enforcement *is* a proposal of the mode).
fn proposals_for(
    catalog: &Catalog,
    descriptor: &Descriptor,
    mode: Mode,
    depth: Depth,
) -> Vec<ProposalFinding> {
    let mut found: Vec<ProposalFinding> = descriptor
        .proposals
        .iter()
        .enumerate()
        .filter(|(_, p)| p.mode == mode && p.depth <= depth)
        .map(|(i, p)| ProposalFinding {
            offered: Offered::Primitive {
                primitive: p.primitive,
            },
            path: format!("proposals[{i}]"),
            forbidden_because: catalog.forbidden(p.primitive, mode).map(|f| f.why.clone()),
        })
        .collect();
    let critical = &catalog.mode(mode).enforcement_critical;
    for (ai, adapter) in descriptor.adapters.iter().enumerate() {
        if adapter.depth > depth {
            continue;
        }
        if let Some((i, e)) = adapter
            .evidence
            .iter()
            .enumerate()
            .find(|(_, e)| e.status == Status::Supported && critical.contains(&e.obligation))
        {
            found.push(ProposalFinding {
                offered: Offered::AdapterEnforcement {
                    adapter_depth: adapter.depth,
                    obligation: e.obligation,
                },
                path: format!("adapters[{ai}].evidence[{i}]"),
                forbidden_because: None,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input of [`decide`]: each `Lower`, each kind of proposal (both
    /// kinds of forbidden offer), and none, one or two missing critical
    /// obligations and signals.
    fn every_input() -> Vec<(Lower, Proposed, Vec<Obligation>, Vec<Signal>)> {
        let lowers = [Lower::HoldsNatively, Lower::HoldsWithAdapter, Lower::Fails];
        let proposed = [
            Proposed::Nothing,
            Proposed::Allowed,
            Proposed::Forbidden(Offered::Primitive {
                primitive: Signal::ActiveNoEvict,
            }),
            Proposed::Forbidden(Offered::AdapterEnforcement {
                adapter_depth: Depth::SchedulerHook,
                obligation: Obligation::ExplicitConflictAction,
            }),
        ];
        let missing = [
            vec![],
            vec![Obligation::VictimExclusionBeforeViolation],
            vec![
                Obligation::ExplicitConflictAction,
                Obligation::BlockingClaimIds,
            ],
        ];
        let signals = [
            vec![],
            vec![Signal::ActiveNoEvict],
            vec![Signal::PriorityField, Signal::LeaseTtl],
        ];
        let mut inputs = Vec::new();
        for l in lowers {
            for p in proposed {
                for m in &missing {
                    for s in &signals {
                        inputs.push((l, p, m.clone(), s.clone()));
                    }
                }
            }
        }
        inputs
    }

    /// The truth table as it was first written: ordered arms, a guard and a
    /// fall-through. [`decide`] replaced it and must agree on every input.
    fn ordered_table(
        lower: Lower,
        proposed: Proposed,
        missing_critical: &[Obligation],
        signals: &[Signal],
    ) -> (Label, LabelReason) {
        let lower_native = lower == Lower::HoldsNatively;
        let holds = lower != Lower::Fails;
        let forbidden = match proposed {
            Proposed::Forbidden(o) => Some(o),
            Proposed::Nothing | Proposed::Allowed => None,
        };
        let no_proposals = proposed == Proposed::Nothing;
        match (lower_native, holds, forbidden, no_proposals) {
            (true, _, _, _) => (Label::NativeSound, LabelReason::LowerHoldsNatively),
            (false, true, _, _) => (Label::SoundWithAdapter, LabelReason::LowerHoldsWithAdapter),
            (false, false, Some(offered), _) => {
                (Label::Rejected, LabelReason::ForbiddenLowering { offered })
            }
            (false, false, None, false) if !missing_critical.is_empty() => (
                Label::Rejected,
                LabelReason::ProposalLacksEnforcement {
                    missing: missing_critical.to_vec(),
                },
            ),
            _ if !signals.is_empty() => (
                Label::Approximate,
                LabelReason::SignalsWithoutObligations {
                    signals: signals.to_vec(),
                },
            ),
            _ => (Label::Unknown, LabelReason::Inconclusive),
        }
    }

    #[test]
    fn the_label_decision_is_total_and_agrees_with_the_ordered_table() {
        let inputs = every_input();
        assert_eq!(inputs.len(), 3 * 4 * 3 * 3);
        for (lower, proposed, missing, signals) in inputs {
            let (label, reason) = decide(lower, proposed, &missing, &signals);
            let case = format!("{lower:?} {proposed:?} {missing:?} {signals:?}");
            assert_eq!(
                (label, reason.clone()),
                ordered_table(lower, proposed, &missing, &signals),
                "{case}"
            );
            // Fail-closed: positive exactly when Lower holds, native exactly
            // when it holds natively; rejected only for something offered;
            // approximate only on a signal.
            assert_eq!(label.is_positive(), lower != Lower::Fails, "{case}");
            assert_eq!(
                label == Label::NativeSound,
                lower == Lower::HoldsNatively,
                "{case}"
            );
            if label == Label::Rejected {
                assert_ne!(proposed, Proposed::Nothing, "{case}");
            }
            if label == Label::Approximate {
                assert!(!signals.is_empty(), "{case}");
            }
            let reason_label = match reason {
                LabelReason::LowerHoldsNatively => Label::NativeSound,
                LabelReason::LowerHoldsWithAdapter => Label::SoundWithAdapter,
                LabelReason::ForbiddenLowering { .. }
                | LabelReason::ProposalLacksEnforcement { .. } => Label::Rejected,
                LabelReason::SignalsWithoutObligations { .. } => Label::Approximate,
                LabelReason::Inconclusive => Label::Unknown,
            };
            assert_eq!(label, reason_label, "{case}");
        }
    }

    /// One sentence per reason, the same in every report: the matrix, `explain`
    /// and the audit's explanations all print this `Display`.
    #[test]
    fn each_label_reason_renders_one_sentence() {
        let primitive = Offered::Primitive {
            primitive: Signal::ActiveNoEvict,
        };
        let adapter = Offered::AdapterEnforcement {
            adapter_depth: Depth::SchedulerHook,
            obligation: Obligation::ExplicitConflictAction,
        };
        assert_eq!(primitive.to_string(), "`active_no_evict`");
        assert_eq!(
            adapter.to_string(),
            "the scheduler_hook adapter's `explicit_conflict_action`"
        );
        let cases = [
            (
                LabelReason::LowerHoldsNatively,
                "every obligation is supplied by anchored native evidence",
            ),
            (
                LabelReason::LowerHoldsWithAdapter,
                "every obligation is supplied by anchored evidence at an allowed adapter depth",
            ),
            (
                LabelReason::ForbiddenLowering { offered: primitive },
                "`active_no_evict` is offered as this mode, a forbidden lowering",
            ),
            (
                LabelReason::ForbiddenLowering { offered: adapter },
                "the scheduler_hook adapter's `explicit_conflict_action` is offered as this mode, \
                 a forbidden lowering",
            ),
            (
                LabelReason::ProposalLacksEnforcement {
                    missing: vec![
                        Obligation::ExplicitConflictAction,
                        Obligation::BlockingClaimIds,
                    ],
                },
                "a mapping is offered as this mode but lacks enforcement-critical \
                 explicit_conflict_action, blocking_claim_ids",
            ),
            (
                LabelReason::SignalsWithoutObligations {
                    signals: vec![Signal::PriorityField],
                },
                "signals priority_field make it plausible, but obligations are missing",
            ),
            (
                LabelReason::Inconclusive,
                "obligations are missing and no related signal was exercised",
            ),
        ];
        for (reason, sentence) in cases {
            assert_eq!(reason.to_string(), sentence);
        }
    }

    /// The subtype chain as it was first written (order-dependent branches).
    fn ordered_subtype(depths: &[EvidenceDepth], needs_pressure_atoms: bool) -> Subtype {
        if depths.contains(&EvidenceDepth::Adapter(Depth::BackendPatch)) {
            Subtype::BackendPatchWitness
        } else if needs_pressure_atoms {
            Subtype::AdapterPolicyControlledPressure
        } else if depths.iter().all(|d| {
            matches!(
                d,
                EvidenceDepth::Native | EvidenceDepth::Adapter(Depth::TelemetryJoin)
            )
        }) {
            Subtype::AdapterObservational
        } else {
            Subtype::AdapterHookMechanism
        }
    }

    #[test]
    fn the_subtype_agrees_with_the_ordered_chain_on_every_set_of_depths() {
        let all: Vec<EvidenceDepth> = std::iter::once(EvidenceDepth::Native)
            .chain(Depth::ALL.iter().map(|d| EvidenceDepth::Adapter(*d)))
            .collect();
        for set in 0u32..(1 << all.len()) {
            let depths: Vec<EvidenceDepth> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| set & (1 << i) != 0)
                .map(|(_, d)| *d)
                .collect();
            for atoms in [false, true] {
                assert_eq!(
                    subtype_for(&depths, atoms),
                    ordered_subtype(&depths, atoms),
                    "{depths:?} {atoms}"
                );
            }
        }
    }

    /// An empty bundle would make Lower hold vacuously; [`lower_of`] itself
    /// would call that native (which is why [`Bundle`] cannot be empty).
    #[test]
    fn lower_needs_every_obligation_and_atom() {
        let evidence = |depth| EvidenceRef {
            depth,
            path: "native[0]".into(),
            anchor: String::new(),
            rerun: false,
        };
        let finding = |by: Option<EvidenceRef>| ObligationFinding {
            obligation: Obligation::ClaimIdentity,
            satisfied_by: by,
            also_satisfied_by: Vec::new(),
            rejected: Vec::new(),
        };
        let atom = |by: Option<EvidenceRef>| AtomFinding {
            atom: Atom::PressureControlsObserved,
            anchored_by: by,
            rejected: Vec::new(),
        };
        let native = finding(Some(evidence(EvidenceDepth::Native)));
        let adapter = finding(Some(evidence(EvidenceDepth::Adapter(Depth::SchedulerHook))));
        let anchored = atom(Some(evidence(EvidenceDepth::Native)));
        assert_eq!(lower_of(&[], &[]), Lower::HoldsNatively);
        assert_eq!(
            lower_of(std::slice::from_ref(&native), &[]),
            Lower::HoldsNatively
        );
        assert_eq!(
            lower_of(&[native.clone(), adapter], std::slice::from_ref(&anchored)),
            Lower::HoldsWithAdapter
        );
        assert_eq!(
            lower_of(&[native.clone(), finding(None)], &[anchored]),
            Lower::Fails
        );
        assert_eq!(lower_of(&[native], &[atom(None)]), Lower::Fails);
    }
}
