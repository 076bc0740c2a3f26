//! One trace line, parsed into a typed, borrowed event before anything judges it.
//!
//! Only the fields a gate reads are declared; every other key is skipped by serde without
//! allocating (traces carry dozens of fields the gates do not need). Strings borrow from
//! the line buffer unless they contain escapes. A declared field with the wrong JSON type,
//! or a key given twice, makes the whole line malformed: the gate never guesses.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};

/// A JSON string that borrows from the line when it can.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Str<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl Str<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The fields of one event that any gate reads. Field names are the exact trace keys.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RawEvent<'a> {
    #[serde(borrow)]
    pub event: Option<Str<'a>>,
    pub event_sequence: Option<u64>,

    // Family markers: only their presence matters (except the schema version's value).
    pub schema_version: Option<u64>,
    pub timestamp_ns: Option<IgnoredAny>,
    pub monotonic_ns: Option<IgnoredAny>,
    pub hook_scope: Option<IgnoredAny>,

    // Claim identity.
    #[serde(borrow)]
    pub claim_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub resident_claim_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub predicate_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub materialization_predicate: Option<Str<'a>>,
    #[serde(borrow)]
    pub prefix_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub reusable_object_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub cache_identity: Option<Str<'a>>,
    #[serde(borrow)]
    pub request_token_map_id: Option<Str<'a>>,

    // Connector lifecycle.
    pub num_hit_tokens: Option<f64>,
    pub will_load_async: Option<bool>,
    pub transfer_type: Option<TransferDirection>,
    pub success: Option<bool>,
    pub is_store: Option<bool>,
    #[serde(borrow)]
    pub restoration_source: Option<Str<'a>>,
    pub restored_from_offload_tier: Option<bool>,

    // Failure injection and outcomes.
    pub controlled_restoration_unavailable: Option<bool>,
    pub failure_injection_flag: Option<bool>,
    pub injected_restoration_failure: Option<bool>,
    #[serde(borrow)]
    pub failure_target_claim_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub failure_matched_claim_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub outcome_claim_id: Option<Str<'a>>,
    #[serde(borrow)]
    pub blocking_claim_ids: Option<Vec<Str<'a>>>,
    #[serde(borrow)]
    pub claim_scoped_outcome_type: Option<Str<'a>>,
    #[serde(borrow)]
    pub outcome_type: Option<Str<'a>>,
    pub fallback_recompute_counted_as_satisfaction: Option<bool>,
    pub fallback_recompute_counted_as_satisfying_claim: Option<bool>,

    // Scheduler boundary.
    pub scheduler_side_failure_outcome: Option<bool>,
    pub scheduler_side_refusal: Option<bool>,
    pub native_scheduler_admission_refusal: Option<bool>,
    pub scheduler_event_before_finish_requests: Option<bool>,
    #[serde(borrow)]
    pub scheduler_failure_policy: Option<Str<'a>>,
    #[serde(borrow)]
    pub finish_status: Option<Str<'a>>,

    // Reference lifecycle.
    #[serde(borrow)]
    pub claim_registration: Option<Str<'a>>,
    pub predicate_materialized: Option<bool>,
    pub offload_generation: Option<u64>,
    #[serde(borrow)]
    pub cache_tier_from: Option<Str<'a>>,
    #[serde(borrow)]
    pub cache_tier_to: Option<Str<'a>>,
    pub reuse_requires_restoration: Option<bool>,
    pub predicate_satisfied: Option<bool>,
}

/// A non-empty string field, or `None` (absent, `null` and `""` all mean "not given").
pub(crate) fn given<'s>(field: &'s Option<Str<'_>>) -> Option<&'s str> {
    field.as_ref().map(Str::as_str).filter(|s| !s.is_empty())
}

/// Whether an optional field names exactly `claim` (an absent field or claim never matches).
pub(crate) fn names(field: &Option<Str<'_>>, claim: Option<&str>) -> bool {
    matches!((given(field), claim), (Some(a), Some(b)) if a == b)
}

impl RawEvent<'_> {
    /// The claim the event belongs to: `claim_id`, else `resident_claim_id`.
    pub fn claim(&self) -> Option<&str> {
        given(&self.claim_id).or_else(|| given(&self.resident_claim_id))
    }

    /// Whether `blocking_claim_ids` lists `claim`.
    pub fn blocks(&self, claim: Option<&str>) -> bool {
        match (&self.blocking_claim_ids, claim) {
            (Some(ids), Some(c)) => ids.iter().any(|id| id.as_str() == c),
            _ => false,
        }
    }

    /// Whether a failure-attribution field names a claim other than `claim`.
    pub fn names_other_claim(&self, claim: Option<&str>) -> bool {
        let other = |f: &Option<Str<'_>>| given(f).is_some_and(|v| Some(v) != claim);
        other(&self.failure_target_claim_id)
            || other(&self.failure_matched_claim_id)
            || other(&self.outcome_claim_id)
            || self
                .blocking_claim_ids
                .as_ref()
                .is_some_and(|ids| ids.iter().any(|id| Some(id.as_str()) != claim))
    }

    /// Whether the event marks a controlled (injected) restoration failure.
    pub fn is_controlled_failure(&self) -> bool {
        self.injected_restoration_failure == Some(true)
            || self.failure_injection_flag == Some(true)
            || self.controlled_restoration_unavailable == Some(true)
    }

    /// Whether the event says a recompute stood in for the restoration.
    pub fn says_fallback_recompute(&self) -> bool {
        const FALLBACK_OUTCOME: &str = "fallback_recompute_without_claim_satisfaction";
        self.fallback_recompute_counted_as_satisfaction == Some(true)
            || self.fallback_recompute_counted_as_satisfying_claim == Some(true)
            || given(&self.restoration_source) == Some("fallback_recompute")
            || given(&self.scheduler_failure_policy) == Some("recompute")
            || given(&self.claim_scoped_outcome_type) == Some(FALLBACK_OUTCOME)
            || given(&self.outcome_type) == Some(FALLBACK_OUTCOME)
    }
}

