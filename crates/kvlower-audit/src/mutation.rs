//! Descriptor/evidence mutation controls (paper §8.2; `docs/model.md`).
//!
//! Why: the matrix's positive rows are self-certified unless small, plausible
//! corruptions of the evidence under them make them fall. Each of the sixteen
//! kinds is applied to *every* positive row it can apply to — for evidence-item
//! kinds, to every item the checker relied on, one mutant per item — and the
//! mutant is re-judged by the real checker at the same mode. A kind passes when
//! it produced at least one mutant and every mutant fell to a non-positive
//! label (for trace-shaped kinds: every mutated trace is rejected by the real
//! gate, see [`crate::trace_controls`]).

use std::sync::Arc;

use kvlower_core::judgment::{Anchored, judge_anchored};
use kvlower_core::{Catalog, Depth, Descriptor, Environment, Label};
use serde::Serialize;

use crate::rows::PositiveRow;

mod mutants;

use mutants::{DescriptorMutant, Mutated, descriptor_mutants};

kvlower_core::names! {
    /// The sixteen mutation kinds, in the order of paper §8.2 as listed in `docs/model.md`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
    pub enum MutationKind {
        AnchorDeleted = "anchor_deleted",
        AnchorEmptied = "anchor_emptied",
        SupportedToPartial = "supported_to_partial",
        SupportedToUnknown = "supported_to_unknown",
        SupportedToMissing = "supported_to_missing",
        PressureAtomsWithoutAnchors = "pressure_atoms_without_anchors",
        AdapterScopeDocsOnly = "adapter_scope_docs_only",
        AdapterScopeSourceInspection = "adapter_scope_source_inspection",
        TelemetryJoinPreconditionRemoved = "telemetry_join_precondition_removed",
        RoutingOnlyEvidence = "routing_only_evidence",
        WrongClaimIdInFailureAttribution = "wrong_claim_id_in_failure_attribution",
        PostHocClaimNaming = "post_hoc_claim_naming",
        RestoreAfterReuseOrdering = "restore_after_reuse_ordering",
        FallbackRecompute = "fallback_recompute",
        GenericCounters = "generic_counters",
        StorageOnlyOffloadEvidence = "storage_only_offload_evidence",
    }
}

impl MutationKind {
    /// What the mutation does, in one sentence.
    pub fn description(self) -> &'static str {
        match self {
            MutationKind::AnchorDeleted => {
                "each supporting evidence item's anchor replaced by an empty anchor (no kind)"
            }
            MutationKind::AnchorEmptied => {
                "each supporting item's anchor keeps its kind but every field and the note are blanked"
            }
            MutationKind::SupportedToPartial => "each supporting item's status set to `partial`",
            MutationKind::SupportedToUnknown => "each supporting item's status set to `unknown`",
            MutationKind::SupportedToMissing => "each supporting item's status set to `missing`",
            MutationKind::PressureAtomsWithoutAnchors => {
                "each observed pressure atom a row requires loses its anchor"
            }
            MutationKind::AdapterScopeDocsOnly => {
                "each supporting adapter item's scope weakened to `docs_only`"
            }
            MutationKind::AdapterScopeSourceInspection => {
                "each supporting adapter item's scope weakened to `source_inspection`"
            }
            MutationKind::TelemetryJoinPreconditionRemoved => {
                "each of the nine preconditions of a supporting telemetry_join adapter removed"
            }
            MutationKind::RoutingOnlyEvidence => {
                "the row's evidence replaced by the same items at routing_hook depth only (preconditions anchored), judged at routing_hook or deeper"
            }
            MutationKind::WrongClaimIdInFailureAttribution => {
                "a passing same-claim failure trace whose failure attribution names another claim"
            }
            MutationKind::PostHocClaimNaming => {
                "each supporting adapter declares `post_hoc_claim_naming`; and a passing reference trace whose claim is registered `post_hoc`"
            }
            MutationKind::RestoreAfterReuseOrdering => {
                "a passing reference trace whose predicate-satisfying reuse comes before the restore"
            }
            MutationKind::FallbackRecompute => {
                "a passing same-claim failure trace followed by a fallback-recompute `restore`"
            }
            MutationKind::GenericCounters => {
                "a passing failure trace whose claim-scoped failure events are replaced by generic counters"
            }
            MutationKind::StorageOnlyOffloadEvidence => {
                "the row keeps only a storage_tier signal; and, separately, only storage_restorability-scoped partial evidence"
            }
        }
    }

    /// Kinds that mutate a trace and ask the gate, rather than a descriptor.
    pub fn is_trace_kind(self) -> bool {
        matches!(
            self,
            MutationKind::WrongClaimIdInFailureAttribution
                | MutationKind::RestoreAfterReuseOrdering
                | MutationKind::FallbackRecompute
                | MutationKind::GenericCounters
        )
    }
}

