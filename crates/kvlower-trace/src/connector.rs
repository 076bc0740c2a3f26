//! The connector family's per-claim state machine and its two gates (paths A and B).
//!
//! Each step of the witness paths is "the first event of kind K (matching P) after step
//! S", so a claim needs only the position of each step's first occurrence: the state is a
//! fixed set of positions and flags, whatever the trace length. Positions are event
//! ordinals in file order; the reader has already rejected any event whose
//! `event_sequence` does not increase, so file order is sequence order.

use crate::Pos;
use crate::event::{EventKind, RawEvent, TransferDirection, given, names};
use crate::identity::Bucket;
use crate::names::{Control, Requirement};
use crate::residency::ResidencyClaim;

/// The claim-scoped outcome types a restoration failure may produce (`docs/trace-format.md`).
const CLAIM_SCOPED_OUTCOMES: [&str; 4] = ["refusal", "demotion", "expiry", "harm"];

/// Where each step of paths A and B first happened for one claim, plus what rules it out.
#[derive(Debug, Default, Clone)]
pub(crate) struct ConnectorClaim {
    // Shared prefix of both paths.
    init: Option<Pos>,
    store_created: Option<Pos>,
    store_transfer: Option<Pos>,
    store_offloaded: Option<Pos>,
    store_completed: Option<Pos>,
    lookup_hit: Option<Pos>,
    restore_required: Option<Pos>,
    load_created: Option<Pos>,
    // Path A.
    load_ok: Option<Pos>,
    load_completed: Option<Pos>,
    restored: Option<Pos>,
    // Path B.
    failed_transfer: Option<Pos>,
    sched_failed: Option<Pos>,
    sched_refusal: Option<Pos>,
    termination_after_refusal: Option<Pos>,
    first_termination_after_failure: Option<Pos>,
    load_failed: Option<Pos>,
    restoration_failed: Option<Pos>,
    refusal: Option<Pos>,
    /// The first failure evidence of any kind for this claim.
    pub first_failure: Option<Pos>,
    // What rules a path out.
    native_admission_refusal: bool,
    scheduler_after_finish: bool,
    pub fallback: bool,
    pub wrong_claim: bool,
    /// A failure or refusal event is attributed to this claim (multi-claim gate).
    pub attributed_failure: bool,
    // For the unclaimed row's controls.
    saw_generic: bool,
    saw_lifecycle: bool,
    saw_failure: bool,
    /// Residency facts, made on the first residency event (most claims have none).
    pub residency: Option<Box<ResidencyClaim>>,
}

fn first(slot: &mut Option<Pos>, pos: Pos) {
    if slot.is_none() {
        *slot = Some(pos);
    }
}

/// Records `pos` as the first occurrence of a step that must follow step `prior`.
fn step(slot: &mut Option<Pos>, prior: Option<Pos>, pos: Pos) {
    if after(prior, pos) {
        first(slot, pos);
    }
}

/// Whether step `prior` happened before `pos`.
fn after(prior: Option<Pos>, pos: Pos) -> bool {
    prior.is_some_and(|p| p < pos)
}

