//! The generated results under `results/`: computed in memory from the
//! descriptors, written by `kvlower matrix`, compared by `kvlower check`.
//!
//! Every file is a pure function of the inputs: sorted, no timestamps, no
//! absolute paths, LF line endings, a trailing newline.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kvlower_core::matrix::{MatrixRow, judge_descriptor};
use kvlower_core::{Label, Mode, Obligation};
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;
use serde::Serialize;

use crate::generated::{GeneratedFile, LazyFile, write_json, write_text};
use crate::output::{md_cell, md_code};

/// Version of the JSON contracts below; bump on any breaking change.
pub const SCHEMA_VERSION: u32 = 1;

/// Every generated result, with the audit it was computed from: `check` turns
/// the same audit's failures into findings, so a command runs the suites once.
#[derive(Debug)]
pub struct Generated {
    pub files: Vec<GeneratedFile>,
    pub audit: kvlower_audit::Audit,
}

/// Computes the generated results `config` keeps (docs/config.md), running the
/// audit suites once; the matrix and the suites judge through one environment,
/// so each anchored trace is read and evaluated once.
pub fn generate(repo: &Repository, config: &crate::config::Config) -> Generated {
    let env = FsEnvironment::new(repo.root.clone());
    generate_in(repo, config, &judge_rows(repo, &env), &env)
}

/// Every row of the repository's matrix, judged once for every result, suite
/// and rule of a command.
/// Descriptors are judged on the thread pool; the rows keep the order of
/// [`judge_all`](kvlower_core::matrix::judge_all).
pub fn judge_rows<'a>(repo: &'a Repository, env: &FsEnvironment) -> Vec<MatrixRow<'a>> {
    use rayon::prelude::*;
    let per_descriptor: Vec<Vec<MatrixRow<'a>>> = repo
        .descriptors
        .par_iter()
        .map(|d| {
            let mut rows = judge_descriptor(&repo.catalog, d.path.as_str(), &d.descriptor, env);
            for row in &mut rows {
                compact(&mut row.judgment);
            }
            rows
        })
        .collect();
    // Sized once: `flatten().collect()` grows by doubling and would keep up to
    // half the matrix's row slots unused for the whole command.
    let mut rows = Vec::with_capacity(per_descriptor.iter().map(Vec::len).sum());
    rows.extend(per_descriptor.into_iter().flatten());
    rows
}

/// Drops what no generated result, audit suite or `check` rule reads of a matrix
/// row: every candidate that did not count and why (`rejected`), redundant
/// support and the proposal findings (the label's reason names the offer).
/// `kvlower explain` judges a row again for them. Keeps a 2,000-descriptor
/// matrix from holding every defeat of every row at once.
fn compact(j: &mut kvlower_core::Judgment) {
    for f in &mut j.obligations {
        f.rejected = Vec::new();
        f.also_satisfied_by = Vec::new();
    }
    for a in &mut j.atoms {
        a.rejected = Vec::new();
    }
    j.proposals = Vec::new();
}

