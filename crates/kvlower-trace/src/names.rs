//! The exact names the gate reports: gates, requirements and controls.
//!
//! Requirement names are the original analyzer's; a reader of a verdict must be able to
//! look up every name it sees in `docs/trace-format.md`. The few
//! names kvlower adds are marked as such below.

use serde::Serialize;

/// A gate the trace analyzer decides, per claim: the model's own list
/// (`kvlower_core::vocab::TraceGate`), so a verdict names a gate the catalog knows.
pub use kvlower_core::vocab::TraceGate;

kvlower_codes::names! {
    /// One named requirement a gate can report as missing; its name is the one
    /// in `docs/trace-format.md`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
    pub enum Requirement {
        // Connector observation and failure-outcome gates (`docs/trace-format.md`).
        /// A `request_initialized` event carries the claim's metadata.
        ClaimMetadataBeforeLifecycle = "claim_metadata_before_lifecycle",
        /// One claim shows more than one value of a stable identity field.
        AmbiguousClaimCacheIdentity = "ambiguous_claim_cache_identity",
        /// Store job → GPU→CPU transfer ok → `resident_claim_offloaded` (→ store job completed).
        StoreOffloadToCpuPath = "store_offload_to_cpu_path",
        /// A lookup hit needing an async load, then the load job.
        ReuseLookupHitRequiringLoad = "reuse_lookup_hit_requiring_load",
        /// CPU→GPU transfer ok → load job completed → restored from the offload tier,
        /// before any failure of the claim.
        CpuToGpuRestoreSuccess = "cpu_to_gpu_restore_success",
        /// Claim metadata (`request_initialized`) precedes the first store job.
        ClaimMetadataOrdering = "claim_metadata_ordering",
        /// Lookup hit → `resident_claim_restore_required` → load job, before the failure.
        RestoreRequiredBeforeFailure = "restore_required_before_failure",
        /// A controlled CPU→GPU transfer failure tied to this claim, then the load job failed.
        ControlledCpuToGpuLoadFailure = "controlled_cpu_to_gpu_load_failure",
        /// `resident_claim_restoration_failed` naming this claim with a claim-scoped outcome.
        ClaimScopedRestorationFailed = "claim_scoped_restoration_failed",
        /// `active_request_refused` naming this claim in `blocking_claim_ids`.
        FailClosedActiveRequestRefused = "fail_closed_active_request_refused",
        /// `scheduler_resident_claim_restoration_failed` for this claim (FINISHED_ERROR).
        SchedulerSideRestorationFailed = "scheduler_side_restoration_failed",
        /// `scheduler_active_request_refused` with this claim in `blocking_claim_ids`.
        SchedulerSideActiveRequestRefused = "scheduler_side_active_request_refused",
        /// Both scheduler events name this claim, and no failure evidence names another.
        SchedulerSideClaimMatch = "scheduler_side_claim_match",
        /// The scheduler refusal comes before the request's termination.
        SchedulerEventBeforeOrAtTermination = "scheduler_event_before_or_at_termination",
        /// A scheduler event of the claim is a native admission refusal.
        NativeSchedulerAdmissionRefusalMisclassified = "native_scheduler_admission_refusal_misclassified",
        /// Nothing "restores" the claim after its failure, or counts a recompute as success.
        NoFallbackRecomputeCountedAsSatisfaction = "no_fallback_recompute_counted_as_satisfaction",
        /// The strict order of the whole failure path (checked only when all else holds).
        OrderedFailureSemantics = "ordered_failure_semantics",

        // Reference lifecycle gate (`docs/trace-format.md`).
        /// `resident_claim_accepted` with `claim_registration: pre_registered`.
        PreRegisteredAcceptedClaim = "pre_registered_accepted_claim",
        /// claim id, `predicate_id` and `materialization_predicate` on every event, never changing.
        StableClaimIdAndFixedMaterializationPredicate = "stable_claim_id_and_fixed_materialization_predicate",
        /// `reusable_object_id` on every event, never changing.
        ReusableObjectId = "reusable_object_id",
        /// `cache_identity` and `request_token_map_id` on every event, never changing.
        FixedCacheIdentityAndDeterministicRequestTokenMap = "fixed_cache_identity_and_deterministic_request_token_map",
        /// `resident_claim_materialized` with `predicate_materialized: true`.
        MaterializationPredicate = "materialization_predicate",
        /// An offload generation restored from the offload tier before a predicate-satisfying reuse.
        OffloadRestorability = "offload_restorability",
        /// A later generation's controlled restoration failure with a same-claim outcome.
        RestorationFailureOutcome = "restoration_failure_outcome",
        /// accepted < materialized < success generation < failure generation < outcome.
        OrderedLifecycleEvents = "ordered_lifecycle_events",

        // Multi-claim attribution gate (names of the original analyzer; `docs/trace-format.md`).
        /// One target claim is identifiable and passes the failure-outcome gate.
        TargetClaimFailureOutcomeGate = "target_claim_failure_outcome_gate",
        /// The target received `scheduler_resident_claim_restoration_failed`.
        SchedulerResidentClaimRestorationFailedTarget = "scheduler_resident_claim_restoration_failed_target",
        /// The target received `scheduler_active_request_refused`.
        SchedulerActiveRequestRefusedTarget = "scheduler_active_request_refused_target",
        /// Every scheduler failure event names only the target.
        SchedulerFailureEventsNameOnlyTarget = "scheduler_failure_events_name_only_target",
        /// Every scheduler failure event has `blocking_claim_ids == [target]`.
        BlockingClaimIdsNameOnlyTarget = "blocking_claim_ids_name_only_target",
        /// Some non-target claim got a failure or refusal attribution.
        NonTargetFailureOrRefusalAttribution = "non_target_failure_or_refusal_attribution",
        /// Every non-target claim restored, or at least did not fail.
        NonTargetRestoreSuccessOrNotFailed = "non_target_restore_success_or_not_failed",

        // Residency gates (kvlower's own; `docs/trace-format.md`, "Residency gates").
        /// Exactly one `resident_claim_accepted` for the gate's mode with `footprint_blocks`
        /// > 0, and no `resident_claim_refused`.
        ClaimAcceptedWithFootprint = "claim_accepted_with_footprint",
        /// As [`Requirement::ClaimAcceptedWithFootprint`] for mode `expiring`, with
        /// `duration_steps` > 0.
        ClaimAcceptedWithDuration = "claim_accepted_with_duration",
        /// `resident_claim_materialized`: predicate true, `materialized_blocks` = the
        /// footprint, a `request_id`.
        ClaimMaterializedWithFootprint = "claim_materialized_with_footprint",
        /// `resident_claim_protected` with `protected_blocks` = the footprint.
        ClaimBlocksProtected = "claim_blocks_protected",
        /// `allocator_victim_exclusion`: `excluded_blocks` = the footprint, none of the
        /// claim's blocks among the candidates, the conflicting request named.
        VictimsExcludeClaimBlocks = "victims_exclude_claim_blocks",
        /// `scheduler_conflict_action`: a known action answering the excluded request,
        /// which is not the request that materialized the claim.
        ConflictActionExplicit = "conflict_action_explicit",
        /// The action's `blocking_claim_ids` lists this claim.
        BlockingClaimIdsNameClaim = "blocking_claim_ids_name_claim",
        /// The action's `footprint_blocks` is the accepted footprint.
        ConflictFootprintMatchesAcceptance = "conflict_footprint_matches_acceptance",
        /// The claim's device copy was lost before its release (or never released).
        NoLossWhileProtected = "no_loss_while_protected",
        /// `resident_claim_released` with `blocks_intact` = the footprint.
        ClaimEndAccounted = "claim_end_accounted",
        /// accepted < materialized < protected < exclusion < action < released.
        OrderedProtectionLifecycle = "ordered_protection_lifecycle",
        /// `resident_claim_demoted` to a lower tier with `demoted_blocks` = the footprint.
        ClaimScopedDemotionToLowerTier = "claim_scoped_demotion_to_lower_tier",
        /// A `resident_claim_offloaded` of the claim stored the whole footprint
        /// (`block_count_footprint`) before the demotion.
        FootprintOffloadedBeforeDemotion = "footprint_offloaded_before_demotion",
        /// `resident_claim_device_copy_lost` for this claim, with its `loss_cause`.
        DeviceCopyLossObserved = "device_copy_loss_observed",
        /// accepted < materialized < demoted < first loss.
        OrderedDemotionLifecycle = "ordered_demotion_lifecycle",
        /// A conflict action naming this claim with its footprint (protection held).
        ProtectionHeldBeforeBoundary = "protection_held_before_boundary",
        /// `resident_claim_expired` with the accepted step and duration, at or after
        /// their sum.
        ClaimScopedExpiryBoundary = "claim_scoped_expiry_boundary",
        /// accepted < materialized < action < expired < first loss.
        OrderedExpiryLifecycle = "ordered_expiry_lifecycle",
        /// Every later residency record of the claim agrees with the first of its kind.
        ConsistentClaimHistory = "consistent_claim_history",
        /// Every residency record carries the six identity fields and its `engine_step`.
        ResidencyRecordFields = "residency_record_fields",

        // kvlower's own addition.
        /// A diagnostic (malformed line, bad sequence, identity conflict) touches this claim,
        /// so nothing about it can pass. Not an analyzer name: kvlower's fail-closed rule.
        WellFormedTrace = "well_formed_trace",
    }
}

kvlower_codes::names! {
    /// A false-positive control pattern the gate recognised and rejected (`docs/trace-format.md`,
    /// "Controls"). A row carrying a control always fails the
    /// failure-outcome gate with a named requirement; the control says *why* in one word.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
    pub enum Control {
        /// Only generic counters (`generic_*`), no claim-scoped event at all.
        GenericCountersOnly = "generic_counters_only",
        /// Failure evidence on this claim names another claim (the injection never matched it).
        WrongClaimFailure = "wrong_claim_failure",
        /// A load failure or outcome that carries no claim.
        UnclaimedFailure = "unclaimed_failure",
        /// Restoration "succeeds" after the failure (recompute, retry), or is counted as such.
        FallbackRecompute = "fallback_recompute",
        /// Offload/load lifecycle events without any claim metadata.
        OrdinaryOffloadWithoutClaim = "ordinary_offload_without_claim",
    }
}
