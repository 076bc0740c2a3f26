//! Input that cannot be judged at all: a trace that is not a routing trace, or a registry
//! that cannot be read. A claim the gate cannot attribute is *not* an error (it fails,
//! with reasons); these are for files that are not what they say.

use std::path::PathBuf;

use kvlower_codes::text::escape_control;
use kvlower_codes::{Code, Finding};

/// Why the routing gate could not run. Every variant names the file, a stable code,
/// what was expected and a hint.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// Refused before or while reading (missing, not a regular file, over its cap).
    #[error("{path}: {message}")]
    Refused {
        path: PathBuf,
        message: String,
        /// How to fix this refusal (it differs for a missing file, a FIFO, a cap).
        hint: &'static str,
    },
    /// Not JSON, or JSON of the wrong shape: located at line:col (and a JSON path).
    #[error("{path}:{line}:{column}: {json_path}{message}")]
    Malformed {
        path: PathBuf,
        line: usize,
        column: usize,
        json_path: String,
        message: String,
    },
    /// Well-formed JSON whose values contradict the format (located by JSON path).
    #[error("{path}: {json_path}: {message}")]
    Invalid {
        path: PathBuf,
        json_path: String,
        message: String,
        expected: &'static str,
    },
    /// The claim registry the trace names cannot be read (the join's own error).
    #[error("{0}")]
    Registry(#[from] kvlower_join::JoinError),
}

impl RouteError {
    /// A stable code per kind of failure (documented in docs/routing-trace.md). A
    /// registry the join could not read at all is `route-registry-refused` (an unread
    /// input, exit 2); one it read and found malformed `route-registry-unreadable`
    /// (exit 1). The exit follows from the code alone ([`Code::is_unread_input`]).
    pub fn code(&self) -> Code {
        match self {
            RouteError::Refused { .. } => Code::RouteTraceRefused,
            RouteError::Malformed { .. } => Code::RouteTraceMalformed,
            RouteError::Invalid { .. } => Code::RouteTraceInvalid,
            RouteError::Registry(e) if e.code().is_unread_input() => Code::RouteRegistryRefused,
            RouteError::Registry(_) => Code::RouteRegistryUnreadable,
        }
    }

    /// The coded, located finding of this error: the file (control characters
    /// escaped), line:column or JSON path, and a hint that says what was expected.
    pub fn finding(&self) -> Finding {
        let shown = |p: &std::path::Path| escape_control(&p.display().to_string()).into_owned();
        let code = self.code();
        let mut f = match self {
            RouteError::Refused { path, message, .. } => {
                Finding::new(code, shown(path), message.clone())
            }
            RouteError::Malformed {
                path,
                line,
                column,
                json_path,
                message,
            } => Finding::new(code, shown(path), message.clone())
                .at(*line, *column)
                .at_path(json_path.clone()),
            RouteError::Invalid {
                path,
                json_path,
                message,
                ..
            } => Finding::new(code, shown(path), message.clone()).at_path(json_path.clone()),
            RouteError::Registry(inner) => Finding::new(code, "", inner.to_string()),
        };
        f.hint = Some(format!("expected {}; {}", self.expected(), self.hint()));
        f
    }

    /// What the reader expected at that place.
    pub fn expected(&self) -> &'static str {
        match self {
            RouteError::Refused { .. } => "a regular file inside its size cap",
            RouteError::Malformed { .. } => {
                "a routing trace: one JSON object as docs/routing-trace.md describes"
            }
            RouteError::Invalid { expected, .. } => expected,
            RouteError::Registry(_) => "a kvlower claim registry (docs/join.md)",
        }
    }

    /// How to fix it.
    pub fn hint(&self) -> &'static str {
        match self {
            RouteError::Refused { hint, .. } => hint,
            RouteError::Malformed { .. } => {
                "regenerate the trace with scripts/kvlower_scripts/live_dynamo/run.sh, or fix the field named above (unknown fields are refused)"
            }
            RouteError::Invalid { .. } => "fix the value at the JSON path above",
            RouteError::Registry(_) => {
                "the trace's `registry` is relative to the trace's folder; fix or regenerate that registry"
            }
        }
    }
}

/// The hint for a file [`kvlower_fs`] refused, per reason: a missing file wants its
/// path checked, a FIFO or directory wants the file itself, a large one the cap.
pub fn refusal_hint(refusal: &kvlower_fs::Refusal) -> &'static str {
    use kvlower_fs::Refusal;
    match refusal {
        Refusal::Missing { .. } => {
            "check the path: --trace names the routing trace file (docs/routing-trace.md)"
        }
        Refusal::PermissionDenied { .. } => "check the file's permissions",
        Refusal::OutsideRoot { .. } => {
            "keep the file inside its folder; a link must not point outside it"
        }
        Refusal::NotRegular { .. } | Refusal::PseudoFile { .. } | Refusal::WouldBlock { .. } => {
            "name the trace file itself (not a directory, FIFO or device; docs/files.md)"
        }
        Refusal::TooLarge { .. } => "a routing trace must stay under its cap (docs/files.md)",
        Refusal::Io { .. } => "check that the file is readable",
    }
}
