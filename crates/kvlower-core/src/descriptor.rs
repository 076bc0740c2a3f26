//! A runtime descriptor: the curated, anchored evidence about one runtime
//! (one YAML file in `capabilities/`). Format: `docs/descriptor-format.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::vocab::{
    Ambiguity, Atom, Depth, Mode, Obligation, Precondition, Scope, Signal, Status, TraceGate,
};

/// One runtime's evidence, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    pub runtime: RuntimeIdentity,
    /// Evidence the unmodified backend supplies by itself.
    #[serde(default)]
    pub native: Vec<EvidenceItem>,
    /// Represented adapters (or a backend patch), each at one depth.
    #[serde(default)]
    pub adapters: Vec<Adapter>,
    /// Observed facts beyond obligations (pressure controls, …).
    #[serde(default)]
    pub atoms: Vec<AtomEvidence>,
    /// Primitives that make rows plausible; they never satisfy obligations.
    #[serde(default)]
    pub signals: Vec<SignalEvidence>,
    /// Primitives the descriptor (or a naive reading of it) offers *as* a mode.
    #[serde(default)]
    pub proposals: Vec<Proposal>,
    /// What the rows of this runtime do not claim.
    pub non_claims: NonClaims,
}

/// Which runtime, which build, and what kind of source the evidence comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    pub name: String,
    /// A release version or a source commit.
    pub version: String,
    pub source: SourceKind,
    #[serde(default)]
    pub note: String,
}

/// What the descriptor's evidence was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    SourceTree,
    ReleaseContainer,
    Documentation,
    PatchedSource,
    Simulator,
}

/// One obligation as a piece of evidence claims it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceItem {
    pub obligation: Obligation,
    pub status: Status,
    pub scope: Scope,
    pub anchor: Anchor,
    /// The modes whose path this evidence exercised; empty means every mode.
    /// A run that exercised the hard-claim path is no witness for the offload path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<Mode>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// An adapter (or backend patch) at one depth of the ladder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    pub depth: Depth,
    pub name: String,
    /// The depth's trust-boundary preconditions, each with its anchor.
    #[serde(default)]
    pub preconditions: BTreeMap<Precondition, Anchor>,
    /// Known ambiguities of this adapter; any one voids its evidence.
    #[serde(default)]
    pub ambiguities: Vec<Ambiguity>,
    #[serde(default)]
    pub evidence: Vec<EvidenceItem>,
}

/// An observed atom with its anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AtomEvidence {
    pub atom: Atom,
    pub scope: Scope,
    pub anchor: Anchor,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// An approximation signal the runtime exposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalEvidence {
    pub signal: Signal,
    pub anchor: Anchor,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// A primitive offered as a mode (e.g. active no-evict as hard_protected).
/// Proposals are what make a failing row `rejected` rather than `approximate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Proposal {
    pub primitive: Signal,
    pub mode: Mode,
    /// The shallowest row depth the proposal is made at (default: native).
    #[serde(default = "depth_none")]
    pub depth: Depth,
    #[serde(default)]
    pub note: String,
}

fn depth_none() -> Depth {
    Depth::None
}

/// The calibrated non-claims of a runtime's rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NonClaims {
    /// Applies to every row without a mode-specific non-claim.
    pub default: String,
    #[serde(default)]
    pub modes: BTreeMap<Mode, String>,
}

impl NonClaims {
    pub fn for_mode(&self, mode: Mode) -> &str {
        self.modes.get(&mode).map_or(&self.default, String::as_str)
    }
}

/// What kind of thing an anchor points at.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AnchorKind {
    /// A result the paper reports from runs we cannot repeat here: needs
    /// `section` (and names the artifact `path` the paper gives, if any).
    Paper,
    /// A public repository file: needs `repository`, `commit` and `path`.
    PublicSource,
    /// A dated public documentation page: needs `url` and `retrieved`.
    DocsPage,
    /// A file in this repository: needs `path` (relative to the root).
    RepoFile,
}

/// Where a piece of evidence can be checked.
///
/// Fields are optional in the type so that an incomplete anchor parses and is
/// *judged* unanchored (fail closed) as well as reported by `check`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    pub kind: Option<AnchorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrieved: Option<String>,
    #[serde(default)]
    pub note: String,
    /// For trace-scoped evidence: the anchored trace keeps event order.
    #[serde(default, skip_serializing_if = "is_false")]
    pub preserves_order: bool,
    /// For trace-scoped evidence: the anchored trace keeps claim scope.
    #[serde(default, skip_serializing_if = "is_false")]
    pub preserves_claim_scope: bool,
    /// For a `repo_file` trace: the gate verdict this evidence rests on.
    /// `kvlower check` re-runs the gate; a disagreement voids the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<ClaimedVerdict>,
}

