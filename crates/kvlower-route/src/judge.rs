//! The routing gate's judgment: pure (no I/O), over a parsed trace and the registered
//! claims. docs/routing-trace.md, "What the gate judges", is the specification.
//!
//! Attribution is strict on purpose. A request counts for a claim only when it carries
//! the claim's id; overlap scores and worker choices of requests that carry none are
//! listed and support nothing (paper §3 Table 1: "KV-overlap routing score or worker
//! choice alone" is the rejected false positive of `routed_reuse`). A placement counts
//! only when nobody placed the claim's blocks on that namespace before it, and a reuse
//! only when nobody re-carried them in between: otherwise the hit is someone else's.

use std::collections::{BTreeMap, BTreeSet};

use crate::report::{
    ClaimVerdict, DEPTH, Held, REPORT_KIND, RouteObligation, RoutePrecondition, RouteReason,
    RouteReport, RoutedRequest, Unattributed,
};
use crate::trace::{Request, RouteTrace, WorkerId};

/// A claim of the registry, reduced to what routing attribution needs.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredClaim {
    pub id: String,
    /// The tokens the predicate needs, whole blocks (`None`: the claim is unusable).
    pub required_tokens: Option<Vec<u32>>,
    /// `registered_before` as a timestamp (`None`: absent, or an event index, which
    /// cannot be ordered against a routing decision).
    pub registered_before: Option<f64>,
}

/// The worker map's answer for one worker id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Namespace<'a> {
    Fixed(&'a str),
    Ambiguous,
    Unknown,
}

struct WorkerMap<'a> {
    /// Every namespace entry per worker id, duplicates kept: two entries are two claims.
    by_worker: BTreeMap<WorkerId, Vec<&'a str>>,
    by_namespace: BTreeMap<&'a str, Vec<WorkerId>>,
}

impl<'a> WorkerMap<'a> {
    fn new(trace: &'a RouteTrace) -> WorkerMap<'a> {
        let mut by_worker: BTreeMap<WorkerId, Vec<&str>> = BTreeMap::new();
        let mut by_namespace: BTreeMap<&str, Vec<WorkerId>> = BTreeMap::new();
        for w in &trace.workers {
            by_worker
                .entry(w.id)
                .or_default()
                .push(w.cache_namespace.as_str());
            by_namespace
                .entry(w.cache_namespace.as_str())
                .or_default()
                .push(w.id);
        }
        WorkerMap {
            by_worker,
            by_namespace,
        }
    }

    /// One worker, one namespace, and that namespace belongs to no other worker.
    fn namespace(&self, id: WorkerId) -> Namespace<'a> {
        match self.by_worker.get(&id).map(Vec::as_slice) {
            None => Namespace::Unknown,
            Some([ns]) if self.by_namespace.get(ns).is_some_and(|w| w.len() == 1) => {
                Namespace::Fixed(ns)
            }
            Some(_) => Namespace::Ambiguous,
        }
    }

    fn fixed(&self, id: WorkerId) -> Option<&'a str> {
        match self.namespace(id) {
            Namespace::Fixed(ns) => Some(ns),
            Namespace::Ambiguous | Namespace::Unknown => None,
        }
    }
}

fn routed(r: &Request, map: &WorkerMap<'_>) -> RoutedRequest {
    RoutedRequest {
        request_id: r.id.clone(),
        worker_id: r.served.worker.to_string(),
        cache_namespace: map.fixed(r.served.worker).map(str::to_string),
        device_overlap_blocks: chosen_overlap(r),
        logit: r.decision.logit,
        num_cached_tokens: r.served.num_cached_tokens,
    }
}

/// The device overlap the router reported for the worker it chose.
fn chosen_overlap(r: &Request) -> Option<u32> {
    r.decision
        .overlap
        .iter()
        .find(|o| o.worker == r.decision.worker)
        .map(|o| o.device_blocks)
}

fn carries(r: &Request, required: &[u32]) -> bool {
    !required.is_empty() && r.tokens.starts_with(required)
}

