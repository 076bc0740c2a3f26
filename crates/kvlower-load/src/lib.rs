//! Reads kvlower's inputs from a repository root into kvlower-core's typed
//! model, and reports every problem as a located, coded [`Diagnostic`].
//!
//! Layout read: `modes/modes.yaml` and `capabilities/*.yaml` under the root.
//! All YAML goes through [`yaml`]; this crate does the file-system I/O so that
//! kvlower-core does none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use kvlower_core::anchoring::{JoinDocumentFacts, RoutingDocumentFacts, TraceVerdictFacts};
use kvlower_core::descriptor::{AnchorDefect, ClaimedVerdict, Environment, RepoFile};
use kvlower_core::{Catalog, CatalogDoc, Descriptor};
pub use kvlower_fs::{FileKind, Refusal};

pub mod code_doc;
pub mod diagnostic;
mod validate;
/// Every YAML call goes through this one crate (re-exported for callers).
pub use kvlower_yaml as yaml;

pub use code_doc::CodeDoc;
pub use diagnostic::{Code, Diagnostic, Severity};

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
    let (files, misnamed) = descriptor_files(root).map_err(|d| LoadFailure::Invalid(vec![*d]))?;
    // Only misnamed descriptors is not "no descriptors": they are findings.
    if files.is_empty() && misnamed.is_empty() {
        return Err(LoadFailure::NoDescriptors {
            dir: root.join(CAPABILITIES_DIR),
        });
    }
    diagnostics.extend(misnamed);
    let Some(catalog) = catalog else {
        diagnostics.sort();
        return Err(LoadFailure::Invalid(diagnostics));
    };
    let env = FsEnvironment::new(root.to_path_buf());
    // Each file read, parsed and validated on the thread pool; collected in file order.
    use rayon::prelude::*;
    let loaded: Vec<(Option<LoadedDescriptor>, Vec<Diagnostic>)> = files
        .into_par_iter()
        .map(|rel| {
            let mut found = Vec::new();
            let descriptor = load_descriptor(root, &rel, &catalog, &env, &mut found);
            (
                descriptor.map(|descriptor| LoadedDescriptor {
                    path: rel,
                    descriptor,
                }),
                found,
            )
        })
        .collect();
    let mut descriptors = Vec::with_capacity(loaded.len());
    for (descriptor, found) in loaded {
        descriptors.extend(descriptor);
        diagnostics.extend(found);
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
    // The structure only relocates findings: a file without any needs no second pass.
    if diagnostics.len() > before
        && let Ok(structure) = yaml::structure(&src)
    {
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
        let used_at = d.yaml_path.clone();
        let mut aliased = false;
        // Any finding inside an aliased node (anchor fields, blank values, ...)
        // is a defect of the node itself.
        if let Some(alias) = structure.alias_covering(&d.yaml_path) {
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
            Some(i) => {
                if aliased {
                    uses[i].push(used_at);
                }
            }
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

/// The descriptor files under `root/capabilities`, relative, sorted, and a
/// finding for every `*.yaml` name that cannot be named safely (not UTF-8, or
/// with control characters): such a file is reported, never silently skipped,
/// so an invalid descriptor cannot pass `check` by its name.
pub fn descriptor_files(root: &Path) -> Result<(Vec<String>, Vec<Diagnostic>), Box<Diagnostic>> {
    let dir = root.join(CAPABILITIES_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => {
            return Err(Box::new(Diagnostic::new(
                Code::UnreadableFile,
                CAPABILITIES_DIR,
                format!("cannot list the directory: {e}"),
            )));
        }
    };
    let mut files = Vec::new();
    let mut findings = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                findings.push(Diagnostic::new(
                    Code::UnreadableFile,
                    CAPABILITIES_DIR,
                    format!("cannot list the directory: {e}"),
                ));
                continue;
            }
        };
        let name = entry.file_name();
        let lossy = name.to_string_lossy();
        // Anything named *.yaml is read, so a broken link or a directory with that
        // name is reported (unreadable-file) rather than silently skipped.
        if !(lossy.ends_with(".yaml") || lossy.ends_with(".yml")) {
            continue;
        }
        match name.to_str() {
            Some(name) if !name.chars().any(char::is_control) => {
                files.push(format!("{CAPABILITIES_DIR}/{name}"));
            }
            _ => findings.push(
                Diagnostic::new(
                    Code::InvalidFileName,
                    format!(
                        "{CAPABILITIES_DIR}/{}",
                        diagnostic::excerpt(&lossy, diagnostic::VALUE_MAX_CHARS)
                    ),
                    "the file name is not UTF-8 or contains control characters; the descriptor is not read",
                )
                .with_hint("rename the file (letters, digits, `-`, `_`, `.`)"),
            ),
        }
    }
    files.sort();
    findings.sort();
    Ok((files, findings))
}