/// A gate verdict claimed for one claim of an anchored trace file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimedVerdict {
    /// The claim the verdict is about; absent for a trace's unclaimed events.
    #[serde(default)]
    pub claim_id: Option<String>,
    pub gate: TraceGate,
    /// Whether the gate passes for that claim.
    pub pass: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Why an anchor does not anchor anything.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "defect", content = "field")]
pub enum AnchorDefect {
    /// No `kind`.
    NoKind,
    /// A field the kind needs is missing or blank.
    MissingField(&'static str),
    /// `commit` is not a hexadecimal commit id of at least 7 digits.
    NotACommit,
    /// `note` is blank: an anchor says what it shows.
    NoNote,
    /// A path that is absolute or climbs out of its root.
    PathNotRelative,
    /// Trace-scoped evidence whose anchor does not state it keeps event order.
    TraceOrderNotPreserved,
    /// Trace-scoped evidence whose anchor does not state it keeps claim scope.
    TraceClaimScopeNotPreserved,
    /// A `repo_file` anchor naming a file that is not in the repository.
    RepoFileMissing,
    /// A claimed gate verdict on an anchor that is not a `repo_file` trace.
    VerdictNeedsRepoFile,
    /// Re-running the gate on the anchored trace does not give the claimed verdict.
    TraceVerdictDisagrees,
    /// The environment cannot re-run the gate, so a claimed verdict is unverified.
    TraceVerdictUnverified,
    /// A documentation page is not a trace: it cannot anchor run-time evidence.
    DocsPageIsNotATrace,
    /// A committed join evidence document whose join did not hold: a precondition
    /// not met, an unsequenced stream, or no claim materialized without ambiguity.
    JoinEvidenceInsufficient,
    /// A committed join evidence document (`*.join.json`) that re-running the
    /// join on its registry and event file does not reproduce.
    JoinEvidenceDisagrees,
}

impl std::fmt::Display for AnchorDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnchorDefect::NoKind => f.write_str("anchor has no `kind`"),
            AnchorDefect::MissingField(field) => write!(f, "anchor lacks `{field}`"),
            AnchorDefect::NotACommit => {
                f.write_str("anchor `commit` is not a hexadecimal commit id (7 to 40 digits)")
            }
            AnchorDefect::NoNote => f.write_str("anchor has no `note` saying what it shows"),
            AnchorDefect::PathNotRelative => {
                f.write_str("anchor `path` must be relative and stay inside its root")
            }
            AnchorDefect::TraceOrderNotPreserved => {
                f.write_str("trace anchor does not state `preserves_order: true`")
            }
            AnchorDefect::TraceClaimScopeNotPreserved => {
                f.write_str("trace anchor does not state `preserves_claim_scope: true`")
            }
            AnchorDefect::RepoFileMissing => f.write_str("anchored file is not in the repository"),
            AnchorDefect::VerdictNeedsRepoFile => {
                f.write_str("a claimed gate `verdict` needs a `repo_file` trace anchor")
            }
            AnchorDefect::TraceVerdictDisagrees => f.write_str(
                "re-running the gate on the anchored trace does not give the claimed verdict",
            ),
            AnchorDefect::TraceVerdictUnverified => {
                f.write_str("the claimed gate verdict could not be re-run")
            }
            AnchorDefect::JoinEvidenceDisagrees => f.write_str(
                "re-running the join on the document's registry and event file does not reproduce it",
            ),
            AnchorDefect::DocsPageIsNotATrace => {
                f.write_str("a documentation page cannot anchor run-time (trace-scoped) evidence")
            }
            AnchorDefect::JoinEvidenceInsufficient => f.write_str(
                "the anchored join evidence does not hold: a precondition unmet, an unsequenced stream, or no unambiguous materialized claim",
            ),
        }
    }
}

