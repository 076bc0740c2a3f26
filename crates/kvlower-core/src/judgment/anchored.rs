//! [`Anchored`]: a descriptor with every anchor judged once, for every use the
//! judgment makes of it. Its own file because it is the one place the judgment asks
//! the environment anything; the rest of the judgment reads its answers.

use super::*;

/// A descriptor with every anchor of it judged once ([`anchor_counts`], for each
/// use the judgment makes of it): the rows of one descriptor, every mode and
/// depth, and its mutants ask the same anchors the same questions.
#[derive(Debug, Clone)]
pub struct Anchored<'a> {
    pub(super) descriptor: &'a Descriptor,
    pub(super) anchors: AnchorJudgments,
}

/// What each anchor of one descriptor counts for, by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AnchorJudgments {
    /// Per `native` item: its anchor's defects for the item's own use.
    pub(super) native: Vec<Vec<AnchorDefect>>,
    /// Per adapter, in order.
    pub(super) adapters: Vec<AdapterAnchors>,
    /// Per atom: its defects as an atom ([`atom_defects`]).
    pub(super) atoms: Vec<Vec<AnchorDefect>>,
    /// Per signal: whether its anchor counts for a signal.
    pub(super) signals: Vec<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AdapterAnchors {
    /// Per evidence item: its anchor's defects for the item's own use.
    pub(super) items: Vec<Vec<AnchorDefect>>,
    /// The adapter's [`unmet_preconditions`].
    pub(super) unmet: Vec<Precondition>,
    /// Whether every precondition of the adapter's depth is anchored by a
    /// re-run anchor that counts (what a `verified` grade needs of it).
    pub(super) preconditions_rerun: bool,
}

