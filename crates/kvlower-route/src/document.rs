//! The routing gate's evidence document (`kvlower route --format json`), the value
//! `kvlower check` re-runs and compares (docs/routing-trace.md, "The gate document").

use serde::{Deserialize, Serialize};

/// The document's `kind`: how `check` recognises a routing gate document by content.
pub const REPORT_KIND: &str = "kvlower-routing-gate";
/// The depth every routing gate document records.
pub const DEPTH: &str = "routing_hook";

/// The three `routing_hook` preconditions (modes.yaml `depths.routing_hook`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoutePrecondition {
    RouteDecisionSeesAcceptedClaim,
    FixedWorkerCacheNamespace,
    RouteCostPlacementReuseSameClaim,
}

impl RoutePrecondition {
    pub const ALL: [RoutePrecondition; 3] = [
        RoutePrecondition::RouteDecisionSeesAcceptedClaim,
        RoutePrecondition::FixedWorkerCacheNamespace,
        RoutePrecondition::RouteCostPlacementReuseSameClaim,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RoutePrecondition::RouteDecisionSeesAcceptedClaim => {
                "route_decision_sees_accepted_claim"
            }
            RoutePrecondition::FixedWorkerCacheNamespace => "fixed_worker_cache_namespace",
            RoutePrecondition::RouteCostPlacementReuseSameClaim => {
                "route_cost_placement_reuse_same_claim"
            }
        }
    }
}

/// The three obligations `routing_hook` may supply (modes.yaml `depths.routing_hook`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteObligation {
    RouteCostAttribution,
    PlacementAttribution,
    ReuseRoutingAttribution,
}

impl RouteObligation {
    pub const ALL: [RouteObligation; 3] = [
        RouteObligation::RouteCostAttribution,
        RouteObligation::PlacementAttribution,
        RouteObligation::ReuseRoutingAttribution,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RouteObligation::RouteCostAttribution => "route_cost_attribution",
            RouteObligation::PlacementAttribution => "placement_attribution",
            RouteObligation::ReuseRoutingAttribution => "reuse_routing_attribution",
        }
    }
}

/// Why a claim fails a precondition or an obligation. Each names the one it defeats.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum RouteReason {
    /// No request carries the claim: overlap scores and worker choices alone are not
    /// routed reuse (the rejected false positive).
    NoClaimedRequest,
    /// A request carries a claim id the registry does not hold.
    UnknownClaim { request_id: String },
    /// The registry entry cannot be used: no tokens, no predicate, a registry-level
    /// reason, fewer tokens than the predicate needs, or another block size.
    ClaimUnusable,
    /// The claim was not registered before the router decided, on one clock: a
    /// `registered_before` timestamp below `decided_at`, or an event index below the
    /// chosen worker's `decided_at` event index (docs/routing-trace.md).
    NotRegisteredBeforeDecision { request_id: String },
    /// The request's tokens do not begin with the claim's required tokens.
    ClaimTokensNotCarried { request_id: String },
    /// Another registered claim starts with the same first block: attribution is ambiguous.
    AmbiguousClaimPrefix { other: String },
    /// A worker id the decision or the serving names is not in the worker map.
    UnknownWorker {
        request_id: String,
        worker_id: String,
    },
    /// One worker id maps to two cache namespaces, or two workers to one.
    AmbiguousWorkerNamespace { worker_id: String },
    /// A request without this claim carried its required tokens, before the placement
    /// or before a reuse, and the worker the router chose for it or the one that served
    /// it is not fixed to one namespace by the map (unknown, or ambiguous): that
    /// namespace may be the claim's, so the placement or the reuse may be its.
    UnmappedUnattributedPrefix {
        request_id: String,
        worker_id: String,
    },
    /// The request was served by another worker than the router chose.
    ServedElsewhere { request_id: String },
    /// Only one request carries the claim: nothing was reused.
    NoReuseRequest,
    /// The placement request already hit the claim's blocks: someone else placed them.
    PlacementAlreadyCached { request_id: String },
    /// An earlier request without this claim carried its prefix to the same namespace.
    EarlierUnattributedPrefix { request_id: String },
    /// A request without this claim carried its prefix to the same namespace between
    /// placement and reuse.
    InterleavedUnattributedPrefix { request_id: String },
    /// The reuse decision has no overlap row for some mapped worker.
    RouteCostMissing { request_id: String },
    /// The chosen worker's device overlap does not cover the claim's blocks.
    RouteCostDoesNotCoverClaim { request_id: String },
    /// The reuse was served on another cache namespace than the placement.
    ReuseOnOtherNamespace { request_id: String },
    /// The engine's own prefix-cache hit did not cover the claim.
    ReuseMissed { request_id: String },
}

