//! The reference family's per-claim state machine and the `reference_lifecycle` gate.
//!
//! An offload generation is followed from its `resident_claim_offloaded` event; only the
//! current generation is tracked (the reference hook numbers offloads 1, 2, … and runs
//! them one after another), and the first generation that completes the success path,
//! and the first that completes the failure path, are kept as positions.

use crate::Pos;
use crate::event::{EventKind, RawEvent, given, names};
use crate::identity::{
    Bucket, CACHE_IDENTITY, MATERIALIZATION_PREDICATE, PREDICATE_ID, REQUEST_TOKEN_MAP_ID,
    REUSABLE_OBJECT_ID,
};
use crate::names::{Control, Requirement};

const PRIMARY_TIER: &str = "gpu_kv_cache";
const OFFLOAD_TIER: &str = "host_offload_tier";

/// The outcome a controlled restoration failure announced, and the event that delivers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Refusal,
    Demotion,
    Expiry,
    Harm,
}

impl Outcome {
    fn parse(s: Option<&str>) -> Option<Outcome> {
        match s? {
            "refusal" => Some(Outcome::Refusal),
            "demotion" => Some(Outcome::Demotion),
            "expiry" => Some(Outcome::Expiry),
            "harm" => Some(Outcome::Harm),
            _ => None,
        }
    }

    fn delivered_by(self, kind: EventKind) -> bool {
        matches!(
            (self, kind),
            (Outcome::Refusal, EventKind::ActiveRequestRefused)
                | (Outcome::Demotion, EventKind::ResidentClaimDemoted)
                | (Outcome::Expiry, EventKind::ResidentClaimExpired)
                | (Outcome::Harm, EventKind::ResidentClaimHarmed)
        )
    }
}

/// The steps of the current offload generation.
#[derive(Debug, Default, Clone)]
struct Generation {
    number: u64,
    offloaded: Option<Pos>,
    to_offload_tier: bool,
    required: Option<Pos>,
    reuse_requires_restoration: bool,
    restored: Option<Pos>,
    restored_from_offload_tier: bool,
    /// A reuse arrived before the restoration, or a decisive step failed its check.
    spoiled: bool,
    failed: Option<(Pos, Outcome)>,
}

/// Positions of a claim's accepted/materialized events and its decisive generations.
#[derive(Debug, Default, Clone)]
pub(crate) struct ReferenceClaim {
    accepted: Option<Pos>,
    pre_registered: bool,
    materialized: Option<Pos>,
    predicate_materialized: bool,
    current: Generation,
    /// (offloaded, reuse) of the first generation restored before a satisfying reuse.
    success: Option<(Pos, Pos)>,
    /// (offloaded, outcome) of the first generation whose failure got its outcome.
    failure: Option<(Pos, Pos)>,
    /// A failure or outcome event of this claim also names another claim (an
    /// `outcome_claim_id`, a failure target, or any other entry of `blocking_claim_ids`,
    /// `"*"` included): the outcome is smeared, so it witnesses nothing. The connector
    /// gate's `scheduler_side_claim_match` applies the same rule.
    attributed_elsewhere: bool,
    saw_generic: bool,
    saw_lifecycle: bool,
    saw_failure: bool,
}

