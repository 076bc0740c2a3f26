//! The provenance index of positive rows (paper §8.1, "Descriptor provenance
//! for positive rows").
//!
//! Why: a positive label is only as good as the evidence under it. For every
//! positive row the index names the descriptor, mode, depth, the scope of the
//! evidence, every anchor the row rests on, the obligation codes it supplies
//! (via `Obligation::code`) and the row's calibrated non-claim, so a reviewer
//! can trace each positive to its sources without reading the matrix.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use kvlower_core::{Depth, Mode, Scope, Subtype};
use serde::Serialize;

use crate::render::{cell, write_json};
use crate::rows::PositiveRow;

/// One obligation of a positive row and what supplied it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProvenanceEvidence {
    pub code: &'static str,
    pub obligation: &'static str,
    /// YAML path of the item in the descriptor.
    pub item: String,
    /// `native` or the adapter depth.
    pub depth: String,
    pub scope: Scope,
    /// What the anchor names.
    pub anchor: String,
}

/// One anchored atom a positive row required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProvenanceAtom {
    pub atom: &'static str,
    pub item: String,
    pub scope: Scope,
    pub anchor: String,
}

/// One positive row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProvenanceRow {
    pub descriptor: String,
    pub runtime: String,
    pub mode: Mode,
    pub depth: Depth,
    pub subtype: Option<Subtype>,
    /// The scopes of the supporting evidence, sorted, unique.
    pub evidence_scope: Vec<Scope>,
    /// Every anchor path (or, for anchors without a path, what they name), sorted, unique.
    pub anchor_paths: Vec<String>,
    /// Codes of the supplied obligations, in bundle order.
    pub obligation_codes: Vec<&'static str>,
    pub evidence: Vec<ProvenanceEvidence>,
    pub atoms: Vec<ProvenanceAtom>,
    pub non_claim: String,
}

/// The index.
#[derive(Debug, Clone)]
pub struct ProvenanceIndex {
    pub rows: Vec<ProvenanceRow>,
    pub problems: Vec<String>,
}

/// Builds the index from the positive rows (matrix order).
pub fn build(rows: &[PositiveRow<'_>]) -> ProvenanceIndex {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for row in rows {
        let d = row.descriptor;
        let mut scopes = BTreeSet::new();
        let mut anchors = BTreeSet::new();
        let mut evidence = Vec::new();
        for (s, item) in row.items() {
            scopes.insert(item.scope);
            anchors.insert(anchor_path(&item.anchor));
            let depth = match s.item.adapter().and_then(|a| d.adapters.get(a)) {
                Some(a) => a.depth.to_string(),
                None => "native".to_string(),
            };
            evidence.push(ProvenanceEvidence {
                code: s.obligation.code(),
                obligation: s.obligation.name(),
                item: s.item.path(),
                depth,
                scope: item.scope,
                anchor: item.anchor.target(),
            });
        }
        let mut atoms = Vec::new();
        for (i, a) in row.atom_items() {
            anchors.insert(anchor_path(&a.anchor));
            atoms.push(ProvenanceAtom {
                atom: a.atom.name(),
                item: format!("atoms[{i}]"),
                scope: a.scope,
                anchor: a.anchor.target(),
            });
        }
        let non_claim = d.non_claims.for_mode(row.mode()).to_string();
        if !kvlower_core::text::has_visible(&non_claim) {
            problems.push(format!("{}: the positive row has no non-claim", row.id()));
        }
        if evidence.len() != row.judgment.obligations.len() {
            problems.push(format!(
                "{}: {} of {} obligations have resolvable evidence",
                row.id(),
                evidence.len(),
                row.judgment.obligations.len()
            ));
        }
        out.push(ProvenanceRow {
            descriptor: row.descriptor_path.to_string(),
            runtime: format!("{} {}", d.runtime.name, d.runtime.version),
            mode: row.mode(),
            depth: row.depth(),
            subtype: row.judgment.subtype,
            evidence_scope: scopes.into_iter().collect(),
            anchor_paths: anchors.into_iter().collect(),
            obligation_codes: evidence.iter().map(|e| e.code).collect(),
            evidence,
            atoms,
            non_claim,
        });
    }
    ProvenanceIndex {
        rows: out,
        problems,
    }
}

fn anchor_path(a: &kvlower_core::Anchor) -> String {
    match a.path.as_deref().filter(|p| !p.trim().is_empty()) {
        Some(p) => p.to_string(),
        None => a.target(),
    }
}

impl ProvenanceIndex {
    pub fn failures(&self) -> Vec<String> {
        self.problems
            .iter()
            .map(|p| format!("provenance index: {p}"))
            .collect()
    }

    pub fn summary(&self) -> String {
        format!("{} positive rows", self.rows.len())
    }

    /// `results/descriptor-provenance.json`.
    pub fn json(&self) -> String {
        crate::LazyFile {
            path: crate::PROVENANCE_JSON,
            write: &|w| self.write_json(w),
        }
        .render()
    }

    /// [`ProvenanceIndex::json`] written into `w` as it is produced.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        #[derive(Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            rows: &'a [ProvenanceRow],
            summary: String,
        }
        write_json(
            &Doc {
                schema_version: crate::SCHEMA_VERSION,
                rows: &self.rows,
                summary: self.summary(),
            },
            w,
        )
    }

    /// `results/descriptor-provenance.md`.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        md.push_str("# Descriptor provenance for positive rows\n\n");
        md.push_str("Generated by `kvlower matrix`; do not edit. Every row the checker labels positive, with\n");
        md.push_str("the evidence scope, the anchors it rests on, the obligation codes it supplies and its non-claim.\n");
        md.push_str("Anchors of kind `paper` report runs we cannot repeat here and say so in their notes.\n\n");
        let _ = writeln!(md, "**{}.**\n", self.summary());
        md.push_str(
            "| descriptor | mode / depth / evidence | anchor paths | obligations | non-claim |\n",
        );
        md.push_str("|---|---|---|---|---|\n");
        for r in &self.rows {
            let scopes: Vec<&str> = r.evidence_scope.iter().map(|s| s.name()).collect();
            let _ = writeln!(
                md,
                "| `{}` | `{} / {} / {}` | {} | {} | {} |",
                r.descriptor,
                r.mode,
                r.depth,
                scopes.join(", "),
                r.anchor_paths
                    .iter()
                    .map(|p| format!("`{}`", cell(p)))
                    .collect::<Vec<_>>()
                    .join("; "),
                r.obligation_codes.join(", "),
                cell(&r.non_claim)
            );
        }
        md.push_str("\n## Per-obligation evidence\n");
        for r in &self.rows {
            let _ = writeln!(md, "\n### `{}` {} @ {}\n", r.descriptor, r.mode, r.depth);
            for e in &r.evidence {
                let _ = writeln!(
                    md,
                    "- {} `{}`: `{}` ({}, {}) — {}",
                    e.code,
                    e.obligation,
                    e.item,
                    e.depth,
                    e.scope,
                    cell(&e.anchor)
                );
            }
            for a in &r.atoms {
                let _ = writeln!(
                    md,
                    "- atom `{}`: `{}` ({}) — {}",
                    a.atom,
                    a.item,
                    a.scope,
                    cell(&a.anchor)
                );
            }
        }
        md
    }
}
