//! What the judgment may ask of the world outside a descriptor, and the facts it gets
//! back. The judgment stays pure: an [`Environment`] (the file-system one is
//! `kvlower-evidence`'s) reads files and re-runs committed evidence, and reports only
//! facts; [`crate::anchoring::anchor_counts`] decides what they are worth.

use crate::anchor_form::AnchorDefect;
use crate::descriptor::ClaimedVerdict;
use crate::vocab::{Depth, Obligation, Precondition, TraceGate};

/// What a `repo_file` anchor's file turned out to be. The environment reads
/// the file (and re-runs what it can); [`crate::anchoring::anchor_counts`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoFile {
    /// Not there: nothing to anchor.
    Missing,
    /// Refused before it was opened: it resolves outside the repository (links
    /// included), or is not a regular file, or is too large. `why` says which.
    Refused { why: String },
    /// One of kvlower's own inputs or outputs (`capabilities/`, `modes/`,
    /// `results/`, `schemas/`, `bad_lowering/`): a descriptor cannot be its own evidence.
    OwnFile,
    /// A `kvlower join` evidence document, recognised by its content (not its
    /// name), and what re-running it showed.
    JoinDocument(JoinDocumentFacts),
    /// A `kvlower route` routing gate document (docs/routing-trace.md), recognised
    /// by its content, and what re-running the gate on its trace showed.
    RoutingDocument(RoutingDocumentFacts),
    /// A `kvlower-gate-campaign` document (docs/trace-format.md, "Campaign
    /// documents"), recognised by its content, and what re-running every trace
    /// it names showed.
    CampaignDocument(CampaignDocumentFacts),
    /// Any other file. A trace among them is re-run only through a claimed verdict.
    Plain,
}

/// What re-running a committed gate campaign showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CampaignDocumentFacts {
    /// Every trace re-ran well formed, recorded the document's runtime, and met
    /// every expectation of its scenario.
    pub held: bool,
    /// Gates some scenario passed in every run and some control scenario in none
    /// (the catalog's `campaign_controls` then decide, from `gates`, which count).
    pub witnessed: Vec<TraceGate>,
    /// Per gate, the positives and the controls by kind.
    pub gates: std::collections::BTreeMap<TraceGate, CampaignGateCounts>,
    /// The source files the document names (`source.files`), as written.
    pub source_files: Vec<String>,
    /// The judging code that wrote the campaign's truth: (repository-relative path,
    /// SHA-256 of its bytes now); the catalog's `judging_code` must pin every one.
    pub recorder: Vec<(String, String)>,
    /// Runs (traces) and scenarios the document lists.
    pub runs: u32,
    pub scenarios: u32,
    /// The runtime the document (and every trace's header) records.
    pub runtime: Option<crate::identity::RecordedRuntime>,
    /// Why it did not hold (the run, gate and fact of a disagreement with the engine's
    /// truth, a missing file, ...); `None` when it held.
    pub problem: Option<crate::anchor_form::Reason>,
}

/// What a held campaign showed of one gate: the runs the catalog's minimums count.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CampaignGateCounts {
    /// Runs of scenarios expecting the gate in every run (each passed it).
    pub positives: u32,
    /// Control kind → runs of scenarios expecting the gate in no run recognised as
    /// that kind by content (docs/conformance.md, "Controls").
    pub controls: std::collections::BTreeMap<String, u32>,
    /// Control kind → the outcome the engine's truth showed → runs.
    pub outcomes: std::collections::BTreeMap<String, std::collections::BTreeMap<String, u32>>,
}

/// What re-running a committed join evidence document showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JoinDocumentFacts {
    /// Re-running the join on the registry and event file it names gives the
    /// same document, byte for byte in value.
    pub reproduces: bool,
    /// The depth the document records (`telemetry_join` for every join);
    /// `None` when it names no known depth.
    pub depth: Option<Depth>,
    /// The preconditions the document reports as held.
    pub held: Vec<Precondition>,
    /// The stream carried sequence numbers, declared no stream ambiguity, and
    /// some claim was materialized with none left insufficient.
    pub stream_sound: bool,
    /// The runtime the document's events came from, as its registry's cache identity
    /// names it (`None`: it names none). Evidence of one runtime anchors nothing of
    /// another: see [`crate::anchoring::recorded_runtime_fits`].
    pub runtime: Option<crate::identity::RecordedRuntime>,
    /// For a document whose registry identity is patched: the sha256 digests its capture
    /// header records for the patch's files (sorted, no repeats), or why it records none
    /// (JSON Lines events, a header without the patch or without a digest). `None` for an
    /// unpatched identity. The anchor's `source_files` must name files with exactly these
    /// digests (see [`crate::anchoring::anchor_counts`]).
    pub patch_digests: Option<Result<Vec<String>, crate::anchor_form::Reason>>,
    /// The runtime identity the document's events record themselves: their capture
    /// header's `meta.runtime`. `None` for JSON Lines events, a header without
    /// `meta.runtime`, or events that cannot be read as a capture: such a document
    /// anchors no positive row, whatever its registry says
    /// ([`crate::anchor_form::AnchorDefect::JoinEventsRecordNoRuntime`]).
    pub events_runtime: Option<String>,
}

/// What re-running a committed routing gate document showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RoutingDocumentFacts {
    /// Re-running the routing gate on the trace (and registry) it names gives the
    /// same document, in value.
    pub reproduces: bool,
    /// The depth the document records (`routing_hook`); `None` when unknown.
    pub depth: Option<Depth>,
    /// The `routing_hook` preconditions that held for every claim of the registry.
    pub held: Vec<Precondition>,
    /// The obligations every claim of the registry passed.
    pub witnessed: Vec<Obligation>,
    /// The router and engine the document records (`None`: it names none).
    pub runtime: Option<crate::identity::RecordedRuntime>,
}

/// What re-running the gate on a committed trace showed, for one claimed verdict.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceVerdictFacts {
    /// Why the claimed verdict does not hold (`None`: the re-run gives it).
    pub defect: Option<AnchorDefect>,
    /// The runtime the trace's header records (`None`: it has no header, so it
    /// gates but anchors no descriptor; docs/trace-format.md, "The header").
    pub runtime: Option<crate::identity::RecordedRuntime>,
}

/// Answers questions about the world outside the descriptor, so the judgment
/// stays pure: kvlower-evidence (`FsEnvironment`) implements it over the file
/// system. It reports facts; [`crate::anchoring::anchor_counts`] decides what
/// they are worth.
/// Every method is required: a default that cannot run a gate or read a clock
/// would switch a check off for any new implementation.
/// `Sync`: one environment serves every thread of a command that judges in parallel.
pub trait Environment: Sync {
    /// What the repository file a `repo_file` anchor names turned out to be.
    fn repo_file(&self, path: &str) -> RepoFile;

    /// What re-running the gate on the trace at `path` showed for `verdict`.
    fn trace_verdict(&self, path: &str, verdict: &ClaimedVerdict) -> TraceVerdictFacts;

    /// Today's date, to refuse a `retrieved` or `reviewed` date in the future.
    fn today(&self) -> (i32, u32, u32);

    /// The sha256 (lower-case hex) of the repository file at `path`, or why it cannot be
    /// read (missing, refused: outside the repository, not a regular file, too large).
    fn repo_file_sha256(&self, path: &str) -> Result<String, String>;
}
