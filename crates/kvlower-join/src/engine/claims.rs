//! The claims as the replay tracks them: each registered claim's running state, and
//! the index events look claims up by, so that an event costs what it touches rather
//! than one look at every claim (issue 21 item 8).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroU32;

use super::{Engine, push_once};
use crate::document::{ClaimResult, EventRef, Reason, Transition};
use crate::events::BlockHash;
use crate::registry::{Claim, EventFormat, StreamPoint, required_chunks};

/// The join's running state for one registered claim (same index as in the registry).
pub(super) struct ClaimTrack {
    /// The token ids of each whole block the predicate requires, in prefix order
    /// (empty when the claim cannot be tracked: it then always has a reason).
    pub(super) chunks: Vec<Vec<u32>>,
    /// The registration point: a relevant event before it makes the claim post hoc.
    pub(super) registered_before: Option<StreamPoint>,
    /// The observation point the verdict is taken at (a pressure trial may override it).
    pub(super) observe_at: Option<StreamPoint>,
    /// For each required block position, every stored hash that matched it so far.
    pub(super) positions: Vec<Vec<BlockHash>>,
    /// Whether the predicate holds now: every required position has a live block.
    pub(super) predicate_holds: bool,
    /// Where the current, unbroken materialization began.
    pub(super) since: Option<EventRef>,
    /// Every change of `predicate_holds`, in stream order.
    pub(super) transitions: Vec<Transition>,
    /// Reasons found in the stream that concern this claim only.
    pub(super) reasons: Vec<Reason>,
    /// Retention priorities reported on the claim's blocks (TensorRT-LLM).
    pub(super) priorities: BTreeSet<u32>,
    /// The verdict, once taken at the observation point (the claim is then frozen).
    pub(super) result: Option<ClaimResult>,
}

impl ClaimTrack {
    /// A registered claim before any event: its required blocks, and the reasons its
    /// registration and observation points alone give (a timestamp the format cannot
    /// resolve, or a registration after the observation point). `observe_override`
    /// replaces the claim's own observation point (pressure trials).
    pub(super) fn new(
        c: &Claim,
        block_size: Option<NonZeroU32>,
        format: EventFormat,
        observe_override: Option<StreamPoint>,
    ) -> ClaimTrack {
        let chunks: Vec<Vec<u32>> = required_chunks(c, block_size)
            .map(|v| v.into_iter().map(<[u32]>::to_vec).collect())
            .unwrap_or_default();
        let observe_at = observe_override.or(c.observe_at);
        let mut reasons = Vec::new();
        if format == EventFormat::Trtllm {
            if matches!(observe_at, Some(StreamPoint::Timestamp(_))) {
                reasons.push(Reason::ObservationPointUnresolvable);
            }
            if matches!(c.registered_before, Some(StreamPoint::Timestamp(_))) {
                reasons.push(Reason::RegistrationPointUnresolvable);
            }
        }
        if let (Some(StreamPoint::EventIndex(reg)), Some(StreamPoint::EventIndex(obs))) =
            (c.registered_before, observe_at)
            && reg > obs
        {
            reasons.push(Reason::RegisteredAfterObservationPoint);
        }
        ClaimTrack {
            positions: vec![Vec::new(); chunks.len()],
            chunks,
            registered_before: c.registered_before,
            observe_at,
            predicate_holds: false,
            since: None,
            transitions: Vec::new(),
            reasons,
            priorities: BTreeSet::new(),
            result: None,
        }
    }
}

/// Claims by what events look them up by (each list in claim order).
#[derive(Default)]
pub(super) struct ClaimIndex {
    /// First required block's tokens → claims (sorted by tokens: a partial block's
    /// tokens find every first block they begin, as one range).
    pub(super) first: BTreeMap<Vec<u32>, Vec<usize>>,
    /// A later required block's tokens → claims (each claim once).
    pub(super) later: HashMap<Vec<u32>, Vec<usize>>,
    /// Claims observed at an event index, by that index; `due_at` of them are judged.
    by_index: Vec<(u64, usize)>,
    due_at: usize,
    /// Claims observed at a timestamp, by that timestamp; `due_ts` of them are judged.
    by_ts: Vec<(f64, usize)>,
    due_ts: usize,
}

impl ClaimIndex {
    pub(super) fn new(claims: &[ClaimTrack]) -> ClaimIndex {
        let mut ix = ClaimIndex::default();
        for (ci, c) in claims.iter().enumerate() {
            if let Some(first) = c.chunks.first() {
                ix.first.entry(first.clone()).or_default().push(ci);
            }
            for ch in c.chunks.iter().skip(1) {
                // Claims are visited in order, so a repeat of this claim is the last.
                let list = ix.later.entry(ch.clone()).or_default();
                if list.last() != Some(&ci) {
                    list.push(ci);
                }
            }
            match c.observe_at {
                Some(StreamPoint::EventIndex(o)) => ix.by_index.push((o, ci)),
                Some(StreamPoint::Timestamp(t)) => ix.by_ts.push((t, ci)),
                None => {}
            }
        }
        ix.by_index.sort_unstable();
        ix.by_ts
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        ix
    }

    /// The claims that become due before event `next_index` (timestamp `next_ts`), not
    /// returned before, in claim order: an index point `o < next_index`, a timestamp
    /// point `t < next_ts`.
    pub(super) fn due(&mut self, next_index: u64, next_ts: Option<f64>) -> Vec<usize> {
        let mut due = Vec::new();
        while let Some(&(o, ci)) = self.by_index.get(self.due_at) {
            if o >= next_index {
                break;
            }
            due.push(ci);
            self.due_at += 1;
        }
        if let Some(ts) = next_ts {
            while let Some(&(t, ci)) = self.by_ts.get(self.due_ts) {
                if ts > t {
                    due.push(ci);
                    self.due_ts += 1;
                } else {
                    break;
                }
            }
        }
        due.sort_unstable();
        due
    }

    /// Claims whose first required block begins with `tokens`, in claim order.
    pub(super) fn first_starting_with(&self, tokens: &[u32]) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .first
            .range::<[u32], _>((
                std::ops::Bound::Included(tokens),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(tokens))
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        out.sort_unstable();
        out
    }
}

impl Engine<'_> {
    /// A claim-relevant event: it must come after the claim's registration.
    pub(super) fn relevant_event(&mut self, ci: usize, here: EventRef, ts: Option<f64>) {
        let Some(c) = self.claims.get_mut(ci) else {
            return;
        };
        let post_hoc = match c.registered_before {
            Some(StreamPoint::EventIndex(r)) => here.index < r,
            Some(StreamPoint::Timestamp(t)) => ts.is_some_and(|ts| ts < t),
            None => false,
        };
        if post_hoc {
            push_once(&mut c.reasons, Reason::PostHocClaim { event: here });
        }
    }

    pub(super) fn claim_reason(&mut self, ci: usize, r: Reason) {
        if let Some(c) = self.claims.get_mut(ci) {
            push_once(&mut c.reasons, r);
        }
    }
}
