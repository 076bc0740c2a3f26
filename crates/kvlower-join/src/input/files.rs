//! Opening the join's input files through kvlower's one safe read (`kvlower-fs`,
//! docs/files.md): regular files only, refused before opening, and read within the cap
//! for their kind.
//!
//! A FIFO would block `open` forever and a device such as `/dev/zero` would be read
//! until memory runs out, so the type is checked on the path's target (links followed)
//! before anything is opened. Text inputs are read whole within their cap; event files
//! are streamed, capped in total and bounded per line or frame.

use std::path::{Path, PathBuf};

use kvlower_fs::{CappedReader, FileKind, Refusal};

use crate::error::JoinError;

/// Largest registry or pressure-controls file read (YAML): the one cap table's.
pub const MAX_REGISTRY_BYTES: u64 = FileKind::Registry.cap();

fn refused(path: &Path, message: impl Into<String>) -> JoinError {
    JoinError::Refused {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// A refusal of kvlower's one safe read (`kvlower-fs`), as a join error: what
/// could not be read stays an I/O error, what was refused says why, without
/// repeating the path.
fn from_refusal(path: &Path, refusal: Refusal) -> JoinError {
    let io = |kind: std::io::ErrorKind, message: String| JoinError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::new(kind, message),
    };
    match refusal {
        Refusal::Missing { .. } => io(std::io::ErrorKind::NotFound, "no such file".into()),
        Refusal::PermissionDenied { .. } => io(
            std::io::ErrorKind::PermissionDenied,
            "permission denied".into(),
        ),
        Refusal::Io { message, .. } => io(std::io::ErrorKind::Other, message),
        Refusal::NotRegular { what, .. } => refused(
            path,
            format!("{what}, not a regular file: refused before opening"),
        ),
        Refusal::PseudoFile { .. } => refused(
            path,
            "a kernel pseudo-file (under /proc or /sys), not a regular file: refused before opening",
        ),
        Refusal::TooLarge { cap, .. } => {
            refused(path, format!("larger than the cap of {cap} bytes"))
        }
        Refusal::WouldBlock { .. } => refused(path, "would block: not an ordinary file on disk"),
        Refusal::OutsideRoot { .. } => refused(path, "resolves outside the root"),
    }
}

/// Opens an event file for streaming through the one safe read: refused before
/// opening unless it is (or links to) a regular file, and capped (`docs/files.md`).
pub fn open_events(path: &Path) -> Result<CappedReader<std::fs::File>, JoinError> {
    FileKind::EventFile
        .open()
        .reader(path)
        .map_err(|r| from_refusal(path, r))
}

/// Reads a regular file of kind `kind` whole, within the kind's cap, as UTF-8 text.
pub fn read_text(path: &Path, kind: FileKind) -> Result<String, JoinError> {
    let bytes = kind.open().read(path).map_err(|r| from_refusal(path, r))?;
    String::from_utf8(bytes).map_err(|e| refused(path, format!("not UTF-8: {e}")))
}

/// An event-stream read error, with the refusal a capped reader raised (the cap)
/// told apart from an ordinary I/O error.
pub fn stream_error(path: &Path, error: std::io::Error) -> JoinError {
    match Refusal::from_io(&error) {
        Some(r) => from_refusal(path, r),
        None => JoinError::Io {
            path: path.to_path_buf(),
            source: error,
        },
    }
}

/// Resolves a token-map path named in a registry: relative, and inside the registry's
/// directory once every link is resolved.
pub fn confine(registry: &Path, file: &str) -> Result<PathBuf, JoinError> {
    let rel = Path::new(file);
    let base = registry.parent().unwrap_or(Path::new(""));
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let joined = base.join(rel);
    if rel.is_absolute() || file.is_empty() {
        return Err(refused(
            &joined,
            format!(
                "token_map.file `{}` must be a relative path inside the registry's directory",
                file.escape_debug()
            ),
        ));
    }
    let root = kvlower_fs::inspect::resolved(base).map_err(|source| JoinError::Io {
        path: base.to_path_buf(),
        source,
    })?;
    let real = kvlower_fs::inspect::resolved(&joined).map_err(|source| JoinError::Io {
        path: joined.clone(),
        source,
    })?;
    if !real.starts_with(&root) {
        return Err(refused(
            &joined,
            "token_map.file resolves outside the registry's directory (links included)",
        ));
    }
    Ok(joined)
}
