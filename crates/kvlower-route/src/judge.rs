//! The routing gate's judgment: pure (no I/O), over a parsed trace and the registered
//! claims. docs/routing-trace.md, "What the gate judges", is the specification.
//!
//! Attribution is strict on purpose. A request counts for a claim only when it carries
//! the claim's id; overlap scores and worker choices of requests that carry none are
//! listed and support nothing (paper §3 Table 1: "KV-overlap routing score or worker
//! choice alone" is the rejected false positive of `routed_reuse`). A placement counts
//! only when nobody placed the claim's blocks on that namespace before it, and a reuse
//! only when nobody re-carried them in between: otherwise the hit is someone else's.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::document::{
    ClaimVerdict, DEPTH, Held, REPORT_KIND, RouteObligation, RoutePrecondition, RouteReason,
    RouteReport, RoutedRequest, Unattributed,
};
use crate::trace::{DecidedAt, Request, RouteTrace, WorkerId};
use kvlower_join::StreamPoint;

/// A claim of the registry, reduced to what routing attribution needs.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredClaim {
    pub id: String,
    /// The tokens the predicate needs, whole blocks (`None`: the claim is unusable).
    pub required_tokens: Option<Vec<u32>>,
    /// The registry's `registered_before` (`None`: absent). It orders only against a
    /// decision on the same clock (see `registered_before_decision`).
    pub registered_before: Option<StreamPoint>,
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
    /// Every entry's capture per worker id (the stream an event-index decision counts).
    captures: BTreeMap<WorkerId, Vec<Option<&'a str>>>,
}