/// Reads a UTF-8 text file, reporting refused (see [`kvlower_fs`]),
/// non-UTF-8 and empty files.
///
/// Confined to `root`; an empty `root` means `rel` was given on the command
/// line and is read as is (still regular files only, still capped).
pub fn read_source(root: &Path, rel: &str, diagnostics: &mut Vec<Diagnostic>) -> Option<String> {
    let kind = if rel == MODES_PATH {
        FileKind::Catalog
    } else {
        FileKind::Descriptor
    };
    let read = if root.as_os_str().is_empty() {
        kvlower_fs::read_path(Path::new(rel), kind)
    } else {
        kvlower_fs::read_confined(root, rel, kind)
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(refusal) => {
            diagnostics.push(Diagnostic::refused(rel, &refusal));
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

/// The file system as the judgment's [`Environment`]. It reports facts about
/// anchored repository files and re-runs what can be re-run — a claimed gate
/// verdict with `kvlower-trace`, a join evidence document (recognised by its
/// content, not its name) with `kvlower-join`; kvlower-core decides what the
/// facts are worth (`kvlower_core::anchor_counts`).
///
/// Every path is resolved (links included) and refused before it is opened
/// when it leaves the repository or is not a regular file. Re-runs are cached
/// per file, because the judgment asks about the same anchor for every row
/// (and every mutant of the audit suites).
pub struct FsEnvironment {
    pub root: PathBuf,
    /// The root resolved once (links included); `None` when it cannot be.
    canonical_root: Option<PathBuf>,
    traces: Mutex<BTreeMap<String, Option<kvlower_trace::TraceReport>>>,
    files: Mutex<BTreeMap<String, RepoFile>>,
}

/// The largest anchored file kvlower opens (a trace or a join document).
pub const MAX_ANCHORED_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// A committed evidence document `check` can re-run, recognised by content.
enum EvidenceDocument {
    Join(Box<Result<kvlower_join::JoinReport, ()>>),
    Route(Box<Result<kvlower_route::RouteReport, ()>>),
    Campaign(Box<Result<kvlower_trace::campaign_doc::CampaignDocument, ()>>),
    /// The file could not be read (permissions, an I/O error): refused, with why.
    Unreadable(String),
}

/// Why a path was refused before it was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRefusal {
    /// Absent.
    Missing,
    /// Absolute, climbing out, or resolving outside the root (links included).
    OutsideRoot,
    /// A directory, FIFO, socket or device.
    NotARegularFile,
    /// Larger than the cap.
    TooLarge,
}

impl FsEnvironment {
    pub fn new(root: impl Into<PathBuf>) -> FsEnvironment {
        let root = root.into();
        FsEnvironment {
            canonical_root: std::fs::canonicalize(&root).ok(),
            root,
            traces: Mutex::default(),
            files: Mutex::default(),
        }
    }

    /// Resolves a repository-relative path, following links, and refuses it
    /// before anything opens it: outside the root, not a regular file, too large.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, PathRefusal> {
        let p = Path::new(rel);
        let climbs = p.is_absolute()
            || p.components().any(|c| {
                !matches!(
                    c,
                    std::path::Component::Normal(_) | std::path::Component::CurDir
                )
            });
        if climbs {
            return Err(PathRefusal::OutsideRoot);
        }
        let root = self.canonical_root.as_ref().ok_or(PathRefusal::Missing)?;
        let resolved = match std::fs::canonicalize(root.join(p)) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                // A dangling link is missing, not refused; either way nothing opens it.
                return Err(PathRefusal::Missing);
            }
            Err(_) => return Err(PathRefusal::NotARegularFile),
        };
        if !resolved.starts_with(root) {
            return Err(PathRefusal::OutsideRoot);
        }
        // `metadata` on the resolved path never opens it: a FIFO is not read.
        let meta = std::fs::metadata(&resolved).map_err(|_| PathRefusal::Missing)?;
        if !meta.is_file() {
            return Err(PathRefusal::NotARegularFile);
        }
        if meta.len() > MAX_ANCHORED_FILE_BYTES {
            return Err(PathRefusal::TooLarge);
        }
        Ok(resolved)
    }

    fn classify(&self, rel: &str) -> RepoFile {
        let resolved = match self.resolve(rel) {
            Ok(r) => r,
            Err(PathRefusal::Missing) => return RepoFile::Missing,
            Err(why) => {
                return RepoFile::Refused {
                    why: format!("{why:?}"),
                };
            }
        };
        // After links: a file under kvlower's own directories is never evidence.
        if let Some(root) = &self.canonical_root
            && let Ok(inside) = resolved.strip_prefix(root)
            && inside
                .components()
                .next()
                .and_then(|c| c.as_os_str().to_str())
                .is_some_and(|first| kvlower_core::descriptor::OWN_DIRS.contains(&first))
        {
            return RepoFile::OwnFile;
        }
        match self.read_evidence_document(&resolved) {
            Some(EvidenceDocument::Join(doc)) => {
                RepoFile::JoinDocument(self.join_document_facts(*doc))
            }
            Some(EvidenceDocument::Route(doc)) => {
                RepoFile::RoutingDocument(self.routing_document_facts(*doc))
            }
            Some(EvidenceDocument::Campaign(doc)) => {
                RepoFile::CampaignDocument(self.campaign_document_facts(*doc))
            }
            Some(EvidenceDocument::Unreadable(why)) => RepoFile::Refused { why },
            None => RepoFile::Plain,
        }
    }

    /// A committed trace for the gate: resolved inside the root (refused paths are
    /// never opened) and read through the one safe read, within the trace cap.
    fn open_trace(
        &self,
        path: &str,
    ) -> Option<std::io::BufReader<kvlower_fs::CappedReader<std::fs::File>>> {
        let resolved = self.resolve(path).ok()?;
        let reader = kvlower_fs::open_path_reader(&resolved, kvlower_fs::FileKind::Trace).ok()?;
        Some(std::io::BufReader::with_capacity(1 << 16, reader))
    }

    /// Re-runs every trace a gate campaign names (each inside the repository, opened
    /// through the one safe read) and checks the scenarios' expectations.
    fn campaign_document_facts(
        &self,
        doc: Result<kvlower_trace::campaign_doc::CampaignDocument, ()>,
    ) -> kvlower_core::anchoring::CampaignDocumentFacts {
        let Ok(doc) = doc else {
            return kvlower_core::anchoring::CampaignDocumentFacts::default();
        };
        let outcome = doc.rerun(&|path: &str| self.open_trace(path));
        let runtime = kvlower_trace::recorded_runtime(&doc.runtime);
        kvlower_core::anchoring::CampaignDocumentFacts {
            held: outcome.held,
            witnessed: outcome.witnessed,
            runtime: Some(runtime),
        }
    }

    /// Re-runs the routing gate a document records: it must reproduce exactly from the
    /// trace it names and the registry that trace names (both inside the repository).
    fn routing_document_facts(
        &self,
        doc: Result<kvlower_route::RouteReport, ()>,
    ) -> RoutingDocumentFacts {
        let Ok(committed) = doc else {
            return RoutingDocumentFacts::default();
        };
        let reproduces = self.resolve(&committed.trace).is_ok_and(|trace_file| {
            kvlower_route::evaluate_with(&trace_file, &committed.trace, &|name| {
                self.resolve(name).ok()
            })
            .is_ok_and(|rerun| rerun == committed)
        });
        let held = committed
            .preconditions
            .iter()
            .filter(|p| p.held)
            .filter_map(|p| kvlower_core::Precondition::from_name(p.name.name()))
            .collect();
        let witnessed = committed
            .witnesses
            .iter()
            .filter_map(|o| kvlower_core::Obligation::from_name(o.name()))
            .collect();
        let runtime = committed.runtime.as_ref().map(|r| r.recorded());
        RoutingDocumentFacts {
            reproduces,
            depth: kvlower_core::Depth::from_name(&committed.depth),
            held,
            witnessed,
            runtime,
        }
    }

    /// Recognises an evidence document by content: a join document is a JSON
    /// object with the join report's identifying keys, a routing gate document
    /// one whose `kind` is `kvlower-routing-gate`. One that has them but does not
    /// parse as its report is still that document — one that cannot reproduce.
    fn read_evidence_document(&self, resolved: &Path) -> Option<EvidenceDocument> {
        // Resolved inside the root by the caller; opened through the one safe read
        // (regular files only, within the evidence document cap).
        let bytes = match kvlower_fs::read_path(resolved, kvlower_fs::FileKind::JoinDocument) {
            Ok(bytes) => bytes,
            // Larger than any evidence document: a trace (re-run through its verdict).
            Err(kvlower_fs::Refusal::TooLarge { .. }) => return None,
            // Unreadable: a refusal with its reason, never a plain file that hides it.
            Err(refusal) => return Some(EvidenceDocument::Unreadable(refusal.to_string())),
        };
        let text = String::from_utf8(bytes).ok()?;
        if !text.trim_start().starts_with('{') {
            return None;
        }
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        if kvlower_trace::campaign_doc::is_campaign_document(&value) {
            return Some(EvidenceDocument::Campaign(Box::new(
                serde_json::from_value(value).map_err(|_| ()),
            )));
        }
        if kvlower_route::is_route_report(&value) {
            return Some(EvidenceDocument::Route(Box::new(
                serde_json::from_value::<kvlower_route::RouteReport>(value).map_err(|_| ()),
            )));
        }
        let obj = value.as_object()?;
        let looks_like_join = ["depth", "registry", "events", "claims", "preconditions"]
            .iter()
            .all(|k| obj.contains_key(*k));
        if !looks_like_join {
            return None;
        }
        Some(EvidenceDocument::Join(Box::new(
            serde_json::from_value::<kvlower_join::JoinReport>(value).map_err(|_| ()),
        )))
    }

    /// Re-runs the join a document records: it must reproduce exactly from the
    /// registry and event file it names (both inside the repository).
    fn join_document_facts(&self, doc: Result<kvlower_join::JoinReport, ()>) -> JoinDocumentFacts {
        let Ok(committed) = doc else {
            return JoinDocumentFacts::default();
        };
        let runtime = committed
            .cache_identity
            .runtime
            .as_ref()
            .map(|r| r.recorded());
        JoinDocumentFacts {
            reproduces: self.rerun_join(&committed),
            depth: kvlower_core::Depth::from_name(&committed.depth),
            held: committed.held_preconditions().collect(),
            stream_sound: committed.stream_sound(),
            runtime,
        }
    }

    fn rerun_join(&self, committed: &kvlower_join::JoinReport) -> bool {
        let (Ok(registry_path), Ok(events_path)) = (
            self.resolve(&committed.registry),
            self.resolve(&committed.events),
        ) else {
            return false;
        };
        let Ok(registry) = kvlower_join::Registry::load(&registry_path) else {
            return false;
        };
        // Resolved inside the root above; opened through the one safe read.
        let Ok(events) = kvlower_join::input::open_events(&events_path) else {
            return false;
        };
        kvlower_join::join_reader(
            &registry,
            Path::new(&committed.registry),
            std::io::BufReader::new(events),
            Path::new(&committed.events),
            committed.format,
        )
        .is_ok_and(|rerun| rerun == *committed)
    }
}

