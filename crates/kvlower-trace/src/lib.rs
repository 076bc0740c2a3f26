//! Streams runtime event traces (JSON Lines) and decides claim-scoped gate verdicts.
//!
//! The gate answers, fail-closed, whether a trace witnesses a ResidentClaim obligation:
//!
//! - connector family (patched vLLM connector/scheduler boundary): `connector_observation`
//!   (witness path A), `connector_failure_outcome` (path B, with its strict
//!   `ordered_failure_semantics`), `multi_claim_attribution` (path C, when a trace has
//!   several claims), plus the false-positive controls it recognised;
//!   In a trace with residency events, also `claim_protection`, `claim_demotion` and
//!   `claim_expiry` (protection, demotion and expiry of an accepted claim);
//! - reference family (reference lifecycle hook): `reference_lifecycle`.
//!
//! Requirement names are fixed, and each is explained in `docs/trace-format.md`. See [`names`].
//!
//! # How a trace is read
//! One line at a time from any [`BufRead`]: a line is parsed into a typed, borrowed event
//! (unknown keys skipped, no `serde_json::Value`), its envelope is checked (an `event`
//! name, a strictly increasing `event_sequence`, one family, agreeing claim ids), and it is
//! fed to its claim's state machine, which keeps only first-occurrence positions and flags.
//! Memory therefore grows with the number of claims, never with the number of events.
//!
//! # Fail-closed rules
//! - Every problem with a line becomes a [`LocatedProblem`] with its 1-based line number
//!   (and the 1-based byte column of the offending byte, when the parser can tell it).
//! - A diagnostic on a line tied to a claim taints that claim; one on a line that cannot be
//!   tied to any claim (not JSON, …) taints every claim of the trace. No gate of a tainted
//!   claim passes (`well_formed_trace` is then listed as missing).
//! - A claim whose identity fields take a second value fails every gate with
//!   `ambiguous_claim_cache_identity` and is reported as a diagnostic too.
//! - A row rejected as a control (see [`Control`]) always misses a named requirement of
//!   `connector_failure_outcome`.
//!
//! This crate does no I/O of its own beyond the reader it is given (files are opened by
//! kvlower's one safe read, `kvlower-fs`, before they reach it) and never prints.

use std::io::BufRead;
use std::num::NonZeroU32;
use std::ops::ControlFlow;

use kvlower_fs::line_reader::{End, Line};

mod campaign;
mod campaign_bind;
pub mod campaign_doc;
mod campaign_files;
mod campaign_problem;
mod caps;
mod connector;
mod evaluate;
mod event;
mod family;
mod header;
mod identity;
mod import_closure;
mod multi_claim;
pub mod names;
mod parse;
mod pipeline;
mod problem;
mod py_imports;
mod reference;
mod residency;
mod scan;
pub mod strict_json;
pub mod truth;
mod truth_slot;
mod verdict;

pub use campaign::CampaignSummary;
pub use campaign_problem::CampaignProblem;
pub use caps::{MAX_LINE_BYTES, MAX_TRACE_BYTES};
pub use evaluate::MAX_DIAGNOSTICS;
pub use family::TraceFamily;
pub use header::{HEADER_KEY, TraceComponent, recorded_runtime};
pub use names::{Control, Requirement, TraceGate};
pub use problem::{LocatedProblem, Problem};
pub use verdict::{ClaimVerdict, GateResult, TraceOutline, TraceReport, TraceTally};

/// A position in a trace: the 1-based ordinal of an accepted event.
pub(crate) type Pos = NonZeroU32;

/// Evaluates one trace read from `r`, streaming each claim's verdict to `on_verdict` as the
/// trace ends (claims in order of first appearance, the unclaimed row last) instead of
/// collecting them. Use this for traces with very many claims.
///
/// Read errors end the trace with a diagnostic; nothing here panics on any input.
pub fn evaluate_reader_each<R: BufRead>(
    name: &str,
    r: R,
    on_verdict: impl FnMut(ClaimVerdict),
) -> TraceOutline {
    evaluate_reader_bounded(name, r, MAX_TRACE_BYTES, on_verdict)
}

/// [`evaluate_reader_each`] reading at most `max_bytes` bytes: a longer input ends with a
/// [`Problem::TraceTooLarge`] diagnostic that touches every claim (none can pass).
pub fn evaluate_reader_bounded<R: BufRead>(
    name: &str,
    mut r: R,
    max_bytes: u64,
    mut on_verdict: impl FnMut(ClaimVerdict),
) -> TraceOutline {
    let mut evaluator = evaluate::TraceEvaluator::new(name);
    let mut line: u64 = 0;
    let read = kvlower_fs::line_reader::for_each_line(&mut r, MAX_LINE_BYTES, max_bytes, |l| {
        line = line.saturating_add(1);
        match l {
            Line::Text(bytes) => evaluator.push_line(line, Line::content(bytes)),
            Line::TooLong => evaluator.line_problem(line, Problem::LineTooLong(MAX_LINE_BYTES)),
        }
        ControlFlow::Continue(())
    });
    match read {
        // The callback never stops the reading.
        Ok(End::Complete | End::Stopped) => {}
        Ok(End::TooLarge) => {
            evaluator.line_problem(line.saturating_add(1), Problem::TraceTooLarge(max_bytes))
        }
        Err(e) => evaluator.line_problem(line.saturating_add(1), Problem::Read(e.to_string())),
    }
    evaluator.finish(&mut on_verdict)
}

/// [`evaluate_reader_bounded`] with the lines parsed on the threads of `pool` while the
/// previous lines are judged (see the `pipeline` module): the same verdicts, diagnostics
/// and outline, in the same order, for every input. With a pool of one thread it is the
/// single-threaded reader.
pub fn evaluate_reader_pooled<R: BufRead + Send>(
    name: &str,
    r: R,
    max_bytes: u64,
    pool: &rayon::ThreadPool,
    mut on_verdict: impl FnMut(ClaimVerdict),
) -> TraceOutline {
    if pool.current_num_threads() < 2 {
        return evaluate_reader_bounded(name, r, max_bytes, on_verdict);
    }
    pipeline::evaluate(name, r, max_bytes, pool, &mut on_verdict)
}

/// Evaluates one trace read from `r` and collects every claim's verdict.
pub fn evaluate_reader(name: &str, r: impl BufRead) -> TraceReport {
    let mut claims = Vec::new();
    let outline = evaluate_reader_each(name, r, |v| claims.push(v));
    TraceReport::from_outline(outline, claims)
}
