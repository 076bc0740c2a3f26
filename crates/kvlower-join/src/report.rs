//! The evidence document a join produces, and its human rendering.
//!
//! The JSON form is what a descriptor's `telemetry_join` evidence anchors to; `kvlower
//! check` can re-run the join on the committed event file and compare with `==`, so every
//! collection here is sorted and no path is absolutized.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::events::Tier;
use crate::registry::{CacheIdentity, ClaimId, EventFormat, ObjectId, StreamPoint};

/// Version of the evidence-document layout.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// An event by its index (TRT-LLM `event_id`, else position) and its file line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EventRef {
    pub index: u64,
    pub line: u64,
}

impl std::fmt::Display for EventRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "event {} (line {})", self.index, self.line)
    }
}

kvlower_core::names! {
    /// The nine telemetry_join preconditions of paper Table 5 (`docs/join.md`).
    /// The model owns them ([`kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS`]);
    /// [`Precondition::model`] maps each to it and a test keeps the two lists equal.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
    pub enum Precondition {
        ExternalAcceptedClaimRegistry = "external_accepted_claim_registry",
        StableClaimId = "stable_claim_id",
        ReusableObjectId = "reusable_object_id",
        FixedMaterializationPredicate = "fixed_materialization_predicate",
        DeterministicRequestTokenMap = "deterministic_request_token_map",
        FixedCacheIdentity = "fixed_cache_identity",
        NamedObservationPoint = "named_observation_point",
        JoinableBackendEvents = "joinable_backend_events",
        AmbiguityFailsClosed = "ambiguity_fails_closed",
    }
}

impl Precondition {
    /// The same precondition in the model's vocabulary, which a descriptor's
    /// `telemetry_join` adapter anchors to a join document.
    pub fn model(self) -> kvlower_core::Precondition {
        use kvlower_core::Precondition as M;
        match self {
            Precondition::ExternalAcceptedClaimRegistry => M::ExternalAcceptedClaimRegistry,
            Precondition::StableClaimId => M::StableClaimId,
            Precondition::ReusableObjectId => M::ReusableObjectId,
            Precondition::FixedMaterializationPredicate => M::FixedMaterializationPredicate,
            Precondition::DeterministicRequestTokenMap => M::DeterministicRequestTokenMap,
            Precondition::FixedCacheIdentity => M::FixedCacheIdentity,
            Precondition::NamedObservationPoint => M::NamedObservationPoint,
            Precondition::JoinableBackendEvents => M::JoinableBackendEvents,
            Precondition::AmbiguityFailsClosed => M::AmbiguityFailsClosed,
        }
    }
}

