//! One trace line, parsed into a typed, borrowed event before anything judges it.
//!
//! Only the fields a gate reads are declared; every other key is skipped without
//! allocating (traces carry dozens of fields the gates do not need). Strings borrow from
//! the line buffer unless they contain escapes. A declared field with the wrong JSON type,
//! or a key given twice, makes the whole line malformed: the gate never guesses.
//!
//! An ordinary line is read by the one-pass scanner in [`crate::scan`]; the serde
//! `Deserialize` below is the reading it must agree with, and reads every line the scanner
//! hands over.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

mod keys;

use keys::KeySeed;
pub(crate) use keys::KeyTable;

/// A JSON string that borrows from the line when it can.
///
/// Read through `deserialize_bytes`, which serde_json answers without a UTF-8 check (the
/// reader checks each whole line once, which is cheaper than one check per string), then
/// checked here only for the few strings the gate keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl Str<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_bytes(StrVisitor(""))
    }
}

/// Reads a [`Str`]; the `str` is the line the bytes are borrowed from when it is known
/// to be UTF-8, else empty (see [`ReadField`]).
struct StrVisitor<'a>(&'a str);

impl<'de: 'a, 'a> Visitor<'de> for StrVisitor<'a> {
    type Value = Str<'a>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
        Ok(Str(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
        Ok(Str(Cow::Owned(v.to_owned())))
    }
    fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Str<'a>, E> {
        // Bytes that lie within the checked line are its `str` cut at their ends (which
        // `get` checks are character boundaries); anything else is checked here.
        let line = self.0;
        let start = v.as_ptr().addr().wrapping_sub(line.as_ptr().addr());
        if let Some(s) = start
            .checked_add(v.len())
            .filter(|&end| end <= line.len())
            .and_then(|end| line.get(start..end))
        {
            return Ok(Str(Cow::Borrowed(s)));
        }
        match simdutf8::basic::from_utf8(v) {
            Ok(s) => Ok(Str(Cow::Borrowed(s))),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(v), &self)),
        }
    }
    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Str<'a>, E> {
        match simdutf8::basic::from_utf8(v) {
            Ok(s) => Ok(Str(Cow::Owned(s.to_owned()))),
            Err(_) => Err(E::invalid_value(de::Unexpected::Bytes(v), &self)),
        }
    }
}

/// Declares [`RawEvent`] and its hand-written `Deserialize`: keys are read as bytes and
/// looked up in the [`KeyTable`], unknown keys skipped as `IgnoredAny`, a repeated key is
/// an error, and an error in a value names its field.
macro_rules! raw_event {
    ($( $(#[$meta:meta])* $field:ident : $ty:ty, )*) => {
        /// The fields of one event that any gate reads. Field names are the exact trace keys.
        #[derive(Debug, Default)]
        pub(crate) struct RawEvent<'a> {
            $( $(#[$meta])* pub $field: $ty, )*
        }

        #[expect(non_camel_case_types, reason = "the variants are the trace's own key names")]
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum Field { $( $field, )* }

        /// Every declared key, in declaration order.
        #[cfg(test)]
        pub(crate) const FIELD_NAMES: &[&str] = &[$( stringify!($field), )*];

        /// Reads a declared field's value on the fast path ([`crate::scan`]): `None` when
        /// serde_json must decide.
        pub(crate) fn scan_field<'a>(
            event: &mut RawEvent<'a>,
            field: Field,
            s: &mut crate::scan::Scanner<'a>,
        ) -> Option<()> {
            match field {
                $( Field::$field => {
                    event.$field = <$ty as crate::scan::Scan<'a>>::scan(s)?;
                } )*
            }
            Some(())
        }

        // Repeated keys are tracked in a u64 bitmask.
        const _: () = assert!([$( stringify!($field), )*].len() <= 64);

        /// Every declared key with its field (see [`KeyTable`]).
        pub(crate) fn field_table() -> &'static KeyTable {
            static TABLE: OnceLock<KeyTable> = OnceLock::new();
            TABLE.get_or_init(|| {
                let mut t = KeyTable::default();
                $( t.insert(stringify!($field).as_bytes(), Field::$field); )*
                t
            })
        }

        impl<'de: 'a, 'a> Visitor<'de> for EventVisitor<'_, 'a> {
            type Value = ();

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                let EventVisitor(event, line) = self;
                let mut seen: u64 = 0;
                let table = field_table();
                while let Some(key) = map.next_key_seed(KeySeed(table))? {
                    let Some(field) = key else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    let bit = 1u64 << (field as u32);
                    match field {
                        $( Field::$field => {
                            if seen & bit != 0 {
                                return Err(de::Error::duplicate_field(stringify!($field)));
                            }
                            seen |= bit;
                            event.$field = <$ty as ReadField<'de, 'a>>::read(&mut map, line)
                                .map_err(|e| in_field(stringify!($field), e))?;
                        } )*
                    }
                }
                Ok(())
            }
        }
    };
}

