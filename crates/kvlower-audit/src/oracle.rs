//! A second, deliberately separate derivation of every row's label.
//!
//! Why: a checker that certifies itself proves little. This oracle re-derives
//! label, subtype and satisfied set from the parsed descriptor and the catalog
//! *data* (`CatalogDoc`) only. It does not call `kvlower_core::judgment`, nor
//! `Anchor::defects` or the `Catalog` helper methods, nor `Obligation::is_enforcement`:
//! anchor completeness, the enforcement set, the row depths and the label truth
//! table are written again here, in a different shape (a supply table per row
//! depth, then set arithmetic per mode). Disagreement with the checker on any
//! row is a finding of the independent-audit suite.
//!
//! Shared on purpose: the typed inputs (`Descriptor`, `CatalogDoc`, the vocab
//! enums) and the [`Environment`] that answers "does this repository file exist".

use std::collections::{BTreeMap, BTreeSet};

use kvlower_core::descriptor::{Adapter, EvidenceItem};
use kvlower_core::{
    Atom, CatalogDoc, Depth, Descriptor, Environment, Label, Mode, Obligation, Scope, Subtype,
};

mod anchor;
mod seen_from;

pub use anchor::{Purpose, anchor_holds};
use seen_from::SeenFrom;

/// What the oracle says about one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleRow {
    pub mode: Mode,
    pub depth: Depth,
    pub label: Label,
    pub subtype: Option<Subtype>,
    /// Obligations of O[m] some counting item supplies.
    pub satisfied: BTreeSet<Obligation>,
}

/// Obligations only enforcement can supply; a join may never supply them.
const ENFORCEMENT: [Obligation; 7] = [
    Obligation::ExplicitConflictAction,
    Obligation::VictimExclusionBeforeViolation,
    Obligation::BlockingClaimIds,
    Obligation::RestorationFailureOutcome,
    Obligation::ClaimDemotedBeforeLoss,
    Obligation::ClaimExpiredBoundary,
    Obligation::ClaimHarmAttribution,
];

/// Scopes that observed a running system.
const OBSERVED: [Scope; 6] = [
    Scope::LitmusTrace,
    Scope::RuntimeTrace,
    Scope::ConformanceTrace,
    Scope::ControlledPressure,
    Scope::FailureInjection,
    Scope::ArtifactGenerated,
];

fn observed(scope: Scope) -> bool {
    OBSERVED.contains(&scope)
}

fn filled(v: &Option<String>) -> bool {
    v.as_deref().is_some_and(kvlower_core::text::has_visible)
}

/// The ladder position of a supplier: native below every adapter depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Supplier {
    Native,
    At(Depth),
}

/// For one descriptor at one row depth: which obligations are supplied, from
/// where (every supplier, not just the first).
struct SupplyTable {
    supplied: BTreeMap<Obligation, BTreeSet<Supplier>>,
    atoms: BTreeSet<Atom>,
}

fn atoms_held(doc: &CatalogDoc, d: &Descriptor, env: &dyn Environment) -> BTreeSet<Atom> {
    d.atoms
        .iter()
        .filter(|a| observed(a.scope) && anchor_holds(doc, &a.anchor, Purpose::Atom, env))
        .map(|a| a.atom)
        .collect()
}

/// Whether a mode scope (empty = all modes) covers `mode`.
/// Whether a supported item's stated modes include `mode`: an item that states
/// none supports none (its silence is not "every mode").
fn covers(scope: &[Mode], mode: Mode) -> bool {
    scope.contains(&mode)
}

/// What the `missing` items of one evidence list deny, per obligation: `None`
/// when one of them covers every mode, else the union of their mode scopes.
/// Built once per list so that the contradiction test is linear.
fn denials(list: &[EvidenceItem]) -> BTreeMap<Obligation, Option<BTreeSet<Mode>>> {
    let mut denied: BTreeMap<Obligation, Option<BTreeSet<Mode>>> = BTreeMap::new();
    for other in list
        .iter()
        .filter(|o| o.status == kvlower_core::Status::Missing)
    {
        let entry = denied
            .entry(other.obligation)
            .or_insert_with(|| Some(BTreeSet::new()));
        match (entry.as_mut(), other.modes.is_empty()) {
            (Some(_), true) => *entry = None,
            (Some(set), false) => set.extend(other.modes.iter().copied()),
            (None, _) => {}
        }
    }
    denied
}