/// Judges every registered claim against the trace. `trace_name` and `registry_name`
/// are recorded as given (paths relative to where the gate ran).
pub fn judge(
    trace: &RouteTrace,
    claims: &[RegisteredClaim],
    trace_name: &str,
    registry_name: &str,
) -> RouteReport {
    let map = WorkerMap::new(trace);
    let bs = trace.block_size.get() as usize;
    let known: BTreeSet<&str> = claims.iter().map(|c| c.id.as_str()).collect();
    let unknown: Vec<RouteReason> = trace
        .requests
        .iter()
        .filter(|r| r.claim.as_deref().is_some_and(|c| !known.contains(c)))
        .map(|r| RouteReason::UnknownClaim {
            request_id: r.id.clone(),
        })
        .collect();
    let verdicts: Vec<ClaimVerdict> = claims
        .iter()
        .map(|c| judge_claim(trace, &map, claims, c, bs, &unknown))
        .collect();
    let every = |f: &dyn Fn(&ClaimVerdict) -> bool| !verdicts.is_empty() && verdicts.iter().all(f);
    let preconditions = RoutePrecondition::ALL
        .iter()
        .map(|&p| Held {
            name: p,
            held: every(&|v: &ClaimVerdict| v.preconditions.iter().any(|h| h.name == p && h.held)),
        })
        .collect();
    let pass = every(&|v: &ClaimVerdict| v.pass);
    // All or nothing: a route cost attributed to a claim whose reuse then went wrong is
    // not evidence of routed reuse, so a document witnesses only when every claim passed.
    let witnesses = if pass {
        RouteObligation::ALL.to_vec()
    } else {
        Vec::new()
    };
    let unattributed_requests = trace
        .requests
        .iter()
        .filter(|r| r.claim.is_none())
        .map(|r| Unattributed {
            request_id: r.id.clone(),
            worker_id: r.decision.worker.to_string(),
            device_overlap_blocks: chosen_overlap(r),
            num_cached_tokens: r.served.num_cached_tokens,
        })
        .collect();
    RouteReport {
        schema_version: 1,
        kind: REPORT_KIND.into(),
        depth: DEPTH.into(),
        trace: trace_name.into(),
        registry: registry_name.into(),
        router: trace.router.clone(),
        engine: trace.engine.clone(),
        runtime: None,
        requests: trace.requests.len(),
        preconditions,
        witnesses,
        claims: verdicts,
        unattributed_requests,
        pass,
    }
}