impl<'a> WorkerMap<'a> {
    fn new(trace: &'a RouteTrace) -> WorkerMap<'a> {
        let mut by_worker: BTreeMap<WorkerId, Vec<&str>> = BTreeMap::new();
        let mut by_namespace: BTreeMap<&str, Vec<WorkerId>> = BTreeMap::new();
        let mut captures: BTreeMap<WorkerId, Vec<Option<&str>>> = BTreeMap::new();
        for w in &trace.workers {
            captures.entry(w.id).or_default().push(w.capture.as_deref());
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
            captures,
        }
    }

    /// The one capture the map names for a worker (`None`: unknown, named twice, or
    /// without a capture): the stream an `{event_index}` decision of that worker counts.
    fn stream(&self, id: WorkerId) -> Option<&'a str> {
        match self.captures.get(&id).map(Vec::as_slice) {
            Some([Some(capture)]) => Some(capture),
            _ => None,
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

/// Whether the claim was registered before the router decided `r`, read on one clock:
/// - timestamps: registered before `T`, decided at `D` with `T < D`;
/// - event indices: registered before event `N` of every stream the registry is joined
///   with, decided after the chosen worker's engine had published `K` events with
///   `N < K` — event `N` was published before the decision, so the registration was
///   too. With `N == K` both lie before event `N` and their order is unknown; a worker
///   whose one capture the map does not name has no stream to count.
///
/// Two clocks (or no registration) cannot be ordered: the claim fails closed
/// (`not_registered_before_decision`).
fn registered_before_decision(c: &RegisteredClaim, r: &Request, map: &WorkerMap<'_>) -> bool {
    match (c.registered_before, r.decided_at) {
        (Some(StreamPoint::Timestamp(t)), DecidedAt::Timestamp(d)) => t < d,
        (Some(StreamPoint::EventIndex(n)), DecidedAt::EventIndex(k)) => {
            n < k && map.stream(r.decision.worker).is_some()
        }
        _ => false,
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

/// The trace indexed once, so that judging every claim is near-linear in the trace and
/// the registry (docs/routing-trace.md, "What the gate judges"; issue 21 item 8): the
/// requests per claim id, the claims per first block, and a trie of the claims'
/// required blocks that every request's tokens are walked down once.
struct Index<'a> {
    /// Request positions per carried claim id, in decision order.
    by_claim: HashMap<&'a str, Vec<usize>>,
    /// Claim positions per first required block.
    by_first_block: HashMap<&'a [u32], Vec<usize>>,
    /// The trie node of each claim's whole required tokens (`None`: unusable claim).
    node_of_claim: Vec<Option<usize>>,
    /// Trie nodes: children by the next block's tokens, and the positions (in decision
    /// order) of the requests whose tokens begin with the node's prefix.
    nodes: Vec<TrieNode<'a>>,
    /// The distinct worker ids of the map (for "an overlap row for every mapped worker").
    mapped: BTreeSet<WorkerId>,
}

#[derive(Default)]
struct TrieNode<'a> {
    children: HashMap<&'a [u32], usize>,
    carriers: Vec<usize>,
}

impl<'a> Index<'a> {
    fn new(trace: &'a RouteTrace, claims: &'a [RegisteredClaim], bs: usize) -> Index<'a> {
        let mut by_claim: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in trace.requests.iter().enumerate() {
            if let Some(c) = r.claim.as_deref() {
                by_claim.entry(c).or_default().push(i);
            }
        }
        let mut by_first_block: HashMap<&[u32], Vec<usize>> = HashMap::new();
        let mut nodes: Vec<TrieNode<'a>> = vec![TrieNode::default()];
        let mut node_of_claim = Vec::with_capacity(claims.len());
        for (ci, c) in claims.iter().enumerate() {
            let required: &[u32] = c.required_tokens.as_deref().unwrap_or(&[]);
            if let Some(first) = required.get(..bs) {
                by_first_block.entry(first).or_default().push(ci);
            }
            if required.is_empty() {
                node_of_claim.push(None);
                continue;
            }
            let mut at = 0;
            for block in required.chunks(bs) {
                let next = nodes.len();
                let child = match nodes.get_mut(at) {
                    Some(n) => *n.children.entry(block).or_insert(next),
                    None => next,
                };
                if child == next {
                    nodes.push(TrieNode::default());
                }
                at = child;
            }
            node_of_claim.push(Some(at));
        }
        for (i, r) in trace.requests.iter().enumerate() {
            let mut at = 0;
            for block in r.tokens.chunks_exact(bs) {
                let Some(&child) = nodes.get(at).and_then(|n| n.children.get(block)) else {
                    break;
                };
                if let Some(n) = nodes.get_mut(child) {
                    n.carriers.push(i);
                }
                at = child;
            }
        }
        Index {
            by_claim,
            by_first_block,
            node_of_claim,
            nodes,
            mapped: trace.workers.iter().map(|w| w.id).collect(),
        }
    }

    /// Positions of the requests whose tokens begin with claim `ci`'s required tokens,
    /// in decision order (none for an unusable claim).
    fn carriers(&self, ci: usize) -> &[usize] {
        self.node_of_claim
            .get(ci)
            .copied()
            .flatten()
            .and_then(|n| self.nodes.get(n))
            .map_or(&[], |n| n.carriers.as_slice())
    }
}

fn carries(r: &Request, required: &[u32]) -> bool {
    !required.is_empty() && r.tokens.starts_with(required)
}

/// The reasons an unattributed request that carried a claim's required tokens gives:
/// `hit` (the earlier or interleaved reason) when the namespace the router chose for it,
/// or the one that reported serving it, is the claim's namespace `ns`; and
/// `UnmappedUnattributedPrefix` for each of those workers the map does not fix to one
/// namespace, since that namespace may be the claim's.
fn unattributed_carrier(
    q: &Request,
    map: &WorkerMap<'_>,
    ns: Option<&str>,
    hit: impl Fn(String) -> RouteReason,
    reasons: &mut Vec<RouteReason>,
) {
    let mut on_claim_namespace = false;
    for w in [q.decision.worker, q.served.worker] {
        match map.namespace(w) {
            Namespace::Fixed(here) => on_claim_namespace |= ns == Some(here),
            Namespace::Unknown | Namespace::Ambiguous => {
                reasons.push(RouteReason::UnmappedUnattributedPrefix {
                    request_id: q.id.clone(),
                    worker_id: w.to_string(),
                });
            }
        }
    }
    if on_claim_namespace {
        reasons.push(hit(q.id.clone()));
    }
}

/// Judges every registered claim against the trace. `trace_name` and `registry_name`
/// are recorded as given (paths relative to where the gate ran); `runtime` is the
/// registry's runtime identity, which the document records (it anchors only a
/// descriptor of exactly that runtime).
pub fn judge(
    trace: &RouteTrace,
    claims: &[RegisteredClaim],
    trace_name: &str,
    registry_name: &str,
    runtime: Option<kvlower_join::registry::RuntimeIdentity>,
) -> RouteReport {
    let map = WorkerMap::new(trace);
    let bs = trace.block_size.get() as usize;
    let index = Index::new(trace, claims, bs);
    let known: HashSet<&str> = claims.iter().map(|c| c.id.as_str()).collect();
    let unknown: Vec<RouteReason> = trace
        .requests
        .iter()
        .filter(|r| r.claim.as_deref().is_some_and(|c| !known.contains(c)))
        .map(|r| RouteReason::UnknownClaim {
            request_id: r.id.clone(),
        })
        .collect();
    let judge = ClaimJudge {
        trace,
        map,
        index,
        claims,
        block_size: bs,
        unknown,
    };
    let verdicts: Vec<ClaimVerdict> = claims
        .iter()
        .enumerate()
        .map(|(ci, c)| judge.claim(ci, c))
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
        runtime,
        requests: trace.requests.len(),
        preconditions,
        witnesses,
        claims: verdicts,
        unattributed_requests,
        pass,
    }
}

/// A worker id the map does not fix to one namespace, as a reason on a request that
/// carries the claim.
fn unfixed_worker(map: &WorkerMap<'_>, request_id: &str, w: WorkerId) -> Option<RouteReason> {
    match map.namespace(w) {
        Namespace::Fixed(_) => None,
        Namespace::Unknown => Some(RouteReason::UnknownWorker {
            request_id: request_id.to_string(),
            worker_id: w.to_string(),
        }),
        Namespace::Ambiguous => Some(RouteReason::AmbiguousWorkerNamespace {
            worker_id: w.to_string(),
        }),
    }
}

/// What every claim's judgment reads: the trace, the worker map, the claims'
/// index and the requests naming unregistered claims, built once per trace.
struct ClaimJudge<'a> {
    trace: &'a RouteTrace,
    map: WorkerMap<'a>,
    index: Index<'a>,
    claims: &'a [RegisteredClaim],
    /// Tokens per KV block (the trace's `block_size`).
    block_size: usize,
    /// One `unknown_claim` reason per request naming a claim the registry lacks:
    /// every claim carries them (the registry is not the one the run used).
    unknown: Vec<RouteReason>,
}