kvlower_core::names! {
    /// Why a claim is `insufficient_evidence`. Each names the precondition it breaks.
    #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(tag = "reason")]
    pub enum Reason {
        // --- the registry itself ---
        /// The registry did not name a registration point for the claim.
        MissingRegistrationPoint = "missing_registration_point",
        /// A relevant event for the claim precedes its registration: named after the fact.
        PostHocClaim { event: EventRef } = "post_hoc_claim",
        /// The registration point lies after the observation point.
        RegisteredAfterObservationPoint = "registered_after_observation_point",
        /// The registration point is a timestamp but the format carries none.
        RegistrationPointUnresolvable = "registration_point_unresolvable",
        /// Two claims share one claim id.
        DuplicateClaimId = "duplicate_claim_id",
        /// The claim id is empty.
        UnstableClaimId = "unstable_claim_id",
        /// The claim id equals one of its backend request ids.
        ClaimIdIsRequestId { request_id: String } = "claim_id_is_request_id",
        /// No reusable object id.
        MissingReusableObjectId = "missing_reusable_object_id",
        /// Two claims with different reusable object ids claim the same leading block.
        DuplicateBlockOwner { other_claim: ClaimId } = "duplicate_block_owner",
        /// No predicate.
        MissingPredicate = "missing_predicate",
        /// The predicate needs more whole blocks than the claimed tokens contain.
        PredicateExceedsClaimedBlocks {
            required_blocks: u64,
            full_blocks: u64,
        } = "predicate_exceeds_claimed_blocks",
        /// No token ids (inline or token-map entry).
        MissingTokenIds = "missing_token_ids",
        /// Both inline token ids and a token map.
        AmbiguousTokenSource = "ambiguous_token_source",
        /// The token map was produced by another tokenizer than the cache identity names.
        TokenMapTokenizerMismatch { token_map: String, registry: String } = "token_map_tokenizer_mismatch",
        /// A cache-identity field is missing from the registry.
        MissingCacheIdentityField { field: String } = "missing_cache_identity_field",
        /// The registry names another runtime than the event format.
        RuntimeMismatch {
            registry: EventFormat,
            events: EventFormat,
        } = "runtime_mismatch",
        /// No observation point.
        MissingObservationPoint = "missing_observation_point",
        /// The stream ends before the observation point: what happened up to it is unknown.
        ObservationPointBeyondStream { last_event: Option<EventRef> } = "observation_point_beyond_stream",
        /// The observation point is a timestamp but the format carries none.
        ObservationPointUnresolvable = "observation_point_unresolvable",
        // --- cache identity, seen in the events ---
        /// An event's block size differs from the registry's.
        BlockSizeMismatch {
            event: EventRef,
            observed: u64,
            expected: u64,
        } = "block_size_mismatch",
        /// A stored block's token count does not fit its block count and block size.
        TokenCountMismatch { event: EventRef } = "token_count_mismatch",
        /// A block hash's encoding differs from the registry's hash domain.
        HashDomainMismatch { event: EventRef } = "hash_domain_mismatch",
        /// A block matching the claim was stored under another adapter (LoRA) identity.
        AdapterMismatch { event: EventRef } = "adapter_mismatch",
        /// A block matching the claim names no adapter (TensorRT-LLM JSON) and the
        /// registry does not say the engine ran without LoRA.
        UnknownBlockAdapter { event: EventRef } = "unknown_block_adapter",
        /// A block matching the claim folds extra keys/salts into its hash that the join
        /// cannot check against the registry's namespace.
        UnverifiedExtraHashInputs { event: EventRef } = "unverified_extra_hash_inputs",
        /// Events from a KV cache group other than 0 (hybrid models are not joined).
        OtherKvCacheGroup { event: EventRef } = "other_kv_cache_group",
        /// Events from more than one DP rank or attention window in one stream.
        MixedCacheInstances { event: EventRef } = "mixed_cache_instances",
        // --- stream integrity ---
        /// A sequence number (ZMQ seq or TRT-LLM event_id) skipped or went back.
        SequenceGap {
            event: EventRef,
            expected: u64,
            found: u64,
        } = "sequence_gap",
        /// Some batches carry a sequence number and others do not.
        InconsistentSequenceNumbers { event: EventRef } = "inconsistent_sequence_numbers",
        /// Batch timestamps went backwards.
        TimestampsNotMonotonic { event: EventRef } = "timestamps_not_monotonic",
        /// A removal names a block (or a copy) the stream never stored: the stream starts
        /// mid-way, or an event was lost.
        UnknownBlockRemoved { event: EventRef } = "unknown_block_removed",
        /// An update names a block the stream never stored, or an old value that does not match.
        UnknownBlockUpdated { event: EventRef } = "unknown_block_updated",
        /// A block matching the claim hangs off a parent hash the stream never showed.
        UnjoinableParent { event: EventRef } = "unjoinable_parent",
        /// One hash stored with different tokens or parents.
        ConflictingBlockContent { event: EventRef } = "conflicting_block_content",
        /// Two different stored blocks match the same position of the claim.
        DuplicateBlockAtPosition { event: EventRef, position: u64 } = "duplicate_block_at_position",
        /// A field the join needs is absent from an event.
        MissingEventField { event: EventRef, field: String } = "missing_event_field",
        /// A second `created` event: the cache was re-created mid-stream.
        CacheRecreated { event: EventRef } = "cache_recreated",
        /// The first sequence number of a publisher is not 0: the stream starts mid-way and
        /// the cache's initial state is unknown.
        MissingInitialState {
            event: EventRef,
            first_sequence: u64,
        } = "missing_initial_state",
        /// The capture dropped a message larger than its frame cap: its events are unknown.
        DroppedFrame { event: EventRef } = "dropped_frame",
        /// A block the claim needs may or may not still have a copy: vLLM repeated a
        /// `BlockStored` for a resident hash, which under `kv_cache_report_mode=full` (or an
        /// unknown mode) is a new copy or a re-announced hit, and copies were then removed.
        UncertainCopyCount {
            kv_cache_report_mode: Option<String>,
        } = "uncertain_copy_count",
    }
}