fn judge_claim(
    trace: &RouteTrace,
    map: &WorkerMap<'_>,
    claims: &[RegisteredClaim],
    c: &RegisteredClaim,
    bs: usize,
    unknown: &[RouteReason],
) -> ClaimVerdict {
    let mut reasons: Vec<RouteReason> = unknown.to_vec();
    let required: &[u32] = c.required_tokens.as_deref().unwrap_or(&[]);
    if required.is_empty() {
        reasons.push(RouteReason::ClaimUnusable);
    }
    // Another claim with the same first block: a hit on that block is both claims'.
    if let Some(first) = required.get(..bs) {
        for other in claims.iter().filter(|o| o.id != c.id) {
            if other
                .required_tokens
                .as_deref()
                .and_then(|t| t.get(..bs))
                .is_some_and(|o| o == first)
            {
                reasons.push(RouteReason::AmbiguousClaimPrefix {
                    other: other.id.clone(),
                });
            }
        }
    }
    let carried: Vec<(usize, &Request)> = trace
        .requests
        .iter()
        .enumerate()
        .filter(|(_, r)| r.claim.as_deref() == Some(c.id.as_str()))
        .collect();
    if carried.is_empty() {
        reasons.push(RouteReason::NoClaimedRequest);
    }
    for (_, r) in &carried {
        if c.registered_before.is_none_or(|t| t >= r.decided_at) {
            reasons.push(RouteReason::NotRegisteredBeforeDecision {
                request_id: r.id.clone(),
            });
        }
        if !required.is_empty() && !carries(r, required) {
            reasons.push(RouteReason::ClaimTokensNotCarried {
                request_id: r.id.clone(),
            });
        }
        for w in [r.decision.worker, r.served.worker] {
            match map.namespace(w) {
                Namespace::Fixed(_) => {}
                Namespace::Unknown => reasons.push(RouteReason::UnknownWorker {
                    request_id: r.id.clone(),
                    worker_id: w.to_string(),
                }),
                Namespace::Ambiguous => reasons.push(RouteReason::AmbiguousWorkerNamespace {
                    worker_id: w.to_string(),
                }),
            }
        }
        if r.served.worker != r.decision.worker {
            reasons.push(RouteReason::ServedElsewhere {
                request_id: r.id.clone(),
            });
        }
    }
    let required_blocks = u32::try_from(required.len() / bs).unwrap_or(u32::MAX);
    let required_len = u32::try_from(required.len()).unwrap_or(u32::MAX);
    let placement = carried.first().copied();
    if let Some((pi, p)) = placement {
        if !required.is_empty() && p.served.num_cached_tokens >= required_len {
            reasons.push(RouteReason::PlacementAlreadyCached {
                request_id: p.id.clone(),
            });
        }
        let ns = map.fixed(p.served.worker);
        for r in trace.requests[..pi].iter() {
            if r.claim.as_deref() != Some(c.id.as_str())
                && carries(r, required)
                && ns.is_some()
                && map.fixed(r.served.worker) == ns
            {
                reasons.push(RouteReason::EarlierUnattributedPrefix {
                    request_id: r.id.clone(),
                });
            }
        }
    }
    let reuses: Vec<(usize, &Request)> = carried.iter().skip(1).copied().collect();
    if placement.is_some() && reuses.is_empty() {
        reasons.push(RouteReason::NoReuseRequest);
    }
    if let Some((pi, p)) = placement {
        let ns = map.fixed(p.served.worker);
        for &(ri, r) in &reuses {
            let here = map.fixed(r.served.worker);
            if ns.is_some() && here.is_some() && here != ns {
                reasons.push(RouteReason::ReuseOnOtherNamespace {
                    request_id: r.id.clone(),
                });
            }
            let rows: BTreeSet<WorkerId> = r.decision.overlap.iter().map(|o| o.worker).collect();
            if trace.workers.iter().any(|w| !rows.contains(&w.id)) {
                reasons.push(RouteReason::RouteCostMissing {
                    request_id: r.id.clone(),
                });
            }
            if chosen_overlap(r).is_none_or(|b| b < required_blocks) {
                reasons.push(RouteReason::RouteCostDoesNotCoverClaim {
                    request_id: r.id.clone(),
                });
            }
            if required.is_empty() || r.served.num_cached_tokens < required_len {
                reasons.push(RouteReason::ReuseMissed {
                    request_id: r.id.clone(),
                });
            }
            for q in trace.requests[pi + 1..ri].iter() {
                if q.claim.as_deref() != Some(c.id.as_str())
                    && carries(q, required)
                    && ns.is_some()
                    && map.fixed(q.served.worker) == ns
                {
                    reasons.push(RouteReason::InterleavedUnattributedPrefix {
                        request_id: q.id.clone(),
                    });
                }
            }
        }
    }
    reasons.sort();
    reasons.dedup();

    let preconditions: Vec<Held<RoutePrecondition>> = RoutePrecondition::ALL
        .iter()
        .map(|&p| Held {
            name: p,
            held: !reasons.iter().any(|r| r.precondition() == Some(p)),
        })
        .collect();
    let boundary = preconditions.iter().all(|h| h.held);
    let placement_id = placement.map(|(_, p)| p.id.as_str());
    let is_placement = |id: &str| placement_id == Some(id);
    let obligation_held = |o: RouteObligation| {
        boundary
            && !reasons.iter().any(|r| match (o, r) {
                (
                    RouteObligation::RouteCostAttribution,
                    RouteReason::RouteCostMissing { .. }
                    | RouteReason::RouteCostDoesNotCoverClaim { .. },
                ) => true,
                (
                    RouteObligation::PlacementAttribution,
                    RouteReason::PlacementAlreadyCached { .. }
                    | RouteReason::EarlierUnattributedPrefix { .. },
                ) => true,
                (
                    RouteObligation::PlacementAttribution,
                    RouteReason::ServedElsewhere { request_id },
                ) => is_placement(request_id),
                (RouteObligation::ReuseRoutingAttribution, RouteReason::ReuseMissed { .. }) => true,
                (
                    RouteObligation::ReuseRoutingAttribution,
                    RouteReason::ServedElsewhere { request_id },
                ) => !is_placement(request_id),
                _ => false,
            })
    };
    let obligations: Vec<Held<RouteObligation>> = RouteObligation::ALL
        .iter()
        .map(|&o| Held {
            name: o,
            held: obligation_held(o),
        })
        .collect();
    let pass = boundary && obligations.iter().all(|h| h.held);
    ClaimVerdict {
        claim_id: c.id.clone(),
        required_tokens: (!required.is_empty()).then_some(required_len),
        placement: placement.map(|(_, p)| routed(p, map)),
        reuse: reuses.first().map(|&(_, r)| routed(r, map)),
        preconditions,
        obligations,
        reasons,
        pass,
    }
}