/// Wraps a value's error with the field it belongs to (without the inner position: the
/// reader reports the line, serde_json adds the column).
fn in_field<E: de::Error>(field: &str, e: E) -> E {
    let text = e.to_string();
    let message = text
        .rfind(" at line ")
        .map_or(text.as_str(), |i| text.get(..i).unwrap_or(""));
    E::custom(format_args!("field `{field}`: {message}"))
}

/// Fills the event it holds in place: an event is about a kilobyte, and returning it by
/// value through serde and the parser's results cost several copies of it per line. The
/// `str` is the whole line when it is known to be UTF-8 (else empty): see [`ReadField`].
struct EventVisitor<'p, 'a>(&'p mut RawEvent<'a>, &'a str);

/// How a declared field's value is read. A string field borrows its text from the line
/// without a UTF-8 check of its own when the line was checked whole: the string's bytes
/// are a slice of the line, so the line's `str` is cut there instead (a UTF-8 check per
/// kept string was a measurable share of the parse). Every other type reads as it
/// deserializes.
trait ReadField<'de, 'a>: Sized {
    fn read<A: MapAccess<'de>>(map: &mut A, line: &'a str) -> Result<Self, A::Error>;
}

macro_rules! read_as_deserialized {
    ($($ty:ty),* $(,)?) => {$(
        impl<'de: 'a, 'a> ReadField<'de, 'a> for $ty {
            fn read<A: MapAccess<'de>>(map: &mut A, _line: &'a str) -> Result<Self, A::Error> {
                map.next_value()
            }
        }
    )*};
}

read_as_deserialized!(
    Option<u64>,
    Option<f64>,
    Option<bool>,
    Option<IgnoredAny>,
    Option<TransferDirection>,
    Option<Vec<Str<'a>>>,
    Option<LooseStr<'a>>,
);

impl<'de: 'a, 'a> ReadField<'de, 'a> for Option<Str<'a>> {
    fn read<A: MapAccess<'de>>(map: &mut A, line: &'a str) -> Result<Self, A::Error> {
        map.next_value_seed(OptionalStr(line))
    }
}

/// `Option<Str>` as serde reads it (`null` is `None`), cutting borrowed text from `line`.
struct OptionalStr<'a>(&'a str);

impl<'de: 'a, 'a> DeserializeSeed<'de> for OptionalStr<'a> {
    type Value = Option<Str<'a>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for OptionalStr<'a> {
    type Value = Option<Str<'a>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("option")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_bytes(StrVisitor(self.0)).map(Some)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for RawEvent<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut event = RawEvent::default();
        d.deserialize_map(EventVisitor(&mut event, ""))?;
        Ok(event)
    }
}

/// Deserializes one event into a given (default) [`RawEvent`] rather than returning it,
/// from the line it is given as a `str` (checked UTF-8 whole).
pub(crate) struct InPlace<'p, 'a>(pub &'p mut RawEvent<'a>, pub &'a str);

impl<'de: 'a, 'a> DeserializeSeed<'de> for InPlace<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(EventVisitor(self.0, self.1))
    }
}

