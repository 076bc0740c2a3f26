//! The descriptor-shaped mutants of [`crate::mutation`]: for one kind and one positive
//! row, every small, plausible corruption of the evidence the checker relied on (one
//! mutant per supporting item for the per-item kinds), before the real checker re-judges
//! them.

use kvlower_core::descriptor::{Adapter, Anchor, SignalEvidence};
use kvlower_core::vocab::Ambiguity;
use kvlower_core::{Catalog, Depth, Descriptor, Precondition, Scope, Signal, Status};

use super::MutationKind;
use crate::rows::PositiveRow;

/// One descriptor mutant, before judging.
pub(super) struct DescriptorMutant {
    pub(super) mutation: String,
    pub(super) descriptor: Mutated,
    pub(super) depth: Depth,
}

/// A mutant descriptor: whole, or the row's descriptor with some evidence items
/// replaced (applied to one scratch copy per row and undone after judging, so
/// that the most common mutants do not each copy the whole descriptor).
pub(super) enum Mutated {
    Whole(Box<Descriptor>),
    Items(Vec<(crate::rows::ItemRef, kvlower_core::descriptor::EvidenceItem)>),
}

/// Which supporting items a per-obligation mutation edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Items {
    /// Native and adapter items alike.
    All,
    /// Adapter items only (an adapter's scope is what the edit changes).
    AdapterOnly,
}

/// Every `supported` item for `obligation` among `items`.
fn supporters(
    d: &Descriptor,
    obligation: kvlower_core::Obligation,
    items: Items,
) -> Vec<crate::rows::ItemRef> {
    use crate::rows::ItemRef;
    let native = d
        .native
        .iter()
        .enumerate()
        .filter(|_| items == Items::All)
        .filter(|(_, e)| e.obligation == obligation && e.status == Status::Supported)
        .map(|(i, _)| ItemRef::Native(i));
    let adapters = d.adapters.iter().enumerate().flat_map(|(ai, a)| {
        a.evidence
            .iter()
            .enumerate()
            .filter(|(_, e)| e.obligation == obligation && e.status == Status::Supported)
            .map(move |(i, _)| ItemRef::Adapter {
                adapter: ai,
                item: i,
            })
    });
    native.chain(adapters).collect()
}

/// All descriptor mutants of `kind` for one positive row (empty when the kind
/// does not apply to the row).
pub(super) fn descriptor_mutants(
    catalog: &Catalog,
    kind: MutationKind,
    row: &PositiveRow<'_>,
) -> Vec<DescriptorMutant> {
    use kvlower_core::descriptor::EvidenceItem;
    let edit = |edit: fn(&mut EvidenceItem), items: Items| per_obligation(row, edit, items);
    match kind {
        MutationKind::AnchorDeleted => edit(|i| i.anchor = Anchor::default(), Items::All),
        MutationKind::AnchorEmptied => edit(|i| empty_anchor(&mut i.anchor), Items::All),
        MutationKind::SupportedToPartial => edit(|i| i.status = Status::Partial, Items::All),
        MutationKind::SupportedToUnknown => edit(|i| i.status = Status::Unknown, Items::All),
        MutationKind::SupportedToMissing => edit(|i| i.status = Status::Missing, Items::All),
        MutationKind::AdapterScopeDocsOnly => {
            edit(|i| i.scope = Scope::DocsOnly, Items::AdapterOnly)
        }
        MutationKind::AdapterScopeSourceInspection => {
            edit(|i| i.scope = Scope::SourceInspection, Items::AdapterOnly)
        }
        MutationKind::PressureAtomsWithoutAnchors => atoms_unanchored(row),
        MutationKind::TelemetryJoinPreconditionRemoved => join_precondition_removed(row),
        MutationKind::PostHocClaimNaming => post_hoc_claim_naming(row),
        MutationKind::RoutingOnlyEvidence => routing_only(catalog, row),
        MutationKind::StorageOnlyOffloadEvidence => storage_only(catalog, row),
        // Trace-shaped kinds: `crate::trace_controls` mutates a trace, not the descriptor.
        MutationKind::WrongClaimIdInFailureAttribution
        | MutationKind::RestoreAfterReuseOrdering
        | MutationKind::FallbackRecompute
        | MutationKind::GenericCounters => Vec::new(),
    }
}

