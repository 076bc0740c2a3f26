//! The positive rows of the matrix and the exact evidence that made each one
//! positive.
//!
//! Mutation controls and the provenance index both start from here: a mutation
//! must hit the items the checker actually relied on (one mutant per supporting
//! item), and the provenance index must name exactly those items' anchors.
//! The items are located by the evidence paths the judgment reports
//! (`native[2]`, `adapters[0].evidence[3]`, `atoms[1]`); a path that does not
//! resolve to an item of the descriptor is a problem of the suite, reported,
//! never skipped silently.

use kvlower_core::descriptor::{AtomEvidence, EvidenceItem};
use kvlower_core::matrix::{MatrixRow, judge_all};
use kvlower_core::{Catalog, Depth, Descriptor, Environment, Judgment, Mode, Obligation};

/// Where one evidence item sits in its descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ItemRef {
    /// `native[i]`.
    Native(usize),
    /// `adapters[adapter].evidence[item]`.
    Adapter { adapter: usize, item: usize },
}

impl ItemRef {
    /// Parses the path the judgment reports for an evidence item.
    pub fn parse(path: &str) -> Option<ItemRef> {
        if let Some(rest) = path.strip_prefix("native[") {
            return index(rest.strip_suffix(']')?).map(ItemRef::Native);
        }
        let rest = path.strip_prefix("adapters[")?;
        let (adapter, rest) = rest.split_once("].evidence[")?;
        Some(ItemRef::Adapter {
            adapter: index(adapter)?,
            item: index(rest.strip_suffix(']')?)?,
        })
    }

    /// The YAML path of the item (the inverse of [`ItemRef::parse`]).
    pub fn path(self) -> String {
        match self {
            ItemRef::Native(i) => format!("native[{i}]"),
            ItemRef::Adapter { adapter, item } => format!("adapters[{adapter}].evidence[{item}]"),
        }
    }

    /// The adapter the item belongs to, if it is adapter evidence.
    pub fn adapter(self) -> Option<usize> {
        match self {
            ItemRef::Native(_) => None,
            ItemRef::Adapter { adapter, .. } => Some(adapter),
        }
    }

    pub fn get(self, d: &Descriptor) -> Option<&EvidenceItem> {
        match self {
            ItemRef::Native(i) => d.native.get(i),
            ItemRef::Adapter { adapter, item } => d.adapters.get(adapter)?.evidence.get(item),
        }
    }

    pub fn get_mut(self, d: &mut Descriptor) -> Option<&mut EvidenceItem> {
        match self {
            ItemRef::Native(i) => d.native.get_mut(i),
            ItemRef::Adapter { adapter, item } => {
                d.adapters.get_mut(adapter)?.evidence.get_mut(item)
            }
        }
    }
}

/// Parses `atoms[i]` as reported for an anchored atom.
pub fn parse_atom_path(path: &str) -> Option<usize> {
    index(path.strip_prefix("atoms[")?.strip_suffix(']')?)
}

fn index(s: &str) -> Option<usize> {
    s.parse().ok()
}

/// One obligation of a positive row and the item that supplied it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    pub obligation: Obligation,
    pub item: ItemRef,
}

/// A row the checker labels positive, with what it relied on.
#[derive(Debug, Clone)]
pub struct PositiveRow<'a> {
    pub descriptor_path: &'a str,
    pub descriptor: &'a Descriptor,
    pub judgment: Judgment,
    /// One entry per obligation of O[m], in bundle order.
    pub support: Vec<Support>,
    /// Indices into `descriptor.atoms` of the atoms the row required.
    pub atoms: Vec<usize>,
}

impl PositiveRow<'_> {
    pub fn mode(&self) -> Mode {
        self.judgment.mode
    }

    pub fn depth(&self) -> Depth {
        self.judgment.depth
    }

    /// `path mode@depth`, how reports name a row.
    pub fn id(&self) -> String {
        format!("{} {}@{}", self.descriptor_path, self.mode(), self.depth())
    }

    /// The supporting evidence items, resolved.
    pub fn items(&self) -> impl Iterator<Item = (&Support, &EvidenceItem)> {
        self.support
            .iter()
            .filter_map(|s| s.item.get(self.descriptor).map(|e| (s, e)))
    }

    /// The required atoms, resolved.
    pub fn atom_items(&self) -> impl Iterator<Item = (usize, &AtomEvidence)> {
        self.atoms
            .iter()
            .filter_map(|&i| self.descriptor.atoms.get(i).map(|a| (i, a)))
    }

    /// Distinct adapters that supplied at least one obligation, sorted.
    pub fn supporting_adapters(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .support
            .iter()
            .filter_map(|s| s.item.adapter())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Every positive row of the given descriptors (in matrix order), plus a
/// problem for each evidence path that did not resolve.
pub fn positive_rows<'a>(
    catalog: &Catalog,
    descriptors: &[(&'a str, &'a Descriptor)],
    env: &dyn Environment,
) -> (Vec<PositiveRow<'a>>, Vec<String>) {
    positive_rows_of(judge_all(catalog, descriptors.iter().copied(), env))
}

/// [`positive_rows`] of a matrix already judged (in matrix order), so that a
/// command judges every row once for its results and its suites alike.
pub fn positive_rows_of<'a>(
    matrix: impl IntoIterator<Item = MatrixRow<'a>>,
) -> (Vec<PositiveRow<'a>>, Vec<String>) {
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for row in matrix {
        if !row.judgment.label.is_positive() {
            continue;
        }
        let mut support = Vec::new();
        for f in &row.judgment.obligations {
            let resolved = f
                .satisfied_by
                .as_ref()
                .and_then(|e| ItemRef::parse(&e.path))
                .filter(|r| r.get(row.descriptor).is_some());
            match resolved {
                Some(item) => support.push(Support {
                    obligation: f.obligation,
                    item,
                }),
                None => problems.push(format!(
                    "{} {}@{}: the evidence for `{}` does not resolve to a descriptor item",
                    row.descriptor_path, row.judgment.mode, row.judgment.depth, f.obligation
                )),
            }
        }
        let mut atoms = Vec::new();
        for f in &row.judgment.atoms {
            match f
                .anchored_by
                .as_ref()
                .and_then(|e| parse_atom_path(&e.path))
                .filter(|&i| i < row.descriptor.atoms.len())
            {
                Some(i) => atoms.push(i),
                None => problems.push(format!(
                    "{} {}@{}: atom `{}` does not resolve to a descriptor atom",
                    row.descriptor_path, row.judgment.mode, row.judgment.depth, f.atom
                )),
            }
        }
        rows.push(PositiveRow {
            descriptor_path: row.descriptor_path,
            descriptor: row.descriptor,
            judgment: row.judgment,
            support,
            atoms,
        });
    }
    (rows, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn item_paths_round_trip() {
        for r in [
            ItemRef::Native(0),
            ItemRef::Native(12),
            ItemRef::Adapter {
                adapter: 1,
                item: 7,
            },
        ] {
            assert_eq!(ItemRef::parse(&r.path()), Some(r));
        }
        assert_eq!(ItemRef::parse("atoms[1]"), None);
        assert_eq!(ItemRef::parse("native[x]"), None);
        assert_eq!(parse_atom_path("atoms[3]"), Some(3));
    }
}
