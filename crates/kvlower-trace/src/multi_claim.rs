//! Path C: in a connector trace with several claims, failure and refusal must name only
//! the target claim. Tracked trace-wide in constant space: for each kind of naming, the
//! first name seen and whether any other name (or no name) ever appeared.

use crate::event::{EventKind, RawEvent, given};
use crate::names::Requirement;

/// The set of claim names a kind of evidence used, summarised as "exactly one name" or not.
#[derive(Debug, Default, Clone)]
pub(crate) struct OneName {
    first: Option<Box<str>>,
    /// A second distinct name, or an event that named no claim.
    more: bool,
}

impl OneName {
    fn add(&mut self, name: Option<&str>) {
        match (name, &self.first) {
            (None, _) => self.more = true,
            (Some(n), None) => self.first = Some(n.into()),
            (Some(n), Some(f)) => {
                if **f != *n {
                    self.more = true;
                }
            }
        }
    }

    /// Whether every use named `target` and only it.
    fn only(&self, target: &str) -> bool {
        !self.more && self.first.as_deref() == Some(target)
    }

    /// The single name used, if exactly one was.
    fn single(&self) -> Option<&str> {
        if self.more {
            None
        } else {
            self.first.as_deref()
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_none() && !self.more
    }
}

/// Trace-wide attribution evidence.
#[derive(Debug, Default, Clone)]
pub(crate) struct Attribution {
    scheduler_events: u64,
    /// Event claim and outcome claim of every scheduler failure event.
    scheduler_names: OneName,
    /// `blocking_claim_ids` of every scheduler failure event (each must be `[target]`).
    scheduler_blocking: OneName,
    /// Claims named by connector-level failure/refusal events (`outcome_claim_id`,
    /// `blocking_claim_ids`).
    outcome_names: OneName,
    /// `failure_target_claim_id` values: the injection's declared target.
    injection_targets: OneName,
}

impl Attribution {
    pub fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>) {
        if let Some(target) = given(&e.failure_target_claim_id) {
            self.injection_targets.add(Some(target));
        }
        match kind {
            EventKind::SchedulerResidentClaimRestorationFailed
            | EventKind::SchedulerActiveRequestRefused => {
                self.scheduler_events = self.scheduler_events.saturating_add(1);
                self.scheduler_names.add(e.claim());
                self.scheduler_names.add(given(&e.outcome_claim_id));
                match e.blocking_claim_ids.as_deref() {
                    Some([only]) => self.scheduler_blocking.add(Some(only.as_str())),
                    _ => self.scheduler_blocking.add(None),
                }
            }
            EventKind::ResidentClaimRestorationFailed | EventKind::ActiveRequestRefused => {
                if let Some(outcome) = given(&e.outcome_claim_id) {
                    self.outcome_names.add(Some(outcome));
                }
                for id in e.blocking_claim_ids.iter().flatten() {
                    self.outcome_names.add(Some(id.as_str()));
                }
            }
            _ => {}
        }
    }

    /// The target claim: the injection's declared target, else the one claim named by
    /// scheduler failure evidence.
    pub fn target(&self) -> Option<&str> {
        if !self.injection_targets.is_empty() {
            return self.injection_targets.single();
        }
        self.scheduler_names.single()
    }

    /// The gate's missing requirements, given what the claims' own verdicts say.
    pub fn missing(
        &self,
        target: Option<TargetFacts>,
        non_targets: NonTargetFacts,
    ) -> Vec<Requirement> {
        use Requirement::*;
        let mut missing = Vec::new();
        let Some(target) = target else {
            return vec![
                TargetClaimFailureOutcomeGate,
                SchedulerResidentClaimRestorationFailedTarget,
                SchedulerActiveRequestRefusedTarget,
                SchedulerFailureEventsNameOnlyTarget,
                BlockingClaimIdsNameOnlyTarget,
            ];
        };
        if !target.failure_outcome_pass {
            missing.push(TargetClaimFailureOutcomeGate);
        }
        if !target.scheduler_failed {
            missing.push(SchedulerResidentClaimRestorationFailedTarget);
        }
        if !target.scheduler_refused {
            missing.push(SchedulerActiveRequestRefusedTarget);
        }
        if self.scheduler_events == 0 || !self.scheduler_names.only(target.id) {
            missing.push(SchedulerFailureEventsNameOnlyTarget);
        }
        if self.scheduler_events == 0 || !self.scheduler_blocking.only(target.id) {
            missing.push(BlockingClaimIdsNameOnlyTarget);
        }
        let outcomes_elsewhere =
            !self.outcome_names.is_empty() && !self.outcome_names.only(target.id);
        if non_targets.any_attributed_failure || outcomes_elsewhere {
            missing.push(NonTargetFailureOrRefusalAttribution);
        }
        if non_targets.any_failed_without_restore {
            missing.push(NonTargetRestoreSuccessOrNotFailed);
        }
        missing
    }
}

/// What the target claim's own verdicts say.
pub(crate) struct TargetFacts<'a> {
    pub id: &'a str,
    pub failure_outcome_pass: bool,
    pub scheduler_failed: bool,
    pub scheduler_refused: bool,
}

/// What the non-target claims' own state says, folded over all of them.
#[derive(Default)]
pub(crate) struct NonTargetFacts {
    /// Some non-target claim received a failure or refusal event.
    pub any_attributed_failure: bool,
    /// Some non-target claim failed and did not pass the observation gate.
    pub any_failed_without_restore: bool,
}
