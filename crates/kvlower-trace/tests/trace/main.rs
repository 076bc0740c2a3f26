//! The trace gate's tests, one binary: scenario verdicts and one guard per named
//! requirement (`gates`, residency gates in `gates/residency.rs`), malformed input
//! (`malformed`), generated traces (`fuzz`, property tests; `KVLOWER_DEEP_TESTS=1` for
//! the deep tier), the committed scenario fixtures (`fixtures`), and the pooled reader
//! against the one-thread one (`pooled`). One binary links once and shares the builder
//! in `common`.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns"
)]

mod common;
mod fixtures;
mod fuzz;
mod gates;
mod malformed;
mod pooled;
mod restore_content;
