//! Committed evidence re-run from the file system: the judgment's [`Environment`]
//! over a repository.
//!
//! Why a crate of its own: re-running evidence needs every gate kvlower has (the
//! trace gate and its campaign documents, the join, the routing gate), while loading
//! descriptors needs none of them. Here, above both, the loader stays a reader of
//! YAML into the model, and the judgment (kvlower-core) still does no I/O: this crate
//! reports facts, the core decides what they are worth.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use kvlower_core::anchor_form::AnchorDefect;
use kvlower_core::anchoring::{JoinDocumentFacts, RoutingDocumentFacts, TraceVerdictFacts};
use kvlower_core::descriptor::ClaimedVerdict;
use kvlower_core::environment::{Environment, RepoFile};
use kvlower_load::{Finding, LoadFailure, Repository};

/// Loads the repository at `env`'s root with the file system as its environment: what
/// `check` and `matrix` do. The caller passes the environment it then judges with, so
/// what loading re-ran (a claimed verdict's trace, a campaign) is not re-run again
/// (its caches are per environment).
pub fn load_repository(env: &FsEnvironment) -> Result<(Repository, Vec<Finding>), LoadFailure> {
    kvlower_load::load_repository(&env.root, env)
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
    /// `Err(why)`: it names itself a campaign but is malformed (a repeated key, an
    /// unknown field, a wrong type).
    Campaign(Box<Result<kvlower_trace::campaign_doc::CampaignDocument, String>>),
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
            canonical_root: kvlower_fs::inspect::resolved(&root).ok(),
            root,
            traces: Mutex::default(),
            files: Mutex::default(),
        }
    }

    /// Resolves a repository-relative path, following links, and refuses it
    /// before anything opens it: outside the root, not a regular file, too large.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, PathRefusal> {
        Ok(self.resolve_file(rel)?.path)
    }

    /// [`FsEnvironment::resolve`], with the file's length and identity.
    fn resolve_file(&self, rel: &str) -> Result<kvlower_fs::Resolved, PathRefusal> {
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
        // Resolving reads nothing, so the kind (its cap) plays no part.
        let found = kvlower_fs::FileKind::JoinDocument
            .open()
            .within_resolved(root)
            .resolve(rel)
            .map_err(|refusal| match refusal {
                // A dangling link is missing, not refused; either way nothing opens it.
                kvlower_fs::Refusal::Missing { .. } => PathRefusal::Missing,
                kvlower_fs::Refusal::OutsideRoot { .. } => PathRefusal::OutsideRoot,
                _ => PathRefusal::NotARegularFile,
            })?;
        if found.len > MAX_ANCHORED_FILE_BYTES {
            return Err(PathRefusal::TooLarge);
        }
        Ok(found)
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
        if self.in_own_dir(&resolved) {
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

    /// Whether a resolved path lies under one of kvlower's own directories.
    fn in_own_dir(&self, resolved: &Path) -> bool {
        self.canonical_root.as_ref().is_some_and(|root| {
            resolved.strip_prefix(root).is_ok_and(|inside| {
                inside
                    .components()
                    .next()
                    .and_then(|c| c.as_os_str().to_str())
                    .is_some_and(|first| kvlower_core::anchor_form::OWN_DIRS.contains(&first))
            })
        })
    }

    /// Re-runs the campaign document at `rel` (repository-relative), as `check` does:
    /// `Ok(None)` when the file is not a campaign document, `Err(why)` when it cannot be
    /// read (missing, refused, unreadable).
    pub fn campaign_facts(
        &self,
        rel: &str,
    ) -> Result<Option<kvlower_core::anchoring::CampaignDocumentFacts>, String> {
        let resolved = self
            .resolve(rel)
            .map_err(|why| format!("refused: {why:?}"))?;
        match self.read_evidence_document(&resolved) {
            Some(EvidenceDocument::Campaign(doc)) => Ok(Some(self.campaign_document_facts(*doc))),
            Some(EvidenceDocument::Unreadable(why)) => Err(why),
            _ => Ok(None),
        }
    }

    /// A committed trace for the gate: resolved inside the root (refused paths are
    /// never opened) and read through the one safe read, within the trace cap.
    fn open_trace(
        &self,
        path: &str,
    ) -> Option<std::io::BufReader<kvlower_fs::CappedReader<std::fs::File>>> {
        let resolved = self.resolve(path).ok()?;
        let reader = kvlower_fs::FileKind::Trace.open().reader(&resolved).ok()?;
        Some(std::io::BufReader::with_capacity(1 << 16, reader))
    }

    /// Re-runs every trace a gate campaign names (each inside the repository, opened
    /// through the one safe read) and checks the scenarios' expectations.
    fn campaign_document_facts(
        &self,
        doc: Result<kvlower_trace::campaign_doc::CampaignDocument, String>,
    ) -> kvlower_core::anchoring::CampaignDocumentFacts {
        let doc = match doc {
            Ok(doc) => doc,
            Err(why) => {
                return kvlower_core::anchoring::CampaignDocumentFacts {
                    problem: Some(campaign_reason(
                        &kvlower_trace::CampaignProblem::DocumentMalformed { why },
                    )),
                    ..kvlower_core::anchoring::CampaignDocumentFacts::default()
                };
            }
        };
        let outcome = doc.rerun(&CampaignFs(self));
        let runtime = kvlower_trace::recorded_runtime(&doc.runtime);
        kvlower_core::anchoring::CampaignDocumentFacts {
            held: outcome.held,
            witnessed: outcome.witnessed,
            gates: outcome
                .gates
                .into_iter()
                .map(|(g, c)| {
                    (
                        g,
                        kvlower_core::environment::CampaignGateCounts {
                            positives: c.positives,
                            controls: c.controls,
                            outcomes: c.outcomes,
                        },
                    )
                })
                .collect(),
            runtime: Some(runtime),
            // Its message and hint: core names no trace type (kvlower-trace's CampaignProblem).
            problem: outcome.problem.as_ref().map(campaign_reason),
            recorder: outcome.recorder,
            source_files: doc
                .source
                .as_ref()
                .map(|s| s.files.clone())
                .unwrap_or_default(),
            runs: u32::try_from(doc.scenarios.iter().map(|s| s.traces.len()).sum::<usize>())
                .unwrap_or(u32::MAX),
            scenarios: u32::try_from(doc.scenarios.len()).unwrap_or(u32::MAX),
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
        let bytes = match kvlower_fs::FileKind::JoinDocument.open().read(resolved) {
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
            // A repeated key would hide a run (serde keeps the last): malformed.
            let doc = kvlower_trace::strict_json::check_no_repeated_keys(text.as_bytes())
                .and_then(|()| serde_json::from_value(value).map_err(|e| e.to_string()));
            return Some(EvidenceDocument::Campaign(Box::new(doc)));
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
            patch_digests: self.patch_digests(&committed),
            events_runtime: self.events_runtime(&committed),
        }
    }

    /// The `meta.runtime` the document's events record (their capture header's); `None`
    /// for JSON Lines, a header without it, or events unreadable as a capture.
    fn events_runtime(&self, committed: &kvlower_join::JoinReport) -> Option<String> {
        let p = self.resolve(&committed.events).ok()?;
        let f = kvlower_join::input::open_events(&p).ok()?;
        kvlower_join::input::capture_meta(std::io::BufReader::new(f))
            .ok()??
            .remove("runtime")
    }

    /// For a document whose (reproduced) registry identity is patched, the patch file
    /// digests its capture's header records (red-team H1): which repository files they
    /// must be is the anchor's `source_files` to say, and the judgment recomputes them.
    /// The join itself compares the header's runtime and patch with the registry's.
    fn patch_digests(
        &self,
        committed: &kvlower_join::JoinReport,
    ) -> Option<Result<Vec<String>, kvlower_core::anchor_form::Reason>> {
        let runtime = committed.cache_identity.runtime.as_ref();
        runtime.and_then(|r| r.patch.as_ref())?;
        // Resolved inside the root and opened through the one safe read.
        let meta = self
            .resolve(&committed.events)
            .map_err(|_| ())
            .and_then(|p| kvlower_join::input::open_events(&p).map_err(|_| ()))
            .and_then(|f| kvlower_join::input::capture_meta(std::io::BufReader::new(f)));
        match meta {
            // Its message and hint: core names no join type (kvlower-join's IdentityProblem).
            Ok(meta) => kvlower_join::input::patch_file_digests(meta.as_ref(), runtime).map(|r| {
                r.map_err(|p| kvlower_core::anchor_form::Reason::with_hint(p.to_string(), p.hint()))
            }),
            Err(()) => Some(Err(kvlower_core::anchor_form::Reason::new(format!(
                "the events `{}` cannot be read as a capture",
                committed.events
            )))),
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

/// A campaign problem as core carries it: its message and its own hint.
fn campaign_reason(p: &kvlower_trace::CampaignProblem) -> kvlower_core::anchor_form::Reason {
    kvlower_core::anchor_form::Reason::with_hint(p.to_string(), p.hint())
}

/// The file system as a campaign re-run sees it: every path confined to the root and
/// refused as any anchored file, identified by (device, inode) after links.
struct CampaignFs<'a>(&'a FsEnvironment);

impl kvlower_trace::campaign_doc::CampaignFiles for CampaignFs<'_> {
    fn identify(&self, path: &str) -> Option<kvlower_trace::campaign_doc::FileId> {
        self.0.resolve_file(path).ok()?.id
    }

    fn open_trace(&self, path: &str) -> Option<Box<dyn std::io::BufRead + '_>> {
        Some(Box::new(self.0.open_trace(path)?))
    }

    fn read(&self, path: &str) -> Option<Vec<u8>> {
        let resolved = self.0.resolve(path).ok()?;
        kvlower_fs::FileKind::JoinDocument
            .open()
            .read(&resolved)
            .ok()
    }

    fn is_own_file(&self, path: &str) -> bool {
        self.0.resolve(path).is_ok_and(|r| self.0.in_own_dir(&r))
    }

    fn is_dir(&self, path: &str) -> bool {
        // Confined like every other path: a directory outside the root is none of ours.
        self.0.resolve(path).is_ok_and(|r| r.is_dir())
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

    fn repo_file_sha256(&self, path: &str) -> Result<String, String> {
        // Confined to the root and read through the one safe read.
        let resolved = self.resolve(path).map_err(|why| match why {
            PathRefusal::Missing => "not in the repository".to_owned(),
            PathRefusal::OutsideRoot => "refused: it resolves outside the repository".to_owned(),
            PathRefusal::NotARegularFile => "refused: not a regular file".to_owned(),
            PathRefusal::TooLarge => "refused: too large".to_owned(),
        })?;
        // A patch file is source the runtime ran, never kvlower's own files (as for a
        // campaign's source files).
        if self.in_own_dir(&resolved) {
            return Err(format!(
                "refused: it is in one of kvlower's own directories ({})",
                kvlower_core::anchor_form::OWN_DIRS.join(", ")
            ));
        }
        let bytes = kvlower_fs::FileKind::JoinDocument
            .open()
            .read(&resolved)
            .map_err(|refusal| refusal.to_string())?;
        Ok(kvlower_core::catalog::sha256_hex(&bytes))
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

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_779), (2026, 11, 22));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    /// A join document's numbers read back as the f64s they were written from, or a
    /// reproducing document fails its re-run comparison (the live KVCR capture's batch
    /// timestamps did, before serde_json's `float_roundtrip`). Run alone
    /// (`cargo test -p kvlower-evidence`): this crate's own build has only the
    /// features the shipped binary has.
    #[test]
    fn join_document_timestamps_read_back_exactly() {
        for text in [
            "1795799948.2459097",
            "1795799948.8070781",
            "1795382832.7340505",
        ] {
            let exact: f64 = text.parse().unwrap_or(f64::NAN);
            let read: f64 = serde_json::from_str(text).unwrap_or(f64::NAN);
            assert_eq!(read.to_bits(), exact.to_bits(), "{text}");
        }
    }
}
