//! Judging a residency claim's recorded history: what each gate (protection, demotion,
//! expiry) finds missing, in the order the gate states its requirements.

use super::*;

impl ResidencyClaim {
    /// The requirements of the whole history every residency gate shares.
    fn history_missing(&self, missing: &mut Vec<Requirement>) {
        if self.contradicted {
            missing.push(Requirement::ConsistentClaimHistory);
        }
        if self.unrecorded_fields {
            missing.push(Requirement::ResidencyRecordFields);
        }
    }

    /// The accepted footprint, when the claim was accepted once, for `mode`, with a
    /// positive footprint, and never refused.
    fn footprint_for(&self, mode: AcceptedMode) -> Option<u64> {
        let a = self.accepted?;
        if self.refused || self.contradictory_acceptance || a.mode != mode {
            return None;
        }
        // An expiring claim is accepted for a duration, or not accepted at all.
        if mode == AcceptedMode::Expiring && a.duration.is_none_or(|d| d == 0) {
            return None;
        }
        a.footprint.filter(|&f| f > 0)
    }

    /// The requirements every residency gate opens with: accepted once for `mode` with
    /// a footprint (and, expiring, a duration), an unambiguous identity, materialized
    /// with that footprint. Returns the accepted footprint (`None`: not accepted).
    fn opening_missing(
        &self,
        bucket: Bucket<'_>,
        mode: AcceptedMode,
        missing: &mut Vec<Requirement>,
    ) -> Option<u64> {
        let footprint = if bucket.is_claim() {
            self.footprint_for(mode)
        } else {
            None
        };
        if footprint.is_none() {
            missing.push(if mode == AcceptedMode::Expiring {
                Requirement::ClaimAcceptedWithDuration
            } else {
                Requirement::ClaimAcceptedWithFootprint
            });
        }
        Self::identity_missing(bucket, missing);
        if !self.materialized_with(footprint) {
            missing.push(Requirement::ClaimMaterializedWithFootprint);
        }
        self.history_missing(missing);
        footprint
    }

    /// The claim's device copy was lost, and the loss names its cause.
    fn loss_attributed(&self) -> bool {
        self.first_loss.is_some_and(|l| l.attributed)
    }

    /// The identity requirement every residency gate shares.
    fn identity_missing(bucket: Bucket<'_>, missing: &mut Vec<Requirement>) {
        if bucket.ambiguous() {
            missing.push(Requirement::AmbiguousClaimCacheIdentity);
        }
    }

    /// Materialized with the predicate true and the accepted footprint, by a named request.
    fn materialized_with(&self, footprint: Option<u64>) -> bool {
        match (&self.materialized, footprint) {
            (Some(m), Some(f)) => m.predicate && m.blocks == Some(f) && m.request.is_some(),
            _ => false,
        }
    }

    /// The first conflict action is a known action answering another request than the
    /// one that materialized the claim (the running request protecting itself is the
    /// paper's "active no-evict" false positive).
    fn action_explicit(&self) -> bool {
        let Some(a) = &self.action else { return false };
        let own = self
            .materialized
            .as_ref()
            .and_then(|m| m.request.as_deref());
        a.known_action && a.request.is_some() && a.request.as_deref() != own
    }

    fn action_names_claim(&self) -> bool {
        self.action.as_ref().is_some_and(|a| a.names_claim)
    }

    fn action_footprint_matches(&self, footprint: Option<u64>) -> bool {
        match (&self.action, footprint) {
            (Some(a), Some(f)) => a.footprint == Some(f),
            _ => false,
        }
    }