/// `transfer_type`: `["GPU","CPU"]` is a store, `["CPU","GPU"]` a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransferDirection {
    GpuToCpu,
    CpuToGpu,
    Other,
}

impl<'de> Deserialize<'de> for TransferDirection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct DirectionVisitor;
        impl<'de> Visitor<'de> for DirectionVisitor {
            type Value = TransferDirection;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a transfer_type list such as [\"GPU\", \"CPU\"]")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let from = seq.next_element::<Str<'de>>()?;
                let to = seq.next_element::<Str<'de>>()?;
                let mut extra = false;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    extra = true;
                }
                let pair = (from.as_ref().map(Str::as_str), to.as_ref().map(Str::as_str));
                Ok(match pair {
                    (Some("GPU"), Some("CPU")) if !extra => TransferDirection::GpuToCpu,
                    (Some("CPU"), Some("GPU")) if !extra => TransferDirection::CpuToGpu,
                    _ => TransferDirection::Other,
                })
            }
            fn visit_str<E: de::Error>(self, _v: &str) -> Result<Self::Value, E> {
                Ok(TransferDirection::Other)
            }
        }
        d.deserialize_any(DirectionVisitor)
    }
}

/// The event names any gate distinguishes; everything else is `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    // Connector (E0–E14 and the outcome events).
    RequestInitialized,
    OffloadLookupResult,
    OffloadStoreJobCreated,
    OffloadWorkerTransferSubmitted,
    OffloadWorkerTransferFinished,
    ResidentClaimOffloaded,
    OffloadJobCompleted,
    OffloadRequestFinishedNoPendingJobs,
    OffloadRequestFinishedPendingJobs,
    ResidentClaimRestoreRequired,
    OffloadLoadJobCreated,
    ResidentClaimRestored,
    OffloadWorkerLoadFailed,
    SchedulerResidentClaimRestorationFailed,
    SchedulerActiveRequestRefused,
    OffloadLoadJobFailed,
    ResidentClaimRestorationFailed,
    ActiveRequestRefused,
    GenericCounter,
    // Reference only.
    ResidentClaimAccepted,
    ResidentClaimMaterialized,
    ResidentClaimReuseAfterRestore,
    ResidentClaimDemoted,
    ResidentClaimExpired,
    ResidentClaimHarmed,
    Other,
}

impl EventKind {
    pub fn of(name: &str) -> EventKind {
        use EventKind::*;
        match name {
            "request_initialized" => RequestInitialized,
            "offload_lookup_result" => OffloadLookupResult,
            "offload_store_job_created" => OffloadStoreJobCreated,
            "offload_worker_transfer_submitted" => OffloadWorkerTransferSubmitted,
            "offload_worker_transfer_finished" => OffloadWorkerTransferFinished,
            "resident_claim_offloaded" => ResidentClaimOffloaded,
            "offload_job_completed" => OffloadJobCompleted,
            "offload_request_finished_no_pending_jobs" => OffloadRequestFinishedNoPendingJobs,
            "offload_request_finished_pending_jobs" => OffloadRequestFinishedPendingJobs,
            "resident_claim_restore_required" => ResidentClaimRestoreRequired,
            "offload_load_job_created" => OffloadLoadJobCreated,
            "resident_claim_restored" => ResidentClaimRestored,
            "offload_worker_load_failed" => OffloadWorkerLoadFailed,
            "scheduler_resident_claim_restoration_failed" => {
                SchedulerResidentClaimRestorationFailed
            }
            "scheduler_active_request_refused" => SchedulerActiveRequestRefused,
            "offload_load_job_failed" => OffloadLoadJobFailed,
            "resident_claim_restoration_failed" => ResidentClaimRestorationFailed,
            "active_request_refused" => ActiveRequestRefused,
            "generic_kv_blocks_offloaded"
            | "generic_kv_blocks_onboarded"
            | "generic_kv_transfer_failed_counter"
            | "generic_request_error_counter" => GenericCounter,
            "resident_claim_accepted" => ResidentClaimAccepted,
            "resident_claim_materialized" => ResidentClaimMaterialized,
            "resident_claim_reuse_after_restore" => ResidentClaimReuseAfterRestore,
            "resident_claim_demoted" => ResidentClaimDemoted,
            "resident_claim_expired" => ResidentClaimExpired,
            "resident_claim_harmed" => ResidentClaimHarmed,
            _ => Other,
        }
    }

    /// A request, offload, restore or scheduler event (not a generic counter, not unknown).
    pub fn is_lifecycle(self) -> bool {
        !matches!(self, EventKind::GenericCounter | EventKind::Other)
    }

    /// A failure or outcome event (the transfer failure is judged by its `success` field).
    pub fn is_failure_or_outcome(self) -> bool {
        use EventKind::*;
        matches!(
            self,
            OffloadWorkerLoadFailed
                | SchedulerResidentClaimRestorationFailed
                | SchedulerActiveRequestRefused
                | OffloadLoadJobFailed
                | ResidentClaimRestorationFailed
                | ActiveRequestRefused
                | ResidentClaimDemoted
                | ResidentClaimExpired
                | ResidentClaimHarmed
        )
    }
}
