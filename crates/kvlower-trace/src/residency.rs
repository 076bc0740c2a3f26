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

mod judge;

pub(crate) use judge::first_in_gate_order;

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
}
