//! Input that cannot be read at all. A claim the join cannot judge is *not* an error
//! (it is `insufficient_evidence`); these are for files that are not what they say.

use std::path::{Path, PathBuf};

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
    /// Whether the input could not be read at all (opened, read, or refused before
    /// reading), rather than read and found malformed: `kvlower join` exits 2 for
    /// the former and 1 for the latter.
    pub fn is_unread_input(&self) -> bool {
        matches!(self, JoinError::Io { .. } | JoinError::Refused { .. })
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
