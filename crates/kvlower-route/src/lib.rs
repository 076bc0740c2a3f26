//! The routing gate (`kvlower route`): the `routing_hook` adapter depth of the model
//! (paper §5 Table 4, "Deeper adapter trust boundaries"; docs/model.md).
//!
//! It reads a recorded routing trace (docs/routing-trace.md) — per request the accepted
//! claim it carries, the router's decision with its per-worker overlap and cost, the
//! worker that served it and the engine's own prefix-cache hit — and the kvlower claim
//! registry the trace names, and judges per claim whether the route cost, the placement
//! and the later reuse are attributed to that claim on one fixed worker cache namespace.
//!
//! The catalog's rule is kept in code: a KV-overlap score or a worker choice alone is not
//! routed reuse (the paper's rejected false positive for `routed_reuse`, paper §3 Table 1).
//! A request that carries no accepted claim never supports any obligation, whatever its
//! overlap.
//!
//! Layout: [`trace`] parses the trace into typed values (coded errors with line:col);
//! [`judge`] is pure (no I/O); [`document`] is the evidence document; [`load`] is the only
//! module that reads files (bounded, through `kvlower-fs` and `kvlower-join`).

pub mod document;
pub mod error;
pub mod judge;
pub mod load;
pub mod trace;

pub use document::{RouteReport, is_route_report};
pub use error::RouteError;
pub use judge::{RegisteredClaim, judge};
pub use load::{evaluate_path, evaluate_with, registry_path};
pub use trace::{DecidedAt, RouteTrace, parse_trace};
