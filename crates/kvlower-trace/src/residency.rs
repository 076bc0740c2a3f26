//! The residency gates of the connector family: protection (`claim_protection`),
//! demotion (`claim_demotion`) and expiry (`claim_expiry`), judged per claim.
//!
//! Like the connector paths, each step is the *first* event of its kind for the claim,
//! kept with the few values its requirement compares, so the state is fixed-size
//! whatever the trace length. A later event of the same kind never repairs a bad first
//! one: a claim whose first conflict action names the wrong claims does not pass because
//! a second one is right.
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

#[derive(Debug, Clone, Copy)]
struct Acceptance {
    pos: Pos,
    mode: AcceptedMode,
    footprint: Option<u64>,
    at_step: Option<u64>,
    duration: Option<u64>,
}

#[derive(Debug, Clone)]
struct Materialized {
    pos: Pos,
    predicate: bool,
    blocks: Option<u64>,
    request: Option<Box<str>>,
}

#[derive(Debug, Clone)]
struct Exclusion {
    pos: Pos,
    excluded: Option<u64>,
    in_candidates: Option<u64>,
    request: Option<Box<str>>,
}

#[derive(Debug, Clone)]
struct Action {
    pos: Pos,
    known_action: bool,
    request: Option<Box<str>>,
    names_claim: bool,
    footprint: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Demotion {
    pos: Pos,
    downward: bool,
    blocks: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Boundary {
    pos: Pos,
    accepted_at: Option<u64>,
    duration: Option<u64>,
    expired_at: Option<u64>,
}

#[derive(Debug, Clone, Copy)]
struct Loss {
    pos: Pos,
    attributed: bool,
}

#[derive(Debug, Clone, Copy)]
struct Release {
    pos: Pos,
    intact: Option<u64>,
}

/// One claim's residency facts: the first event of each kind, plus what rules a gate out.
#[derive(Debug, Default, Clone)]
pub(crate) struct ResidencyClaim {
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
        if !Self::is_residency(kind) {
            return;
        }
        self.seen = true;
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
                }
            }
            ResidentClaimRefused => {
                if self.accepted.is_some() {
                    self.contradictory_acceptance = true;
                }
                self.refused = true;
            }
            ResidentClaimMaterialized => {
                self.materialized.get_or_insert_with(|| Materialized {
                    pos,
                    predicate: e.predicate_materialized == Some(true),
                    blocks: e.materialized_blocks,
                    request: owned(e.request()),
                });
            }
            ResidentClaimProtected => {
                self.protected.get_or_insert((pos, e.protected_blocks));
            }
            AllocatorVictimExclusion => {
                self.exclusion.get_or_insert_with(|| Exclusion {
                    pos,
                    excluded: e.excluded_blocks,
                    in_candidates: e.claim_blocks_in_candidates,
                    request: owned(given(&e.conflicting_request_id)),
                });
            }
            SchedulerConflictAction => {
                self.action.get_or_insert_with(|| Action {
                    pos,
                    known_action: given(&e.action).is_some_and(|a| CONFLICT_ACTIONS.contains(&a)),
                    request: owned(given(&e.conflicting_request_id)),
                    names_claim: e.blocks(claim),
                    footprint: e.footprint_blocks,
                });
            }
            ResidentClaimDemoted => {
                let from = tier_rank(given(&e.from_tier));
                let to = tier_rank(given(&e.to_tier));
                self.demoted.get_or_insert(Demotion {
                    pos,
                    downward: matches!((from, to), (Some(f), Some(t)) if t > f),
                    blocks: e.demoted_blocks,
                });
            }
            ResidentClaimExpired => {
                self.expired.get_or_insert(Boundary {
                    pos,
                    accepted_at: e.accepted_at_step,
                    duration: e.duration_steps,
                    expired_at: e.expired_at_step,
                });
            }
            ResidentClaimDeviceCopyLost => {
                self.first_loss.get_or_insert(Loss {
                    pos,
                    attributed: claim.is_some() && given(&e.loss_cause).is_some(),
                });
            }
            ResidentClaimReleased => {
                self.released.get_or_insert(Release {
                    pos,
                    intact: e.blocks_intact,
                });
            }
            _ => {}
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
            (Some(loss), Some(release)) => loss.pos < release.pos,
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
        let chain = [
            self.accepted.map(|a| a.pos),
            self.materialized.as_ref().map(|m| m.pos),
            self.protected.map(|(p, _)| p),
            self.exclusion.as_ref().map(|x| x.pos),
            self.action.as_ref().map(|a| a.pos),
            self.released.map(|r| r.pos),
        ];
        if !strictly_increasing(&chain) {
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
        if !self.loss_attributed() {
            missing.push(DeviceCopyLossObserved);
        }
        let chain = [
            self.accepted.map(|a| a.pos),
            self.materialized.as_ref().map(|m| m.pos),
            self.demoted.map(|d| d.pos),
            self.first_loss.map(|l| l.pos),
        ];
        if !strictly_increasing(&chain) {
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
        let chain = [
            self.accepted.map(|a| a.pos),
            self.materialized.as_ref().map(|m| m.pos),
            self.action.as_ref().map(|a| a.pos),
            self.expired.map(|b| b.pos),
            self.first_loss.map(|l| l.pos),
        ];
        if !strictly_increasing(&chain) {
            missing.push(OrderedExpiryLifecycle);
        }
        missing
    }
}

/// Every step happened, each after the one before it.
fn strictly_increasing(chain: &[Option<Pos>]) -> bool {
    let mut previous: Option<Pos> = None;
    for step in chain {
        let Some(step) = *step else { return false };
        if previous.is_some_and(|p| p >= step) {
            return false;
        }
        previous = Some(step);
    }
    true
}