impl ConnectorClaim {
    /// Feeds one event of this claim (`claim` is `None` for the unclaimed bucket).
    pub fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>) {
        use EventKind::*;
        if ResidencyClaim::is_residency(kind) {
            self.residency
                .get_or_insert_with(Box::default)
                .observe(kind, e, pos, claim);
        } else if kind == ResidentClaimOffloaded
            && let Some(residency) = self.residency.as_deref_mut()
        {
            // What a demotion must wait for (it does not make the residency gates apply).
            residency.observe(kind, e, pos, claim);
        }
        if kind == GenericCounter {
            self.saw_generic = true;
        } else if kind.is_lifecycle() {
            self.saw_lifecycle = true;
        }
        let failed_transfer = kind == OffloadWorkerTransferFinished
            && e.transfer_type == Some(TransferDirection::CpuToGpu)
            && e.success == Some(false);
        if failed_transfer || kind.is_failure_or_outcome() {
            self.saw_failure = true;
            first(&mut self.first_failure, pos);
            if e.names_other_claim(claim) {
                self.wrong_claim = true;
            }
        }
        if e.says_fallback_recompute() {
            self.fallback = true;
        }
        match kind {
            RequestInitialized => first(&mut self.init, pos),
            OffloadLookupResult => {
                let hit = e.num_hit_tokens.is_some_and(|n| n > 0.0);
                if hit && e.will_load_async == Some(true) {
                    first(&mut self.lookup_hit, pos);
                }
            }
            OffloadStoreJobCreated => first(&mut self.store_created, pos),
            OffloadWorkerTransferFinished => self.transfer_finished(e, pos, claim),
            ResidentClaimOffloaded => step(&mut self.store_offloaded, self.store_transfer, pos),
            OffloadJobCompleted => match e.is_store {
                Some(true) if after(self.store_transfer, pos) => {
                    first(&mut self.store_completed, pos)
                }
                Some(false) if after(self.load_ok, pos) => first(&mut self.load_completed, pos),
                _ => {}
            },
            ResidentClaimRestoreRequired => step(&mut self.restore_required, self.lookup_hit, pos),
            OffloadLoadJobCreated => step(&mut self.load_created, self.restore_required, pos),
            ResidentClaimRestored => self.restored(e, pos),
            SchedulerResidentClaimRestorationFailed => {
                self.scheduler_event(e);
                let qualifies = names(&e.outcome_claim_id, claim)
                    && e.scheduler_side_failure_outcome == Some(true)
                    && given(&e.finish_status) == Some("FINISHED_ERROR");
                if qualifies && after(self.failed_transfer, pos) {
                    first(&mut self.sched_failed, pos);
                }
            }
            SchedulerActiveRequestRefused => {
                self.scheduler_event(e);
                let qualifies = names(&e.outcome_claim_id, claim)
                    && e.blocks(claim)
                    && e.scheduler_side_refusal == Some(true)
                    && e.native_scheduler_admission_refusal != Some(true);
                if qualifies && after(self.sched_failed, pos) {
                    first(&mut self.sched_refusal, pos);
                }
            }
            OffloadRequestFinishedNoPendingJobs | OffloadRequestFinishedPendingJobs => {
                step(
                    &mut self.first_termination_after_failure,
                    self.failed_transfer,
                    pos,
                );
                step(&mut self.termination_after_refusal, self.sched_refusal, pos);
            }
            OffloadLoadJobFailed if e.is_store != Some(true) => {
                step(&mut self.load_failed, self.failed_transfer, pos)
            }
            ResidentClaimRestorationFailed => {
                self.attributed_failure = true;
                let outcome = given(&e.claim_scoped_outcome_type);
                let qualifies = names(&e.outcome_claim_id, claim)
                    && e.controlled_restoration_unavailable == Some(true)
                    && e.failure_injection_flag == Some(true)
                    && outcome.is_some_and(|o| CLAIM_SCOPED_OUTCOMES.contains(&o));
                if qualifies && after(self.load_failed, pos) {
                    first(&mut self.restoration_failed, pos);
                }
            }
            ActiveRequestRefused => {
                self.attributed_failure = true;
                let qualifies = names(&e.outcome_claim_id, claim) && e.blocks(claim);
                if qualifies && after(self.restoration_failed, pos) {
                    first(&mut self.refusal, pos);
                }
            }
            _ => {}
        }
    }

    fn transfer_finished(&mut self, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>) {
        match (e.transfer_type, e.success) {
            (Some(TransferDirection::GpuToCpu), Some(true)) => {
                step(&mut self.store_transfer, self.store_created, pos)
            }
            // Observation (path A) takes the first successful CPU→GPU transfer after the
            // first load job, as the reference analyzer does, even when an earlier load
            // of the claim failed: the later load job really restored from the offload
            // tier. For the failure path (B) the same restore after a failure is a retry
            // standing in for the failed restoration, so it rules path B out.
            (Some(TransferDirection::CpuToGpu), Some(true)) => {
                if self.first_failure.is_some() {
                    self.fallback = true;
                }
                step(&mut self.load_ok, self.load_created, pos);
            }
            (Some(TransferDirection::CpuToGpu), Some(false)) => {
                let tied_to_claim = claim.is_some() && !e.names_other_claim(claim);
                if tied_to_claim && e.is_controlled_failure() && after(self.load_created, pos) {
                    first(&mut self.failed_transfer, pos);
                }
            }
            _ => {}
        }
    }

    /// A restoration witnesses path A only when it came from the offload tier (stricter
    /// than the reference analyzer, which takes any `resident_claim_restored`); any
    /// restoration after a failure, or not from the offload tier, rules path B out.
    fn restored(&mut self, e: &RawEvent<'_>, pos: Pos) {
        let from_offload_tier = e.restored_from_offload_tier == Some(true)
            && given(&e.restoration_source) != Some("fallback_recompute");
        if self.first_failure.is_some() || !from_offload_tier {
            self.fallback = true;
        }
        if from_offload_tier {
            step(&mut self.restored, self.load_ok, pos);
        }
    }

    fn scheduler_event(&mut self, e: &RawEvent<'_>) {
        self.attributed_failure = true;
        if e.native_scheduler_admission_refusal == Some(true) {
            self.native_admission_refusal = true;
        }
        if e.scheduler_event_before_finish_requests == Some(false) {
            self.scheduler_after_finish = true;
        }
    }

    /// Path A's missing requirements.
    pub fn observation_missing(&self, bucket: Bucket<'_>) -> Vec<Requirement> {
        use Requirement::*;
        let mut missing = Vec::new();
        if !bucket.is_claim() || self.init.is_none() {
            missing.push(ClaimMetadataBeforeLifecycle);
        }
        if bucket.ambiguous() {
            missing.push(AmbiguousClaimCacheIdentity);
        }
        if self.store_created.is_none()
            || self.store_transfer.is_none()
            || self.store_offloaded.is_none()
            || self.store_completed.is_none()
        {
            missing.push(StoreOffloadToCpuPath);
        }
        // Fail closed: without both events there is no "hit after store" to speak of.
        let hit_after_store = match (self.store_transfer, self.lookup_hit) {
            (Some(store), Some(hit)) => store < hit,
            (None, _) | (_, None) => false,
        };
        if self.lookup_hit.is_none() || self.load_created.is_none() || !hit_after_store {
            missing.push(ReuseLookupHitRequiringLoad);
        }
        if self.load_ok.is_none() || self.load_completed.is_none() || self.restored.is_none() {
            missing.push(CpuToGpuRestoreSuccess);
        }
        if let (Some(init), Some(store)) = (self.init, self.store_created)
            && init >= store
        {
            missing.push(ClaimMetadataOrdering);
        }
        missing
    }

    /// Path B's missing requirements (`ordered_failure_semantics` only when all else holds).
    pub fn failure_missing(&self, bucket: Bucket<'_>) -> Vec<Requirement> {
        use Requirement::*;
        let mut missing = Vec::new();
        if !bucket.is_claim() || self.init.is_none() {
            missing.push(ClaimMetadataBeforeLifecycle);
        }
        if bucket.ambiguous() {
            missing.push(AmbiguousClaimCacheIdentity);
        }
        if self.store_created.is_none()
            || self.store_transfer.is_none()
            || self.store_offloaded.is_none()
        {
            missing.push(StoreOffloadToCpuPath);
        }
        if self.lookup_hit.is_none()
            || self.restore_required.is_none()
            || self.load_created.is_none()
        {
            missing.push(RestoreRequiredBeforeFailure);
        }
        if self.failed_transfer.is_none() || self.load_failed.is_none() {
            missing.push(ControlledCpuToGpuLoadFailure);
        }
        if self.restoration_failed.is_none() {
            missing.push(ClaimScopedRestorationFailed);
        }
        if self.refusal.is_none() {
            missing.push(FailClosedActiveRequestRefused);
        }
        if self.sched_failed.is_none() {
            missing.push(SchedulerSideRestorationFailed);
        }
        if self.sched_refusal.is_none() {
            missing.push(SchedulerSideActiveRequestRefused);
        }
        if self.sched_failed.is_none() || self.sched_refusal.is_none() || self.wrong_claim {
            missing.push(SchedulerSideClaimMatch);
        }
        let before_termination = match (self.sched_refusal, self.termination_after_refusal) {
            (Some(refusal), Some(_)) => self
                .first_termination_after_failure
                .is_none_or(|t| t >= refusal),
            _ => false,
        };
        if !before_termination || self.scheduler_after_finish {
            missing.push(SchedulerEventBeforeOrAtTermination);
        }
        if self.native_admission_refusal {
            missing.push(NativeSchedulerAdmissionRefusalMisclassified);
        }
        if self.fallback {
            missing.push(NoFallbackRecomputeCountedAsSatisfaction);
        }
        if missing.is_empty() && !self.strictly_ordered() {
            missing.push(OrderedFailureSemantics);
        }
        missing
    }

    /// request_initialized < store job < GPU→CPU ok < lookup hit < restore_required <
    /// load job < failed CPU→GPU < scheduler restoration_failed < scheduler refusal <
    /// request termination < load job failed < resident_claim_restoration_failed < refusal.
    fn strictly_ordered(&self) -> bool {
        let chain = [
            self.init,
            self.store_created,
            self.store_transfer,
            self.lookup_hit,
            self.restore_required,
            self.load_created,
            self.failed_transfer,
            self.sched_failed,
            self.sched_refusal,
            self.termination_after_refusal,
            self.load_failed,
            self.restoration_failed,
            self.refusal,
        ];
        let mut previous: Option<Pos> = None;
        for step in chain {
            let Some(step) = step else { return false };
            if previous.is_some_and(|p| p >= step) {
                return false;
            }
            previous = Some(step);
        }
        true
    }

    /// The controls this claim (or the unclaimed bucket) matched.
    pub fn controls(&self, bucket: Bucket<'_>) -> Vec<Control> {
        let mut controls = Vec::new();
        if bucket.is_claim() {
            if self.wrong_claim {
                controls.push(Control::WrongClaimFailure);
            }
            if self.fallback {
                controls.push(Control::FallbackRecompute);
            }
        } else if self.saw_failure {
            controls.push(Control::UnclaimedFailure);
        } else if self.saw_lifecycle {
            controls.push(Control::OrdinaryOffloadWithoutClaim);
        } else if self.saw_generic {
            controls.push(Control::GenericCountersOnly);
        }
        controls
    }

    /// Whether the unclaimed bucket holds failure evidence worth its own row.
    pub fn has_failure_evidence(&self) -> bool {
        self.saw_failure
    }

    /// Whether this claim has any failure evidence at all.
    pub fn failed(&self) -> bool {
        self.first_failure.is_some()
    }

    pub fn has_scheduler_failure(&self) -> bool {
        self.sched_failed.is_some()
    }

    pub fn has_scheduler_refusal(&self) -> bool {
        self.sched_refusal.is_some()
    }
}