impl RouteReason {
    /// The reason in words, for human output (the JSON document keeps the tagged form).
    pub fn describe(&self) -> String {
        match self {
            RouteReason::NoClaimedRequest => {
                "no request carries the claim: overlap scores and worker choices alone are not routed reuse".into()
            }
            RouteReason::UnknownClaim { request_id } => {
                format!("request {request_id} carries a claim id the registry does not hold")
            }
            RouteReason::ClaimUnusable => {
                "the registry entry cannot be used (no tokens, no predicate, a registry-level reason, too few tokens, or another block size)".into()
            }
            RouteReason::NotRegisteredBeforeDecision { request_id } => format!(
                "the claim was not registered before the router decided request {request_id}"
            ),
            RouteReason::ClaimTokensNotCarried { request_id } => format!(
                "request {request_id}'s tokens do not begin with the claim's required tokens"
            ),
            RouteReason::AmbiguousClaimPrefix { other } => format!(
                "claim {other} starts with the same first block: attribution is ambiguous"
            ),
            RouteReason::UnknownWorker {
                request_id,
                worker_id,
            } => format!(
                "worker {worker_id} (request {request_id}) is not in the worker map"
            ),
            RouteReason::AmbiguousWorkerNamespace { worker_id } => format!(
                "worker {worker_id} is not fixed to one cache namespace (two namespaces, or shared with another worker)"
            ),
            RouteReason::UnmappedUnattributedPrefix {
                request_id,
                worker_id,
            } => format!(
                "request {request_id} without the claim carried its tokens to worker {worker_id}, which the map does not fix to one namespace"
            ),
            RouteReason::ServedElsewhere { request_id } => format!(
                "request {request_id} was served by another worker than the router chose"
            ),
            RouteReason::NoReuseRequest => {
                "only one request carries the claim: nothing was reused".into()
            }
            RouteReason::PlacementAlreadyCached { request_id } => format!(
                "placement request {request_id} already hit the claim's blocks: someone else placed them"
            ),
            RouteReason::EarlierUnattributedPrefix { request_id } => format!(
                "earlier request {request_id} without the claim carried its prefix to the same namespace"
            ),
            RouteReason::InterleavedUnattributedPrefix { request_id } => format!(
                "request {request_id} without the claim carried its prefix to the same namespace between placement and reuse"
            ),
            RouteReason::RouteCostMissing { request_id } => format!(
                "the reuse decision for request {request_id} has no overlap row for some mapped worker"
            ),
            RouteReason::RouteCostDoesNotCoverClaim { request_id } => format!(
                "at request {request_id} the chosen worker's device overlap does not cover the claim's blocks"
            ),
            RouteReason::ReuseOnOtherNamespace { request_id } => format!(
                "reuse request {request_id} was served on another cache namespace than the placement"
            ),
            RouteReason::ReuseMissed { request_id } => format!(
                "reuse request {request_id}: the engine's prefix-cache hit did not cover the claim"
            ),
        }
    }