/// Whether a supported item counts for `mode`: its anchor holds, it was exercised
/// for the mode, a claimed verdict passes on a gate that witnesses the obligation,
/// and no `missing` item beside it (same list) says the opposite.
fn item_holds(
    doc: &CatalogDoc,
    item: &EvidenceItem,
    denied: &BTreeMap<Obligation, Option<BTreeSet<Mode>>>,
    at: Option<Depth>,
    mode: Mode,
    env: &dyn Environment,
) -> bool {
    let purpose = Purpose::Item {
        obligation: item.obligation,
        at,
        observed: observed(item.scope),
    };
    let contradicted = denied
        .get(&item.obligation)
        .is_some_and(|scope| match scope {
            None => true,
            Some(modes) => item.modes.is_empty() || item.modes.iter().any(|m| modes.contains(m)),
        });
    // Docs and source inspection never make a positive, native or adapter.
    item.status == kvlower_core::Status::Supported
        && observed(item.scope)
        && covers(&item.modes, mode)
        && !contradicted
        && anchor_holds(doc, &item.anchor, purpose, env)
}

/// Whether an adapter's item may supply its obligation at `row`.
fn adapter_may_supply(
    doc: &CatalogDoc,
    adapter: &Adapter,
    item: &EvidenceItem,
    row: Depth,
    atoms: &BTreeSet<Atom>,
    env: &dyn Environment,
) -> bool {
    let depth = adapter.depth;
    if depth > row || depth == Depth::None || !adapter.ambiguities.is_empty() {
        return false;
    }
    if depth == Depth::TelemetryJoin && ENFORCEMENT.contains(&item.obligation) {
        return false;
    }
    let Some(spec) = doc.depths.get(&depth) else {
        return false;
    };
    let allowed = spec.supplies_any || spec.supplies.contains(&item.obligation);
    let conditions = spec
        .conditional
        .get(&item.obligation)
        .is_none_or(|need| need.iter().all(|a| atoms.contains(a)));
    let boundary = spec.preconditions.iter().all(|p| {
        adapter
            .preconditions
            .get(p)
            .is_some_and(|a| anchor_holds(doc, a, Purpose::Precondition(depth, *p), env))
    });
    allowed && conditions && boundary
}

fn supply_table(
    doc: &CatalogDoc,
    d: &Descriptor,
    mode: Mode,
    row: Depth,
    env: &dyn Environment,
) -> SupplyTable {
    let atoms = atoms_held(doc, d, env);
    let mut supplied: BTreeMap<Obligation, BTreeSet<Supplier>> = BTreeMap::new();
    let native_denials = denials(&d.native);
    for item in d
        .native
        .iter()
        .filter(|i| item_holds(doc, i, &native_denials, None, mode, env))
    {
        supplied
            .entry(item.obligation)
            .or_default()
            .insert(Supplier::Native);
    }
    for adapter in &d.adapters {
        let adapter_denials = denials(&adapter.evidence);
        for item in adapter
            .evidence
            .iter()
            .filter(|i| item_holds(doc, i, &adapter_denials, Some(adapter.depth), mode, env))
        {
            if adapter_may_supply(doc, adapter, item, row, &atoms, env) {
                supplied
                    .entry(item.obligation)
                    .or_default()
                    .insert(Supplier::At(adapter.depth));
            }
        }
    }
    SupplyTable { supplied, atoms }
}

/// The depths a descriptor's rows are judged at: `none`, each adapter's depth
/// and each depth a proposal names.
pub fn oracle_row_depths(d: &Descriptor) -> Vec<Depth> {
    let set: BTreeSet<Depth> = std::iter::once(Depth::None)
        .chain(d.adapters.iter().map(|a| a.depth))
        .chain(d.proposals.iter().map(|p| p.depth))
        .collect();
    set.into_iter().collect()
}