    /// `claim_protection`'s missing requirements.
    pub fn protection_missing(&self, bucket: Bucket<'_>) -> Vec<Requirement> {
        use Requirement::*;
        let mut missing = Vec::new();
        let footprint = self.opening_missing(bucket, AcceptedMode::HardProtected, &mut missing);
        let protected =
            matches!((self.protected, footprint), (Some((_, p)), Some(f)) if p == Some(f));
        if !protected {
            missing.push(ClaimBlocksProtected);
        }
        let excluded = match (&self.exclusion, footprint) {
            (Some(x), Some(f)) => {
                x.excluded == Some(f) && x.in_candidates == Some(0) && x.request.is_some()
            }
            _ => false,
        };
        if !excluded {
            missing.push(VictimsExcludeClaimBlocks);
        }
        // The action must answer the request whose pressure the exclusion recorded.
        let same_request = match (&self.exclusion, &self.action) {
            (Some(x), Some(a)) => x.request.is_some() && x.request == a.request,
            _ => false,
        };
        if !self.action_explicit() || !same_request {
            missing.push(ConflictActionExplicit);
        }
        if !self.action_names_claim() {
            missing.push(BlockingClaimIdsNameClaim);
        }
        if !self.action_footprint_matches(footprint) {
            missing.push(ConflictFootprintMatchesAcceptance);
        }
        let lost_while_protected = match (self.first_loss, self.released) {
            (Some(loss), Some(release)) => {
                loss.pos < release.pos
                    || matches!((self.earliest_loss_step, self.steps.released), (Some(l), Some(r)) if l < r)
            }
            (Some(_), None) => true,
            (None, _) => false,
        };
        if lost_while_protected {
            missing.push(NoLossWhileProtected);
        }
        let accounted = match (self.released, footprint) {
            (Some(r), Some(f)) => r.intact == Some(f),
            _ => false,
        };
        if !accounted {
            missing.push(ClaimEndAccounted);
        }
        let st = self.steps;
        let chain = [
            self.accepted.map(|a| (a.pos, st.accepted)),
            self.materialized.as_ref().map(|m| (m.pos, st.materialized)),
            self.protected.map(|(p, _)| (p, st.protected)),
            self.exclusion.as_ref().map(|x| (x.pos, st.exclusion)),
            self.action.as_ref().map(|a| (a.pos, st.action)),
            self.released.map(|r| (r.pos, st.released)),
        ];
        if !ordered(&chain) {
            missing.push(OrderedProtectionLifecycle);
        }
        missing
    }

    /// `claim_demotion`'s missing requirements.
    pub fn demotion_missing(&self, bucket: Bucket<'_>) -> Vec<Requirement> {
        use Requirement::*;
        let mut missing = Vec::new();
        let footprint = self.opening_missing(bucket, AcceptedMode::Demotable, &mut missing);
        let demoted = match (self.demoted, footprint) {
            (Some(d), Some(f)) => d.downward && d.blocks == Some(f),
            _ => false,
        };
        if !demoted {
            missing.push(ClaimScopedDemotionToLowerTier);
        }
        // The whole footprint was stored in the lower tier before the demotion (in the
        // file and by engine step): demoting before the offload, or at materialization,
        // would leave the claim's only copy on the device.
        let offloaded_first = match (self.offloaded, self.demoted, footprint) {
            (Some((opos, blocks)), Some(d), Some(f)) => {
                blocks == Some(f)
                    && opos < d.pos
                    && matches!((self.steps.offloaded, self.steps.demoted), (Some(o), Some(ds)) if o <= ds)
            }
            _ => false,
        };
        if !offloaded_first {
            missing.push(FootprintOffloadedBeforeDemotion);
        }
        if !self.loss_attributed() {
            missing.push(DeviceCopyLossObserved);
        }
        let st = self.steps;
        let chain = [
            self.accepted.map(|a| (a.pos, st.accepted)),
            self.materialized.as_ref().map(|m| (m.pos, st.materialized)),
            self.demoted.map(|d| (d.pos, st.demoted)),
            self.first_loss.map(|l| (l.pos, self.earliest_loss_step)),
        ];
        if !ordered(&chain) {
            missing.push(OrderedDemotionLifecycle);
        }
        missing
    }