impl Anchor {
    /// Structural defects of this anchor, for evidence observed at `scope`
    /// (`None` for anchors of preconditions and signals). Empty means anchored.
    pub fn defects(&self, scope: Option<Scope>) -> Vec<AnchorDefect> {
        let mut defects = Vec::new();
        let blank = |v: &Option<String>| v.as_deref().is_none_or(|s| s.trim().is_empty());
        let mut need = |field: &'static str, v: &Option<String>| {
            if blank(v) {
                defects.push(AnchorDefect::MissingField(field));
            }
        };
        match self.kind {
            None => need("kind", &None),
            Some(AnchorKind::Paper) => need("section", &self.section),
            Some(AnchorKind::PublicSource) => {
                need("repository", &self.repository);
                need("commit", &self.commit);
                need("path", &self.path);
            }
            Some(AnchorKind::DocsPage) => {
                need("url", &self.url);
                need("retrieved", &self.retrieved);
            }
            Some(AnchorKind::RepoFile) => need("path", &self.path),
        }
        if self.kind.is_none() {
            defects.retain(|d| *d != AnchorDefect::MissingField("kind"));
            defects.push(AnchorDefect::NoKind);
        }
        if let Some(commit) = self.commit.as_deref().filter(|c| !c.trim().is_empty()) {
            let hex = commit.chars().all(|c| c.is_ascii_hexdigit());
            if !hex || !(7..=40).contains(&commit.len()) {
                defects.push(AnchorDefect::NotACommit);
            }
        }
        if let Some(path) = self.path.as_deref()
            && (path.starts_with('/') || path.split('/').any(|seg| seg == ".."))
        {
            defects.push(AnchorDefect::PathNotRelative);
        }
        if self.note.trim().is_empty() {
            defects.push(AnchorDefect::NoNote);
        }
        if scope.is_some_and(Scope::is_runtime_observed) {
            if !self.preserves_order {
                defects.push(AnchorDefect::TraceOrderNotPreserved);
            }
            if !self.preserves_claim_scope {
                defects.push(AnchorDefect::TraceClaimScopeNotPreserved);
            }
            if self.kind == Some(AnchorKind::DocsPage) {
                defects.push(AnchorDefect::DocsPageIsNotATrace);
            }
        }
        defects
    }

    /// A one-line, human-readable location of what the anchor names.
    pub fn target(&self) -> String {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        match self.kind {
            Some(AnchorKind::Paper) => match &self.path {
                Some(p) if !p.is_empty() => {
                    format!("paper {} (artifact path {p})", s(&self.section))
                }
                _ => format!("paper {}", s(&self.section)),
            },
            Some(AnchorKind::PublicSource) => format!(
                "{}@{}:{}",
                s(&self.repository),
                s(&self.commit),
                s(&self.path)
            ),
            Some(AnchorKind::DocsPage) => {
                format!("{} (retrieved {})", s(&self.url), s(&self.retrieved))
            }
            Some(AnchorKind::RepoFile) => s(&self.path),
            None => "(no anchor kind)".to_string(),
        }
    }
}

/// Answers questions about the world outside the descriptor, so the judgment
/// stays pure: the loader implements it over the file system.
pub trait Environment {
    /// Whether a `repo_file` anchor's path names a file in the repository and,
    /// for a trace with a claimed verdict, whether re-running the gate agrees.
    fn repo_file_defect(&self, path: &str) -> Option<AnchorDefect>;

    /// Whether re-running the gate on the trace at `path` gives `verdict`.
    /// The default cannot run a gate, so it fails closed.
    fn trace_verdict_defect(&self, _path: &str, _verdict: &ClaimedVerdict) -> Option<AnchorDefect> {
        Some(AnchorDefect::TraceVerdictUnverified)
    }
}

/// An environment in which every repository file exists and every claimed
/// verdict is confirmed. For pure tests of the judgment only: it is fail-open
/// by design, so no command uses it (they use `kvlower_load::FsEnvironment`).
pub struct AssumeRepoFilesPresent;

impl Environment for AssumeRepoFilesPresent {
    fn repo_file_defect(&self, _path: &str) -> Option<AnchorDefect> {
        None
    }

    fn trace_verdict_defect(&self, _path: &str, _verdict: &ClaimedVerdict) -> Option<AnchorDefect> {
        None
    }
}

/// All defects of an anchor, structural and environmental.
pub fn anchor_defects(
    anchor: &Anchor,
    scope: Option<Scope>,
    env: &dyn Environment,
) -> Vec<AnchorDefect> {
    let mut defects = anchor.defects(scope);
    if anchor.kind == Some(AnchorKind::RepoFile)
        && let Some(path) = anchor.path.as_deref().filter(|p| !p.trim().is_empty())
        && let Some(defect) = env.repo_file_defect(path)
    {
        defects.push(defect);
    }
    if let Some(verdict) = &anchor.verdict {
        match (anchor.kind, anchor.path.as_deref()) {
            (Some(AnchorKind::RepoFile), Some(path))
                if !defects.contains(&AnchorDefect::RepoFileMissing) =>
            {
                defects.extend(env.trace_verdict_defect(path, verdict));
            }
            (Some(AnchorKind::RepoFile), _) => {}
            _ => defects.push(AnchorDefect::VerdictNeedsRepoFile),
        }
    }
    defects
}
