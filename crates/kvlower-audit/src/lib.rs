//! Audit suites that keep the checker honest, so that its answers are
//! trustworthy rather than self-certified (paper §8.1–§8.2, §9;
//! `docs/model.md`, "What the committed results reproduce"):
//!
//! - [`bad_lowering`]: feature-table counterexamples (Table 9 plus generic
//!   counters), each through the real checker or the real connector gate;
//! - [`mutation`] and [`trace_controls`]: sixteen kinds of small evidence,
//!   identity, order and source-shape mutations of every positive row (or of a
//!   passing synthetic trace), all of which must fail closed;
//! - [`provenance`]: the index of positive rows with their anchors, obligation
//!   codes and non-claims;
//! - [`oracle`] and [`independent`]: a second derivation of every row, written
//!   apart from the judgment, compared with it row by row.
//!
//! The crate is pure: it prints nothing and reads no files. The caller passes
//! the loaded catalog and descriptors and the contents of `bad_lowering/*`;
//! [`Audit::files`] returns the generated results and [`Audit::failures`] every
//! way a suite does not pass (for `kvlower check`).

pub mod bad_lowering;
pub mod explain;
pub mod independent;
pub mod mutation;
mod mutation_report;
pub mod oracle;
mod oracle_campaign;
pub mod provenance;
mod render;
pub mod rows;
pub mod synthetic;
pub mod trace_controls;

use kvlower_core::{Catalog, Descriptor, Environment};

pub use bad_lowering::{BadLowering, CaseSource};
pub use independent::IndependentAudit;
pub use mutation::MutationControls;
pub use provenance::ProvenanceIndex;
pub use render::{to_json, write_json, write_text};

/// Version of the JSON contracts of the audit results.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the counterexample data files live, relative to the repository root.
pub const BAD_LOWERING_DIR: &str = "bad_lowering";

pub const BAD_LOWERING_MD: &str = "results/bad-lowering-counterexamples.md";
pub const BAD_LOWERING_JSON: &str = "results/bad-lowering-counterexamples.json";
pub const MUTATIONS_MD: &str = "results/descriptor-evidence-mutation-controls.md";
pub const MUTATIONS_JSON: &str = "results/descriptor-evidence-mutation-controls.json";
pub const PROVENANCE_MD: &str = "results/descriptor-provenance.md";
pub const PROVENANCE_JSON: &str = "results/descriptor-provenance.json";
pub const INDEPENDENT_MD: &str = "results/tensorrt-rc14-independent-descriptor-audit.md";
pub const INDEPENDENT_JSON: &str = "results/tensorrt-rc14-independent-descriptor-audit.json";

/// One generated result file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputFile {
    /// Relative to the repository root.
    pub path: &'static str,
    pub contents: String,
}

/// Writes one generated result into a writer (see [`LazyFile`]).
pub type WriteFile<'a> = dyn Fn(&mut dyn std::io::Write) -> std::io::Result<()> + 'a;

/// One generated result file, rendered only when it is written: `kvlower check`,
/// which only compares it with the committed file, streams it into the
/// comparison instead of holding it whole (the largest results are tens of
/// megabytes at 2,000 descriptors); [`LazyFile::render`] gives the whole text
/// for a caller that writes or diffs it.
#[derive(Clone, Copy)]
pub struct LazyFile<'a> {
    /// Relative to the repository root.
    pub path: &'static str,
    /// Writes the file's bytes; may be called more than once (same bytes).
    pub write: &'a WriteFile<'a>,
}

impl LazyFile<'_> {
    /// The whole file. Rendering into memory cannot fail; if a serializer ever
    /// did, its error is the file's text (a stale result, not a panic), as
    /// `to_json` has always done.
    pub fn render(&self) -> String {
        let mut bytes = Vec::new();
        match (self.write)(&mut bytes) {
            Ok(()) => String::from_utf8(bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
            Err(e) => format!("{{\"error\": \"{e}\"}}\n"),
        }
    }
}

/// Every suite's verdicts.
#[derive(Debug, Clone)]
pub struct Audit {
    /// `None` when the repository has no `bad_lowering/` directory at all (a
    /// scratch repository); an existing but empty directory is a finding.
    pub bad_lowering: Option<BadLowering>,
    pub mutations: MutationControls,
    pub provenance: ProvenanceIndex,
    pub independent: IndependentAudit,
    /// Problems locating the evidence of positive rows.
    pub row_problems: Vec<String>,
}

