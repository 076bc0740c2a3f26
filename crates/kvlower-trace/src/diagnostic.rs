//! Malformed-input findings, each tied to a line of the trace.

use serde::{Serialize, Serializer};

use crate::family::TraceFamily;

/// What is wrong with a line (or with the trace as a whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("not a JSON object (found {0})")]
    NotObject(&'static str),
    #[error("missing `event`")]
    MissingEvent,
    #[error("{0}")]
    FieldType(String),
    #[error("missing `event_sequence`")]
    MissingSequence,
    #[error("event_sequence {found} does not increase (previous {previous})")]
    SequenceNotIncreasing { found: u64, previous: u64 },
    #[error("event_sequence 0 in a reference-family trace (its sequence is 1-based)")]
    ReferenceSequenceZero,
    #[error("unsupported schema_version {0} (expected 1)")]
    SchemaVersion(u64),
    #[error(
        "claim_id `{claim_id}` differs from resident_claim_id `{resident_claim_id}` on one event"
    )]
    ClaimIdConflict {
        claim_id: String,
        resident_claim_id: String,
    },
    #[error(
        "ambiguous_claim_cache_identity: claim `{claim}` has a second `{field}`: `{second}` (first `{first}`)"
    )]
    AmbiguousIdentity {
        claim: String,
        field: &'static str,
        first: String,
        second: String,
    },
    #[error("a {found}-family event in a {trace}-family trace")]
    MixedFamily {
        found: TraceFamily,
        trace: TraceFamily,
    },
    #[error("line longer than {0} bytes")]
    LineTooLong(usize),
    #[error("more than 4294967295 events in one trace")]
    TooManyEvents,
    #[error("more than 4294967295 claims in one trace")]
    TooManyClaims,
    #[error(
        "cannot tell the trace family: no event carries schema_version+timestamp_ns, monotonic_ns/hook_scope, or a family-specific event name"
    )]
    UnknownFamily,
    #[error("trace has no events")]
    EmptyTrace,
    #[error("malformed trace header: {0}")]
    BadHeader(String),
    #[error("read error: {0}")]
    Read(String),
    #[error("trace longer than {0} bytes; the rest was not read (no gate of it can pass)")]
    TraceTooLarge(u64),
    #[error("not a regular file ({0}); refused without reading it")]
    NotRegularFile(&'static str),
    #[error("{0} more diagnostics not shown")]
    Suppressed(u64),
}

/// One finding: where (1-based line, `None` for the trace as a whole) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line number in the trace; `None` when the finding is about the whole trace.
    pub line: Option<u64>,
    /// What is wrong.
    pub problem: Problem,
}

impl Diagnostic {
    /// The human-readable message (without the location).
    pub fn message(&self) -> String {
        self.problem.to_string()
    }
}

impl Serialize for Diagnostic {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Diagnostic", 2)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("message", &self.message())?;
        st.end()
    }
}
