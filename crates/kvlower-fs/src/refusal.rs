//! Why a file was not read: one typed refusal per rule, which callers turn into a
//! coded finding.

use std::fs::Metadata;
use std::io;

use crate::FileKind;

/// Why a file was not read. `path` is the path as the caller named it
/// (relative to the root for confined reads), never a resolved absolute path,
/// so messages stay the same on every machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("`{path}` does not exist (or is a broken link)")]
    Missing { path: String },
    #[error("`{path}` resolves outside the root (through a link, `..` or an absolute path)")]
    OutsideRoot { path: String },
    #[error("`{path}` is {what}, not a regular file")]
    NotRegular { path: String, what: &'static str },
    #[error("`{path}` is a kernel pseudo-file (under /proc or /sys), not a regular file")]
    PseudoFile { path: String },
    #[error("`{path}` is larger than the {cap}-byte cap for a {kind}")]
    TooLarge {
        path: String,
        kind: FileKind,
        cap: u64,
    },
    #[error("`{path}` is not readable: permission denied")]
    PermissionDenied { path: String },
    #[error("`{path}` would block (it is not an ordinary file on disk)")]
    WouldBlock { path: String },
    #[error("cannot read `{path}`: {message}")]
    Io { path: String, message: String },
}

impl Refusal {
    /// The path as the caller named it.
    pub fn path(&self) -> &str {
        match self {
            Refusal::Missing { path }
            | Refusal::OutsideRoot { path }
            | Refusal::NotRegular { path, .. }
            | Refusal::PseudoFile { path }
            | Refusal::TooLarge { path, .. }
            | Refusal::PermissionDenied { path }
            | Refusal::WouldBlock { path }
            | Refusal::Io { path, .. } => path,
        }
    }

    /// A stable kebab-case slug per variant, for callers that map refusals
    /// to their own diagnostic codes.
    pub fn slug(&self) -> &'static str {
        match self {
            Refusal::Missing { .. } => "missing",
            Refusal::OutsideRoot { .. } => "outside-root",
            Refusal::NotRegular { .. } => "not-regular",
            Refusal::PseudoFile { .. } => "pseudo-file",
            Refusal::TooLarge { .. } => "too-large",
            Refusal::PermissionDenied { .. } => "permission-denied",
            Refusal::WouldBlock { .. } => "would-block",
            Refusal::Io { .. } => "io",
        }
    }

    /// The refusal a [`CappedReader`] wrapped in an `io::Error`, if any.
    pub fn from_io(error: &io::Error) -> Option<Refusal> {
        error.get_ref()?.downcast_ref::<Refusal>().cloned()
    }

    pub(crate) fn from_io_error(path: &str, error: &io::Error) -> Refusal {
        if let Some(refusal) = Refusal::from_io(error) {
            return refusal;
        }
        let path = path.to_string();
        match error.kind() {
            io::ErrorKind::NotFound => Refusal::Missing { path },
            io::ErrorKind::PermissionDenied => Refusal::PermissionDenied { path },
            io::ErrorKind::WouldBlock => Refusal::WouldBlock { path },
            _ => Refusal::Io {
                path,
                message: error.to_string(),
            },
        }
    }
}

pub(crate) fn not_regular(meta: &Metadata, path: String) -> Refusal {
    Refusal::NotRegular {
        path,
        what: describe(meta),
    }
}

pub(crate) fn too_large(shown: &str, kind: FileKind) -> Refusal {
    Refusal::TooLarge {
        path: shown.to_string(),
        kind,
        cap: kind.cap(),
    }
}

/// "a FIFO", "a directory", ... for a file that is not regular.
fn describe(meta: &Metadata) -> &'static str {
    let ft = meta.file_type();
    if ft.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
        if ft.is_socket() {
            return "a socket";
        }
    }
    "a special file"
}