impl Reason {
    /// The Table 5 precondition this reason shows unmet.
    pub fn precondition(&self) -> Precondition {
        use Precondition as P;
        match self {
            Reason::MissingRegistrationPoint
            | Reason::PostHocClaim { .. }
            | Reason::RegisteredAfterObservationPoint
            | Reason::RegistrationPointUnresolvable => P::ExternalAcceptedClaimRegistry,
            Reason::DuplicateClaimId
            | Reason::UnstableClaimId
            | Reason::ClaimIdIsRequestId { .. } => P::StableClaimId,
            Reason::MissingReusableObjectId => P::ReusableObjectId,
            Reason::MissingPredicate | Reason::PredicateExceedsClaimedBlocks { .. } => {
                P::FixedMaterializationPredicate
            }
            Reason::MissingTokenIds
            | Reason::AmbiguousTokenSource
            | Reason::TokenMapTokenizerMismatch { .. } => P::DeterministicRequestTokenMap,
            Reason::MissingCacheIdentityField { .. }
            | Reason::RuntimeMismatch { .. }
            | Reason::BlockSizeMismatch { .. }
            | Reason::TokenCountMismatch { .. }
            | Reason::HashDomainMismatch { .. }
            | Reason::AdapterMismatch { .. }
            | Reason::UnknownBlockAdapter { .. }
            | Reason::UnverifiedExtraHashInputs { .. }
            | Reason::OtherKvCacheGroup { .. }
            | Reason::MixedCacheInstances { .. } => P::FixedCacheIdentity,
            Reason::MissingObservationPoint
            | Reason::ObservationPointBeyondStream { .. }
            | Reason::ObservationPointUnresolvable => P::NamedObservationPoint,
            Reason::MissingEventField { .. } => P::JoinableBackendEvents,
            Reason::DuplicateBlockOwner { .. }
            | Reason::SequenceGap { .. }
            | Reason::InconsistentSequenceNumbers { .. }
            | Reason::TimestampsNotMonotonic { .. }
            | Reason::UnknownBlockRemoved { .. }
            | Reason::UnknownBlockUpdated { .. }
            | Reason::UnjoinableParent { .. }
            | Reason::ConflictingBlockContent { .. }
            | Reason::DuplicateBlockAtPosition { .. }
            | Reason::CacheRecreated { .. }
            | Reason::MissingInitialState { .. }
            | Reason::DroppedFrame { .. }
            | Reason::UncertainCopyCount { .. } => P::AmbiguityFailsClosed,
        }
    }

    /// The snake_case name (the JSON `reason` tag), owned; [`Reason::as_str`] borrows it.
    pub fn name(&self) -> String {
        self.as_str().to_owned()
    }
}

/// How many of the claim's required blocks are resident at one tier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TierCoverage {
    pub tier: Tier,
    pub blocks: u64,
}

kvlower_core::names! {
    /// The verdict on one claim at its observation point. Only `insufficient_evidence`
    /// carries reasons, and it never says what the join would otherwise have concluded.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(tag = "status")]
    pub enum Verdict {
        /// The predicate held at the observation point.
        Materialized {
            /// Where the current (unbroken) materialization began.
            since: EventRef,
            /// Residency of the required blocks at the observation point, by tier.
            tiers: Vec<TierCoverage>,
        } = "materialized",
        /// The predicate never held up to the observation point (e.g. a partial prefix).
        NotMaterialized {
            matched_prefix_tokens: u64,
            required_tokens: u64,
        } = "not_materialized",
        /// The predicate held, then stopped holding before the observation point.
        Lost {
            materialized_at: EventRef,
            lost_at: EventRef,
        } = "lost",
        InsufficientEvidence {
            reasons: Vec<Reason>,
        } = "insufficient_evidence",
    }
}

impl Verdict {
    /// The verdict's name (the JSON `status` tag).
    pub fn status(&self) -> &'static str {
        self.as_str()
    }
}

/// A change of the predicate's truth, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Materialized,
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Transition {
    pub event: EventRef,
    pub change: Change,
}

/// One claim's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub claim_id: ClaimId,
    pub reusable_object_id: Option<ObjectId>,
    /// The predicate as registered (`leading_prefix_at_least(k)`, k in tokens).
    pub predicate: Option<String>,
    pub observation_point: Option<StreamPoint>,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Predicate changes up to the observation point (empty when insufficient).
    pub transitions: Vec<Transition>,
    /// Retention priorities the runtime reported on the claim's blocks (TRT-LLM only).
    pub observed_priorities: Vec<u32>,
}

