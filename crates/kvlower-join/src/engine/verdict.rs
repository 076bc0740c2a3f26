//! The verdicts: whether a claim's predicate holds as the stream goes (its
//! transitions), the verdict taken at its observation point, and the report
//! assembled from every verdict with the precondition tallies.
//!
//! A verdict is positive only when no reason of any kind concerns the claim: any
//! reason, or a claim that could not be tracked, makes it `insufficient_evidence`.

use std::collections::{BTreeMap, BTreeSet};

use kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS;

use super::Engine;
use crate::document::{
    Change, ClaimResult, EventRef, JoinReport, PreconditionTally, REPORT_SCHEMA_VERSION, Reason,
    StatusCounts, TierCoverage, Transition, Verdict,
};
use crate::events::{BlockHash, Tier};
use crate::registry::{EventFormat, StreamPoint};

impl Engine<'_> {
    /// At least one copy is certainly resident.
    fn live(&self, h: &BlockHash) -> bool {
        self.blocks
            .get(h)
            .is_some_and(|r| r.tiers.iter().any(|(_, c)| c.min > 0))
    }

    /// No copy is certainly resident, but one may be (an uncertain copy count).
    fn maybe_live(&self, h: &BlockHash) -> bool {
        !self.live(h) && self.blocks.get(h).is_some_and(|r| !r.tiers.is_empty())
    }

    /// Whether the claim's verdict hangs on an uncertain copy count: a required
    /// position no copy certainly holds, but one may.
    fn uncertain_position(&self, ci: usize) -> bool {
        self.claims.get(ci).is_some_and(|c| {
            c.positions
                .iter()
                .any(|p| !p.iter().any(|h| self.live(h)) && p.iter().any(|h| self.maybe_live(h)))
        })
    }

    /// How many of the claim's required positions, from the first, hold a certainly
    /// resident block.
    fn held_prefix(&self, ci: usize) -> usize {
        self.claims.get(ci).map_or(0, |c| {
            c.positions
                .iter()
                .take_while(|p| p.iter().any(|h| self.live(h)))
                .count()
        })
    }

    /// Re-evaluates claim `ci`'s predicate after event `here` touched it, recording a
    /// transition when it changes (a judged claim is frozen).
    pub(super) fn recompute(&mut self, ci: usize, here: EventRef) {
        let held = match self.claims.get(ci) {
            Some(c) if !c.chunks.is_empty() => self.held_prefix(ci) == c.chunks.len(),
            _ => false,
        };
        let Some(c) = self.claims.get_mut(ci) else {
            return;
        };
        if c.result.is_some() || held == c.predicate_holds {
            return;
        }
        c.predicate_holds = held;
        c.transitions.push(Transition {
            event: here,
            change: if held {
                Change::Materialized
            } else {
                Change::Lost
            },
        });
        if held {
            c.since = Some(here);
        }
    }

    /// Where the claim's required blocks certainly reside, counted by tier.
    fn tiers(&self, ci: usize) -> Vec<TierCoverage> {
        let mut by: BTreeMap<Tier, u64> = BTreeMap::new();
        if let Some(c) = self.claims.get(ci) {
            for p in &c.positions {
                let mut at: BTreeSet<&Tier> = BTreeSet::new();
                for h in p {
                    if let Some(r) = self.blocks.get(h) {
                        at.extend(
                            r.tiers
                                .iter()
                                .filter(|(_, c)| c.min > 0)
                                .filter_map(|(t, _)| self.tier_name(t)),
                        );
                    }
                }
                for t in at {
                    *by.entry(t.clone()).or_default() += 1;
                }
            }
        }
        by.into_iter()
            .map(|(tier, blocks)| TierCoverage { tier, blocks })
            .collect()
    }

    /// Takes claim `ci`'s verdict now, at its observation point: every reason that
    /// concerns it (registry, claim, stream, `extra`, an uncertain copy count) makes
    /// it `insufficient_evidence`; otherwise its predicate and transitions decide.
    pub(super) fn snapshot(&mut self, ci: usize, extra: Option<Reason>) {
        let Some(claim) = self.registry.claims.get(ci) else {
            return;
        };
        let uncertain = self
            .uncertain_position(ci)
            .then(|| Reason::UncertainCopyCount {
                kv_cache_report_mode: self.report_mode().map(str::to_string),
            });
        let mut reasons: Vec<Reason> = Vec::new();
        for r in claim
            .reasons
            .iter()
            .chain(&self.registry_reasons)
            .chain(
                self.claims
                    .get(ci)
                    .map(|c| c.reasons.as_slice())
                    .unwrap_or(&[]),
            )
            .chain(&self.stream_ambiguities)
            .cloned()
            .chain(extra)
            .chain(uncertain)
        {
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
        reasons.sort();
        let tiers = self.tiers(ci);
        let matched = self.held_prefix(ci) as u64;
        let Some(c) = self.claims.get_mut(ci) else {
            return;
        };
        let bs = self.block_size.map_or(0, |b| u64::from(b.get()));
        let verdict = if !reasons.is_empty() || c.chunks.is_empty() {
            if reasons.is_empty() {
                // Unreachable by construction (an untracked claim always has a reason);
                // kept so the join can never fall through to a positive verdict.
                reasons.push(Reason::MissingTokenIds);
            }
            Verdict::InsufficientEvidence { reasons }
        } else if c.predicate_holds {
            Verdict::Materialized {
                since: c.since.unwrap_or(EventRef { index: 0, line: 0 }),
                tiers,
            }
        } else if let Some(lost) = c
            .transitions
            .iter()
            .rev()
            .find(|t| t.change == Change::Lost)
        {
            let materialized_at = c
                .transitions
                .iter()
                .rev()
                .find(|t| t.change == Change::Materialized && t.event <= lost.event)
                .map_or(lost.event, |t| t.event);
            Verdict::Lost {
                materialized_at,
                lost_at: lost.event,
            }
        } else {
            Verdict::NotMaterialized {
                matched_prefix_tokens: matched * bs,
                required_tokens: claim.predicate.map_or(0, |p| u64::from(p.tokens())),
            }
        };
        let insufficient = matches!(verdict, Verdict::InsufficientEvidence { .. });
        c.result = Some(ClaimResult {
            claim_id: claim.id.clone(),
            reusable_object_id: claim.object.clone(),
            predicate: claim.predicate.map(|p| p.to_string()),
            observation_point: c.observe_at,
            verdict,
            transitions: if insufficient {
                Vec::new()
            } else {
                c.transitions.clone()
            },
            observed_priorities: c.priorities.iter().copied().collect(),
        });
        self.claims_unjudged = self.claims_unjudged.saturating_sub(1);
    }

    /// Ends the replay after `lines` lines or frames: every claim not yet judged is
    /// judged at the end of the stream (failing closed when its observation point
    /// lies beyond it), and the report is assembled. `registry_label` and
    /// `events_label` are recorded as given.
    pub(crate) fn finish(
        mut self,
        lines: u64,
        registry_label: String,
        events_label: String,
    ) -> JoinReport {
        for ci in 0..self.claims.len() {
            if self.claims[ci].result.is_some() {
                continue;
            }
            let beyond = match self.claims[ci].observe_at {
                Some(StreamPoint::EventIndex(o)) => self.last_index.is_none_or(|l| l < o),
                // TRT-LLM has no timestamps: already `observation_point_unresolvable`.
                Some(StreamPoint::Timestamp(_)) if self.format == EventFormat::Trtllm => false,
                Some(StreamPoint::Timestamp(t)) => self.last_ts.is_none_or(|l| l < t),
                None => false,
            };
            let extra = beyond.then_some(Reason::ObservationPointBeyondStream {
                last_event: self.last_ref,
            });
            self.snapshot(ci, extra);
        }
        let mut claims: Vec<ClaimResult> =
            self.claims.into_iter().filter_map(|c| c.result).collect();
        claims.sort_by(|a, b| a.claim_id.cmp(&b.claim_id));
        let summary = status_counts(&claims);
        let preconditions = precondition_tallies(&claims);
        let mut stream = self.summary;
        stream.lines = lines;
        stream.ambiguities = self.stream_ambiguities;
        stream.ambiguities.sort();
        JoinReport {
            schema_version: REPORT_SCHEMA_VERSION,
            depth: "telemetry_join".into(),
            registry: registry_label,
            events: events_label,
            format: self.format,
            cache_identity: self.registry.cache_identity.clone(),
            stream,
            claims,
            preconditions,
            summary,
        }
    }
}

