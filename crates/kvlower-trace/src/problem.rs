//! What is wrong with a trace: a [`Problem`], and a [`LocatedProblem`] (a problem at a
//! line of the trace, or of the trace as a whole).
//!
//! The gate keeps this compact shape while it reads, not a [`Finding`]: a located problem
//! is a line number, a byte column when the parser knows one, and a problem, without the trace's name, its severity or a source
//! line, so a trace with millions of malformed lines, judged on many threads, holds
//! little per line, and the campaign counts are kept as the traces stream. Each problem
//! has its code from the one table ([`Problem::code`]) and becomes a [`Finding`] for
//! reporting ([`LocatedProblem::finding`]), here, not in the CLI.

use kvlower_codes::{Code, Finding};
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

/// A problem at a line: where (1-based line, `None` for the trace as a whole; the byte
/// column, when the parser can tell one) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocatedProblem {
    /// 1-based line number in the trace; `None` when the finding is about the whole trace.
    pub line: Option<u64>,
    /// 1-based column, in bytes, of the offending byte in its line (leading whitespace
    /// counted, as an editor counts it); `None` when the problem has no byte position (a
    /// missing field, a sequence that goes back) or no line. A line is at most
    /// [`crate::MAX_LINE_BYTES`] long, so `u32` holds it.
    pub column: Option<u32>,
    /// What is wrong.
    pub problem: Problem,
}

impl Problem {
    /// The stable code of this problem: the file-level refusals share the codes
    /// `check` uses for them (`not-a-regular-file`, `unreadable-file`,
    /// `file-too-large`); anything wrong inside a trace is `malformed-trace`.
    pub fn code(&self) -> Code {
        match self {
            Problem::NotRegularFile(_) => Code::NotARegularFile,
            Problem::Read(_) => Code::UnreadableFile,
            Problem::TraceTooLarge(_) => Code::FileTooLarge,
            _ => Code::MalformedTrace,
        }
    }
}

impl LocatedProblem {
    /// The human-readable message (without the location).
    pub fn message(&self) -> String {
        self.problem.to_string()
    }

    /// The code of its problem ([`Problem::code`]).
    pub fn code(&self) -> Code {
        self.problem.code()
    }

    /// The finding for this diagnostic of the trace shown as `trace`: the code of its
    /// problem, the message, and the line and byte column when it is about one line (the
    /// line alone, [`Finding::at_line`], when the problem has no byte position).
    pub fn finding(&self, trace: &str) -> Finding {
        let finding = Finding::new(self.code(), trace, self.message());
        let column = self.column.and_then(|c| usize::try_from(c).ok());
        match (self.line.and_then(|l| usize::try_from(l).ok()), column) {
            (Some(line), Some(column)) => finding.at(line, column),
            (Some(line), None) => finding.at_line(line),
            (None, _) => finding,
        }
    }
}

impl Serialize for LocatedProblem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("LocatedProblem", 2)?;
        st.serialize_field("line", &self.line)?;
        st.serialize_field("message", &self.message())?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gate's diagnostics get their codes here, not in the CLI (issue 38): a file
    /// the gate could not read is an unread input (exit 2); anything wrong inside a
    /// trace is `malformed-trace` (exit 1). The finding keeps the line.
    #[test]
    fn a_problem_has_its_code_and_becomes_a_finding() {
        let unread = [
            Problem::NotRegularFile("a FIFO"),
            Problem::Read("gone".into()),
            Problem::TraceTooLarge(4),
        ];
        for p in unread {
            assert!(p.code().is_unread_input(), "{p}");
        }
        let d = LocatedProblem {
            line: Some(3),
            column: None,
            problem: Problem::MissingEvent,
        };
        assert_eq!(d.code(), Code::MalformedTrace);
        assert!(!d.code().is_unread_input());
        let f = d.finding("t.jsonl");
        assert_eq!(
            (f.file.as_str(), f.line(), f.column(), f.message.as_str()),
            ("t.jsonl", Some(3), None, "missing `event`")
        );
        // A problem with a byte position keeps its column; one about the whole trace
        // has no location at all.
        let at = LocatedProblem {
            column: Some(7),
            ..d.clone()
        };
        assert_eq!(at.finding("t.jsonl").location, Some((3, 7)));
        assert_eq!(at.finding("t.jsonl").column(), Some(7));
        let whole = LocatedProblem {
            line: None,
            column: None,
            problem: Problem::EmptyTrace,
        };
        assert_eq!(whole.finding("t.jsonl").location, None);
    }
}
