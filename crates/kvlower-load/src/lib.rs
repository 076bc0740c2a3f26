//! Reads kvlower's inputs from a repository root into kvlower-core's typed
//! model, and reports every problem as a located, coded [`Finding`].
//!
//! Layout read: `modes/modes.yaml` and `capabilities/*.yaml` under the root.
//! All YAML goes through [`yaml`]; this crate does the file-system I/O so that
//! kvlower-core does none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kvlower_core::environment::Environment;
use kvlower_core::{Catalog, CatalogDoc, Descriptor};
pub use kvlower_fs::{FileKind, Refusal};

pub mod acknowledge;
mod validate;
/// Every YAML call goes through this one crate (re-exported for callers).
pub use kvlower_yaml as yaml;

pub use kvlower_codes::{Code, CodeDoc, Finding, Severity, code_doc, diagnostic};

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
    Invalid(Vec<Finding>),
}

/// Loads the catalog and every descriptor under `root`, asking `env` about what
/// the descriptors anchor (the file-system one is `kvlower_evidence::FsEnvironment`;
/// `kvlower_evidence::load_repository` passes it).
///
/// Descriptors that fail to load are reported and left out; the caller must
/// treat any diagnostic as a failed check (an invalid descriptor never
/// contributes rows, so it cannot raise a label either).
pub fn load_repository(
    root: &Path,
    env: &dyn Environment,
) -> Result<(Repository, Vec<Finding>), LoadFailure> {
    let mut diagnostics = Vec::new();
    let catalog = load_catalog(root, &mut diagnostics);
    let (files, misnamed) = descriptor_files(root).map_err(|d| LoadFailure::Invalid(vec![*d]))?;
    // Only misnamed descriptors is not "no descriptors": they are findings. Nor is a
    // catalog that is there but broken: its finding comes first (the wrong-directory
    // message is for a directory with neither).
    let broken_catalog =
        catalog.is_none() && kvlower_fs::inspect::entry_exists(&root.join(MODES_PATH));
    if files.is_empty() && misnamed.is_empty() && broken_catalog {
        diagnostics.sort();
        return Err(LoadFailure::Invalid(diagnostics));
    }
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
    // Each file read, parsed and validated on the thread pool; collected in file order.
    use rayon::prelude::*;
    let loaded: Vec<(Option<LoadedDescriptor>, Vec<Finding>)> = files
        .into_par_iter()
        .map(|rel| {
            let mut found = Vec::new();
            let descriptor = load_descriptor(root, &rel, &catalog, env, &mut found);
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
pub fn load_catalog(root: &Path, diagnostics: &mut Vec<Finding>) -> Option<Catalog> {
    let (catalog, src) = read_catalog(root, diagnostics)?;
    let before = diagnostics.len();
    floor_findings(&catalog, &src, diagnostics);
    (diagnostics.len() == before).then_some(catalog)
}

/// Reads, parses and validates `modes/modes.yaml` without comparing it to the
/// baseline (what `kvlower catalog diff` shows); returns the catalog and its text.
pub fn read_catalog(root: &Path, diagnostics: &mut Vec<Finding>) -> Option<(Catalog, String)> {
    let before = diagnostics.len();
    let Some(src) = read_source(root, MODES_PATH, diagnostics) else {
        // No catalog at all: most likely not a kvlower repository yet.
        if !kvlower_fs::inspect::entry_exists(&root.join(MODES_PATH)) {
            for d in &mut diagnostics[before..] {
                d.hint = Some(
                    "a kvlower repository needs a catalog: run `kvlower init` to write one (with kvlower.toml, capabilities/ and schemas/), or pass --root".to_string(),
                );
            }
        }
        return None;
    };
    let doc: CatalogDoc = parse_yaml(MODES_PATH, &src, diagnostics)?;
    match Catalog::new(doc) {
        Ok(catalog) => Some((catalog, src)),
        Err(errors) => {
            for e in errors {
                diagnostics.push(
                    Finding::new(Code::InvalidCatalog, MODES_PATH, e.message)
                        .at_path(e.path)
                        .located_in(&src),
                );
            }
            None
        }
    }
}

/// The built-in baseline catalog ([`kvlower_core::baseline::doc`]) as the text of
/// a `modes/modes.yaml`, with a header saying where it comes from: what
/// `kvlower init` writes. Loading it gives the baseline back, with no difference.
pub fn baseline_catalog_text() -> Result<String, String> {
    let body = yaml::to_string(&kvlower_core::baseline::doc())?;
    Ok(format!(
        "# yaml-language-server: $schema=../schemas/modes.schema.json\n\
         # The ResidentClaim mode catalog, written by `kvlower init` from the built-in\n\
         # baseline (the paper's catalog, compiled into kvlower). This file may strengthen\n\
         # it but never weaken it: `kvlower check` reports a weakening as\n\
         # `catalog-weakened`, and `kvlower catalog diff` lists every difference.\n\
         # docs/catalog.md explains each part.\n\n{body}"
    ))
}

/// The catalog's findings against the floor: every YAML alias (two modes or
/// depths must not share one spec) and every weakening of the baseline, each
/// located at its mode, depth or list in `modes/modes.yaml`.
pub fn floor_findings(catalog: &Catalog, src: &str, diagnostics: &mut Vec<Finding>) {
    let before = diagnostics.len();
    if let Ok(structure) = yaml::structure(src) {
        for alias in &structure.aliases {
            let shared = match alias.path.split('.').collect::<Vec<_>>().as_slice() {
                ["modes", _] => "two modes would share one spec",
                ["depths", _] => "two depths would share one spec",
                _ => "a shared node would change in every place at once",
            };
            diagnostics.push(
                Finding::new(
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
        let mut d = Finding::new(
            Code::CatalogWeakened,
            MODES_PATH,
            format!("{path}: {what}: {} ({source})", items.join(", ")),
        )
        .at_path(path.clone())
        .with_hint("the built-in baseline is the floor: restore the entry (a stricter catalog is fine); `kvlower catalog diff` lists every difference");
        d.location = catalog_location(src, &path);
        diagnostics.push(d);
    }
    for d in &mut diagnostics[before..] {
        d.keep_source(src);
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
    diagnostics: &mut Vec<Finding>,
) -> Option<Descriptor> {
    let src = read_source(root, rel, diagnostics)?;
    let before = diagnostics.len();
    let recovered = yaml::from_str_recovering::<Descriptor>(&src);
    // Every schema error, then what validation finds in the rest of the file
    // (repaired only to be read further: a repaired descriptor is never judged).
    diagnostics.extend(
        recovered
            .errors
            .iter()
            .map(|e| e.finding(rel).with_source(&src)),
    );
    let descriptor = recovered.value.as_ref()?;
    let mut found = Vec::new();
    validate::descriptor(rel, &src, descriptor, catalog, env, &mut found);
    for mut d in found {
        let path = recovered.original_path(&d.yaml_path);
        if recovered.is_repaired(&path) {
            continue;
        }
        if path != d.yaml_path {
            d.yaml_path = path;
            d.location = None;
            d = d.located_in(&src);
        }
        diagnostics.push(d);
    }
    // The structure only relocates findings: a file without any needs no second pass.
    if diagnostics.len() > before
        && let Ok(structure) = yaml::structure(&src)
    {
        let found = diagnostics.split_off(before);
        diagnostics.extend(once_per_aliased_defect(found, &structure));
    }
    // Each finding carries the source line where it ended up (renderers never re-read).
    for d in diagnostics[before..].iter_mut().filter(|d| d.file == rel) {
        d.keep_source(&src);
    }
    if diagnostics.len() == before {
        recovered.value
    } else {
        None
    }
}

/// One finding per defect: an anchor defect of a node reused through YAML
/// aliases is reported once, at the anchored node's definition, listing the
/// places that use it (instead of once per use, each at the alias).
fn once_per_aliased_defect(found: Vec<Finding>, structure: &yaml::Structure) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
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
pub fn descriptor_files(root: &Path) -> Result<(Vec<String>, Vec<Finding>), Box<Finding>> {
    let dir = root.join(CAPABILITIES_DIR);
    let entries = match kvlower_fs::walk::list(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
        Err(e) => {
            return Err(Box::new(Finding::new(
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
                findings.push(Finding::new(
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
                Finding::new(
                    Code::InvalidFileName,
                    format!("{CAPABILITIES_DIR}/{}", cut(&lossy)),
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

/// A refused file name as its finding names it: the real characters, cut to
/// [`diagnostic::VALUE_MAX_CHARS`] but not escaped, because each renderer escapes a
/// file for its own reader (a terminal's `\n`, GitHub's `%0A`, SARIF's percent
/// encoding, a JSON string's `\n`); escaped here, GitHub showed a backslash-n and
/// JSON a name that is not the file's (docs/output.md, "GitHub annotations").
fn cut(name: &str) -> String {
    match name.char_indices().nth(diagnostic::VALUE_MAX_CHARS) {
        Some((at, _)) => format!("{}…", &name[..at]),
        None => name.to_string(),
    }
}

/// Reads a UTF-8 text file, reporting refused (see [`kvlower_fs`]),
/// non-UTF-8 and empty files.
///
/// Confined to `root`; an empty `root` means `rel` was given on the command
/// line and is read as is (still regular files only, still capped).
pub fn read_source(root: &Path, rel: &str, diagnostics: &mut Vec<Finding>) -> Option<String> {
    let kind = if rel == MODES_PATH {
        FileKind::Catalog
    } else {
        FileKind::Descriptor
    };
    let read = if root.as_os_str().is_empty() {
        kind.open().read(rel)
    } else {
        kind.open().within(root).read(rel)
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(refusal) => {
            diagnostics.push(refusal.finding(rel));
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
                Finding::new(Code::InvalidUtf8, rel, "the file is not valid UTF-8")
                    .at(line, col)
                    .with_hint("save the file as UTF-8")
                    .with_source(&String::from_utf8_lossy(e.as_bytes())),
            );
            return None;
        }
    };
    if src.contains('\0') {
        let (line, col) = diagnostic::line_col(&src, src.find('\0').unwrap_or(0));
        diagnostics.push(
            Finding::new(Code::InvalidUtf8, rel, "the file contains a NUL byte")
                .at(line, col)
                .with_hint("descriptors are YAML text; is this a binary file?")
                .with_source(&src),
        );
        return None;
    }
    let meaningful = src
        .lines()
        .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#') && l.trim() != "---");
    if !meaningful {
        diagnostics.push(
            Finding::new(Code::EmptyFile, rel, "the file has no YAML content")
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
    diagnostics: &mut Vec<Finding>,
) -> Option<T> {
    match yaml::from_str_all::<T>(src) {
        Ok(value) => Some(value),
        Err(errors) => {
            diagnostics.extend(errors.iter().map(|e| e.finding(rel).with_source(src)));
            None
        }
    }
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
) -> Vec<Finding> {
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
            let mut d = Finding::new(code, loaded.path.clone(), inert.why.to_string())
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