    /// The precondition this reason defeats, or `None` when it defeats obligations only.
    pub fn precondition(&self) -> Option<RoutePrecondition> {
        use RoutePrecondition as P;
        match self {
            RouteReason::NoClaimedRequest
            | RouteReason::UnknownClaim { .. }
            | RouteReason::ClaimUnusable
            | RouteReason::NotRegisteredBeforeDecision { .. }
            | RouteReason::ClaimTokensNotCarried { .. } => Some(P::RouteDecisionSeesAcceptedClaim),
            RouteReason::UnknownWorker { .. }
            | RouteReason::AmbiguousWorkerNamespace { .. }
            | RouteReason::UnmappedUnattributedPrefix { .. }
            | RouteReason::ReuseOnOtherNamespace { .. } => Some(P::FixedWorkerCacheNamespace),
            RouteReason::AmbiguousClaimPrefix { .. }
            | RouteReason::NoReuseRequest
            | RouteReason::InterleavedUnattributedPrefix { .. } => {
                Some(P::RouteCostPlacementReuseSameClaim)
            }
            RouteReason::ServedElsewhere { .. }
            | RouteReason::PlacementAlreadyCached { .. }
            | RouteReason::EarlierUnattributedPrefix { .. }
            | RouteReason::RouteCostMissing { .. }
            | RouteReason::RouteCostDoesNotCoverClaim { .. }
            | RouteReason::ReuseMissed { .. } => None,
        }
    }
}

/// Where a claim's placement or reuse happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutedRequest {
    pub request_id: String,
    pub worker_id: String,
    /// `None` when the worker map does not name the worker.
    pub cache_namespace: Option<String>,
    /// The chosen worker's device overlap, in blocks, at the decision.
    pub device_overlap_blocks: Option<u32>,
    pub logit: Option<f64>,
    pub num_cached_tokens: u32,
}

/// One obligation or precondition and whether it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held<T> {
    pub name: T,
    pub held: bool,
}

/// The verdict for one registered claim.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimVerdict {
    pub claim_id: String,
    /// Tokens the predicate needs (whole blocks).
    pub required_tokens: Option<u32>,
    pub placement: Option<RoutedRequest>,
    pub reuse: Option<RoutedRequest>,
    pub preconditions: Vec<Held<RoutePrecondition>>,
    pub obligations: Vec<Held<RouteObligation>>,
    pub reasons: Vec<RouteReason>,
    /// Every precondition and obligation held.
    pub pass: bool,
}

/// A request that carries no claim: what the router did, listed so a reader sees that
/// overlap without a claim supported nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Unattributed {
    pub request_id: String,
    pub worker_id: String,
    pub device_overlap_blocks: Option<u32>,
    pub num_cached_tokens: u32,
}

/// The routing gate's document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteReport {
    pub schema_version: u32,
    pub kind: String,
    pub depth: String,
    /// The trace, as named on the command line (relative to where it ran).
    pub trace: String,
    /// The registry, as resolved from the trace's folder.
    pub registry: String,
    pub router: String,
    pub engine: String,
    /// The runtime identity of the registry's cache (engine, patch, and what ran
    /// with it): the document anchors only a descriptor with exactly this identity.
    #[serde(default)]
    pub runtime: Option<kvlower_join::registry::RuntimeIdentity>,
    pub requests: usize,
    /// A precondition holds for the document when it held for every registered claim.
    pub preconditions: Vec<Held<RoutePrecondition>>,
    /// All three obligations when every registered claim passed; none otherwise.
    pub witnesses: Vec<RouteObligation>,
    pub claims: Vec<ClaimVerdict>,
    pub unattributed_requests: Vec<Unattributed>,
    /// Every registered claim passed.
    pub pass: bool,
}

/// Whether a JSON value looks like a routing gate document (recognised by content).
pub fn is_route_report(value: &serde_json::Value) -> bool {
    value.get("kind").and_then(serde_json::Value::as_str) == Some(REPORT_KIND)
}