/// Counts about the stream, for the reader and for anchoring.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSummary {
    pub lines: u64,
    pub events: u64,
    pub stored: u64,
    pub removed: u64,
    pub updated: u64,
    pub cleared: u64,
    pub created: u64,
    pub first_event: Option<EventRef>,
    pub last_event: Option<EventRef>,
    /// Whether the stream carried sequence numbers the join could check for gaps
    /// (TRT-LLM event_id, or a `seq` envelope on vLLM/SGLang lines).
    pub sequence_checked: bool,
    /// Most block records held at once (live blocks plus claim tombstones).
    pub peak_tracked_blocks: u64,
    /// Stream-level ambiguities (each taints claims observed at or after it).
    pub ambiguities: Vec<Reason>,
    /// KV-cache groups whose events were not joined (hybrid models): claims are judged
    /// on group 0, the full-attention group. Absent when every event was group 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_groups: Vec<IgnoredGroup>,
    /// Events of cache instances (data-parallel ranks, attention windows) other than
    /// the one the registry selects. Absent when every event was of that instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_instances: Vec<IgnoredInstance>,
}

/// A cache instance (rank, window) the registry did not select, and how many of its
/// events the join left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredInstance {
    /// Its data-parallel rank, as the events name it (`None`: not named).
    pub rank: Option<i64>,
    /// Its attention window size (TensorRT-LLM), as the events name it.
    pub window_size: Option<i64>,
    pub events: u64,
}

/// A KV-cache group the join left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredGroup {
    pub group_idx: i64,
    /// The cache-spec kind its stores declared (vLLM `kv_cache_spec_kind`), if any.
    pub kind: Option<String>,
    pub events: u64,
    /// Why: a leading-prefix claim is judged on the full-attention group only.
    pub why: String,
}

/// How many claims meet one precondition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreconditionTally {
    pub precondition: Precondition,
    /// `met/total` claims.
    pub claims: String,
    pub held: bool,
}

/// The evidence document of one join.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinReport {
    pub schema_version: u32,
    /// Always `telemetry_join`: a reconstruction of observations, never enforcement.
    pub depth: String,
    pub registry: String,
    pub events: String,
    pub format: EventFormat,
    pub cache_identity: CacheIdentity,
    pub stream: StreamSummary,
    pub claims: Vec<ClaimResult>,
    pub preconditions: Vec<PreconditionTally>,
    pub summary: StatusCounts,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCounts {
    pub materialized: u64,
    pub not_materialized: u64,
    pub lost: u64,
    pub insufficient_evidence: u64,
}

impl JoinReport {
    /// The claim result for `id`, if registered.
    pub fn claim(&self, id: &str) -> Option<&ClaimResult> {
        self.claims.iter().find(|c| c.claim_id.0 == id)
    }

