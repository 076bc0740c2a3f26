//! `modes/modes.yaml` as written: the document types of the catalog.
//!
//! Their own module, so that the built-in floor ([`crate::baseline`]), which is a
//! document of this shape, and the validated [`crate::Catalog`], which is judged under
//! the floor, both depend on it and not on each other.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::vocab::{Atom, Depth, Mode, Obligation, Precondition, Signal, TraceGate};

/// `modes/modes.yaml` as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogDoc {
    /// Every mode with its bundle O[m].
    pub modes: BTreeMap<Mode, ModeSpec>,
    /// Every adapter depth: what it may supply and its preconditions.
    pub depths: BTreeMap<Depth, DepthSpec>,
    /// Every approximation signal and the modes it suggests.
    pub signals: BTreeMap<Signal, SignalSpec>,
    /// Primitives that must never be accepted as a mode (always `rejected`).
    #[serde(default)]
    pub forbidden_lowerings: Vec<ForbiddenLowering>,
    /// Which obligations each trace gate's verdict can witness (evidence anchored
    /// to a gate verdict counts only for these).
    pub trace_gates: BTreeMap<TraceGate, Vec<Obligation>>,
    /// The depth a `kvlower join` evidence document (`*.join.json`) is filed
    /// at and the obligations it may witness (telemetry obligations only).
    pub join_documents: JoinDocumentSpec,
    /// What a gate campaign must show to witness each trace gate: positives and the
    /// control kinds, with minimum runs (docs/conformance.md, "Controls"). A gate
    /// not listed is never witnessed by a campaign.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub campaign_controls: BTreeMap<TraceGate, CampaignControls>,
    /// kvlower's own judging code (the engine-truth recorders, the code that assembles
    /// truth and campaign documents and computes their digests), pinned by content: a
    /// campaign whose truth was written by any file not pinned here, or by a pinned file
    /// whose bytes changed, anchors nothing (docs/conformance.md, "Pinned judging code").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judging_code: Vec<JudgingPin>,
}

/// One pinned file of judging code.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct JudgingPin {
    /// Repository-relative path (`/`-separated).
    pub path: String,
    /// SHA-256 of the file's bytes, 64 lowercase hex digits.
    pub sha256: String,
}

/// The runs a campaign needs to witness one gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CampaignControls {
    /// Runs, over the scenarios expecting the gate in every run, that pass it.
    pub min_positive_runs: u32,
    /// Control kind → the runs of that kind needed. A run of a control scenario (one
    /// expecting the gate, and every gate it names, in no run) is of kind K when the gate rejected it as the control K, or when
    /// the gate applies to one of its claims and K is the first requirement (in the
    /// gate's order) that claim misses: it passed every requirement before K.
    pub controls: BTreeMap<String, u32>,
    /// Control kind → the outcome the engine's truth must show for a run of that kind to
    /// count (docs/conformance.md, "Control outcomes"): a run that fails the gate without
    /// showing it fails for another reason, and is no control. Every kind needs one.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outcomes: BTreeMap<String, String>,
}

/// What a join evidence document may witness, like a trace gate's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JoinDocumentSpec {
    /// The only depth a join document may be used at (the one it records).
    pub depth: Depth,
    /// Obligations a reproducing join document may witness.
    pub witnesses: Vec<Obligation>,
}

/// One mode's bundle O[m] and what decides its negative labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModeSpec {
    /// O[m]: every one must be supplied for the mode to lower.
    pub obligations: Vec<Obligation>,
    /// Obligations whose absence makes a *proposed* mapping a misrepresentation
    /// (rejected) rather than merely approximate.
    #[serde(default)]
    pub enforcement_critical: Vec<Obligation>,
    /// Observed atoms the mode needs beyond its obligations.
    #[serde(default)]
    pub required_atoms: Vec<Atom>,
    /// The evidence shape the mode accepts (documentation, shown in reports).
    pub accepted_evidence: String,
    /// The false positive the bundle exists to reject (documentation).
    pub rejected_false_positive: String,
}

/// What one adapter depth may supply and what must hold before it counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DepthSpec {
    /// The trust boundary in one sentence (documentation).
    pub meaning: String,
    /// Obligations this depth may supply; `any: true` for backend_patch.
    #[serde(default)]
    pub supplies: Vec<Obligation>,
    /// Whether this depth may supply any obligation (backend_patch only).
    #[serde(default)]
    pub supplies_any: bool,
    /// Obligations that this depth supplies only when these atoms are anchored
    /// (e.g. telemetry_join supplies priority_influence only with pressure atoms).
    #[serde(default)]
    pub conditional: BTreeMap<Obligation, Vec<Atom>>,
    /// Every one must be anchored on the adapter, else it supplies nothing.
    #[serde(default)]
    pub preconditions: Vec<Precondition>,
}

/// What an approximation signal makes plausible.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalSpec {
    /// What the primitive is (documentation).
    pub description: String,
    /// Modes this signal makes a row `approximate` for (never positive).
    pub suggests: Vec<Mode>,
}

/// A primitive that must never be accepted as a mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForbiddenLowering {
    /// The primitive refused.
    pub primitive: Signal,
    /// The mode it must never be accepted as.
    pub mode: Mode,
    /// Why, with its paper section (shown in reasons).
    pub why: String,
}

/// Paper Table 5: the nine preconditions of `telemetry_join`, all required.
/// Code, not data, so that a mis-edited catalog cannot weaken the join's trust boundary.
pub const TELEMETRY_JOIN_PRECONDITIONS: [Precondition; 9] = [
    Precondition::ExternalAcceptedClaimRegistry,
    Precondition::StableClaimId,
    Precondition::ReusableObjectId,
    Precondition::FixedMaterializationPredicate,
    Precondition::DeterministicRequestTokenMap,
    Precondition::FixedCacheIdentity,
    Precondition::NamedObservationPoint,
    Precondition::JoinableBackendEvents,
    Precondition::AmbiguityFailsClosed,
];
