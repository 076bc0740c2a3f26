//! The independent descriptor audit: the [`crate::oracle`] against the checker,
//! row by row.
//!
//! The published file covers the 14 TensorRT-LLM 1.3.0rc14 rows (paper §8.1:
//! "agrees 14/14"); the suite itself compares every row of every descriptor,
//! and any disagreement anywhere is a suite failure.

use std::fmt::Write as _;

use kvlower_core::{Catalog, Depth, Descriptor, Environment, Label, Mode, Subtype, judge};
use serde::Serialize;

use crate::oracle::{derive_all, oracle_row_depths};
use crate::render::{codes, to_json};

/// The runtime (name, version) whose rows the published audit file lists: the one
/// paper §8.1 audits. Its descriptor is found by the runtime it describes, not by its
/// file name.
pub const PUBLISHED_RUNTIME: (&str, &str) = ("TensorRT-LLM", "1.3.0rc14");

/// One row, as both derivations see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditRow {
    pub descriptor: String,
    pub mode: Mode,
    pub depth: Depth,
    pub oracle_label: Label,
    pub checker_label: Label,
    pub oracle_subtype: Option<Subtype>,
    pub checker_subtype: Option<Subtype>,
    /// Obligation codes the oracle finds supplied, in bundle order.
    pub oracle_satisfied: Vec<&'static str>,
    pub checker_satisfied: Vec<&'static str>,
    /// Label, subtype and satisfied set all agree.
    pub agree: bool,
}

/// The whole comparison.
#[derive(Debug, Clone)]
pub struct IndependentAudit {
    pub rows: Vec<AuditRow>,
    /// Problems of the suite itself (a descriptor missing, row sets differing).
    pub problems: Vec<String>,
    /// The path of the descriptor of [`PUBLISHED_RUNTIME`], whose rows the published
    /// file lists; `None` when no descriptor describes it (a scratch repository).
    pub subject: Option<String>,
}

/// Compares oracle and checker on every row of every descriptor.
pub fn run(
    catalog: &Catalog,
    descriptors: &[(&str, &Descriptor)],
    env: &dyn Environment,
) -> IndependentAudit {
    run_judged(catalog, descriptors, &[], env)
}