/// The defects of an evidence item's anchor for the item's own use at `depth`.
pub(super) fn item_anchor_defects(
    catalog: &Catalog,
    item: &EvidenceItem,
    depth: EvidenceDepth,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> Vec<AnchorDefect> {
    anchor_counts(catalog, &item.anchor, item_use(item, depth), subject, env)
}

pub(super) fn signal_counts(
    catalog: &Catalog,
    signal: &crate::descriptor::SignalEvidence,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> bool {
    anchor_counts(catalog, &signal.anchor, AnchorUse::Signal, subject, env).is_empty()
}

/// Two items whose anchors are asked the same question: same anchor, same use.
pub(super) fn same_anchor_use(a: &EvidenceItem, b: &EvidenceItem) -> bool {
    a.obligation == b.obligation && a.scope == b.scope && a.anchor == b.anchor
}

impl AdapterAnchors {
    pub(super) fn of(
        catalog: &Catalog,
        adapter: &Adapter,
        subject: &crate::descriptor::RuntimeIdentity,
        env: &dyn Environment,
    ) -> AdapterAnchors {
        let at = EvidenceDepth::Adapter(adapter.depth);
        let (unmet, preconditions_rerun) = precondition_anchors(catalog, adapter, subject, env);
        AdapterAnchors {
            items: adapter
                .evidence
                .iter()
                .map(|item| item_anchor_defects(catalog, item, at, subject, env))
                .collect(),
            unmet,
            preconditions_rerun,
        }
    }
}

/// The adapter's [`unmet_preconditions`], and whether every precondition of its
/// depth is anchored by a re-run anchor that counts (see [`grade_of`]).
pub(super) fn precondition_anchors(
    catalog: &Catalog,
    adapter: &Adapter,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> (Vec<Precondition>, bool) {
    let Some(spec) = catalog.depth(adapter.depth) else {
        // Fail-closed: a depth without rules supplies nothing (`depth_may_supply`),
        // so it cannot contribute; if it did, its anchors are not re-run ones.
        return (Vec::new(), false);
    };
    let mut unmet = Vec::new();
    let mut rerun_all = true;
    for p in &spec.preconditions {
        let use_ = AnchorUse::Precondition {
            precondition: *p,
            depth: adapter.depth,
        };
        match adapter.preconditions.get(p) {
            Some(anchor) => {
                let counts = anchor_counts(catalog, anchor, use_, subject, env).is_empty();
                if !counts {
                    unmet.push(*p);
                }
                rerun_all &= counts && rerun(anchor, use_);
            }
            None => {
                unmet.push(*p);
                rerun_all = false;
            }
        }
    }
    (unmet, rerun_all)
}

impl<'a> Anchored<'a> {
    /// Judges every anchor of `descriptor` once.
    pub fn new(
        catalog: &Catalog,
        descriptor: &'a Descriptor,
        env: &dyn Environment,
    ) -> Anchored<'a> {
        let subject = &descriptor.runtime;
        Anchored {
            descriptor,
            anchors: AnchorJudgments {
                native: descriptor
                    .native
                    .iter()
                    .map(|item| {
                        item_anchor_defects(catalog, item, EvidenceDepth::Native, subject, env)
                    })
                    .collect(),
                adapters: descriptor
                    .adapters
                    .iter()
                    .map(|a| AdapterAnchors::of(catalog, a, subject, env))
                    .collect(),
                atoms: descriptor
                    .atoms
                    .iter()
                    .map(|a| atom_defects(catalog, a, subject, env))
                    .collect(),
                signals: descriptor
                    .signals
                    .iter()
                    .map(|s| signal_counts(catalog, s, subject, env))
                    .collect(),
            },
        }
    }

    /// The descriptor judged.
    pub fn descriptor(&self) -> &'a Descriptor {
        self.descriptor
    }

    /// `edited`, a changed copy of this descriptor, with its anchors judged:
    /// an anchor asked the same question as the one at the same place here
    /// (same anchor, same use, same runtime) keeps its answer; every other
    /// anchor is judged afresh. The same as [`Anchored::new`] on `edited`.
    pub fn edited<'b>(
        &self,
        catalog: &Catalog,
        edited: &'b Descriptor,
        env: &dyn Environment,
    ) -> Anchored<'b> {
        let base = self.descriptor;
        if base.runtime != edited.runtime {
            return Anchored::new(catalog, edited, env);
        }
        let subject = &edited.runtime;
        let known = &self.anchors;
        let native = edited
            .native
            .iter()
            .enumerate()
            .map(
                |(i, item)| match (base.native.get(i), known.native.get(i)) {
                    (Some(b), Some(defects)) if same_anchor_use(b, item) => defects.clone(),
                    _ => item_anchor_defects(catalog, item, EvidenceDepth::Native, subject, env),
                },
            )
            .collect();
        let adapters = edited
            .adapters
            .iter()
            .enumerate()
            .map(
                |(ai, a)| match (base.adapters.get(ai), known.adapters.get(ai)) {
                    (Some(b), Some(j)) if b.depth == a.depth => {
                        let at = EvidenceDepth::Adapter(a.depth);
                        let items = a
                            .evidence
                            .iter()
                            .enumerate()
                            .map(|(i, item)| match (b.evidence.get(i), j.items.get(i)) {
                                (Some(bi), Some(defects)) if same_anchor_use(bi, item) => {
                                    defects.clone()
                                }
                                _ => item_anchor_defects(catalog, item, at, subject, env),
                            })
                            .collect();
                        let (unmet, preconditions_rerun) = if b.preconditions == a.preconditions {
                            (j.unmet.clone(), j.preconditions_rerun)
                        } else {
                            precondition_anchors(catalog, a, subject, env)
                        };
                        AdapterAnchors {
                            items,
                            unmet,
                            preconditions_rerun,
                        }
                    }
                    _ => AdapterAnchors::of(catalog, a, subject, env),
                },
            )
            .collect();
        let atoms = edited
            .atoms
            .iter()
            .enumerate()
            .map(|(i, a)| match (base.atoms.get(i), known.atoms.get(i)) {
                (Some(b), Some(defects)) if b.scope == a.scope && b.anchor == a.anchor => {
                    defects.clone()
                }
                _ => atom_defects(catalog, a, subject, env),
            })
            .collect();
        let signals = edited
            .signals
            .iter()
            .enumerate()
            .map(|(i, s)| match (base.signals.get(i), known.signals.get(i)) {
                (Some(b), Some(counts)) if b.anchor == s.anchor => *counts,
                _ => signal_counts(catalog, s, subject, env),
            })
            .collect();
        Anchored {
            descriptor: edited,
            anchors: AnchorJudgments {
                native,
                adapters,
                atoms,
                signals,
            },
        }
    }

    /// The defects of native item `i`'s anchor (not counting when out of range,
    /// which [`Anchored::new`] rules out).
    pub(super) fn native_defects(&self, i: usize) -> &[AnchorDefect] {
        self.anchors.native.get(i).map_or(NOT_JUDGED, Vec::as_slice)
    }

    pub(super) fn adapter(&self, ai: usize) -> Option<&AdapterAnchors> {
        self.anchors.adapters.get(ai)
    }

    pub(super) fn adapter_item_defects(&self, ai: usize, i: usize) -> &[AnchorDefect] {
        self.adapter(ai)
            .and_then(|a| a.items.get(i))
            .map_or(NOT_JUDGED, Vec::as_slice)
    }

    pub(super) fn atom_defects(&self, i: usize) -> &[AnchorDefect] {
        self.anchors.atoms.get(i).map_or(NOT_JUDGED, Vec::as_slice)
    }

    pub(super) fn signal_counts(&self, i: usize) -> bool {
        self.anchors.signals.get(i).copied().unwrap_or(false)
    }
}