impl Environment for FsEnvironment {
    fn repo_file(&self, path: &str) -> RepoFile {
        // A poisoned cache still holds only finished entries: keep using it.
        if let Some(cached) = self
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
        {
            return cached.clone();
        }
        // Classified outside the lock: two threads may classify one file at once,
        // and both find the same facts.
        let facts = self.classify(path);
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.to_string(), facts.clone());
        facts
    }

    fn trace_verdict(&self, path: &str, verdict: &ClaimedVerdict) -> TraceVerdictFacts {
        let mut cache = self.traces.lock().unwrap_or_else(PoisonError::into_inner);
        let report = cache.entry(path.to_string()).or_insert_with(|| {
            let reader = self.open_trace(path)?;
            Some(kvlower_trace::evaluate_reader(path, reader))
        });
        let Some(report) = report else {
            return TraceVerdictFacts {
                defect: Some(AnchorDefect::TraceVerdictUnverified),
                runtime: None,
            };
        };
        let agrees = report.claims.iter().any(|claim| {
            claim.claim_id == verdict.claim_id
                && claim
                    .gates
                    .iter()
                    .any(|(gate, result)| *gate == verdict.gate && result.pass == verdict.pass)
        });
        let runtime = report
            .runtime
            .as_deref()
            .map(kvlower_trace::recorded_runtime);
        TraceVerdictFacts {
            // A malformed trace supports nothing, whatever its verdicts say.
            defect: (!agrees || !report.diagnostics.is_empty())
                .then_some(AnchorDefect::TraceVerdictDisagrees),
            runtime,
        }
    }

    fn today(&self) -> (i32, u32, u32) {
        // A clock before 1970 (or unreadable) reads as 1970-01-01: every later date
        // is then "in the future" and refused, which fails closed.
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        civil_from_days(i64::try_from(secs / 86_400).unwrap_or(0))
    }
}

