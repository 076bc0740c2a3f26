//! The routing trace (docs/routing-trace.md), parsed into typed values before anything is
//! judged. Shape errors (not JSON, a missing or unknown field, a wrong type) carry line,
//! column and JSON path; value errors (a second request with the same id, a request out
//! of decision order, a token count that contradicts the tokens) carry the JSON path.
//!
//! What is *not* an error here is what the judge fails closed on: a worker id mapped to
//! two cache namespaces, a worker the map does not name, a claim the registry does not
//! hold. Those are facts about the run, so they become reasons on the claims they touch.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroU32;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

use crate::error::RouteError;

/// The only schema version this kvlower reads.
pub const SCHEMA_VERSION: u32 = 1;
/// The value of the trace's `kind` field.
pub const KIND: &str = "kvlower-routing-trace";

/// A Dynamo worker id (a 64-bit connection id; JSON numbers beyond 2^53 are kept exact).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkerId(pub u64);

impl std::fmt::Display for WorkerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One entry of the worker → engine cache namespace map.
#[derive(Debug, Clone, PartialEq)]
pub struct Worker {
    pub id: WorkerId,
    pub engine: String,
    pub cache_namespace: String,
    /// The engine's KV-event capture, relative to the trace's folder (informational:
    /// the capture is judged by `kvlower join`, not by this gate).
    pub capture: Option<String>,
}

/// The router's overlap for one worker, in blocks per tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    pub worker: WorkerId,
    pub dp_rank: u32,
    pub device_blocks: u32,
    pub host_pinned_blocks: u32,
    pub disk_blocks: u32,
}

/// The router's decision for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub worker: WorkerId,
    pub dp_rank: u32,
    /// Overlapping blocks `best_worker` reported for its choice.
    pub overlap_blocks: u32,
    /// The router's logit (cost) for its choice, when it logged one.
    pub logit: Option<f64>,
    /// Per-worker overlap (`get_overlap_scores`).
    pub overlap: Vec<Overlap>,
}

/// What the serving worker itself reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    pub worker: WorkerId,
    /// The engine's prefix-cache hit for this request (`num_cached_tokens`).
    pub num_cached_tokens: u32,
}

/// When the router was asked, on one of the two clocks a registry's `registered_before`
/// can be written in (docs/routing-trace.md, "The trace"): a decision is compared only with
/// a registration on the same clock.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DecidedAt {
    /// Seconds since the epoch: the clock of a `{timestamp: T}` registration.
    Timestamp(f64),
    /// `{"event_index": K}`: the chosen worker's engine had published K events (the first
    /// K of its capture's stream, counted as the join counts them) when the router was
    /// asked. The clock of an `{event_index: N}` registration, and one that depends only on
    /// what the engine did, so a live run's trace reproduces (docs/conformance.md,
    /// "Reproduction").
    EventIndex(u64),
}

impl DecidedAt {
    fn clock(self) -> &'static str {
        match self {
            DecidedAt::Timestamp(_) => "a timestamp",
            DecidedAt::EventIndex(_) => "an event index",
        }
    }
}

/// One routed request, in decision order.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub id: String,
    /// The accepted claim the request carries (`None`: it carries none).
    pub claim: Option<String>,
    pub tokens: Vec<u32>,
    pub decided_at: DecidedAt,
    pub decision: Decision,
    pub served: Served,
}

