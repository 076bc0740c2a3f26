//! kvlower's diagnostic codes and located diagnostics.
//!
//! Why a crate of its own: every subsystem (loading, the trace gate, the join, the
//! routing gate, capture) reports under one list of stable codes, documented once
//! (`kvlower codes`, `kvlower explain-code`, docs/diagnostic-codes.md). With the list
//! here, below all of them, each converts its own errors into it without depending
//! on the loader. It depends only on the model's name macro and on the two
//! infrastructure crates whose errors it locates: `kvlower-fs` (file refusals) and
//! `kvlower-yaml` (YAML errors).

pub mod code_doc;
pub mod diagnostic;

pub use code_doc::CodeDoc;
pub use diagnostic::{Code, Diagnostic, Severity};