raw_event! {
    event: Option<Str<'a>>,
    event_sequence: Option<u64>,

    // Family markers: only their presence matters (except the schema version's value).
    schema_version: Option<u64>,
    timestamp_ns: Option<IgnoredAny>,
    monotonic_ns: Option<IgnoredAny>,
    hook_scope: Option<IgnoredAny>,

    // Claim identity.
    claim_id: Option<Str<'a>>,
    resident_claim_id: Option<Str<'a>>,
    predicate_id: Option<Str<'a>>,
    materialization_predicate: Option<Str<'a>>,
    prefix_id: Option<Str<'a>>,
    reusable_object_id: Option<Str<'a>>,
    cache_identity: Option<Str<'a>>,
    request_token_map_id: Option<Str<'a>>,

    // Connector lifecycle.
    num_hit_tokens: Option<f64>,
    will_load_async: Option<bool>,
    transfer_type: Option<TransferDirection>,
    success: Option<bool>,
    is_store: Option<bool>,
    restoration_source: Option<Str<'a>>,
    restored_from_offload_tier: Option<bool>,

    // Failure injection and outcomes.
    controlled_restoration_unavailable: Option<bool>,
    failure_injection_flag: Option<bool>,
    injected_restoration_failure: Option<bool>,
    failure_target_claim_id: Option<Str<'a>>,
    failure_matched_claim_id: Option<Str<'a>>,
    outcome_claim_id: Option<Str<'a>>,
    blocking_claim_ids: Option<Vec<Str<'a>>>,
    claim_scoped_outcome_type: Option<Str<'a>>,
    outcome_type: Option<Str<'a>>,
    fallback_recompute_counted_as_satisfaction: Option<bool>,
    fallback_recompute_counted_as_satisfying_claim: Option<bool>,

    // Scheduler boundary.
    scheduler_side_failure_outcome: Option<bool>,
    scheduler_side_refusal: Option<bool>,
    native_scheduler_admission_refusal: Option<bool>,
    scheduler_event_before_finish_requests: Option<bool>,
    scheduler_failure_policy: Option<Str<'a>>,
    finish_status: Option<Str<'a>>,

    // Reference lifecycle.
    claim_registration: Option<Str<'a>>,
    predicate_materialized: Option<bool>,
    offload_generation: Option<u64>,
    cache_tier_from: Option<Str<'a>>,
    cache_tier_to: Option<Str<'a>>,
    reuse_requires_restoration: Option<bool>,
    predicate_satisfied: Option<bool>,

    // Residency (protection, demotion, expiry; `docs/trace-format.md`, "Residency gates").
    request_id: Option<LooseStr<'a>>,
    accepted_mode: Option<Str<'a>>,
    footprint_blocks: Option<u64>,
    accepted_at_step: Option<u64>,
    duration_steps: Option<u64>,
    materialized_blocks: Option<u64>,
    protected_blocks: Option<u64>,
    conflicting_request_id: Option<Str<'a>>,
    excluded_blocks: Option<u64>,
    claim_blocks_in_candidates: Option<u64>,
    action: Option<Str<'a>>,
    from_tier: Option<Str<'a>>,
    to_tier: Option<Str<'a>>,
    demoted_blocks: Option<u64>,
    expired_at_step: Option<u64>,
    loss_cause: Option<Str<'a>>,
    blocks_intact: Option<u64>,
    // The engine step a residency record is dated at, and the blocks a claim-scoped
    // offload stored (what a demotion must wait for).
    engine_step: Option<u64>,
    block_count_footprint: Option<u64>,
}

/// `request_id`, which every connector event carries and only the residency gates read:
/// a string is kept, any other JSON value is read past and counts as no request. A
/// runtime that numbers its requests must not make every other gate's lines malformed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LooseStr<'a>(pub Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LooseStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LooseVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for LooseVisitor<'a> {
            type Value = LooseStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<LooseStr<'a>, E> {
                Ok(LooseStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<LooseStr<'a>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LooseStr(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LooseStr<'a>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseStr(None))
            }
        }
        d.deserialize_any(LooseVisitor(PhantomData))
    }
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

    /// The event's `request_id` when it is a non-empty string.
    pub fn request(&self) -> Option<&str> {
        self.request_id
            .as_ref()
            .and_then(|r| r.0.as_deref())
            .filter(|s| !s.is_empty())
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
    // Residency (connector family; `docs/trace-format.md`, "Residency gates").
    ResidentClaimRefused,
    ResidentClaimProtected,
    AllocatorVictimExclusion,
    SchedulerConflictAction,
    ResidentClaimDeviceCopyLost,
    ResidentClaimReleased,
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
            "resident_claim_refused" => ResidentClaimRefused,
            "resident_claim_protected" => ResidentClaimProtected,
            "allocator_victim_exclusion" => AllocatorVictimExclusion,
            "scheduler_conflict_action" => SchedulerConflictAction,
            "resident_claim_device_copy_lost" => ResidentClaimDeviceCopyLost,
            "resident_claim_released" => ResidentClaimReleased,
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
