//! The residency gates of the connector family: protection (`claim_protection`),
//! demotion (`claim_demotion`) and expiry (`claim_expiry`), judged per claim.
//!
//! Like the connector paths, each step is the *first* event of its kind for the claim,
//! kept with the few values its requirement compares, so the state is fixed-size
//! whatever the trace length. The gates judge the whole history: a later event of the
//! same kind that says something else than the first (a second protection record with
//! other blocks, a second exclusion with the claim's blocks among the candidates, ...)
//! fails every gate of the claim (`consistent_claim_history`), so neither a bad first
//! record nor a bad later one is ever hidden. Every residency record must carry the six
//! identity fields and its `engine_step` (`residency_record_fields`), and each lifecycle
//! is ordered both in the file and by `engine_step` (a loss dated before a boundary or a
//! demotion is before it, wherever it is written).
//!
//! What each gate requires, and why, is in `docs/trace-format.md` ("Residency gates").
//! The short version: a gate passes only when the claim was accepted up front for the
//! gate's mode with a footprint, materialized with that footprint, and the trace shows,
//! in order, the claim-scoped events that make the mode's obligations observable —
//! exclusion from the victims and an explicit action naming the claim (protection), a
//! demotion to a lower tier before the device copy is lost (demotion), a boundary at the
//! accepted duration's end with protection before it and the loss after it (expiry).

use crate::Pos;
use crate::event::{EventKind, RawEvent, given};
use crate::identity::Bucket;
use crate::names::Requirement;

/// The conflict actions the paper's `explicit_conflict_action` admits (§3, Table 1),
/// by their trace names.
const CONFLICT_ACTIONS: [&str; 8] = [
    "refuse",
    "defer",
    "route_elsewhere",
    "bound",
    "offload",
    "split",
    "relax",
    "demote",
];

/// Cache tiers from highest (closest to compute) to lowest; a demotion moves down.
const TIERS: [&str; 4] = ["gpu", "cpu", "disk", "remote"];

fn tier_rank(tier: Option<&str>) -> Option<usize> {
    let tier = tier?;
    TIERS.iter().position(|t| *t == tier)
}

/// The mode a claim was accepted for (`accepted_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AcceptedMode {
    HardProtected,
    Demotable,
    Expiring,
    Other,
}

impl AcceptedMode {
    fn of(name: Option<&str>) -> AcceptedMode {
        match name {
            Some("hard_protected") => AcceptedMode::HardProtected,
            Some("demotable") => AcceptedMode::Demotable,
            Some("expiring") => AcceptedMode::Expiring,
            _ => AcceptedMode::Other,
        }
    }
}