/// [`generate`] from the matrix already judged through `env` ([`judge_rows`]), so
/// a caller that needs the rows again (`check`'s cited-positive rule) judges
/// nothing and re-runs no anchored evidence a second time.
pub fn generate_in(
    repo: &Repository,
    config: &crate::config::Config,
    rows: &[MatrixRow<'_>],
    env: &FsEnvironment,
) -> Generated {
    let audit = crate::suites::run_judged(repo, rows, env);
    // Only the kept files are rendered (the page re-judges every descriptor).
    let mut files = Vec::new();
    each_file(repo, rows, &audit, env, &mut |f| {
        if config.keeps(f.path) {
            files.push(GeneratedFile::of(&f));
        }
    });
    Generated { files, audit }
}

/// Every file kvlower can generate, from an audit already run (before
/// `kvlower.toml` chooses which of them the repository keeps).
pub fn files(
    repo: &Repository,
    env: &FsEnvironment,
    audit: &kvlower_audit::Audit,
) -> Vec<GeneratedFile> {
    files_of(repo, &judge_rows(repo, env), audit, env)
}

/// [`files`] from the matrix already judged ([`judge_rows`]).
pub fn files_of(
    repo: &Repository,
    rows: &[MatrixRow<'_>],
    audit: &kvlower_audit::Audit,
    env: &FsEnvironment,
) -> Vec<GeneratedFile> {
    let mut files = Vec::new();
    each_file(repo, rows, audit, env, &mut |f| {
        files.push(GeneratedFile::of(&f))
    });
    files
}

/// [`files_of`] one at a time, in the same order, each rendered only when
/// `each` writes it and dropped before the next: `check`, which only compares
/// them, streams the largest (the matrix JSON, ~21 MB at 2,000 descriptors)
/// into its comparison and never holds every result at once.
pub fn each_file(
    repo: &Repository,
    rows: &[MatrixRow<'_>],
    audit: &kvlower_audit::Audit,
    env: &FsEnvironment,
    each: &mut dyn FnMut(LazyFile<'_>),
) {
    // Which evidence folders CI re-runs live (their `reproduce.json`), read once
    // for the three matrices' reproduced marks.
    let manifests = crate::html_page::Manifests::read(&repo.root, rows);
    each(LazyFile {
        path: "results/lowering-matrix.json",
        write: &|w| write_matrix_json(rows, &repo.catalog, &manifests, w),
    });
    each(LazyFile {
        path: "results/lowering-matrix.md",
        write: &|w| {
            write_text(w, |md| {
                write_matrix_markdown(rows, &repo.catalog, &manifests, md)
            })
        },
    });
    // The page judges every descriptor again, in full, through `env`
    // (docs/report.md); rendered only when the repository keeps it.
    each(LazyFile {
        path: crate::html_page::REPORT_HTML,
        write: &|w| {
            write_text(w, |html| {
                crate::html_page::write_report(repo, rows, env, &manifests, html)
            })
        },
    });
    each(LazyFile {
        path: "results/central-result-table.md",
        write: &|w| w.write_all(central_table(rows).as_bytes()),
    });
    for file in crate::schema::files(&repo.catalog) {
        each(LazyFile {
            path: file.path,
            write: &|w| w.write_all(file.contents.as_bytes()),
        });
    }
    crate::suites::each_file(audit, each);
    // The README's runtimes table, when the README has the markers.
    if let Some(readme) = crate::readme::regenerated(&repo.root, rows) {
        each(LazyFile {
            path: crate::readme::README,
            write: &|w| w.write_all(readme.as_bytes()),
        });
    }
}

/// What `results/lowering-matrix.json` records about the catalog it was judged under.
#[derive(Debug, Serialize)]
pub struct CatalogPin {
    /// SHA-256 of the canonical serialization of the catalog as written.
    pub digest: String,
    /// The same digest of the built-in baseline.
    pub baseline_digest: String,
    /// True when the catalog differs from the baseline in no rule.
    pub equals_baseline: bool,
    /// Every difference from the baseline (only strengthenings and neutral
    /// changes reach a generated result: a weakening is a finding).
    pub local_changes: Vec<String>,
}

impl CatalogPin {
    pub fn of(catalog: &kvlower_core::Catalog) -> CatalogPin {
        let changes = catalog.changes();
        CatalogPin {
            digest: catalog.digest(),
            baseline_digest: kvlower_core::catalog::digest(&kvlower_core::baseline::doc()),
            equals_baseline: changes.is_empty(),
            local_changes: changes.iter().map(ToString::to_string).collect(),
        }
    }
}

/// A row of `results/lowering-matrix.json` (a contract other tools read).
#[derive(Debug, Serialize)]
pub struct JsonRow<'a> {
    pub descriptor: &'a str,
    pub runtime: String,
    /// The date the descriptor was last checked against its runtime's sources.
    pub reviewed: &'a str,
    pub mode: Mode,
    pub depth: kvlower_core::Depth,
    pub label: Label,
    pub subtype: Option<kvlower_core::Subtype>,
    /// Positive rows only: `verified` (every anchor re-run by `check`) or `cited`.
    pub grade: Option<kvlower_core::Grade>,
    pub satisfied: Vec<&'static str>,
    pub missing: Vec<&'static str>,
    pub missing_atoms: Vec<&'static str>,
    pub approximation_signals: Vec<&'static str>,
    /// Why the label: one sentence.
    pub reason: String,
    /// For each satisfied obligation, the evidence that supplied it.
    pub evidence: BTreeMap<&'static str, JsonEvidence<'a>>,
    /// `verified` rows only: whether CI re-runs the row's evidence live
    /// (a `reproduce.json` in each evidence folder it rests on; docs/evidence.md),
    /// derived from the committed files. Absent on every other row (a `null` on
    /// each would add a line per row to a file whose diffs `check` prints).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reproduction: Option<crate::html_page::Reproduction>,
    pub non_claim: &'a str,
}

#[derive(Debug, Serialize)]
pub struct JsonEvidence<'a> {
    pub depth: String,
    pub path: String,
    pub anchor: String,
    /// Whether `check` re-ran this evidence from files committed here.
    pub rerun: bool,
    /// What carries the obligation in the runtime itself — a field, event,
    /// metric or API, as the descriptor's `carried_by` names it from the
    /// anchored source (empty when the descriptor names none).
    pub carried_by: &'a [String],
}

fn json_row<'a>(row: &MatrixRow<'a>, manifests: &crate::html_page::Manifests) -> JsonRow<'a> {
    let j = &row.judgment;
    JsonRow {
        descriptor: row.descriptor_path,
        runtime: runtime_name(row),
        reviewed: row.descriptor.runtime.reviewed.as_str(),
        mode: j.mode,
        depth: j.depth,
        label: j.label,
        subtype: j.subtype,
        grade: j.grade,
        satisfied: j.satisfied().map(|o| o.name()).collect(),
        missing: j.missing().map(|o| o.name()).collect(),
        missing_atoms: j.missing_atoms().map(|a| a.name()).collect(),
        approximation_signals: j.signals.iter().map(|s| s.name()).collect(),
        reason: j.reason.to_string(),
        evidence: j
            .obligations
            .iter()
            .filter_map(|f| {
                f.satisfied_by.as_ref().map(|e| {
                    (
                        f.obligation.name(),
                        JsonEvidence {
                            depth: e.depth.to_string(),
                            path: e.path.clone(),
                            anchor: e.anchor.clone(),
                            rerun: e.rerun,
                            carried_by: crate::html_page::carriers_at(row.descriptor, &e.path),
                        },
                    )
                })
            })
            .collect(),
        reproduction: manifests.of_row(row.descriptor, j),
        non_claim: row.descriptor.non_claims.for_mode(j.mode),
    }
}

