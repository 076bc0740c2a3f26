//! The ResidentClaim lowering model and its fail-closed judgment.
//!
//! This crate is pure: it reads no files, touches no network and prints
//! nothing. Inputs arrive as typed values ([`catalog::Catalog`],
//! [`descriptor::Descriptor`]); the world outside (does an anchored file exist?)
//! is asked through [`descriptor::Environment`]. Outputs are values that carry
//! their reasons ([`judgment::Judgment`]).
//!
//! Fail-closed is the design rule: a missing, unanchored, ambiguous or
//! mis-scoped input can only remove a candidate from the judgment, never add one.

pub mod anchoring;
pub mod catalog;
pub mod descriptor;
pub mod judgment;
pub mod matrix;
pub mod text;
pub mod vocab;

pub use anchoring::{AnchorUse, Grade, RepoFile, anchor_counts};
pub use catalog::{Catalog, CatalogDoc};
pub use descriptor::{Anchor, AnchorKind, Descriptor, Environment};
pub use judgment::{Judgment, judge, row_depths};
pub use vocab::{
    Atom, Depth, Label, Mode, Obligation, Precondition, Scope, Signal, Status, Subtype,
};