/// How many claims have each verdict.
fn status_counts(claims: &[ClaimResult]) -> StatusCounts {
    let mut summary = StatusCounts::default();
    for c in claims {
        match c.verdict {
            Verdict::Materialized { .. } => summary.materialized += 1,
            Verdict::NotMaterialized { .. } => summary.not_materialized += 1,
            Verdict::Lost { .. } => summary.lost += 1,
            Verdict::InsufficientEvidence { .. } => summary.insufficient_evidence += 1,
        }
    }
    summary
}

/// For each of the join's preconditions (the model's `telemetry_join` ones, in its
/// order), how many claims meet it: a claim misses one only through a reason that
/// names it. A precondition is held only when every claim, and at least one, meets it.
fn precondition_tallies(claims: &[ClaimResult]) -> Vec<PreconditionTally> {
    let total = claims.len();
    TELEMETRY_JOIN_PRECONDITIONS
        .iter()
        .map(|&p| {
            let met = claims
                .iter()
                .filter(|c| match &c.verdict {
                    Verdict::InsufficientEvidence { reasons } => {
                        !reasons.iter().any(|r| r.precondition() == p)
                    }
                    _ => true,
                })
                .count();
            PreconditionTally {
                precondition: p,
                claims: format!("{met}/{total}"),
                held: total > 0 && met == total,
            }
        })
        .collect()
}
