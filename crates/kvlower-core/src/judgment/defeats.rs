//! Why a candidate does not count: an item's or an adapter's defeats, and the
//! contradictions between a descriptor's own items (a `missing` beside a `supported`
//! for the same obligation and depth fails closed).

use super::*;

/// Which evidence list of a descriptor an item sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ListId {
    Native,
    Adapter(usize),
}

/// Rule 7, indexed once per judgment so that the scan is linear: a `missing`
/// item for the same obligation in the same list (and exercised for a common
/// mode, or for every mode) contradicts a `supported` one; neither wins.
pub(super) struct Contradictions {
    /// Per (list, obligation): the first `missing` item, the first `missing`
    /// item exercised for every mode, and the first per mode.
    pub(super) first: std::collections::BTreeMap<(ListId, Obligation), MissingIndex>,
}

#[derive(Default)]
pub(super) struct MissingIndex {
    pub(super) any: Option<usize>,
    pub(super) every_mode: Option<usize>,
    pub(super) per_mode: std::collections::BTreeMap<Mode, usize>,
}

impl Contradictions {
    pub(super) fn of(descriptor: &Descriptor) -> Contradictions {
        let mut first: std::collections::BTreeMap<(ListId, Obligation), MissingIndex> =
            std::collections::BTreeMap::new();
        let lists = std::iter::once((ListId::Native, &descriptor.native)).chain(
            descriptor
                .adapters
                .iter()
                .enumerate()
                .map(|(ai, a)| (ListId::Adapter(ai), &a.evidence)),
        );
        for (list, items) in lists {
            for (i, item) in items.iter().enumerate() {
                if item.status != Status::Missing {
                    continue;
                }
                let idx = first.entry((list, item.obligation)).or_default();
                idx.any.get_or_insert(i);
                if item.modes.is_empty() {
                    idx.every_mode.get_or_insert(i);
                }
                for m in &item.modes {
                    idx.per_mode.entry(*m).or_insert(i);
                }
            }
        }
        Contradictions { first }
    }

    pub(super) fn of_item(&self, list: ListId, item: &EvidenceItem) -> Option<Defeat> {
        if item.status != Status::Supported {
            return None;
        }
        let idx = self.first.get(&(list, item.obligation))?;
        let at = if item.modes.is_empty() {
            idx.any
        } else {
            item.modes
                .iter()
                .filter_map(|m| idx.per_mode.get(m).copied())
                .chain(idx.every_mode)
                .min()
        }?;
        let by = match list {
            ListId::Native => format!("native[{at}]"),
            ListId::Adapter(ai) => format!("adapters[{ai}].evidence[{at}]"),
        };
        Some(Defeat::Contradicted { by })
    }
}

/// Rules 2 and 4: supported and anchored for this use; the item exercised
/// this mode's path; it observed a running system (native or adapter alike:
/// a positive row certifies exercised runtime paths, paper §4).
pub(super) fn item_defeats(
    item: &EvidenceItem,
    mode: Mode,
    anchor_defects: &[AnchorDefect],
) -> Vec<Defeat> {
    let mut defeats = Vec::new();
    if item.modes.is_empty() {
        // Only a `supported` item could have counted; for any other the status says why.
        if item.status == Status::Supported {
            defeats.push(Defeat::ModesNotStated);
        }
    } else if !item.modes.contains(&mode) {
        defeats.push(Defeat::NotExercisedForMode {
            modes: item.modes.clone(),
        });
    }
    if item.status != Status::Supported {
        defeats.push(Defeat::StatusNotSupported {
            status: item.status,
        });
    }
    if !anchor_defects.is_empty() {
        defeats.push(Defeat::Unanchored {
            defects: anchor_defects.to_vec(),
        });
    }
    if !item.scope.is_runtime_observed() {
        defeats.push(Defeat::ScopeTooWeak { scope: item.scope });
    }
    defeats
}

/// Rules 5–7: what the adapter's depth, preconditions and ambiguities allow.
pub(super) fn adapter_defeats(
    catalog: &Catalog,
    adapter: &Adapter,
    item: &EvidenceItem,
    row_depth: Depth,
    anchored_atoms: &[Atom],
    unmet_preconditions: &[Precondition],
) -> Vec<Defeat> {
    let mut defeats = Vec::new();
    let depth = adapter.depth;
    if depth > row_depth {
        defeats.push(Defeat::AdapterNotSelected {
            adapter_depth: depth,
            row_depth,
        });
    }
    // Rule 6 in code, independent of the catalog: a join observes, it never enforces.
    if depth == Depth::TelemetryJoin && item.obligation.is_enforcement() {
        defeats.push(Defeat::TelemetryCannotEnforce);
    } else if depth == Depth::None || !catalog.depth_may_supply(depth, item.obligation) {
        defeats.push(Defeat::DepthCannotSupply {
            adapter_depth: depth,
        });
    }
    // A depth without rules (only `none`) is already defeated above as
    // `DepthCannotSupply`: it has no conditions to add.
    if let Some(atoms) = catalog
        .depth(depth)
        .and_then(|spec| spec.conditional.get(&item.obligation))
    {
        let missing: Vec<Atom> = atoms
            .iter()
            .filter(|a| !anchored_atoms.contains(a))
            .copied()
            .collect();
        if !missing.is_empty() {
            defeats.push(Defeat::ConditionalAtomsMissing { atoms: missing });
        }
    }
    if !unmet_preconditions.is_empty() {
        defeats.push(Defeat::PreconditionsUnmet {
            missing: unmet_preconditions.to_vec(),
        });
    }
    if !adapter.ambiguities.is_empty() {
        let mut ambiguities = adapter.ambiguities.clone();
        ambiguities.sort();
        ambiguities.dedup();
        defeats.push(Defeat::AmbiguityDeclared { ambiguities });
    }
    defeats
}
