//! Which family a single event belongs to.
//!
//! Decision (documented in the README of the gate): envelope markers win over names.
//! - `schema_version` together with `timestamp_ns` → reference family;
//! - `monotonic_ns` or `hook_scope` → connector family;
//! - a line with neither is placed by a family-specific event name: `generic_*` counters,
//!   `request_initialized`, `offload_*` and `scheduler_*` events are connector events (the
//!   published generic-counter control carries only `timestamp_ns` and a 1-based
//!   sequence); `resident_claim_accepted`/`_materialized`/`_reuse_after_restore`/
//!   `_demoted`/`_expired`/`_harmed` are reference events;
//! - events both families share (`resident_claim_offloaded`, `…_restored`, …) and the
//!   residency events (`resident_claim_protected`, `scheduler_conflict_action`, …) tell nothing.
//!
//! A line carrying both families' markers tells nothing either; it is judged as a line of
//! the trace's family and rejected if the trace turns out to be of neither.

use serde::Serialize;

use crate::event::{EventKind, RawEvent};

/// Which of the two published trace formats a trace is written in.
///
/// Decided from the first event that tells (see [`of_event`]): the reference family
/// carries `schema_version` + `timestamp_ns` (1-based `event_sequence`), the connector
/// family `monotonic_ns` / `hook_scope` (0-based), and marker-less lines are placed by
/// family-specific event names (`generic_*` counters and `offload_*` events are connector
/// events). `Unknown` means nothing told; such a trace always carries a diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFamily {
    /// Patched vLLM connector / scheduler boundary events.
    Connector,
    /// Reference lifecycle hook events.
    Reference,
    /// No event told the family (empty trace, or only undecidable events).
    Unknown,
}

impl TraceFamily {
    /// The family's name as printed and serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            TraceFamily::Connector => "connector",
            TraceFamily::Reference => "reference",
            TraceFamily::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for TraceFamily {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The family `event` says it belongs to, if it says.
pub(crate) fn of_event(event: &RawEvent<'_>, kind: EventKind) -> Option<TraceFamily> {
    let reference = event.schema_version.is_some() && event.timestamp_ns.is_some();
    let connector = event.monotonic_ns.is_some() || event.hook_scope.is_some();
    match (reference, connector) {
        (true, false) => return Some(TraceFamily::Reference),
        (false, true) => return Some(TraceFamily::Connector),
        (true, true) => return None,
        (false, false) => {}
    }
    use EventKind::*;
    match kind {
        GenericCounter
        | RequestInitialized
        | OffloadLookupResult
        | OffloadStoreJobCreated
        | OffloadWorkerTransferSubmitted
        | OffloadWorkerTransferFinished
        | OffloadJobCompleted
        | OffloadRequestFinishedNoPendingJobs
        | OffloadRequestFinishedPendingJobs
        | OffloadLoadJobCreated
        | OffloadWorkerLoadFailed
        | SchedulerResidentClaimRestorationFailed
        | SchedulerActiveRequestRefused
        | OffloadLoadJobFailed => Some(TraceFamily::Connector),
        ResidentClaimAccepted
        | ResidentClaimMaterialized
        | ResidentClaimReuseAfterRestore
        | ResidentClaimDemoted
        | ResidentClaimExpired
        | ResidentClaimHarmed => Some(TraceFamily::Reference),
        ResidentClaimOffloaded
        | ResidentClaimRestoreRequired
        | ResidentClaimRestored
        | ResidentClaimRestorationFailed
        | ActiveRequestRefused
        | ResidentClaimRefused
        | ResidentClaimProtected
        | AllocatorVictimExclusion
        | SchedulerConflictAction
        | ResidentClaimDeviceCopyLost
        | ResidentClaimReleased
        | Other => None,
    }
}

/// Whether an event whose own family is `found` contradicts a trace of family `trace`.
///
/// Only envelope markers contradict: a marker-less generic counter inside a reference
/// trace (the reference hook's own generic-substrate control) is fine, but a line with
/// `monotonic_ns` inside a reference trace is not.
pub(crate) fn contradicts(event: &RawEvent<'_>, trace: TraceFamily) -> Option<TraceFamily> {
    let reference = event.schema_version.is_some() && event.timestamp_ns.is_some();
    let connector = event.monotonic_ns.is_some() || event.hook_scope.is_some();
    match (trace, reference, connector) {
        (TraceFamily::Connector, true, _) => Some(TraceFamily::Reference),
        (TraceFamily::Reference, _, true) => Some(TraceFamily::Connector),
        (TraceFamily::Reference, false, false) if event.schema_version.is_none() => {
            // The reference envelope always carries schema_version; a line without it is
            // not a reference event.
            Some(TraceFamily::Unknown)
        }
        _ => None,
    }
}
