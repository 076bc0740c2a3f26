//! Reads kvlower's inputs from a repository root into kvlower-core's typed
//! model, and reports every problem as a located, coded [`Diagnostic`].
//!
//! Layout read: `modes/modes.yaml` and `capabilities/*.yaml` under the root.
//! All YAML goes through [`yaml`]; this crate does the file-system I/O so that
//! kvlower-core does none.

use std::cell::RefCell;
use std::collections::BTreeMap;
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
    let env = FsEnvironment::new(root.to_path_buf());
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

/// Reads and validates `modes/modes.yaml` and holds it to the built-in
/// baseline: a weakening or an alias is a finding and gives no catalog (so
/// nothing is judged under it). Pushes diagnostics on failure.
pub fn load_catalog(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<Catalog> {
    let (catalog, src) = read_catalog(root, diagnostics)?;
    let before = diagnostics.len();
    floor_findings(&catalog, &src, diagnostics);
    (diagnostics.len() == before).then_some(catalog)
}

/// Reads, parses and validates `modes/modes.yaml` without comparing it to the
/// baseline (what `kvlower catalog diff` shows); returns the catalog and its text.
pub fn read_catalog(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<(Catalog, String)> {
    let src = read_source(root, MODES_PATH, diagnostics)?;
    let doc: CatalogDoc = parse_yaml(MODES_PATH, &src, diagnostics)?;
    match Catalog::new(doc) {
        Ok(catalog) => Some((catalog, src)),
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

/// The catalog's findings against the floor: every YAML alias (two modes or
/// depths must not share one spec) and every weakening of the baseline, each
/// located at its mode, depth or list in `modes/modes.yaml`.
pub fn floor_findings(catalog: &Catalog, src: &str, diagnostics: &mut Vec<Diagnostic>) {
    if let Ok(structure) = yaml::structure(src) {
        for alias in &structure.aliases {
            let shared = match alias.path.split('.').collect::<Vec<_>>().as_slice() {
                ["modes", _] => "two modes would share one spec",
                ["depths", _] => "two depths would share one spec",
                _ => "a shared node would change in every place at once",
            };
            diagnostics.push(
                Diagnostic::new(
                    Code::CatalogAlias,
                    MODES_PATH,
                    format!(
                        "`{}` is an alias of `{}` (line {}): {shared}",
                        alias.path, alias.anchor_path, alias.anchor_location.0
                    ),
                )
                .at_path(alias.path.clone())
                .at(alias.location.0, alias.location.1)
                .with_hint("write the spec out in full; the catalog is the trust root and is reviewed line by line"),
            );
        }
    }
    // One finding per list: "removed from the bundle O[m]: `a`, `b`".
    let mut grouped: BTreeMap<(String, String, &'static str), Vec<String>> = BTreeMap::new();
    for change in catalog.changes() {
        if change.direction == kvlower_core::baseline::Direction::Weakened {
            grouped
                .entry((change.path, change.what, change.source))
                .or_default()
                .push(format!("`{}`", change.item));
        }
    }
    for ((path, what, source), items) in grouped {
        let mut d = Diagnostic::new(
            Code::CatalogWeakened,
            MODES_PATH,
            format!("{path}: {what}: {} ({source})", items.join(", ")),
        )
        .at_path(path.clone())
        .with_hint("the built-in baseline is the floor: restore the entry (a stricter catalog is fine); `kvlower catalog diff` lists every difference");
        d.location = catalog_location(src, &path);
        diagnostics.push(d);
    }
}

/// Where `path` is in the catalog text: the list itself, or the mode or depth
/// it belongs to when the list was left out.
pub fn catalog_location(src: &str, path: &str) -> Option<(usize, usize)> {
    let structure = yaml::structure(src).ok()?;
    let mut at = path;
    loop {
        if let Some(loc) = structure.location_of(at) {
            return Some(loc);
        }
        at = &at[..at.rfind('.')?];
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
    if let Ok(structure) = yaml::structure(&src) {
        let found = diagnostics.split_off(before);
        diagnostics.extend(once_per_aliased_defect(found, &structure));
    }
    (diagnostics.len() == before).then_some(descriptor)
}

/// One finding per defect: an anchor defect of a node reused through YAML
/// aliases is reported once, at the anchored node's definition, listing the
/// places that use it (instead of once per use, each at the alias).
fn once_per_aliased_defect(found: Vec<Diagnostic>, structure: &yaml::Structure) -> Vec<Diagnostic> {
    let mut out: Vec<Diagnostic> = Vec::new();
    let mut uses: Vec<Vec<String>> = Vec::new();
    for mut d in found {
        let anchor_code = matches!(
            d.code,
            Code::AnchorIncomplete | Code::AnchorFileMissing | Code::AnchorVerdictDisagrees
        );
        let used_at = d.yaml_path.clone();
        let mut aliased = false;
        if anchor_code && let Some(alias) = structure.alias_covering(&d.yaml_path) {
            let rest = &d.yaml_path[alias.path.len()..];
            d.yaml_path = format!("{}{rest}", alias.anchor_path);
            d.location = structure
                .location_of(&d.yaml_path)
                .or(Some(alias.anchor_location));
            aliased = true;
        }
        // The definition itself, or an earlier use, may already carry this defect.
        let same = out
            .iter()
            .position(|o| o.code == d.code && o.yaml_path == d.yaml_path && o.message == d.message);
        match same {
            Some(i) if anchor_code => uses[i].push(used_at),
            _ => {
                uses.push(if aliased { vec![used_at] } else { Vec::new() });
                out.push(d);
            }
        }
    }
    for (d, used) in out.iter_mut().zip(uses) {
        if !used.is_empty() {
            d.message = format!(
                "{} (this anchored node is also used at {})",
                d.message,
                used.join(", ")
            );
        }
    }
    out
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
    match yaml::from_str_all::<T>(src) {
        Ok(value) => Some(value),
        Err(errors) => {
            diagnostics.extend(errors.iter().map(|e| Diagnostic::from_yaml_error(rel, e)));
            None
        }
    }
}

/// The file system as the judgment's [`Environment`]: anchored repository
/// files must exist, a claimed gate verdict is re-run with `kvlower-trace`, and
/// a join evidence document (`*.join.json`) is re-run with `kvlower-join`.
///
/// Re-runs are cached per file, because the judgment asks about the same
/// anchor for every row (and every mutant of the audit suites).
pub struct FsEnvironment {
    pub root: PathBuf,
    traces: RefCell<BTreeMap<String, Option<kvlower_trace::TraceReport>>>,
    joins: RefCell<BTreeMap<String, Option<AnchorDefect>>>,
}

/// Anchored files with this suffix are `kvlower join` evidence documents.
pub const JOIN_EVIDENCE_SUFFIX: &str = ".join.json";

impl FsEnvironment {
    pub fn new(root: impl Into<PathBuf>) -> FsEnvironment {
        FsEnvironment {
            root: root.into(),
            traces: RefCell::default(),
            joins: RefCell::default(),
        }
    }

    /// A path recorded in a committed document must stay inside the repository.
    fn inside(&self, rel: &str) -> Option<PathBuf> {
        let p = Path::new(rel);
        let escapes = p.is_absolute()
            || p.components().any(|c| {
                !matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            });
        (!escapes).then(|| self.root.join(p))
    }

    /// Re-runs the join a document records and decides whether it may anchor
    /// evidence: it must reproduce exactly, every precondition must hold, the
    /// stream must be sequenced (a gap must be detectable) and ambiguity-free,
    /// and some claim must be materialized with no claim left insufficient.
    fn join_evidence_defect(&self, path: &str) -> Option<AnchorDefect> {
        if let Some(cached) = self.joins.borrow().get(path) {
            return cached.clone();
        }
        let defect = self.join_evidence_defect_uncached(path);
        self.joins
            .borrow_mut()
            .insert(path.to_string(), defect.clone());
        defect
    }

    fn join_evidence_defect_uncached(&self, path: &str) -> Option<AnchorDefect> {
        let disagrees = Some(AnchorDefect::JoinEvidenceDisagrees);
        let Ok(text) = std::fs::read_to_string(self.root.join(path)) else {
            return disagrees;
        };
        let Ok(committed) = serde_json::from_str::<kvlower_join::JoinReport>(&text) else {
            return disagrees;
        };
        let (Some(registry_path), Some(events_path)) = (
            self.inside(&committed.registry),
            self.inside(&committed.events),
        ) else {
            return disagrees;
        };
        let Ok(registry) = kvlower_join::Registry::load(&registry_path) else {
            return disagrees;
        };
        let Ok(events) = std::fs::File::open(events_path) else {
            return disagrees;
        };
        let reproduces = kvlower_join::join_reader(
            &registry,
            Path::new(&committed.registry),
            std::io::BufReader::new(events),
            Path::new(&committed.events),
            committed.format,
        )
        .is_ok_and(|rerun| rerun == committed);
        if !reproduces {
            return disagrees;
        }
        let statuses: Vec<&str> = committed
            .claims
            .iter()
            .map(|c| c.verdict.status())
            .collect();
        let holds = committed.preconditions.iter().all(|p| p.held)
            && committed.stream.sequence_checked
            && committed.stream.ambiguities.is_empty()
            && statuses.contains(&"materialized")
            && !statuses.contains(&"insufficient_evidence");
        (!holds).then_some(AnchorDefect::JoinEvidenceInsufficient)
    }
}

impl Environment for FsEnvironment {
    fn repo_file_defect(&self, path: &str) -> Option<AnchorDefect> {
        if !self.root.join(path).is_file() {
            return Some(AnchorDefect::RepoFileMissing);
        }
        if path.ends_with(JOIN_EVIDENCE_SUFFIX) {
            return self.join_evidence_defect(path);
        }
        None
    }

    fn trace_verdict_defect(&self, path: &str, verdict: &ClaimedVerdict) -> Option<AnchorDefect> {
        let mut cache = self.traces.borrow_mut();
        let report = cache
            .entry(path.to_string())
            .or_insert_with(|| kvlower_trace::evaluate_path(&self.root.join(path)).ok());
        let Some(report) = report else {
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