impl ClaimJudge<'_> {
    /// Judges claim `ci` (`c`) against the trace.
    fn claim(&self, ci: usize, c: &RegisteredClaim) -> ClaimVerdict {
        let ClaimJudge {
            trace,
            map,
            index,
            claims,
            block_size: bs,
            unknown,
        } = self;
        let bs = *bs;
        let mut reasons: Vec<RouteReason> = unknown.to_vec();
        let required: &[u32] = c.required_tokens.as_deref().unwrap_or(&[]);
        if required.is_empty() {
            reasons.push(RouteReason::ClaimUnusable);
        }
        // Another claim with the same first block: a hit on that block is both claims'.
        if let Some(first) = required.get(..bs) {
            for &oi in index
                .by_first_block
                .get(first)
                .map_or(&[][..], Vec::as_slice)
            {
                if let Some(other) = claims.get(oi).filter(|o| o.id != c.id) {
                    reasons.push(RouteReason::AmbiguousClaimPrefix {
                        other: other.id.clone(),
                    });
                }
            }
        }
        let carried: Vec<(usize, &Request)> = index
            .by_claim
            .get(c.id.as_str())
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|&i| trace.requests.get(i).map(|r| (i, r)))
            .collect();
        if carried.is_empty() {
            reasons.push(RouteReason::NoClaimedRequest);
        }
        for (_, r) in &carried {
            if !registered_before_decision(c, r, map) {
                reasons.push(RouteReason::NotRegisteredBeforeDecision {
                    request_id: r.id.clone(),
                });
            }
            if !required.is_empty() && !carries(r, required) {
                reasons.push(RouteReason::ClaimTokensNotCarried {
                    request_id: r.id.clone(),
                });
            }
            // The worker the router chose and the one that served: a miss in the map, or
            // two namespaces, is a reason, never skipped.
            for w in [r.decision.worker, r.served.worker] {
                reasons.extend(unfixed_worker(map, &r.id, w));
            }
            // A worker the router scored (an overlap row) that the map does not name: the
            // map is not the router's (a mapped worker's row is what route cost needs).
            for o in &r.decision.overlap {
                if map.namespace(o.worker) == Namespace::Unknown {
                    reasons.extend(unfixed_worker(map, &r.id, o.worker));
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
        let reuses: Vec<(usize, &Request)> = carried.iter().skip(1).copied().collect();
        if placement.is_some() && reuses.is_empty() {
            reasons.push(RouteReason::NoReuseRequest);
        }
        if let Some((pi, p)) = placement {
            if !required.is_empty() && p.served.num_cached_tokens >= required_len {
                reasons.push(RouteReason::PlacementAlreadyCached {
                    request_id: p.id.clone(),
                });
            }
            let ns = map.fixed(p.served.worker);
            // Requests without the claim that carried its required tokens, before the
            // placement or before its last reuse (after the placement): each reuse's
            // window (placement, reuse) is inside the last one's.
            let last = reuses.last().map_or(pi, |&(ri, _)| ri);
            for &qi in index.carriers(ci) {
                if qi >= last {
                    break;
                }
                let Some(q) = trace.requests.get(qi) else {
                    continue;
                };
                if qi == pi || q.claim.as_deref() == Some(c.id.as_str()) {
                    continue;
                }
                if qi < pi {
                    unattributed_carrier(
                        q,
                        map,
                        ns,
                        |request_id| RouteReason::EarlierUnattributedPrefix { request_id },
                        &mut reasons,
                    );
                } else {
                    unattributed_carrier(
                        q,
                        map,
                        ns,
                        |request_id| RouteReason::InterleavedUnattributedPrefix { request_id },
                        &mut reasons,
                    );
                }
            }
            for &(_, r) in &reuses {
                let here = map.fixed(r.served.worker);
                if ns.is_some() && here.is_some() && here != ns {
                    reasons.push(RouteReason::ReuseOnOtherNamespace {
                        request_id: r.id.clone(),
                    });
                }
                let rows: BTreeSet<WorkerId> = r
                    .decision
                    .overlap
                    .iter()
                    .map(|o| o.worker)
                    .filter(|w| index.mapped.contains(w))
                    .collect();
                if rows.len() < index.mapped.len() {
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
                    (RouteObligation::ReuseRoutingAttribution, RouteReason::ReuseMissed { .. }) => {
                        true
                    }
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
}
