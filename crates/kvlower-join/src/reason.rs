//! The nine Table 5 preconditions of a telemetry join (paper §5, Table 5;
//! `docs/join.md`), as the model names them, and the typed reasons a claim misses one.
//!
//! Its own module, beside the identifiers it names, so that the registry (which
//! finds registry-side reasons) and the report (which records them) both depend on
//! it and not on each other.

use serde::{Deserialize, Serialize};

use crate::ids::{ClaimId, EventFormat, EventRef};

/// A telemetry join reports and checks only Table 5's nine preconditions, the
/// model's own [`kvlower_core::Precondition`]s of the `telemetry_join` depth
/// ([`TELEMETRY_JOIN_PRECONDITIONS`]): one vocabulary, so a join document's held
/// preconditions are the model's, with no second list that could drift from it.
pub use kvlower_core::Precondition;
use kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS;

/// Reads one of the join's preconditions from a join document, refusing any other
/// of the model's names: a document that claims to hold a precondition outside
/// [`TELEMETRY_JOIN_PRECONDITIONS`] is not a join document (the join's own copy
/// of the nine refused them the same way).
pub(crate) fn deserialize_join_precondition<'de, D>(d: D) -> Result<Precondition, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let p = Precondition::deserialize(d)?;
    if TELEMETRY_JOIN_PRECONDITIONS.contains(&p) {
        Ok(p)
    } else {
        let names: Vec<&str> = TELEMETRY_JOIN_PRECONDITIONS
            .iter()
            .map(|p| p.name())
            .collect();
        Err(serde::de::Error::custom(format!(
            "`{}` is not a telemetry_join precondition (expected one of {})",
            p.name(),
            names.join(", ")
        )))
    }
}

kvlower_codes::names! {
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
        /// An event names a tier the join cannot place: an `ownership` it does not know,
        /// one where that tier never publishes (a device-medium event,
        /// `AllBlocksCleared`), or an `AllBlocksCleared` scoped by a medium: which tier it
        /// changed is unknown.
        UnknownTier { event: EventRef, tier: String } = "unknown_tier",
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
        /// The capture holds a marker instead of a message (dropped as larger than its
        /// frame cap, or cut off by the publisher closing mid-message): its events are unknown.
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
            | Reason::UnknownTier { .. }
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