/// Where an event is: its position in the file and the engine step it is dated at.
type At = (Pos, Option<u64>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Acceptance {
    pos: Pos,
    mode: AcceptedMode,
    footprint: Option<u64>,
    at_step: Option<u64>,
    duration: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Materialized {
    pos: Pos,
    predicate: bool,
    blocks: Option<u64>,
    request: Option<Box<str>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Exclusion {
    pos: Pos,
    excluded: Option<u64>,
    in_candidates: Option<u64>,
    request: Option<Box<str>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Action {
    pos: Pos,
    known_action: bool,
    request: Option<Box<str>>,
    names_claim: bool,
    footprint: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Demotion {
    pos: Pos,
    downward: bool,
    blocks: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Boundary {
    pos: Pos,
    accepted_at: Option<u64>,
    duration: Option<u64>,
    expired_at: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Loss {
    pos: Pos,
    attributed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Release {
    pos: Pos,
    intact: Option<u64>,
}

/// One claim's residency facts: the first event of each kind, plus what rules a gate out.
#[derive(Debug, Default, Clone)]
pub(crate) struct ResidencyClaim {
    /// A later event of some kind said something else than the first of that kind.
    contradicted: bool,
    /// Some residency event lacked an identity field or its `engine_step`.
    unrecorded_fields: bool,
    /// The engine step each first event is dated at (by kind, in `observe` order).
    steps: Steps,
    /// The first `resident_claim_offloaded` of the claim, with the blocks it stored.
    offloaded: Option<(Pos, Option<u64>)>,
    /// The earliest engine step any loss of the claim is dated at.
    earliest_loss_step: Option<u64>,
    accepted: Option<Acceptance>,
    /// More than one acceptance, or an acceptance and a refusal: no single answer.
    contradictory_acceptance: bool,
    refused: bool,
    materialized: Option<Materialized>,
    protected: Option<(Pos, Option<u64>)>,
    exclusion: Option<Exclusion>,
    action: Option<Action>,
    demoted: Option<Demotion>,
    expired: Option<Boundary>,
    first_loss: Option<Loss>,
    released: Option<Release>,
    /// Some residency event was seen for this claim (or bucket).
    pub seen: bool,
}

fn owned(s: Option<&str>) -> Option<Box<str>> {
    s.map(Box::from)
}

/// The engine steps of the first event of each kind the lifecycles order.
#[derive(Debug, Default, Clone, Copy)]
struct Steps {
    accepted: Option<u64>,
    materialized: Option<u64>,
    protected: Option<u64>,
    exclusion: Option<u64>,
    action: Option<u64>,
    demoted: Option<u64>,
    expired: Option<u64>,
    released: Option<u64>,
    offloaded: Option<u64>,
}

impl ResidencyClaim {
    /// Whether `kind` is a residency event (its presence makes the gates apply).
    pub fn is_residency(kind: EventKind) -> bool {
        use EventKind::*;
        matches!(
            kind,
            ResidentClaimAccepted
                | ResidentClaimRefused
                | ResidentClaimMaterialized
                | ResidentClaimProtected
                | AllocatorVictimExclusion
                | SchedulerConflictAction
                | ResidentClaimDemoted
                | ResidentClaimExpired
                | ResidentClaimDeviceCopyLost
                | ResidentClaimReleased
        )
    }

    /// Feeds one event of this claim (`claim` is `None` for the unclaimed bucket).
    pub fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>) {
        use EventKind::*;
        let step = e.engine_step;
        if kind == ResidentClaimOffloaded {
            // Not a residency event (it does not make the gates apply), but what a
            // demotion waits for: the claim's blocks stored in the lower tier.
            if self.offloaded.is_none() {
                self.offloaded = Some((pos, e.block_count_footprint));
                self.steps.offloaded = step;
            }
            return;
        }
        if !Self::is_residency(kind) {
            return;
        }
        self.seen = true;
        if step.is_none() || crate::identity::field_values(e).iter().any(Option::is_none) {
            self.unrecorded_fields = true;
        }
        let c = &mut self.contradicted;
        match kind {
            ResidentClaimAccepted => {
                if self.accepted.is_some() || self.refused {
                    self.contradictory_acceptance = true;
                } else {
                    self.accepted = Some(Acceptance {
                        pos,
                        mode: AcceptedMode::of(given(&e.accepted_mode)),
                        footprint: e.footprint_blocks,
                        at_step: e.accepted_at_step,
                        duration: e.duration_steps,
                    });
                    self.steps.accepted = step;
                }
            }
            ResidentClaimRefused => {
                if self.accepted.is_some() {
                    self.contradictory_acceptance = true;
                }
                self.refused = true;
            }
            ResidentClaimMaterialized => {
                let value = Materialized {
                    pos,
                    predicate: e.predicate_materialized == Some(true),
                    blocks: e.materialized_blocks,
                    request: owned(e.request()),
                };
                if let Some(first) = &self.materialized {
                    if (first.predicate, first.blocks, &first.request)
                        != (value.predicate, value.blocks, &value.request)
                    {
                        *c = true;
                    }
                } else {
                    self.materialized = Some(value);
                    self.steps.materialized = step;
                }
            }
            ResidentClaimProtected => match self.protected {
                Some((_, first)) if first != e.protected_blocks => *c = true,
                Some(_) => {}
                None => {
                    self.protected = Some((pos, e.protected_blocks));
                    self.steps.protected = step;
                }
            },
            AllocatorVictimExclusion => {
                let value = Exclusion {
                    pos,
                    excluded: e.excluded_blocks,
                    in_candidates: e.claim_blocks_in_candidates,
                    request: owned(given(&e.conflicting_request_id)),
                };
                // Each conflict may name its own request; what it says of the claim may not change.
                if let Some(first) = &self.exclusion {
                    if (first.excluded, first.in_candidates, first.request.is_some())
                        != (value.excluded, value.in_candidates, value.request.is_some())
                    {
                        *c = true;
                    }
                } else {
                    self.exclusion = Some(value);
                    self.steps.exclusion = step;
                }
            }
            SchedulerConflictAction => {
                let value = Action {
                    pos,
                    known_action: given(&e.action).is_some_and(|a| CONFLICT_ACTIONS.contains(&a)),
                    request: owned(given(&e.conflicting_request_id)),
                    names_claim: e.blocks(claim),
                    footprint: e.footprint_blocks,
                };
                if let Some(first) = &self.action {
                    if (
                        first.known_action,
                        first.names_claim,
                        first.footprint,
                        first.request.is_some(),
                    ) != (
                        value.known_action,
                        value.names_claim,
                        value.footprint,
                        value.request.is_some(),
                    ) {
                        *c = true;
                    }
                } else {
                    self.action = Some(value);
                    self.steps.action = step;
                }
            }
            ResidentClaimDemoted => {
                let from = tier_rank(given(&e.from_tier));
                let to = tier_rank(given(&e.to_tier));
                let value = Demotion {
                    pos,
                    downward: matches!((from, to), (Some(f), Some(t)) if t > f),
                    blocks: e.demoted_blocks,
                };
                if let Some(first) = self.demoted {
                    if (Demotion { pos, ..first }) != value {
                        *c = true;
                    }
                } else {
                    self.demoted = Some(value);
                    self.steps.demoted = step;
                }
            }
            ResidentClaimExpired => {
                let value = Boundary {
                    pos,
                    accepted_at: e.accepted_at_step,
                    duration: e.duration_steps,
                    expired_at: e.expired_at_step,
                };
                if let Some(first) = self.expired {
                    if (Boundary { pos, ..first }) != value {
                        *c = true;
                    }
                } else {
                    self.expired = Some(value);
                    self.steps.expired = step;
                }
            }
            ResidentClaimDeviceCopyLost => {
                let value = Loss {
                    pos,
                    attributed: claim.is_some() && given(&e.loss_cause).is_some(),
                };
                if let Some(first) = self.first_loss {
                    if (Loss { pos, ..first }) != value {
                        *c = true;
                    }
                } else {
                    self.first_loss = Some(value);
                }
                self.earliest_loss_step = match (self.earliest_loss_step, step) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            ResidentClaimReleased => {
                let value = Release {
                    pos,
                    intact: e.blocks_intact,
                };
                if let Some(first) = self.released {
                    if (Release { pos, ..first }) != value {
                        *c = true;
                    }
                } else {
                    self.released = Some(value);
                    self.steps.released = step;
                }
            }
            _ => {}
        }
    }

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
