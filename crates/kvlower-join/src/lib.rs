//! Telemetry-join adapter: reconstructs claim materialization from runtime KV event streams.
//!
//! # Trust boundary
//!
//! A join **reconstructs observations; it never creates enforcement.** Given a claim
//! registry written before the run and a runtime's own KV-cache events (vLLM, SGLang,
//! TensorRT-LLM), it says, for each claim, whether its `leading_prefix_at_least(k)`
//! predicate held at a named observation point, at which cache tier, and at which event
//! it was lost. That is what the `telemetry_join` adapter depth may supply (paper §5,
//! Tables 4 and 5; `docs/join.md`: I from the external registry, P, M, T, and Pr only with anchored pressure controls).
//! Nothing here can say that a runtime *protected*, *refused*, *demoted* or *restored*
//! anything: the runtime did what it did, and the join only reads the record.
//!
//! Because the join is part of the trusted computing base of any row it supports, it
//! fails closed. Every one of Table 5's nine preconditions that a claim does not meet is
//! a typed [`Reason`], and any reason makes the claim `insufficient_evidence`, never
//! `materialized`: post-hoc claim naming, duplicate block owners, cache-identity
//! mismatch, missing fields, sequence gaps, streams that start mid-way.
//!
//! # Layout
//!
//! - [`ids`]: the identifiers every other module shares (a leaf).
//! - [`identity_problem`]: why a capture header does not back the registry's runtime
//!   identity (a leaf: message, code and hint of each refusal in one place).
//! - [`reason`]: Table 5's preconditions and the typed reasons a claim misses one.
//! - [`registry`]: the pre-registered claims (YAML, read through `kvlower_yaml`).
//! - [`events`]: one JSON line of a runtime's event stream → typed events.
//! - `engine`: the replay and the verdicts (streaming: memory follows live blocks),
//!   one module per phase of an event.
//! - [`input`]: the input files, opened through the one safe read, and the drivers
//!   that replay JSON Lines or capture files into the engine.
//! - [`document`]: the JSON evidence document (its human rendering is the CLI's).
//! - [`pressure`]: soft_priority pressure controls over many joined trials.
//!
//! The crate never prints; files are read only through the explicit path functions
//! ([`join_paths`], [`Registry::load`], [`pressure::run_controls`]) or a reader
//! ([`join_reader`]).

pub(crate) mod blocks;
pub mod document;
pub(crate) mod engine;
pub mod error;
pub mod events;
pub mod identity_problem;
pub mod ids;
pub mod input;
pub mod msgpack;
pub mod pressure;
pub mod reason;
pub mod registry;
pub(crate) mod typed;

use std::io::BufReader;
use std::path::Path;

pub use document::{
    Change, ClaimResult, EventRef, JoinReport, Precondition, Reason, StreamSummary, TierCoverage,
    Transition, Verdict,
};
pub use error::JoinError;
pub use events::Tier;
pub use input::join_reader;
pub use registry::{
    AdapterIdentity, CacheIdentity, Claim, ClaimId, EventFormat, HashDomain, HashEncoding,
    ObjectId, Predicate, Registry, RuntimeIdentity, StreamPoint,
};

/// Loads the registry at `registry`, streams the events at `events`, and joins them.
///
/// Both paths are recorded in the report exactly as given (relative stays relative).
pub fn join_paths(
    registry: &Path,
    events: &Path,
    format: EventFormat,
) -> Result<JoinReport, JoinError> {
    let reg = Registry::load(registry)?;
    let file = input::open_events(events)?;
    join_reader(&reg, registry, BufReader::new(file), events, format)
}