/// [`run`], taking the checker's judgment of a row from `matrix` (the
/// checker's rows of the same descriptors, in order) when it is there and
/// judging it otherwise.
pub fn run_judged(
    catalog: &Catalog,
    descriptors: &[(&str, &Descriptor)],
    matrix: &[kvlower_core::matrix::MatrixRow<'_>],
    env: &dyn Environment,
) -> IndependentAudit {
    use rayon::prelude::*;
    // Each descriptor with its rows of the matrix (adjacent, in descriptor order).
    let mut rest = matrix;
    let mut work = Vec::with_capacity(descriptors.len());
    for &(path, d) in descriptors {
        let mine = rest
            .iter()
            .take_while(|r| std::ptr::eq(r.descriptor, d))
            .count();
        let (judged, after) = rest.split_at(mine.min(rest.len()));
        rest = after;
        work.push((path, d, judged));
    }
    // On the thread pool, collected in descriptor order.
    let per_descriptor: Vec<(Option<String>, Vec<AuditRow>)> = work
        .into_par_iter()
        .map(|(path, d, judged)| audit_descriptor(catalog, path, d, judged, env))
        .collect();
    let mut rows = Vec::new();
    let mut problems = Vec::new();
    for (problem, found) in per_descriptor {
        problems.extend(problem);
        rows.extend(found);
    }
    let (name, version) = PUBLISHED_RUNTIME;
    let subjects: Vec<&(&str, &Descriptor)> = descriptors
        .iter()
        .filter(|(_, d)| d.runtime.name == name && d.runtime.version == version)
        .collect();
    if subjects.len() > 1 {
        problems.push(format!(
            "{} descriptors describe {name} {version}; the published audit lists one",
            subjects.len()
        ));
    }
    let subject = subjects.first().map(|(path, d)| {
        // Every mode of the catalog at every row depth of the descriptor.
        let expected = Mode::ALL.len() * kvlower_core::row_depths(d).len();
        let found = rows.iter().filter(|r| r.descriptor == *path).count();
        if found != expected {
            problems.push(format!("{path}: expected {expected} rows, found {found}"));
        }
        path.to_string()
    });
    IndependentAudit {
        rows,
        problems,
        subject,
    }
}

/// The oracle's and the checker's rows of one descriptor (the checker's from
/// `judged` when there), and a problem when they judge different row depths.
fn audit_descriptor(
    catalog: &Catalog,
    path: &str,
    d: &Descriptor,
    judged: &[kvlower_core::matrix::MatrixRow<'_>],
    env: &dyn Environment,
) -> (Option<String>, Vec<AuditRow>) {
    let mut rows = Vec::new();
    let checker_depths = kvlower_core::row_depths(d);
    let problem = (checker_depths != oracle_row_depths(d))
        .then(|| format!("{path}: the checker and the oracle judge different row depths"));
    for o in derive_all(catalog.doc(), d, env) {
        let found = judged
            .iter()
            .find(|r| r.judgment.mode == o.mode && r.judgment.depth == o.depth);
        let fresh;
        let j = match found {
            Some(r) => &r.judgment,
            None => {
                fresh = judge(catalog, d, o.mode, o.depth, env);
                &fresh
            }
        };
        let bundle = catalog.bundle(o.mode);
        let oracle_satisfied = codes(bundle.iter().copied().filter(|b| o.satisfied.contains(b)));
        let checker_satisfied = codes(j.satisfied());
        let agree =
            o.label == j.label && o.subtype == j.subtype && oracle_satisfied == checker_satisfied;
        rows.push(AuditRow {
            descriptor: path.to_string(),
            mode: o.mode,
            depth: o.depth,
            oracle_label: o.label,
            checker_label: j.label,
            oracle_subtype: o.subtype,
            checker_subtype: j.subtype,
            oracle_satisfied,
            checker_satisfied,
            agree,
        });
    }
    (problem, rows)
}

impl IndependentAudit {
    pub fn trt_rows(&self) -> impl Iterator<Item = &AuditRow> {
        self.rows
            .iter()
            .filter(|r| Some(&r.descriptor) == self.subject.as_ref())
    }

    /// (agreeing, total) over the TensorRT rc14 rows.
    pub fn trt_agreement(&self) -> (usize, usize) {
        let rows: Vec<&AuditRow> = self.trt_rows().collect();
        (rows.iter().filter(|r| r.agree).count(), rows.len())
    }

    /// (agreeing, total) over every row of every descriptor.
    pub fn all_agreement(&self) -> (usize, usize) {
        (
            self.rows.iter().filter(|r| r.agree).count(),
            self.rows.len(),
        )
    }

    pub fn summary(&self) -> String {
        let (a, n) = self.trt_agreement();
        let (aa, an) = self.all_agreement();
        format!(
            "{a}/{n} TensorRT rc14 rows agree; {aa}/{an} rows agree over every committed descriptor"
        )
    }

    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("independent audit: {p}"))
            .collect();
        for r in self.rows.iter().filter(|r| !r.agree) {
            out.push(format!(
                "independent audit: {} {}@{}: oracle says {} {:?} {:?}, checker says {} {:?} {:?}",
                r.descriptor,
                r.mode,
                r.depth,
                r.oracle_label,
                r.oracle_subtype,
                r.oracle_satisfied,
                r.checker_label,
                r.checker_subtype,
                r.checker_satisfied
            ));
        }
        out
    }

    /// `results/tensorrt-rc14-independent-descriptor-audit.json`.
    pub fn json(&self) -> String {
        #[derive(Serialize)]
        struct Row<'a> {
            mode: Mode,
            depth: Depth,
            oracle_label: Label,
            checker_label: Label,
            oracle_subtype: Option<Subtype>,
            checker_subtype: Option<Subtype>,
            oracle_satisfied: &'a [&'static str],
            checker_satisfied: &'a [&'static str],
            agree: bool,
        }
        #[derive(Serialize)]
        struct AllDescriptors {
            rows: usize,
            agree: usize,
        }
        #[derive(Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            descriptor: Option<&'a str>,
            rows: Vec<Row<'a>>,
            all_descriptors: AllDescriptors,
            summary: String,
        }
        let (agree, rows) = self.all_agreement();
        to_json(&Doc {
            schema_version: crate::SCHEMA_VERSION,
            descriptor: self.subject.as_deref(),
            rows: self
                .trt_rows()
                .map(|r| Row {
                    mode: r.mode,
                    depth: r.depth,
                    oracle_label: r.oracle_label,
                    checker_label: r.checker_label,
                    oracle_subtype: r.oracle_subtype,
                    checker_subtype: r.checker_subtype,
                    oracle_satisfied: &r.oracle_satisfied,
                    checker_satisfied: &r.checker_satisfied,
                    agree: r.agree,
                })
                .collect(),
            all_descriptors: AllDescriptors { rows, agree },
            summary: self.summary(),
        })
    }

    /// `results/tensorrt-rc14-independent-descriptor-audit.md`.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let (name, version) = PUBLISHED_RUNTIME;
        let _ = writeln!(md, "# {name} {version}: independent descriptor audit\n");
        md.push_str(
            "Generated by `kvlower matrix`; do not edit. A second derivation of every row of\n",
        );
        let _ = writeln!(
            md,
            "`{}`, written apart from the checker (`kvlower-audit/src/oracle.rs`:",
            self.subject.as_deref().unwrap_or("(no descriptor)")
        );
        md.push_str("its own anchor rules, enforcement set and label truth table over the catalog data; it\n");
        md.push_str(
            "never calls `kvlower_core::judgment` and never reads `results/lowering-matrix.*`),\n",
        );
        md.push_str("compared with the checker's label, subtype and satisfied obligations.\n");
        md.push_str("This is an independent audit over curated evidence, not proof that the runtime is complete.\n\n");
        let _ = writeln!(md, "**{}.**\n", self.summary());
        md.push_str(
            "| mode | depth | oracle | checker | oracle satisfied | checker satisfied | agree |\n",
        );
        md.push_str("|---|---|---|---|---|---|---|\n");
        for r in self.trt_rows() {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.mode,
                r.depth,
                label_text(r.oracle_label, r.oracle_subtype),
                label_text(r.checker_label, r.checker_subtype),
                dash(&r.oracle_satisfied),
                dash(&r.checker_satisfied),
                if r.agree { "yes" } else { "**NO**" }
            );
        }
        md
    }
}

fn label_text(label: Label, subtype: Option<Subtype>) -> String {
    match subtype {
        Some(s) => format!("{label} / {s}"),
        None => label.to_string(),
    }
}

fn dash(v: &[&str]) -> String {
    if v.is_empty() {
        "—".into()
    } else {
        v.join(", ")
    }
}
