//! The ResidentClaim lowering model and its fail-closed judgment.
//!
//! This crate is pure: it reads no files, touches no network and prints
//! nothing. Inputs arrive as typed values ([`catalog::Catalog`],
//! [`descriptor::Descriptor`]); the world outside (does an anchored file exist?)
//! is asked through [`environment::Environment`]. Outputs are values that carry
//! their reasons ([`judgment::Judgment`]).
//!
//! Fail-closed is the design rule: a missing, unanchored, ambiguous or
//! mis-scoped input can only remove a candidate from the judgment, never add one.
//!
//! The model is described in full, with the paper section each part comes from,
//! in `docs/model.md` at the repository root; the trace gate in
//! `docs/trace-format.md`; the telemetry join in `docs/join.md`.
//!
//! # Glossary
//!
//! - **ResidentClaim** — an accepted responsibility to keep a named piece of
//!   future KV-cache state reusable (paper §1, §3).
//! - **Obligation** ([`Obligation`]) — one of nineteen things a runtime must
//!   supply for a mode, each blocking one false positive (paper Table 1). Each has
//!   a short **code** ([`Obligation::code`]): I claim identity, A explicit
//!   acceptance, P materialization predicate, F footprint accounting, L ordered
//!   lifecycle events, M claim-materialized event, D demoted before loss,
//!   E expired boundary, R offload restorability, RF restoration-failure outcome,
//!   V victim exclusion, X explicit conflict action, B blocking claim ids, H harm
//!   attribution, T claim-scoped telemetry, Pr priority influence, and kvlower's
//!   RC route cost, PL placement, RR reuse-routing attribution. X, V, B, RF, D, E
//!   and H are *enforcement* ([`Obligation::is_enforcement`]): telemetry can never
//!   supply them.
//! - **Mode** ([`Mode`]) — one of seven kinds of claim (`best_effort` …
//!   `routed_reuse`).
//! - **O\[m\]** — the obligation bundle of mode `m`: every obligation it needs
//!   ([`Catalog::bundle`], data in `modes/modes.yaml`).
//! - **Depth** ([`Depth`]) — a rung of the adapter ladder `none < telemetry_join
//!   < claim_registry < storage_restorability < routing_hook < scheduler_hook <
//!   allocator_hook < backend_patch` (paper Table 4). A row at depth `a` may use
//!   native evidence and every adapter at a depth ≤ `a`; each depth may supply
//!   only some obligations, and only with its **preconditions** ([`Precondition`],
//!   its trust boundary; the nine of paper Table 5 for `telemetry_join`) anchored.
//! - **Anchor** ([`Anchor`]) — where a piece of evidence can be checked: a paper
//!   section, a public source file at a commit, a dated docs page, or a file in
//!   this repository. Trace-scoped evidence also needs `preserves_order` and
//!   `preserves_claim_scope`. An anchor counts for a use when [`anchor_counts`]
//!   finds no defect (the [`Environment`] reports facts about repository files).
//! - **Grade** ([`Grade`]) — a positive row is *verified* when every anchor it
//!   rests on was re-run by `kvlower check` from files committed here (a trace
//!   re-gated, a join document re-joined), *cited* when some anchor is the paper,
//!   a public source or a docs page. Whether an anchor counts for a use is one
//!   function, [`anchor_counts`].
//! - **Lower(d, a, E, m)** — holds when every obligation of O\[m\] is supplied by
//!   some evidence item of descriptor `d` (native, or an adapter at depth ≤ `a`)
//!   that is `supported`, anchored and allowed at its depth, and every atom the
//!   mode requires is in the anchored atoms `E` (paper §4; [`judge`]).
//! - **Label** ([`Label`]) — `native_sound` (Lower from native evidence alone),
//!   `sound_with_adapter` (Lower with adapter or patch evidence), `rejected`
//!   (something offered as the mode is forbidden or lacks its enforcement),
//!   `approximate` (signals only), `unknown` (paper Table 3). A positive adapter
//!   row also has a **subtype** ([`Subtype`]).
//! - **Atom** ([`Atom`]) — an observed fact a mode needs beyond obligations
//!   (e.g. the soft-priority pressure controls); counts only anchored to a run.
//! - **Signal** ([`Signal`]) — a primitive that makes a mode plausible; it never
//!   satisfies an obligation (fail-closed rule 1).
//! - **Witness paths A, B, C** — the event sequences of the patched-vLLM
//!   connector the trace gate accepts (paper §7): A, a claim offloaded and
//!   restored before reuse (`connector_observation`); B, a controlled same-claim
//!   restore failure that becomes a claim-scoped refusal naming the claim in
//!   `blocking_claim_ids` (`connector_failure_outcome`); C, with several claims,
//!   failure and refusal attributed to the target claim only
//!   (`multi_claim_attribution`). Which obligations each may witness is the
//!   catalog's `trace_gates`.
//! - **Fail-closed rules** — the seven rules of paper Table 2; see
//!   `docs/model.md` for where each is enforced and tested.

pub mod anchor_form;
pub mod anchoring;
pub mod baseline;
pub mod catalog;
pub mod catalog_doc;
pub mod descriptor;
pub mod environment;
pub mod identity;
pub mod judgment;
pub mod matrix;
pub mod text;
pub mod vocab;

pub use anchoring::{AnchorUse, Grade, RepoFile, anchor_counts};
pub use catalog::{Catalog, CatalogDoc};
pub use descriptor::{Anchor, AnchorKind, Descriptor};
pub use environment::Environment;
pub use judgment::{Judgment, judge, row_depths};
/// The name-table macro every closed vocabulary is declared with (it lives in the leaf
/// crate `kvlower-codes`, beside the diagnostic codes it also declares).
pub use kvlower_codes::names;
pub use vocab::{
    Atom, Depth, Label, Mode, Obligation, Precondition, Scope, Signal, Status, Subtype,
};
