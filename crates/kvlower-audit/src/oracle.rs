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

use kvlower_core::descriptor::{Adapter, Anchor, AnchorKind, EvidenceItem};
use kvlower_core::{
    Atom, CatalogDoc, Depth, Descriptor, Environment, Label, Mode, Obligation, Scope, Subtype,
};

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
    v.as_deref().is_some_and(|s| !s.trim().is_empty())
}

/// Whether an anchor anchors: its kind's fields, a plausible commit, a relative
/// path, a note, trace flags for observed evidence, an existing repo file, and a
/// claimed gate verdict that re-running the gate confirms.
pub fn anchor_holds(a: &Anchor, observed_scope: bool, env: &dyn Environment) -> bool {
    let kind_fields = match a.kind {
        None => false,
        Some(AnchorKind::Paper) => filled(&a.section),
        Some(AnchorKind::PublicSource) => {
            filled(&a.repository) && filled(&a.commit) && filled(&a.path)
        }
        Some(AnchorKind::DocsPage) => filled(&a.url) && filled(&a.retrieved),
        Some(AnchorKind::RepoFile) => {
            filled(&a.path)
                && a.path
                    .as_deref()
                    .is_some_and(|p| env.repo_file_defect(p).is_none())
        }
    };
    let commit = a.commit.as_deref().filter(|c| !c.trim().is_empty());
    let commit_ok = commit
        .is_none_or(|c| (7..=40).contains(&c.len()) && c.bytes().all(|b| b.is_ascii_hexdigit()));
    let path_ok = a
        .path
        .as_deref()
        .is_none_or(|p| !p.starts_with('/') && !p.split('/').any(|s| s == ".."));
    // Observed evidence needs a trace-preserving anchor, and a docs page is never a trace.
    let trace_ok = !observed_scope
        || (a.preserves_order && a.preserves_claim_scope && a.kind != Some(AnchorKind::DocsPage));
    // A claimed gate verdict must sit on a repo_file trace and survive a re-run.
    let verdict_ok = a.verdict.as_ref().is_none_or(|v| {
        a.kind == Some(AnchorKind::RepoFile)
            && a.path
                .as_deref()
                .is_some_and(|p| env.trace_verdict_defect(p, v).is_none())
    });
    kind_fields && commit_ok && path_ok && !a.note.trim().is_empty() && trace_ok && verdict_ok
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

fn atoms_held(d: &Descriptor, env: &dyn Environment) -> BTreeSet<Atom> {
    d.atoms
        .iter()
        .filter(|a| observed(a.scope) && anchor_holds(&a.anchor, true, env))
        .map(|a| a.atom)
        .collect()
}

/// Whether a mode scope (empty = all modes) covers `mode`.
fn covers(scope: &[Mode], mode: Mode) -> bool {
    scope.is_empty() || scope.contains(&mode)
}

/// Whether two mode scopes share a mode (empty = all modes).
fn overlap(a: &[Mode], b: &[Mode]) -> bool {
    a.is_empty() || b.is_empty() || a.iter().any(|m| b.contains(m))
}

/// Whether a supported item counts for `mode`: its anchor holds, it was exercised
/// for the mode, a claimed verdict passes on a gate that witnesses the obligation,
/// and no `missing` item beside it (same list) says the opposite.
fn item_holds(
    doc: &CatalogDoc,
    item: &EvidenceItem,
    siblings: &[EvidenceItem],
    mode: Mode,
    env: &dyn Environment,
) -> bool {
    let verdict_counts = item.anchor.verdict.as_ref().is_none_or(|v| {
        v.pass
            && doc
                .trace_gates
                .get(&v.gate)
                .is_some_and(|witnessed| witnessed.contains(&item.obligation))
    });
    let contradicted = siblings.iter().any(|other| {
        other.obligation == item.obligation
            && other.status == kvlower_core::Status::Missing
            && overlap(&other.modes, &item.modes)
    });
    item.status == kvlower_core::Status::Supported
        && covers(&item.modes, mode)
        && verdict_counts
        && !contradicted
        && anchor_holds(&item.anchor, observed(item.scope), env)
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
    if !observed(item.scope) {
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
            .is_some_and(|a| anchor_holds(a, false, env))
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
    let atoms = atoms_held(d, env);
    let mut supplied: BTreeMap<Obligation, BTreeSet<Supplier>> = BTreeMap::new();
    for item in d
        .native
        .iter()
        .filter(|i| item_holds(doc, i, &d.native, mode, env))
    {
        supplied
            .entry(item.obligation)
            .or_default()
            .insert(Supplier::Native);
    }
    for adapter in &d.adapters {
        for item in adapter
            .evidence
            .iter()
            .filter(|i| item_holds(doc, i, &adapter.evidence, mode, env))
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

/// The depths a descriptor's rows are judged at: `none` and each adapter's depth.
pub fn oracle_row_depths(d: &Descriptor) -> Vec<Depth> {
    let set: BTreeSet<Depth> = std::iter::once(Depth::None)
        .chain(d.adapters.iter().map(|a| a.depth))
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
            && anchor_holds(&s.anchor, false, env)
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