    /// `claim_expiry`'s missing requirements.
    pub fn expiry_missing(&self, bucket: Bucket<'_>) -> Vec<Requirement> {
        use Requirement::*;
        let mut missing = Vec::new();
        let footprint = self.opening_missing(bucket, AcceptedMode::Expiring, &mut missing);
        let held = self.action_explicit()
            && self.action_names_claim()
            && self.action_footprint_matches(footprint);
        if !held {
            missing.push(ProtectionHeldBeforeBoundary);
        }
        let boundary = match (self.expired, self.accepted, footprint) {
            (Some(b), Some(a), Some(_)) => {
                let end = a
                    .at_step
                    .zip(a.duration)
                    .and_then(|(s, d)| s.checked_add(d));
                b.accepted_at.is_some()
                    && b.accepted_at == a.at_step
                    && b.duration == a.duration
                    && matches!((b.expired_at, end), (Some(at), Some(end)) if at >= end)
            }
            _ => false,
        };
        if !boundary {
            missing.push(ClaimScopedExpiryBoundary);
        }
        if !self.loss_attributed() {
            missing.push(DeviceCopyLossObserved);
        }
        let st = self.steps;
        let chain = [
            self.accepted.map(|a| (a.pos, st.accepted)),
            self.materialized.as_ref().map(|m| (m.pos, st.materialized)),
            self.action.as_ref().map(|a| (a.pos, st.action)),
            self.expired.map(|b| (b.pos, st.expired)),
            self.first_loss.map(|l| (l.pos, self.earliest_loss_step)),
        ];
        // The loss is dated no earlier than the boundary's step, wherever it is written.
        let loss_after_boundary = match (self.earliest_loss_step, self.expired) {
            (Some(l), Some(b)) => b.expired_at.is_some_and(|at| l >= at),
            _ => false,
        };
        if !ordered(&chain) || !loss_after_boundary {
            missing.push(OrderedExpiryLifecycle);
        }
        missing
    }
}

/// The order in which each residency gate states its requirements (the lifecycle it
/// follows): what makes a control's kind "the first requirement it misses". Other gates
/// state theirs in the names' order.
fn gate_order(gate: crate::names::TraceGate) -> &'static [Requirement] {
    use crate::names::TraceGate;
    use Requirement::*;
    match gate {
        TraceGate::ClaimProtection => &[
            ClaimAcceptedWithFootprint,
            AmbiguousClaimCacheIdentity,
            ClaimMaterializedWithFootprint,
            ConsistentClaimHistory,
            ResidencyRecordFields,
            ClaimBlocksProtected,
            VictimsExcludeClaimBlocks,
            ConflictActionExplicit,
            BlockingClaimIdsNameClaim,
            ConflictFootprintMatchesAcceptance,
            NoLossWhileProtected,
            ClaimEndAccounted,
            OrderedProtectionLifecycle,
        ],
        TraceGate::ClaimDemotion => &[
            ClaimAcceptedWithFootprint,
            AmbiguousClaimCacheIdentity,
            ClaimMaterializedWithFootprint,
            ConsistentClaimHistory,
            ResidencyRecordFields,
            ClaimScopedDemotionToLowerTier,
            FootprintOffloadedBeforeDemotion,
            DeviceCopyLossObserved,
            OrderedDemotionLifecycle,
        ],
        TraceGate::ClaimExpiry => &[
            ClaimAcceptedWithDuration,
            AmbiguousClaimCacheIdentity,
            ClaimMaterializedWithFootprint,
            ConsistentClaimHistory,
            ResidencyRecordFields,
            ProtectionHeldBeforeBoundary,
            ClaimScopedExpiryBoundary,
            DeviceCopyLossObserved,
            OrderedExpiryLifecycle,
        ],
        _ => &[],
    }
}

/// The first of `missing` in `gate`'s order (requirements the order does not list come
/// after, in the names' order).
pub(crate) fn first_in_gate_order(
    gate: crate::names::TraceGate,
    missing: &[Requirement],
) -> Option<Requirement> {
    let order = gate_order(gate);
    missing
        .iter()
        .copied()
        .min_by_key(|r| (order.iter().position(|o| o == r).unwrap_or(usize::MAX), *r))
}

/// Every step happened, each written after the one before it and dated (`engine_step`)
/// no earlier than it; a step without a date is not ordered.
fn ordered(chain: &[Option<At>]) -> bool {
    let mut previous: Option<At> = None;
    for step in chain {
        let Some((pos, date)) = *step else {
            return false;
        };
        let Some(date) = date else { return false };
        if let Some((p, Some(d))) = previous
            && (p >= pos || d > date)
        {
            return false;
        }
        previous = Some((pos, Some(date)));
    }
    true
}