/// Days since 1970-01-01 to a (year, month, day) date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i32, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    (
        i32::try_from(y).unwrap_or(i32::MAX),
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

/// Warnings for a loaded descriptor's inert evidence (evidence the judgment can
/// never count: [`kvlower_core::judgment::inert_evidence`]), located in its source.
/// They never change a label; `check` prints them and fails on them only with
/// `--deny-warnings`.
pub fn inert_warnings(
    root: &Path,
    loaded: &LoadedDescriptor,
    catalog: &Catalog,
    env: &dyn Environment,
) -> Vec<Diagnostic> {
    use kvlower_core::judgment::{Inert, inert_evidence};
    let found = inert_evidence(catalog, &loaded.descriptor, env);
    if found.is_empty() {
        return Vec::new();
    }
    let mut ignored = Vec::new();
    let src = read_source(root, &loaded.path, &mut ignored);
    let structure = src.as_deref().and_then(|s| yaml::structure(s).ok());
    found
        .into_iter()
        .map(|inert| {
            let (code, hint) = match &inert.why {
                Inert::PreconditionsUnmet { .. } => (
                    Code::InertAdapter,
                    "anchor every precondition of the depth (`kvlower explain` lists them), or mark the items `missing`/`unknown`",
                ),
                Inert::TraceScopeNotPreserved { .. } => (
                    Code::InertTraceScope,
                    "state `preserves_order: true` and `preserves_claim_scope: true` on the anchor when the trace keeps them; otherwise use scope `source_inspection`",
                ),
                Inert::ScopeTooWeak { .. } => (
                    Code::InertScope,
                    "anchor the item to a trace the runtime produced, or write `status: unknown` with the docs or source reading as its anchor",
                ),
                Inert::ForbiddenSignalNotProposed { .. } => (
                    Code::SignalNotProposed,
                    "add a `proposals:` entry when someone offers the primitive as that mode, so the row is `rejected` rather than `approximate`",
                ),
            };
            let mut d = Diagnostic::new(code, loaded.path.clone(), inert.why.to_string())
                .at_path(inert.path.clone())
                .with_hint(hint);
            d.location = structure.as_ref().and_then(|s| s.location_of(&inert.path));
            match &src {
                Some(src) => d.located_in(src),
                None => d,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