pub fn runtime_name(row: &MatrixRow<'_>) -> String {
    let r = &row.descriptor.runtime;
    format!("{} {}", r.name, r.version)
}

/// `results/lowering-matrix.json`, written into `w` as it is produced (never
/// held whole by `check`; [`LazyFile::render`] gives the text).
pub fn write_matrix_json(
    rows: &[MatrixRow<'_>],
    catalog: &kvlower_core::Catalog,
    manifests: &crate::html_page::Manifests,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    #[derive(Serialize)]
    struct Doc<'r, 'a> {
        schema_version: u32,
        /// The catalog the rows were judged under (`check` verifies it).
        catalog: CatalogPin,
        rows: JsonRows<'r, 'a>,
    }
    let doc = Doc {
        schema_version: SCHEMA_VERSION,
        catalog: CatalogPin::of(catalog),
        rows: JsonRows(rows, manifests),
    };
    write_json(&doc, w)
}

/// The rows of `results/lowering-matrix.json`, each converted as it is
/// written (the same JSON as a `Vec<JsonRow>`, without holding one).
struct JsonRows<'r, 'a>(&'r [MatrixRow<'a>], &'r crate::html_page::Manifests);

impl Serialize for JsonRows<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|r| json_row(r, self.1)))
    }
}

/// `results/lowering-matrix.md`: a table per descriptor, then why each
/// non-positive row missed. Written into `md` as it is produced: `check`
/// streams it (4 MB at 2,000 descriptors) into its comparison with the
/// committed file instead of holding it.
pub fn write_matrix_markdown(
    rows: &[MatrixRow<'_>],
    catalog: &kvlower_core::Catalog,
    manifests: &crate::html_page::Manifests,
    md: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    md.write_str("# Lowering matrix\n\n")?;
    md.write_str("Generated by `kvlower matrix` from `modes/modes.yaml` and `capabilities/*.yaml`; do not edit.\n")?;
    let pin = CatalogPin::of(catalog);
    if pin.equals_baseline {
        md.write_str("Catalog: `modes/modes.yaml` equals the built-in baseline.\n")?;
    } else {
        writeln!(
            md,
            "Catalog: `modes/modes.yaml` has {} local change(s) from the built-in baseline:",
            pin.local_changes.len()
        )?;
        for c in &pin.local_changes {
            writeln!(md, "- {c}")?;
        }
    }
    md.write_str("Labels: `native_sound`, `sound_with_adapter` (with subtype), `rejected`, `approximate`, `unknown`.\n")?;
    md.write_str("A positive label means every obligation is supported by curated, anchored evidence at the stated depth;\n")?;
    md.write_str("it does not certify unaudited runtime paths. The grade of a positive row says how it is backed:\n")?;
    md.write_str("`verified` when `kvlower check` re-ran every anchor from files committed here, `cited` otherwise.\n")?;
    md.write_str("A `verified` row is also *reproduced by CI on every landing* when every evidence folder it rests on has a\n")?;
    md.write_str("`reproduce.json` that `.ci/run` re-runs live (only on machines whose CPU has its `cpu_flags`, when it names some),\n")?;
    md.write_str(
        "and *checked from committed files only* otherwise (docs/conformance.md section 7).\n",
    )?;
    let counts = label_counts(rows);
    writeln!(
        md,
        "\n{} rows: {}.",
        rows.len(),
        counts
            .iter()
            .map(|(l, n)| format!("{n} {l}"))
            .collect::<Vec<_>>()
            .join(", ")
    )?;
    let mut current = "";
    for row in rows {
        if row.descriptor_path != current {
            current = row.descriptor_path;
            writeln!(
                md,
                "\n## {} ({})\n\nReviewed against its runtime's sources on {}.\n",
                md_cell(&runtime_name(row)),
                md_code(current),
                md_cell(&row.descriptor.runtime.reviewed)
            )?;
            md.write_str(
                "| mode | depth | label | subtype | grade | satisfied | missing | signals | why |\n",
            )?;
            md.write_str("|---|---|---|---|---|---|---|---|---|\n")?;
        }
        let j = &row.judgment;
        let mut missing: Vec<String> = j.missing().map(|o| o.code().to_string()).collect();
        missing.extend(j.missing_atoms().map(|a| a.name().to_string()));
        writeln!(
            md,
            "| {} | {} | **{}** | {} | {} | {} | {} | {} | {} |",
            j.mode,
            j.depth,
            j.label,
            j.subtype.map_or("—".to_string(), |s| s.to_string()),
            grade_text(row, manifests),
            codes_or_dash(j.satisfied().map(|o| o.code().to_string()).collect()),
            codes_or_dash(missing),
            codes_or_dash(j.signals.iter().map(|s| s.to_string()).collect()),
            j.reason,
        )?;
    }
    md.write_char('\n')?;
    md.write_str(&code_legend())
}

/// A row's grade in the Markdown matrix: a `verified` row with its reproduction.
fn grade_text(row: &MatrixRow<'_>, manifests: &crate::html_page::Manifests) -> String {
    let j = &row.judgment;
    match (j.grade, manifests.of_row(row.descriptor, j)) {
        (Some(g), Some(r)) => format!("{g}, {}", r.phrase()),
        (Some(g), None) => g.to_string(),
        (None, _) => "—".to_string(),
    }
}

/// "Obligation codes: I claim_identity, …" for every obligation, in
/// declaration order, wrapped at [`LEGEND_WIDTH`] characters.
fn code_legend() -> String {
    let mut lines = vec![String::from("Obligation codes:")];
    let last = Obligation::ALL.len().saturating_sub(1);
    for (i, o) in Obligation::ALL.iter().enumerate() {
        let item = format!("{} {}{}", o.code(), o, if i == last { "." } else { "," });
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + item.chars().count() <= LEGEND_WIDTH => {
                line.push(' ');
                line.push_str(&item);
            }
            _ => lines.push(item),
        }
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The widest line of the obligation-code legend.
const LEGEND_WIDTH: usize = 120;

fn codes_or_dash(v: Vec<String>) -> String {
    if v.is_empty() {
        "—".to_string()
    } else {
        v.join(", ")
    }
}

/// Row counts per label, strongest label first.
fn label_counts(rows: &[MatrixRow<'_>]) -> Vec<(Label, usize)> {
    Label::ALL
        .iter()
        .rev()
        .map(|l| (*l, rows.iter().filter(|r| r.judgment.label == *l).count()))
        .collect()
}

/// `results/central-result-table.md`: one line per substrate, like paper Table 6.
pub fn central_table(rows: &[MatrixRow<'_>]) -> String {
    let mut md = String::new();
    md.push_str("# Central result table\n\n");
    md.push_str("Generated by `kvlower matrix`; one line per substrate (descriptor): its best current evidence\n");
    md.push_str("(positive rows, else its strongest non-positive rows) and the fail-closed boundary it must not cross.\n\n");
    md.push_str("| substrate | descriptor | best current evidence | fail-closed boundary |\n|---|---|---|---|\n");
    let mut by_descriptor: BTreeMap<&str, Vec<&MatrixRow<'_>>> = BTreeMap::new();
    for row in rows {
        by_descriptor
            .entry(row.descriptor_path)
            .or_default()
            .push(row);
    }
    for (path, rows) in by_descriptor {
        let Some(first) = rows.first() else { continue };
        let positives: Vec<String> = rows
            .iter()
            .filter(|r| r.judgment.label.is_positive())
            .map(|r| {
                format!(
                    "`{}` at `{}`: {} ({})",
                    r.judgment.mode,
                    r.judgment.depth,
                    r.judgment
                        .subtype
                        .map_or(r.judgment.label.to_string(), |s| s.to_string()),
                    r.judgment.grade.map_or("—".to_string(), |g| g.to_string())
                )
            })
            .collect();
        let evidence = if positives.is_empty() {
            let approx: Vec<String> = dedup_modes(&rows, Label::Approximate);
            if approx.is_empty() {
                "no positive row; no approximation".to_string()
            } else {
                format!("no positive row; approximate: {}", approx.join(", "))
            }
        } else {
            positives.join("; ")
        };
        let rejected = dedup_modes(&rows, Label::Rejected);
        let mut boundary = first.descriptor.non_claims.default.clone();
        if !rejected.is_empty() {
            let _ = write!(boundary, " Rejected: {}.", rejected.join(", "));
        }
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            md_cell(&runtime_name(first)),
            md_code(path),
            md_cell(&evidence),
            md_cell(&boundary)
        );
    }
    md
}

fn dedup_modes(rows: &[&MatrixRow<'_>], label: Label) -> Vec<String> {
    let mut modes: Vec<String> = rows
        .iter()
        .filter(|r| r.judgment.label == label)
        .map(|r| format!("`{}`", r.judgment.mode))
        .collect();
    modes.dedup();
    modes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The legend names every obligation once, with its code, in declaration
    /// order, within the width (it is generated, not a copy of the vocabulary).
    #[test]
    fn the_code_legend_lists_every_obligation() {
        let legend = code_legend();
        assert!(legend.lines().all(|l| l.chars().count() <= LEGEND_WIDTH));
        let body = legend.trim_start_matches("Obligation codes: ");
        let items: Vec<&str> = body
            .split([',', '.', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let expected: Vec<String> = Obligation::ALL
            .iter()
            .map(|o| format!("{} {}", o.code(), o.name()))
            .collect();
        assert_eq!(items, expected);
        assert!(legend.ends_with("reuse_routing_attribution.\n"));
    }
}
