//! Looking at a path without reading it: whether something is there, what it is, where
//! it leads. Nothing here opens a file.

use std::fs::Metadata;
use std::io;
use std::path::{Path, PathBuf};

/// The metadata of `path` itself (a link is not followed).
pub fn lstat(path: &Path) -> io::Result<Metadata> {
    std::fs::symlink_metadata(path)
}

/// The metadata of what `path` leads to (links followed): what a link points at.
pub fn stat(path: &Path) -> io::Result<Metadata> {
    std::fs::metadata(path)
}

/// Whether anything, even a broken link, is at `path`.
pub fn entry_exists(path: &Path) -> bool {
    lstat(path).is_ok()
}

/// Whether `path` names something after links (a broken link does not).
pub fn exists(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

/// Whether `path` is a regular file after links.
pub fn is_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// `path` with every link and `..` resolved; it must exist.
pub fn resolved(path: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}
