//! Reads kvlower's inputs from a repository root into kvlower-core's typed
//! model, and reports every problem as a located, coded [`Diagnostic`].
//!
//! Layout read: `modes/modes.yaml` and `capabilities/*.yaml` under the root.
//! All YAML goes through [`yaml`]; this crate does the file-system I/O so that
//! kvlower-core does none.

use std::path::{Path, PathBuf};

use kvlower_core::descriptor::{AnchorDefect, ClaimedVerdict, Environment};
use kvlower_core::{Catalog, CatalogDoc, Descriptor};

pub mod diagnostic;
mod validate;
/// Every YAML call goes through this one crate (re-exported for callers).
pub use kvlower_yaml as yaml;

pub use diagnostic::{Code, Diagnostic};

/// Where the catalog lives, relative to the root.
pub const MODES_PATH: &str = "modes/modes.yaml";
/// Where descriptors live, relative to the root.
pub const CAPABILITIES_DIR: &str = "capabilities";

/// One descriptor file that parsed and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedDescriptor {
    /// Path relative to the root, with `/` separators (what reports print).
    pub path: String,
    pub descriptor: Descriptor,
}

/// Everything `check` and `matrix` work from.
#[derive(Debug)]
pub struct Repository {
    pub root: PathBuf,
    pub catalog: Catalog,
    pub descriptors: Vec<LoadedDescriptor>,
}

/// Why a repository could not be loaded at all.
#[derive(Debug)]
pub enum LoadFailure {
    /// Nothing to check: no `capabilities/*.yaml` (a usage problem, exit 2).
    NoDescriptors { dir: PathBuf },
    /// Input problems (exit 1). Sorted by file, line, code.
    Invalid(Vec<Diagnostic>),
}

/// Loads the catalog and every descriptor under `root`.
///
/// Descriptors that fail to load are reported and left out; the caller must
/// treat any diagnostic as a failed check (an invalid descriptor never
/// contributes rows, so it cannot raise a label either).
pub fn load_repository(root: &Path) -> Result<(Repository, Vec<Diagnostic>), LoadFailure> {
    let mut diagnostics = Vec::new();
    let catalog = load_catalog(root, &mut diagnostics);
    let files = descriptor_files(root).map_err(|d| LoadFailure::Invalid(vec![*d]))?;
    if files.is_empty() {
        return Err(LoadFailure::NoDescriptors {
            dir: root.join(CAPABILITIES_DIR),
        });
    }
    let Some(catalog) = catalog else {
        diagnostics.sort();
        return Err(LoadFailure::Invalid(diagnostics));
    };
    let env = FsEnvironment {
        root: root.to_path_buf(),
    };
    let mut descriptors = Vec::new();
    for rel in files {
        if let Some(descriptor) = load_descriptor(root, &rel, &catalog, &env, &mut diagnostics) {
            descriptors.push(LoadedDescriptor {
                path: rel,
                descriptor,
            });
        }
    }
    diagnostics.sort();
    Ok((
        Repository {
            root: root.to_path_buf(),
            catalog,
            descriptors,
        },
        diagnostics,
    ))
}

/// Reads and validates `modes/modes.yaml`, pushing diagnostics on failure.
pub fn load_catalog(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<Catalog> {
    let src = read_source(root, MODES_PATH, diagnostics)?;
    let doc: CatalogDoc = parse_yaml(MODES_PATH, &src, diagnostics)?;
    match Catalog::new(doc) {
        Ok(catalog) => Some(catalog),
        Err(errors) => {
            for e in errors {
                diagnostics.push(
                    Diagnostic::new(Code::InvalidCatalog, MODES_PATH, e.message)
                        .at_path(e.path)
                        .located_in(&src),
                );
            }
            None
        }
    }
}

/// Reads, parses and validates one descriptor (`rel` is relative to `root`).
pub fn load_descriptor(
    root: &Path,
    rel: &str,
    catalog: &Catalog,
    env: &dyn Environment,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Descriptor> {
    let src = read_source(root, rel, diagnostics)?;
    let descriptor: Descriptor = parse_yaml(rel, &src, diagnostics)?;
    let before = diagnostics.len();
    validate::descriptor(rel, &src, &descriptor, catalog, env, diagnostics);
    (diagnostics.len() == before).then_some(descriptor)
}

/// The descriptor files under `root/capabilities`, relative, sorted.
pub fn descriptor_files(root: &Path) -> Result<Vec<String>, Box<Diagnostic>> {
    let dir = root.join(CAPABILITIES_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(Box::new(Diagnostic::new(
                Code::UnreadableFile,
                CAPABILITIES_DIR,
                format!("cannot list the directory: {e}"),
            )));
        }
    };
    let mut files: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Anything named *.yaml is read, so a broken link or a directory with that
        // name is reported (unreadable-file) rather than silently skipped.
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .filter_map(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_string))
        .map(|name| format!("{CAPABILITIES_DIR}/{name}"))
        .collect();
    files.sort();
    Ok(files)
}