/// Derives one row.
pub fn derive(
    doc: &CatalogDoc,
    d: &Descriptor,
    mode: Mode,
    row: Depth,
    env: &dyn Environment,
) -> OracleRow {
    let seen = SeenFrom { env, d };
    let env: &dyn Environment = &seen;
    let table = supply_table(doc, d, mode, row, env);
    let spec = doc.modes.get(&mode);
    let bundle: Vec<Obligation> = spec.map(|s| s.obligations.clone()).unwrap_or_default();
    let critical: BTreeSet<Obligation> = spec
        .map(|s| s.enforcement_critical.iter().copied().collect())
        .unwrap_or_default();
    let required_atoms: Vec<Atom> = spec.map(|s| s.required_atoms.clone()).unwrap_or_default();

    let satisfied: BTreeSet<Obligation> = bundle
        .iter()
        .copied()
        .filter(|o| table.supplied.contains_key(o))
        .collect();
    let missing: BTreeSet<Obligation> = bundle
        .iter()
        .copied()
        .filter(|o| !satisfied.contains(o))
        .collect();
    let atoms_complete = required_atoms.iter().all(|a| table.atoms.contains(a));
    let lower = missing.is_empty() && atoms_complete;
    let shallowest: Vec<Supplier> = bundle
        .iter()
        .filter_map(|o| table.supplied.get(o).and_then(|s| s.first().copied()))
        .collect();
    let natively = lower && shallowest.iter().all(|s| *s == Supplier::Native);

    let suggested = d.signals.iter().any(|s| {
        doc.signals
            .get(&s.signal)
            .is_some_and(|spec| spec.suggests.contains(&mode))
            && anchor_holds(doc, &s.anchor, Purpose::Signal, env)
    });
    let explicit: Vec<bool> = d
        .proposals
        .iter()
        .filter(|p| p.mode == mode && p.depth <= row)
        .map(|p| {
            doc.forbidden_lowerings
                .iter()
                .any(|f| f.primitive == p.primitive && f.mode == mode)
        })
        .collect();
    let adapter_offers = d.adapters.iter().any(|a| {
        a.depth <= row
            && a.evidence.iter().any(|e| {
                e.status == kvlower_core::Status::Supported && critical.contains(&e.obligation)
            })
    });
    let offered = !explicit.is_empty() || adapter_offers;
    let forbidden = explicit.iter().any(|f| *f);
    let lacks_enforcement = missing.iter().any(|o| critical.contains(o));

    let label = if natively {
        Label::NativeSound
    } else if lower {
        Label::SoundWithAdapter
    } else if forbidden || (offered && lacks_enforcement) {
        Label::Rejected
    } else if suggested {
        Label::Approximate
    } else {
        Label::Unknown
    };
    let subtype = (label == Label::SoundWithAdapter).then(|| {
        if shallowest.contains(&Supplier::At(Depth::BackendPatch)) {
            Subtype::BackendPatchWitness
        } else if !required_atoms.is_empty() {
            Subtype::AdapterPolicyControlledPressure
        } else if shallowest
            .iter()
            .all(|s| matches!(s, Supplier::Native | Supplier::At(Depth::TelemetryJoin)))
        {
            Subtype::AdapterObservational
        } else {
            Subtype::AdapterHookMechanism
        }
    });
    OracleRow {
        mode,
        depth: row,
        label,
        subtype,
        satisfied,
    }
}

/// Every row of one descriptor: modes in order, then row depths up the ladder.
pub fn derive_all(doc: &CatalogDoc, d: &Descriptor, env: &dyn Environment) -> Vec<OracleRow> {
    let depths = oracle_row_depths(d);
    Mode::ALL
        .iter()
        .flat_map(|&m| depths.iter().map(move |&a| (m, a)))
        .map(|(m, a)| derive(doc, d, m, a, env))
        .collect()
}
