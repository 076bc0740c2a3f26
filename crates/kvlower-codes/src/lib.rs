//! kvlower's diagnostic codes and findings.
//!
//! Why a crate of its own: every subsystem (loading, the trace gate, the join, the
//! routing gate, capture) reports under one list of stable codes, documented once
//! (`kvlower codes`, `kvlower explain-code`, docs/diagnostic-codes.md), in one shape,
//! the [`Finding`]. It is a leaf: it depends on nothing of kvlower's (only on serde),
//! so every crate can report under it without pulling in the model or the loader.
//! Each crate converts its own errors into a finding beside those errors
//! (`kvlower_fs::finding` for file refusals, `kvlower_yaml::finding` for YAML
//! errors, the trace gate's, the join's, the routing gate's and capture's in theirs).
//!
//! - [`code_doc`]: the one table, a row per code (name, severity, unread-input, what,
//!   why, example, fix), from which [`Code`] is generated;
//! - [`diagnostic`]: the [`Finding`] and its [`Severity`];
//! - `locate` and `text`: where a finding is, and how much of its input it repeats;
//! - the `names!` macro every closed vocabulary of kvlower is declared with.

pub mod code_doc;
pub mod diagnostic;
pub mod locate;
mod names;
pub mod text;

pub use code_doc::{Code, CodeDoc};
pub use diagnostic::{Finding, Severity, SourceLine};
