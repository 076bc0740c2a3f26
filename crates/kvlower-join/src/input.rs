//! Opening the join's input files: regular files only, refused before opening, and read
//! with a cap (`docs/capture-format.md` for event files, the README for the rest).
//!
//! A FIFO would block `open` forever and a device such as `/dev/zero` would be read
//! until memory runs out, so the type is checked on the path's target (links followed)
//! before anything is opened. Text inputs are read to at most their cap; event files
//! are streamed and bounded per line or frame instead.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::JoinError;

/// Largest registry or pressure-controls file read (YAML).
pub const MAX_REGISTRY_BYTES: u64 = 8 * 1024 * 1024;
/// Largest token-map file read (JSON).
pub const MAX_TOKEN_MAP_BYTES: u64 = 64 * 1024 * 1024;

fn refused(path: &Path, message: impl Into<String>) -> JoinError {
    JoinError::Refused {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Opens `path` for reading only if it is (or links to) a regular file.
pub fn open_regular(path: &Path) -> Result<File, JoinError> {
    let meta = std::fs::metadata(path).map_err(|source| JoinError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(refused(path, format!("{what}: refused before opening")));
    }
    File::open(path).map_err(|source| JoinError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a regular file of at most `cap` bytes as UTF-8 text.
pub fn read_text(path: &Path, cap: u64) -> Result<String, JoinError> {
    let file = open_regular(path)?;
    let mut buf = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut buf)
        .map_err(|source| JoinError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if buf.len() as u64 > cap {
        return Err(refused(path, format!("larger than the cap of {cap} bytes")));
    }
    String::from_utf8(buf).map_err(|e| refused(path, format!("not UTF-8: {e}")))
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
    let root = std::fs::canonicalize(base).map_err(|source| JoinError::Io {
        path: base.to_path_buf(),
        source,
    })?;
    let real = std::fs::canonicalize(&joined).map_err(|source| JoinError::Io {
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