    /// Renders the report for a terminal (the CLI prints it; this crate never prints).
    pub fn render_human(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "telemetry join: registry {} · events {} ({})",
            self.registry, self.events, self.format
        );
        let _ = writeln!(
            s,
            "stream: {} events on {} lines · {} stored, {} removed, {} updated, {} cleared · sequence {}",
            self.stream.events,
            self.stream.lines,
            self.stream.stored,
            self.stream.removed,
            self.stream.updated,
            self.stream.cleared,
            if self.stream.sequence_checked {
                "checked"
            } else {
                "not checkable"
            }
        );
        for g in &self.stream.ignored_groups {
            let _ = writeln!(
                s,
                "  ignored KV-cache group {} ({}): {} events; {}",
                g.group_idx,
                g.kind.as_deref().unwrap_or("kind not stated"),
                g.events,
                g.why
            );
        }
        for a in &self.stream.ambiguities {
            let _ = writeln!(s, "  stream ambiguity: {}", describe_reason(a));
        }
        let width = self
            .claims
            .iter()
            .map(|c| c.claim_id.0.len())
            .max()
            .unwrap_or(0);
        for c in &self.claims {
            let pred = c.predicate.as_deref().unwrap_or("(no predicate)");
            let obs = c
                .observation_point
                .map(|p| p.to_string())
                .unwrap_or_else(|| "(no observation point)".into());
            // Without sequence numbers a dropped batch can hide an eviction: such a
            // `materialized` is a reading of the file, not a verdict anything may anchor.
            let unanchored =
                matches!(c.verdict, Verdict::Materialized { .. }) && !self.stream.sequence_checked;
            let _ = writeln!(
                s,
                "{:width$}  {}{}  — {pred} at {obs}",
                c.claim_id.0,
                c.verdict.status(),
                if unanchored {
                    " (unanchorable: no sequence numbers)"
                } else {
                    ""
                }
            );
            match &c.verdict {
                Verdict::Materialized { since, tiers } => {
                    let t: Vec<String> = tiers
                        .iter()
                        .map(|t| {
                            let unit = if t.blocks == 1 { "block" } else { "blocks" };
                            format!("{} ({} {unit})", t.tier, t.blocks)
                        })
                        .collect();
                    let _ = writeln!(
                        s,
                        "{:width$}    since {since}; resident in {}",
                        "",
                        t.join(", ")
                    );
                }
                Verdict::NotMaterialized {
                    matched_prefix_tokens,
                    required_tokens,
                } => {
                    let _ = writeln!(
                        s,
                        "{:width$}    leading prefix resident: {matched_prefix_tokens} of {required_tokens} required tokens",
                        ""
                    );
                }
                Verdict::Lost {
                    materialized_at,
                    lost_at,
                } => {
                    let _ = writeln!(
                        s,
                        "{:width$}    materialized at {materialized_at}, lost at {lost_at}",
                        ""
                    );
                }
                Verdict::InsufficientEvidence { reasons } => {
                    for r in reasons {
                        let _ = writeln!(s, "{:width$}    - {}", "", describe_reason(r));
                    }
                }
            }
        }
        let unmet: Vec<String> = self
            .preconditions
            .iter()
            .filter(|p| !p.held)
            .map(|p| format!("{} ({})", p.precondition, p.claims))
            .collect();
        let _ = writeln!(
            s,
            "summary: {} materialized, {} lost, {} not_materialized, {} insufficient_evidence",
            self.summary.materialized,
            self.summary.lost,
            self.summary.not_materialized,
            self.summary.insufficient_evidence
        );
        if !unmet.is_empty() {
            let _ = writeln!(
                s,
                "preconditions not met for every claim: {}",
                unmet.join(", ")
            );
        }
        if self.summary.materialized > 0 && !self.stream.sequence_checked {
            let _ = writeln!(
                s,
                "note: the stream carries no sequence numbers, so a lost batch could hide an eviction: \
                 no materialized verdict here can anchor evidence (record with `kvlower capture`)"
            );
        }
        let _ = writeln!(
            s,
            "note: a telemetry join reconstructs observations; it supplies no enforcement."
        );
        s
    }
}

/// `reason_name (field: value, ...)` — the snake_case tag with its details.
pub fn describe_reason(r: &Reason) -> String {
    let v = serde_json::to_value(r).unwrap_or_default();
    let name = r.as_str().to_owned();
    let mut details = Vec::new();
    if let Some(m) = v.as_object() {
        for (k, val) in m {
            if k == "reason" {
                continue;
            }
            let rendered = match val {
                serde_json::Value::Object(o)
                    if o.contains_key("index") && o.contains_key("line") =>
                {
                    format!(
                        "event {} line {}",
                        o.get("index").cloned().unwrap_or_default(),
                        o.get("line").cloned().unwrap_or_default()
                    )
                }
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            details.push(format!("{k}: {rendered}"));
        }
    }
    if details.is_empty() {
        name
    } else {
        format!("{name} ({})", details.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The join's preconditions are paper Table 5 as the model owns it: the
    /// same nine, in the same order, under the same names. A join document's
    /// held preconditions are read through [`Precondition::model`], so a
    /// drift here would make `check` miss (or invent) a held precondition.
    #[test]
    fn preconditions_are_the_models_table_5() {
        let model: Vec<kvlower_core::Precondition> =
            Precondition::ALL.iter().map(|p| p.model()).collect();
        assert_eq!(
            model,
            kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS.to_vec()
        );
        for p in Precondition::ALL {
            assert_eq!(p.name(), p.model().name());
            assert_eq!(serde_json::to_value(p).ok(), Some(p.name().into()));
        }
    }

    /// A reason's name is its JSON tag, for a unit and a struct variant.
    #[test]
    fn reason_names_are_the_json_tags() {
        let event = EventRef { index: 3, line: 4 };
        for r in [
            Reason::MissingRegistrationPoint,
            Reason::SequenceGap {
                event,
                expected: 1,
                found: 2,
            },
            Reason::UncertainCopyCount {
                kv_cache_report_mode: None,
            },
        ] {
            let json = serde_json::to_value(&r).unwrap_or_default();
            assert_eq!(json["reason"], r.as_str(), "{json}");
            assert_eq!(r.name(), r.as_str());
        }
    }
}
