//! Input that cannot be read at all. A claim the join cannot judge is *not* an error
//! (it is `insufficient_evidence`); these are for files that are not what they say.

use std::path::{Path, PathBuf};

use kvlower_codes::text::escape_control;
use kvlower_codes::{Code, Finding};

use crate::identity_problem::IdentityProblem;

/// Why a join could not run. Every variant names the file, and the line when known.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// A file could not be opened or read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The registry (or pressure-controls file) is not valid YAML of the expected shape.
    #[error("{}{}: {}{message}", path.display(), fmt_loc(*location), fmt_yaml_path(yaml_path))]
    Registry {
        path: PathBuf,
        location: Option<(usize, usize)>,
        yaml_path: String,
        message: String,
    },
    /// A capture header that does not back the registry's runtime identity (red-team
    /// H1): reported on the registry's `cache_identity.runtime`, with the reason's own
    /// code and hint.
    #[error("{}: cache_identity.runtime: {problem}", path.display())]
    Identity {
        path: PathBuf,
        problem: IdentityProblem,
    },
    /// A token-map file is not valid JSON of the expected shape.
    #[error("{}:{line}: token map: {message}", path.display())]
    TokenMap {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An input refused before it was read: not a regular file, over its size cap, or a
    /// token map outside the registry's directory.
    #[error("{}: {message}", path.display())]
    Refused { path: PathBuf, message: String },
    /// A capture file (`kvlower capture`) is not a complete, well-formed capture.
    #[error("{}: capture file: {message}", path.display())]
    Capture { path: PathBuf, message: String },
    /// An event line is malformed for the declared format.
    #[error("{}:{line}: {}{message}", path.display(), fmt_json_path(json_path.as_deref()))]
    Event {
        path: PathBuf,
        line: u64,
        /// JSON path inside the line (`$.events[2][3]`), when known.
        json_path: Option<String>,
        message: String,
    },
}

impl JoinError {
    /// The stable code of this error, from the one table. An input that could not be
    /// read at all (opened, read, or refused before reading) has a code that says so
    /// ([`Code::is_unread_input`]: `kvlower join` exits 2); one read and found
    /// malformed, a code that does not (exit 1).
    pub fn code(&self) -> Code {
        match self {
            JoinError::Io { .. } => Code::UnreadableFile,
            // The refusal's message is the file layer's (or the token map's own
            // "outside" refusal): its words say which cap or rule refused it.
            JoinError::Refused { message, .. } => {
                if message.contains("cap") || message.contains("larger") {
                    Code::FileTooLarge
                } else if message.contains("outside") {
                    Code::FileOutsideRoot
                } else {
                    Code::NotARegularFile
                }
            }
            JoinError::Registry { .. } => Code::JoinRegistryInvalid,
            JoinError::Identity { problem, .. } => problem.code(),
            JoinError::TokenMap { .. } => Code::JoinTokenMapInvalid,
            JoinError::Event { .. } | JoinError::Capture { .. } => Code::MalformedTrace,
        }
    }

    /// The finding for this error: its code, the file (control characters escaped),
    /// the line (and column, or YAML path) when known, and the message.
    pub fn finding(&self) -> Finding {
        let shown = |p: &Path| escape_control(&p.display().to_string()).into_owned();
        let code = self.code();
        match self {
            JoinError::Io { path, source } => {
                Finding::new(code, shown(path), format!("cannot read: {source}"))
                    .with_hint("check that the file exists and is readable")
            }
            JoinError::Refused { path, message } => {
                Finding::new(code, shown(path), message.clone()).with_hint(
                    "kvlower reads regular files only, each under its cap (docs/files.md)",
                )
            }
            JoinError::Registry {
                path,
                location,
                yaml_path,
                message,
            } => {
                let mut f = Finding::new(code, shown(path), message.clone())
                    .at_path(yaml_path.clone())
                    .with_hint(
                        "docs/join.md describes the registry and the pressure-controls file",
                    );
                f.location = *location;
                f
            }
            JoinError::Identity { path, problem } => {
                Finding::new(code, shown(path), problem.to_string())
                    .at_path("cache_identity.runtime")
                    .with_hint(problem.hint())
            }
            JoinError::TokenMap {
                path,
                line,
                message,
            } => Finding::new(code, shown(path), message.clone())
                .at(*line, 1)
                .with_hint("docs/join.md describes the token map"),
            JoinError::Event {
                path,
                line,
                message,
                ..
            } => {
                let f = Finding::new(code, shown(path), message.clone());
                match usize::try_from(*line) {
                    Ok(line) => f.at(line, 1),
                    Err(_) => f,
                }
            }
            JoinError::Capture { path, message } => {
                Finding::new(code, shown(path), message.clone())
            }
        }
    }

    pub(crate) fn yaml(path: &Path, e: kvlower_yaml::YamlError) -> JoinError {
        JoinError::Registry {
            path: path.to_path_buf(),
            location: e.location,
            yaml_path: e.path,
            message: e.message,
        }
    }
}

fn fmt_loc(loc: Option<(usize, usize)>) -> String {
    loc.map(|(l, c)| format!(":{l}:{c}")).unwrap_or_default()
}

fn fmt_yaml_path(p: &str) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!("{p}: ")
    }
}

fn fmt_json_path(p: Option<&str>) -> String {
    p.map(|p| format!("{p}: ")).unwrap_or_default()
}