impl Audit {
    /// Runs every suite. `descriptors` are `(path relative to the root, descriptor)`,
    /// sorted by path; `cases` are the contents of `bad_lowering/*` (`None`
    /// when there is no such directory).
    pub fn run(
        catalog: &Catalog,
        descriptors: &[(&str, &Descriptor)],
        env: &dyn Environment,
        cases: Option<&[CaseSource]>,
    ) -> Audit {
        let matrix = kvlower_core::matrix::judge_all(catalog, descriptors.iter().copied(), env);
        Audit::run_judged(catalog, descriptors, &matrix, env, cases)
    }

    /// [`Audit::run`] on the matrix of the same descriptors, already judged
    /// (`judge_all`'s rows, in its order): the caller's results and the suites
    /// share one judgment of every row.
    pub fn run_judged(
        catalog: &Catalog,
        descriptors: &[(&str, &Descriptor)],
        matrix: &[kvlower_core::matrix::MatrixRow<'_>],
        env: &dyn Environment,
        cases: Option<&[CaseSource]>,
    ) -> Audit {
        let positives = matrix
            .iter()
            .filter(|r| r.judgment.label.is_positive())
            .cloned();
        let (rows, row_problems) = rows::positive_rows_of(positives);
        Audit {
            bad_lowering: cases.map(|cases| bad_lowering::run(catalog, cases, env)),
            mutations: mutation::run(catalog, &rows, env, &trace_controls::outcomes),
            provenance: provenance::build(&rows),
            independent: independent::run_judged(catalog, descriptors, matrix, env),
            row_problems,
        }
    }

    /// The generated results, in a fixed order, rendered whole.
    pub fn files(&self) -> Vec<OutputFile> {
        let mut files = Vec::new();
        self.each_file(&mut |f| {
            files.push(OutputFile {
                path: f.path,
                contents: f.render(),
            });
        });
        files
    }

    /// [`Audit::files`] one at a time, in the same order, each rendered only
    /// when `each` writes it (a caller that only compares them never holds
    /// one whole: the two largest stream their bytes).
    pub fn each_file(&self, each: &mut dyn FnMut(LazyFile<'_>)) {
        if let Some(b) = &self.bad_lowering {
            each(LazyFile {
                path: BAD_LOWERING_JSON,
                write: &|w| w.write_all(b.json().as_bytes()),
            });
            each(LazyFile {
                path: BAD_LOWERING_MD,
                write: &|w| w.write_all(b.markdown().as_bytes()),
            });
        }
        each(LazyFile {
            path: MUTATIONS_JSON,
            write: &|w| self.mutations.write_json(w),
        });
        each(LazyFile {
            path: MUTATIONS_MD,
            write: &|w| render::write_text(w, |md| self.mutations.write_markdown(md)),
        });
        each(LazyFile {
            path: PROVENANCE_JSON,
            write: &|w| self.provenance.write_json(w),
        });
        each(LazyFile {
            path: PROVENANCE_MD,
            write: &|w| w.write_all(self.provenance.markdown().as_bytes()),
        });
        each(LazyFile {
            path: INDEPENDENT_JSON,
            write: &|w| w.write_all(self.independent.json().as_bytes()),
        });
        each(LazyFile {
            path: INDEPENDENT_MD,
            write: &|w| w.write_all(self.independent.markdown().as_bytes()),
        });
    }

    /// Every way a suite does not pass, one message each; empty when all pass.
    pub fn failures(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(b) = &self.bad_lowering {
            out.extend(b.failures().into_iter().map(|m| (BAD_LOWERING_JSON, m)));
        }
        out.extend(
            self.row_problems
                .iter()
                .map(|p| (MUTATIONS_JSON, format!("positive rows: {p}"))),
        );
        out.extend(
            self.mutations
                .failures()
                .into_iter()
                .map(|m| (MUTATIONS_JSON, m)),
        );
        out.extend(
            self.provenance
                .failures()
                .into_iter()
                .map(|m| (PROVENANCE_JSON, m)),
        );
        out.extend(
            self.independent
                .failures()
                .into_iter()
                .map(|m| (INDEPENDENT_JSON, m)),
        );
        out
    }

    /// One line per suite, for command output and reports.
    pub fn summaries(&self) -> Vec<String> {
        vec![
            format!(
                "bad-lowering: {}",
                self.bad_lowering.as_ref().map_or(
                    "no bad_lowering/ directory".to_string(),
                    BadLowering::summary
                )
            ),
            format!("mutation controls: {}", self.mutations.summary()),
            format!("provenance: {}", self.provenance.summary()),
            format!("independent audit: {}", self.independent.summary()),
        ]
    }
}

/// Every suite failure as `(result path, message)`; what `kvlower check` reports.
pub fn suite_failures(
    catalog: &Catalog,
    descriptors: &[(&str, &Descriptor)],
    env: &dyn Environment,
    cases: Option<&[CaseSource]>,
) -> Vec<(&'static str, String)> {
    Audit::run(catalog, descriptors, env, cases).failures()
}