/// A parsed routing trace.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteTrace {
    pub router: String,
    pub engine: String,
    pub block_size: NonZeroU32,
    /// The claim registry, relative to the trace's folder.
    pub registry: String,
    pub workers: Vec<Worker>,
    pub requests: Vec<Request>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrace {
    schema_version: u32,
    kind: String,
    router: String,
    engine: String,
    block_size: u32,
    registry: String,
    workers: Vec<RawWorker>,
    requests: Vec<RawRequest>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorker {
    worker_id: u64,
    engine: String,
    cache_namespace: String,
    #[serde(default)]
    capture: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    request_id: String,
    claim_id: Option<String>,
    token_ids: Vec<u32>,
    decided_at: RawDecidedAt,
    decision: RawDecision,
    served: RawServed,
}

/// `decided_at` as written: a JSON number (seconds) or `{"event_index": K}`, nothing else
/// (a hand-written visitor, so a wrong shape is a located error naming both forms).
struct RawDecidedAt(DecidedAt);

impl<'de> Deserialize<'de> for RawDecidedAt {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawDecidedAt;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("seconds since the epoch (a number) or {\"event_index\": N}")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<RawDecidedAt, E> {
                Ok(RawDecidedAt(DecidedAt::Timestamp(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawDecidedAt, E> {
                // A whole number of seconds; precision beyond 2^53 is a timestamp's own.
                #[expect(
                    clippy::cast_precision_loss,
                    reason = "seconds since the epoch, read as JSON reads a number"
                )]
                Ok(RawDecidedAt(DecidedAt::Timestamp(v as f64)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawDecidedAt, E> {
                #[expect(
                    clippy::cast_precision_loss,
                    reason = "seconds since the epoch, read as JSON reads a number"
                )]
                Ok(RawDecidedAt(DecidedAt::Timestamp(v as f64)))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<RawDecidedAt, A::Error> {
                let mut index = None;
                while let Some(key) = m.next_key::<String>()? {
                    if key != "event_index" {
                        return Err(de::Error::unknown_field(&key, &["event_index"]));
                    }
                    if index.is_some() {
                        return Err(de::Error::duplicate_field("event_index"));
                    }
                    index = Some(m.next_value::<u64>()?);
                }
                index
                    .map(|k| RawDecidedAt(DecidedAt::EventIndex(k)))
                    .ok_or_else(|| de::Error::missing_field("event_index"))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDecision {
    worker_id: u64,
    dp_rank: u32,
    overlap_blocks: u32,
    logit: Option<f64>,
    overlap: Vec<RawOverlap>,
    /// Recorded for the reader (the router's prefill/decode load estimate); not judged.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "read by serde for its shape; the value itself is never used"
    )]
    potential_loads: Vec<RawLoad>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOverlap {
    worker_id: u64,
    dp_rank: u32,
    device_blocks: u32,
    host_pinned_blocks: u32,
    disk_blocks: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[expect(
    dead_code,
    reason = "read by serde for its shape; the value itself is never used"
)]
struct RawLoad {
    worker_id: u64,
    dp_rank: u32,
    potential_prefill_tokens: u64,
    potential_decode_blocks: u64,
    active_requests: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServed {
    worker_id: u64,
    num_cached_tokens: u32,
    prompt_tokens: u32,
}

/// Parses trace text; `path` names it in errors.
pub fn parse_trace(text: &str, path: &Path) -> Result<RouteTrace, RouteError> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let raw: RawTrace = serde_path_to_error::deserialize(&mut *de).map_err(|e| {
        let inner = e.inner();
        let json_path = e.path().to_string();
        RouteError::Malformed {
            path: path.to_path_buf(),
            line: inner.line(),
            column: inner.column(),
            json_path: if json_path == "." || json_path == "?" {
                String::new()
            } else {
                format!("$.{json_path}: ")
            },
            message: inner.to_string(),
        }
    })?;
    // Only JSON whitespace may follow the document (what `serde_json::from_str` checks):
    // a form feed or any other trailing byte is malformed.
    de.end().map_err(|e| RouteError::Malformed {
        path: path.to_path_buf(),
        line: e.line(),
        column: e.column(),
        json_path: String::new(),
        message: e.to_string(),
    })?;
    let invalid =
        |json_path: String, message: String, expected: &'static str| RouteError::Invalid {
            path: path.to_path_buf(),
            json_path,
            message,
            expected,
        };
    if raw.schema_version != SCHEMA_VERSION {
        return Err(invalid(
            "$.schema_version".into(),
            format!(
                "unsupported schema_version {} (this kvlower reads {SCHEMA_VERSION})",
                raw.schema_version
            ),
            "schema_version: 1",
        ));
    }
    if raw.kind != KIND {
        return Err(invalid(
            "$.kind".into(),
            format!("kind is {:?}", raw.kind),
            "kind: \"kvlower-routing-trace\"",
        ));
    }
    let Some(block_size) = NonZeroU32::new(raw.block_size) else {
        return Err(invalid(
            "$.block_size".into(),
            "block_size is 0".into(),
            "a positive number of tokens per KV block",
        ));
    };
    let workers = raw
        .workers
        .into_iter()
        .map(|w| Worker {
            id: WorkerId(w.worker_id),
            engine: w.engine,
            cache_namespace: w.cache_namespace,
            capture: w.capture,
        })
        .collect();
    let mut requests: Vec<Request> = Vec::with_capacity(raw.requests.len());
    // Request ids seen so far (a set, not a scan of `requests`: linear in the trace).
    let mut ids: HashSet<String> = HashSet::with_capacity(raw.requests.len());
    // The last event index decided at per chosen worker (a map: linear in the trace).
    let mut last_index: HashMap<u64, u64> = HashMap::new();
    for (i, r) in raw.requests.into_iter().enumerate() {
        let at = |field: &str| format!("$.requests[{i}].{field}");
        if !ids.insert(r.request_id.clone()) {
            return Err(invalid(
                at("request_id"),
                format!("request id {:?} appears twice", r.request_id),
                "a request id unique in the trace",
            ));
        }
        let decided_at = r.decided_at.0;
        if let Some(first) = requests.first()
            && std::mem::discriminant(&first.decided_at) != std::mem::discriminant(&decided_at)
        {
            // Two clocks in one trace cannot be ordered against each other (nor the
            // registrations against both): refused, never judged on either.
            return Err(invalid(
                at("decided_at"),
                format!(
                    "decided_at is {} but $.requests[0].decided_at is {}",
                    decided_at.clock(),
                    first.decided_at.clock()
                ),
                "one clock for every decision: all numbers (seconds) or all {\"event_index\": N}",
            ));
        }
        let in_order = match decided_at {
            DecidedAt::Timestamp(t) => {
                if !t.is_finite() {
                    return Err(invalid(
                        at("decided_at"),
                        "decided_at is not a finite number".into(),
                        "seconds since the epoch",
                    ));
                }
                !matches!(requests.last(), Some(Request { decided_at: DecidedAt::Timestamp(q), .. }) if *q > t)
            }
            // An engine's stream only grows: a later decision for the same worker saw at
            // least as many of its events. Decisions for two workers count two streams
            // and are not ordered against each other.
            DecidedAt::EventIndex(k) => last_index
                .insert(r.decision.worker_id, k)
                .is_none_or(|q| q <= k),
        };
        if !in_order {
            return Err(invalid(
                at("decided_at"),
                "requests are not in decision order".into(),
                "requests listed in the order the router decided them (decided_at non-decreasing: \
                 timestamps across the trace, event indices per chosen worker)",
            ));
        }
        if usize::try_from(r.served.prompt_tokens).ok() != Some(r.token_ids.len()) {
            return Err(invalid(
                at("served.prompt_tokens"),
                format!(
                    "prompt_tokens {} but token_ids has {}",
                    r.served.prompt_tokens,
                    r.token_ids.len()
                ),
                "the number of token_ids the worker ran",
            ));
        }
        if r.decision.logit.is_some_and(|l| !l.is_finite()) {
            return Err(invalid(
                at("decision.logit"),
                "logit is not a finite number".into(),
                "the router's logit, or null",
            ));
        }
        requests.push(Request {
            id: r.request_id,
            claim: r.claim_id,
            tokens: r.token_ids,
            decided_at,
            decision: Decision {
                worker: WorkerId(r.decision.worker_id),
                dp_rank: r.decision.dp_rank,
                overlap_blocks: r.decision.overlap_blocks,
                logit: r.decision.logit,
                overlap: r
                    .decision
                    .overlap
                    .into_iter()
                    .map(|o| Overlap {
                        worker: WorkerId(o.worker_id),
                        dp_rank: o.dp_rank,
                        device_blocks: o.device_blocks,
                        host_pinned_blocks: o.host_pinned_blocks,
                        disk_blocks: o.disk_blocks,
                    })
                    .collect(),
            },
            served: Served {
                worker: WorkerId(r.served.worker_id),
                num_cached_tokens: r.served.num_cached_tokens,
            },
        });
    }
    Ok(RouteTrace {
        router: raw.router,
        engine: raw.engine,
        block_size,
        registry: raw.registry,
        workers,
        requests,
    })
}