/// One mutant and what the real checker (or gate) made of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MutantOutcome {
    /// The row (`path mode@depth`) or trace the mutant came from; shared by
    /// every mutant of the row (a 2,000-descriptor repository has ~100,000
    /// mutants, and one copy each was ~7 MB of `check`'s peak).
    pub target: Arc<str>,
    /// What exactly was mutated.
    pub mutation: String,
    /// The re-judged label, or the gate verdict for a trace (shared like `target`).
    pub result: Arc<str>,
    pub failed_closed: bool,
}

/// The verdicts of one kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindResult {
    pub kind: MutationKind,
    pub description: &'static str,
    /// Positive rows (or traces) the kind applied to.
    pub applied_to: Vec<String>,
    /// Mutants judged.
    pub mutated_rows: usize,
    /// Mutants that fell to a non-positive label (or were rejected by the gate).
    pub failed_closed: usize,
    pub pass: bool,
    pub mutants: Vec<MutantOutcome>,
}

/// The whole suite.
#[derive(Debug, Clone)]
pub struct MutationControls {
    pub kinds: Vec<KindResult>,
}

/// Runs every descriptor-shaped mutation over the positive rows and adds the
/// trace-shaped outcomes computed by [`crate::trace_controls`].
pub fn run(
    catalog: &Catalog,
    rows: &[PositiveRow<'_>],
    env: &dyn Environment,
    trace_outcomes: &dyn Fn(MutationKind) -> Vec<(String, MutantOutcome)>,
) -> MutationControls {
    // Each descriptor's anchors judged once (rows of one descriptor are adjacent);
    // a mutant re-judges only the anchors it changed.
    use rayon::prelude::*;
    let mut firsts: Vec<&PositiveRow<'_>> = Vec::new();
    let mut base_of: Vec<usize> = Vec::with_capacity(rows.len());
    for row in rows {
        match firsts.last() {
            Some(first) if std::ptr::eq(first.descriptor, row.descriptor) => {}
            _ => firsts.push(row),
        }
        base_of.push(firsts.len().saturating_sub(1));
    }
    let anchored: Vec<Anchored<'_>> = firsts
        .par_iter()
        .map(|row| Anchored::new(catalog, row.descriptor, env))
        .collect();
    // Per row, per kind (in `MutationKind::ALL` order): the mutants' outcomes,
    // `None` when the kind does not apply to the row.
    // On the thread pool, collected in row order.
    let per_row: Vec<Vec<Option<Vec<MutantOutcome>>>> = rows
        .par_iter()
        .zip(&base_of)
        .map(|(row, &base)| {
            let base = anchored.get(base);
            let mut scratch = None;
            let mut shared = SharedTexts::of(row);
            let mut per_kind = Vec::with_capacity(MutationKind::ALL.len());
            for &kind in MutationKind::ALL {
                let ms = descriptor_mutants(catalog, kind, row);
                if ms.is_empty() {
                    per_kind.push(None);
                    continue;
                }
                let mut outcomes = Vec::with_capacity(ms.len());
                for m in ms {
                    outcomes.push(judge_mutant(
                        catalog,
                        row,
                        base,
                        m,
                        &mut scratch,
                        &mut shared,
                        env,
                    ));
                }
                per_kind.push(Some(outcomes));
            }
            per_kind
        })
        .collect();
    // Per kind, in row order: the rows it applied to and their mutants.
    let mut by_kind: Vec<(Vec<String>, Vec<MutantOutcome>)> = MutationKind::ALL
        .iter()
        .map(|_| Default::default())
        .collect();
    for (row, outcomes) in rows.iter().zip(per_row) {
        for (slot, outcomes) in by_kind.iter_mut().zip(outcomes) {
            if let Some(outcomes) = outcomes {
                slot.0.push(row.id());
                slot.1.extend(outcomes);
            }
        }
    }
    let kinds = MutationKind::ALL
        .iter()
        .zip(by_kind)
        .map(|(&kind, (mut applied_to, mut mutants))| {
            for (target, outcome) in trace_outcomes(kind) {
                if !applied_to.contains(&target) {
                    applied_to.push(target);
                }
                mutants.push(outcome);
            }
            // Built by extending: give back the growth slack the suite would keep.
            mutants.shrink_to_fit();
            let failed_closed = mutants.iter().filter(|m| m.failed_closed).count();
            KindResult {
                kind,
                description: kind.description(),
                applied_to,
                mutated_rows: mutants.len(),
                failed_closed,
                pass: !mutants.is_empty() && failed_closed == mutants.len(),
                mutants,
            }
        })
        .collect();
    MutationControls { kinds }
}

/// Re-judges one mutant of `row` with the real checker at the row's mode,
/// re-judging only the anchors the mutation changed (`base`: the row's
/// descriptor with its anchors judged).
/// An item-replacing mutant is applied to `scratch` (a copy of the row's
/// descriptor, made once per row) and undone after judging.
fn judge_mutant(
    catalog: &Catalog,
    row: &PositiveRow<'_>,
    base: Option<&Anchored<'_>>,
    m: DescriptorMutant,
    scratch: &mut Option<Descriptor>,
    shared: &mut SharedTexts,
    env: &dyn Environment,
) -> MutantOutcome {
    let label = match m.descriptor {
        Mutated::Whole(d) => mutant_label(catalog, row, base, &d, m.depth, env),
        Mutated::Items(edited) => {
            let d = scratch.get_or_insert_with(|| row.descriptor.clone());
            let mut originals = Vec::with_capacity(edited.len());
            for (at, item) in edited {
                if let Some(slot) = at.get_mut(d) {
                    originals.push((at, std::mem::replace(slot, item)));
                }
            }
            let label = mutant_label(catalog, row, base, d, m.depth, env);
            // Undone: the scratch copy is the row's descriptor again.
            for (at, item) in originals {
                if let Some(slot) = at.get_mut(d) {
                    *slot = item;
                }
            }
            label
        }
    };
    MutantOutcome {
        target: Arc::clone(&shared.target),
        mutation: m.mutation,
        result: shared.result(label, m.depth),
        failed_closed: !label.is_positive(),
    }
}

/// The texts every mutant of one row repeats, made once and shared: its
/// target and the few distinct results (`label at depth`).
struct SharedTexts {
    target: Arc<str>,
    results: Vec<(Label, Depth, Arc<str>)>,
}

impl SharedTexts {
    fn of(row: &PositiveRow<'_>) -> SharedTexts {
        SharedTexts {
            target: row.id().into(),
            results: Vec::new(),
        }
    }

    /// `label at depth`, made the first time this row needs it.
    fn result(&mut self, label: Label, depth: Depth) -> Arc<str> {
        if let Some((_, _, text)) = self
            .results
            .iter()
            .find(|(l, d, _)| *l == label && *d == depth)
        {
            return Arc::clone(text);
        }
        let text: Arc<str> = label_text(label, depth).into();
        self.results.push((label, depth, Arc::clone(&text)));
        text
    }
}

/// The real checker's label of a mutant descriptor at the row's mode.
fn mutant_label(
    catalog: &Catalog,
    row: &PositiveRow<'_>,
    base: Option<&Anchored<'_>>,
    d: &Descriptor,
    depth: Depth,
    env: &dyn Environment,
) -> Label {
    let anchored = match base {
        Some(base) => base.edited(catalog, d, env),
        None => Anchored::new(catalog, d, env),
    };
    judge_anchored(catalog, &anchored, row.mode(), depth).label
}

fn label_text(label: Label, depth: Depth) -> String {
    format!("{label} at {depth}")
}

impl MutationControls {
    pub fn passing_kinds(&self) -> usize {
        self.kinds.iter().filter(|k| k.pass).count()
    }

    pub fn mutated_rows(&self) -> usize {
        self.kinds.iter().map(|k| k.mutated_rows).sum()
    }

    /// "16/16 kinds fail closed over N mutated rows".
    pub fn summary(&self) -> String {
        format!(
            "{}/{} kinds fail closed over {} mutated rows",
            self.passing_kinds(),
            self.kinds.len(),
            self.mutated_rows()
        )
    }

    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        // A kind with no applicable row is reported in the summary (it does not
        // count as passing) but is not a finding: a repository may have no row
        // it applies to. The committed repository's coverage is guarded by the
        // audit tests. A mutant that stays positive is always a finding.
        for k in self.kinds.iter().filter(|k| !k.pass) {
            for m in k.mutants.iter().filter(|m| !m.failed_closed) {
                out.push(format!(
                    "mutation controls: kind `{}` on {} ({}) stayed positive: {}",
                    k.kind, m.target, m.mutation, m.result
                ));
            }
        }
        out
    }
}