/// One mutant per obligation, editing *every* item that supports it: a
/// descriptor with two anchored items for one obligation is redundant, not
/// broken, so both must fall for the mutant to be a fair test.
fn per_obligation(
    row: &PositiveRow<'_>,
    edit: fn(&mut kvlower_core::descriptor::EvidenceItem),
    items: Items,
) -> Vec<DescriptorMutant> {
    let base = row.descriptor;
    let mut seen = Vec::new();
    row.support
        .iter()
        .filter(|s| items == Items::All || s.item.adapter().is_some())
        .filter(|s| {
            let first = !seen.contains(&s.obligation);
            seen.push(s.obligation);
            first
        })
        .filter_map(|s| {
            let targets = supporters(base, s.obligation, items);
            let mut edited = Vec::with_capacity(targets.len());
            for t in &targets {
                let mut item = t.get(base)?.clone();
                edit(&mut item);
                edited.push((*t, item));
            }
            let paths: Vec<String> = targets.iter().map(|t| t.path()).collect();
            Some(DescriptorMutant {
                mutation: format!("{} ({})", paths.join(" + "), s.obligation),
                descriptor: Mutated::Items(edited),
                depth: row.depth(),
            })
        })
        .collect()
}

/// Every entry for one pressure atom loses its anchor (redundancy is not a defect).
fn atoms_unanchored(row: &PositiveRow<'_>) -> Vec<DescriptorMutant> {
    let (base, depth) = (row.descriptor, row.depth());
    row.atom_items()
        .map(|(_, a)| {
            // Every entry for the same atom loses its anchor (redundancy is not a defect).
            let mut d = base.clone();
            let mut paths = Vec::new();
            for (i, atom) in d.atoms.iter_mut().enumerate() {
                if atom.atom == a.atom {
                    atom.anchor = Anchor::default();
                    paths.push(format!("atoms[{i}]"));
                }
            }
            DescriptorMutant {
                mutation: format!("{} ({})", paths.join(" + "), a.atom),
                descriptor: Mutated::Whole(Box::new(d)),
                depth,
            }
        })
        .collect()
}

/// Each precondition of a supporting `telemetry_join` adapter removed, one at a time.
fn join_precondition_removed(row: &PositiveRow<'_>) -> Vec<DescriptorMutant> {
    let (base, depth) = (row.descriptor, row.depth());
    row.supporting_adapters()
        .into_iter()
        .filter(|&a| {
            base.adapters
                .get(a)
                .is_some_and(|a| a.depth == Depth::TelemetryJoin)
        })
        .flat_map(|a| {
            let present: Vec<Precondition> = base
                .adapters
                .get(a)
                .map(|ad| ad.preconditions.keys().copied().collect())
                .unwrap_or_default();
            present.into_iter().map(move |p| (a, p))
        })
        .map(|(a, p)| {
            let mut d = base.clone();
            if let Some(ad) = d.adapters.get_mut(a) {
                ad.preconditions.remove(&p);
            }
            DescriptorMutant {
                mutation: format!("adapters[{a}].preconditions.{p} removed"),
                descriptor: Mutated::Whole(Box::new(d)),
                depth,
            }
        })
        .collect()
}

/// Each supporting adapter declares `post_hoc_claim_naming`.
fn post_hoc_claim_naming(row: &PositiveRow<'_>) -> Vec<DescriptorMutant> {
    let (base, depth) = (row.descriptor, row.depth());
    row.supporting_adapters()
        .into_iter()
        .map(|a| {
            let mut d = base.clone();
            if let Some(ad) = d.adapters.get_mut(a) {
                ad.ambiguities.push(Ambiguity::PostHocClaimNaming);
            }
            DescriptorMutant {
                mutation: format!("adapters[{a}] declares post_hoc_claim_naming"),
                descriptor: Mutated::Whole(Box::new(d)),
                depth,
            }
        })
        .collect()
}