impl ReferenceClaim {
    /// Feeds one event of this claim (`claim` is `None` for the unclaimed bucket).
    pub fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>) {
        use EventKind::*;
        match kind {
            GenericCounter => self.saw_generic = true,
            Other => {}
            _ => self.saw_lifecycle = true,
        }
        if kind.is_failure_or_outcome() {
            self.saw_failure = true;
            if claim.is_some() && e.names_other_claim(claim) {
                self.attributed_elsewhere = true;
            }
        }
        let generation = e.offload_generation.unwrap_or(0);
        let current = &mut self.current;
        let in_current = current.offloaded.is_some() && generation == current.number;
        match kind {
            ResidentClaimAccepted if self.accepted.is_none() => {
                self.accepted = Some(pos);
                self.pre_registered = given(&e.claim_registration) == Some("pre_registered");
            }
            ResidentClaimMaterialized if self.materialized.is_none() => {
                self.materialized = Some(pos);
                self.predicate_materialized = e.predicate_materialized == Some(true);
            }
            ResidentClaimOffloaded => {
                self.current = Generation {
                    number: generation,
                    offloaded: Some(pos),
                    to_offload_tier: given(&e.cache_tier_from) == Some(PRIMARY_TIER)
                        && given(&e.cache_tier_to) == Some(OFFLOAD_TIER),
                    ..Generation::default()
                };
            }
            ResidentClaimRestoreRequired if in_current && current.required.is_none() => {
                current.required = Some(pos);
                current.reuse_requires_restoration = e.reuse_requires_restoration == Some(true);
            }
            ResidentClaimRestored if in_current && current.restored.is_none() => {
                if current.required.is_none() {
                    current.spoiled = true;
                }
                current.restored = Some(pos);
                current.restored_from_offload_tier = e.restored_from_offload_tier == Some(true)
                    && given(&e.restoration_source) == Some("offload_tier")
                    && given(&e.cache_tier_from) == Some(OFFLOAD_TIER)
                    && given(&e.cache_tier_to) == Some(PRIMARY_TIER);
            }
            ResidentClaimReuseAfterRestore if in_current => {
                if current.restored.is_none() {
                    // Reuse before restoration: this generation can never witness
                    // restore-before-reuse.
                    current.spoiled = true;
                } else if self.success.is_none() {
                    let complete = !current.spoiled
                        && current.to_offload_tier
                        && current.reuse_requires_restoration
                        && current.restored_from_offload_tier
                        && e.predicate_satisfied == Some(true);
                    if let (true, Some(offloaded)) = (complete, current.offloaded) {
                        self.success = Some((offloaded, pos));
                    }
                    // Only the first reuse after the restoration decides.
                    current.spoiled = true;
                }
            }
            ResidentClaimRestorationFailed if in_current && current.failed.is_none() => {
                let outcome = Outcome::parse(given(&e.claim_scoped_outcome_type));
                let controlled = e.controlled_restoration_unavailable == Some(true)
                    || e.injected_restoration_failure == Some(true);
                match outcome {
                    Some(outcome)
                        if current.required.is_some()
                            && controlled
                            && names(&e.outcome_claim_id, claim) =>
                    {
                        current.failed = Some((pos, outcome));
                    }
                    _ => current.spoiled = true,
                }
            }
            ActiveRequestRefused | ResidentClaimDemoted | ResidentClaimExpired
            | ResidentClaimHarmed => {
                let Some((failed_at, outcome)) = current.failed else {
                    return;
                };
                let delivers = outcome.delivered_by(kind)
                    && failed_at < pos
                    && names(&e.outcome_claim_id, claim)
                    && (outcome != Outcome::Refusal || e.blocks(claim));
                if let (true, None, Some(offloaded)) = (delivers, self.failure, current.offloaded) {
                    self.failure = Some((offloaded, pos));
                }
            }
            _ => {}
        }
    }

    /// The gate's missing requirements.
    pub fn missing(&self, bucket: Bucket<'_>) -> Vec<Requirement> {
        use Requirement::*;
        let claimed = bucket.is_claim();
        let identity = bucket.identity();
        let mut missing = Vec::new();
        if !claimed || self.accepted.is_none() || !self.pre_registered {
            missing.push(PreRegisteredAcceptedClaim);
        }
        if !claimed || !identity.fixed(PREDICATE_ID) || !identity.fixed(MATERIALIZATION_PREDICATE) {
            missing.push(StableClaimIdAndFixedMaterializationPredicate);
        }
        if !identity.fixed(REUSABLE_OBJECT_ID) {
            missing.push(ReusableObjectId);
        }
        if !identity.fixed(CACHE_IDENTITY) || !identity.fixed(REQUEST_TOKEN_MAP_ID) {
            missing.push(FixedCacheIdentityAndDeterministicRequestTokenMap);
        }
        if self.materialized.is_none() || !self.predicate_materialized {
            missing.push(MaterializationPredicate);
        }
        if self.success.is_none() {
            missing.push(OffloadRestorability);
        }
        if self.failure.is_none() || self.attributed_elsewhere {
            missing.push(RestorationFailureOutcome);
        }
        if !self.ordered() {
            missing.push(OrderedLifecycleEvents);
        }
        missing
    }

    /// accepted < materialized < success generation < failure generation < outcome.
    fn ordered(&self) -> bool {
        match (self.accepted, self.materialized, self.success, self.failure) {
            (Some(a), Some(m), Some((s_off, s_reuse)), Some((f_off, f_out))) => {
                a < m && m < s_off && s_reuse < f_off && f_off < f_out
            }
            _ => false,
        }
    }

    /// The controls the unclaimed bucket matched (claims of this family have none).
    pub fn controls(&self, bucket: Bucket<'_>) -> Vec<Control> {
        if bucket.is_claim() {
            Vec::new()
        } else if self.saw_failure {
            vec![Control::UnclaimedFailure]
        } else if self.saw_lifecycle {
            vec![Control::OrdinaryOffloadWithoutClaim]
        } else if self.saw_generic {
            vec![Control::GenericCountersOnly]
        } else {
            Vec::new()
        }
    }
}