/// Reads a UTF-8 text file, reporting unreadable, non-UTF-8 and empty files.
pub fn read_source(root: &Path, rel: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<String> {
    let bytes = match std::fs::read(root.join(rel)) {
        Ok(bytes) => bytes,
        Err(e) => {
            diagnostics.push(
                Diagnostic::new(
                    Code::UnreadableFile,
                    rel,
                    format!("cannot read the file: {e}"),
                )
                .with_hint("check that the file exists and is readable"),
            );
            return None;
        }
    };
    let src = match String::from_utf8(bytes) {
        Ok(src) => src,
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = 1 + valid.iter().filter(|b| **b == b'\n').count();
            let col = 1 + valid.iter().rev().take_while(|b| **b != b'\n').count();
            diagnostics.push(
                Diagnostic::new(Code::InvalidUtf8, rel, "the file is not valid UTF-8")
                    .at(line, col)
                    .with_hint("save the file as UTF-8"),
            );
            return None;
        }
    };
    if src.contains('\0') {
        let (line, col) = diagnostic::line_col(&src, src.find('\0').unwrap_or(0));
        diagnostics.push(
            Diagnostic::new(Code::InvalidUtf8, rel, "the file contains a NUL byte")
                .at(line, col)
                .with_hint("descriptors are YAML text; is this a binary file?"),
        );
        return None;
    }
    let meaningful = src
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.trim() != "---");
    if !meaningful {
        diagnostics.push(
            Diagnostic::new(Code::EmptyFile, rel, "the file has no YAML content")
                .with_hint("start from an existing descriptor in capabilities/"),
        );
        return None;
    }
    Some(src)
}

/// Parses YAML into `T`, turning a failure into a coded diagnostic.
pub fn parse_yaml<T: serde::de::DeserializeOwned>(
    rel: &str,
    src: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<T> {
    match yaml::from_str::<T>(src) {
        Ok(value) => Some(value),
        Err(e) => {
            diagnostics.push(Diagnostic::from_yaml_error(rel, &e));
            None
        }
    }
}

/// The file system as the judgment's [`Environment`]: anchored repository
/// files must exist, a claimed gate verdict is re-run with `kvlower-trace`, and
/// a join evidence document (`*.join.json`) is re-run with `kvlower-join`.
pub struct FsEnvironment {
    pub root: PathBuf,
}

/// Anchored files with this suffix are `kvlower join` evidence documents.
pub const JOIN_EVIDENCE_SUFFIX: &str = ".join.json";

impl FsEnvironment {
    /// Re-runs the join the document records (its registry and event file,
    /// relative to the root) and compares the result with the document.
    fn join_evidence_reproduces(&self, path: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(self.root.join(path)) else {
            return false;
        };
        let Ok(committed) = serde_json::from_str::<kvlower_join::JoinReport>(&text) else {
            return false;
        };
        let Ok(registry) = kvlower_join::Registry::load(&self.root.join(&committed.registry))
        else {
            return false;
        };
        let Ok(events) = std::fs::File::open(self.root.join(&committed.events)) else {
            return false;
        };
        kvlower_join::join_reader(
            &registry,
            Path::new(&committed.registry),
            std::io::BufReader::new(events),
            Path::new(&committed.events),
            committed.format,
        )
        .is_ok_and(|rerun| rerun == committed)
    }
}

impl Environment for FsEnvironment {
    fn repo_file_defect(&self, path: &str) -> Option<AnchorDefect> {
        if !self.root.join(path).is_file() {
            return Some(AnchorDefect::RepoFileMissing);
        }
        if path.ends_with(JOIN_EVIDENCE_SUFFIX) && !self.join_evidence_reproduces(path) {
            return Some(AnchorDefect::JoinEvidenceDisagrees);
        }
        None
    }

    fn trace_verdict_defect(&self, path: &str, verdict: &ClaimedVerdict) -> Option<AnchorDefect> {
        let Ok(report) = kvlower_trace::evaluate_path(&self.root.join(path)) else {
            return Some(AnchorDefect::TraceVerdictUnverified);
        };
        let agrees = report.claims.iter().any(|claim| {
            claim.claim_id == verdict.claim_id
                && claim.gates.iter().any(|(gate, result)| {
                    gate.as_str() == verdict.gate.name() && result.pass == verdict.pass
                })
        });
        // A malformed trace supports nothing, whatever its verdicts say.
        (!agrees || !report.diagnostics.is_empty()).then_some(AnchorDefect::TraceVerdictDisagrees)
    }
}