/// Every supporting item moved to a `routing_hook` adapter, the only evidence left.
fn routing_only(catalog: &Catalog, row: &PositiveRow<'_>) -> Vec<DescriptorMutant> {
    let (base, depth) = (row.descriptor, row.depth());
    let Some(template) = template_anchor(row) else {
        return Vec::new();
    };
    let mut d = base.clone();
    d.native.clear();
    d.adapters = vec![moved_adapter(
        row,
        Depth::RoutingHook,
        preconditions_of(catalog, Depth::RoutingHook),
        &template,
        None,
    )];
    vec![DescriptorMutant {
        mutation: "every supporting item moved to a routing_hook adapter (no other evidence)"
            .into(),
        descriptor: Mutated::Whole(Box::new(d)),
        depth: depth.max(Depth::RoutingHook),
    }]
}

/// Only storage evidence left: an anchored `storage_tier` signal, or every
/// supporting item moved to a `storage_restorability` adapter as `partial`.
fn storage_only(catalog: &Catalog, row: &PositiveRow<'_>) -> Vec<DescriptorMutant> {
    let (base, depth) = (row.descriptor, row.depth());
    let Some(template) = template_anchor(row) else {
        return Vec::new();
    };
    let mut signal_only = base.clone();
    signal_only.native.clear();
    signal_only.adapters.clear();
    signal_only.signals = vec![SignalEvidence {
        signal: Signal::StorageTier,
        anchor: template.clone(),
        note: "storage tier only".into(),
    }];
    let mut storage = base.clone();
    storage.native.clear();
    storage.adapters = vec![moved_adapter(
        row,
        Depth::StorageRestorability,
        preconditions_of(catalog, Depth::StorageRestorability),
        &template,
        Some(Status::Partial),
    )];
    vec![
        DescriptorMutant {
            mutation: "all evidence removed; only an anchored storage_tier signal kept".into(),
            descriptor: Mutated::Whole(Box::new(signal_only)),
            depth,
        },
        DescriptorMutant {
            mutation: "every supporting item moved to a storage_restorability adapter as `partial`"
                .into(),
            descriptor: Mutated::Whole(Box::new(storage)),
            depth: depth.max(Depth::StorageRestorability),
        },
    ]
}

/// The preconditions `modes/modes.yaml` sets for an adapter `depth` (anchored on a
/// mutant's moved adapter, so that it falls for the reason under test). `Depth::None`
/// has none; a mutant adapter there would then fall for a missing boundary as well.
fn preconditions_of(catalog: &Catalog, depth: Depth) -> &[Precondition] {
    catalog.depth(depth).map_or(&[], |spec| &spec.preconditions)
}

/// Blanks every field of an anchor but its kind and trace flags.
fn empty_anchor(a: &mut Anchor) {
    for field in [
        &mut a.repository,
        &mut a.commit,
        &mut a.path,
        &mut a.section,
        &mut a.url,
        &mut a.retrieved,
    ] {
        if field.is_some() {
            *field = Some(String::new());
        }
    }
    a.note.clear();
}

/// A known-good anchor of the row (its first supporting item's), used to anchor
/// the preconditions of adapters a mutation introduces, so that such a mutant
/// falls for the reason under test and not for a missing precondition.
fn template_anchor(row: &PositiveRow<'_>) -> Option<Anchor> {
    row.items().next().map(|(_, item)| item.anchor.clone())
}

/// An adapter at `depth` carrying the row's supporting items (optionally with
/// a new status), with the given preconditions anchored.
fn moved_adapter(
    row: &PositiveRow<'_>,
    depth: Depth,
    preconditions: &[Precondition],
    template: &Anchor,
    status: Option<Status>,
) -> Adapter {
    Adapter {
        depth,
        name: format!("mutant {depth} adapter"),
        preconditions: preconditions
            .iter()
            .map(|p| (*p, template.clone()))
            .collect(),
        ambiguities: Vec::new(),
        evidence: row
            .items()
            .map(|(_, item)| {
                let mut item = item.clone();
                if let Some(s) = status {
                    item.status = s;
                }
                item
            })
            .collect(),
    }
}
