//! What re-running a campaign needs from the file system, and the digest it recomputes
//! (docs/conformance.md, sections 1.3 and 1.6). Its own module: the campaign document, the
//! run bindings and the import closure all read files through it.

use std::io::BufRead;

/// A file's identity after links: (device, inode) on Unix. Two paths naming one file
/// (`T`, `./T`, a symlink, a hard link) have one identity, so they are one run.
pub type FileId = (u64, u64);

/// What re-running a campaign needs from the file system (kvlower-evidence supplies it:
/// every path is repository-relative and is confined, capped and refused as any anchored
/// file; this crate opens nothing itself).
pub trait CampaignFiles {
    /// The file's identity; `None` when it is missing or refused.
    fn identify(&self, path: &str) -> Option<FileId>;
    /// A reader over a trace; `None` when it is missing or refused.
    fn open_trace(&self, path: &str) -> Option<Box<dyn BufRead + '_>>;
    /// A whole (small) file's bytes; `None` when it is missing or refused.
    fn read(&self, path: &str) -> Option<Vec<u8>>;
    /// Whether the path (after links) lies in one of kvlower's own directories.
    fn is_own_file(&self, path: &str) -> bool;
    /// Whether the path is a directory inside the repository (a Python namespace package
    /// when it has no `__init__.py`).
    fn is_dir(&self, path: &str) -> bool;
}

/// The source digest of `files` (path → bytes): SHA-256 over the files sorted by path of
/// `path \0 sha256hex(bytes) \n` (docs/conformance.md, "The source digest").
pub fn source_digest<'a>(files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> String {
    let mut lines: Vec<(&str, String)> = files
        .into_iter()
        .map(|(p, b)| (p, kvlower_core::catalog::sha256_hex(b)))
        .collect();
    lines.sort();
    let mut text = Vec::new();
    for (p, h) in lines {
        text.extend_from_slice(p.as_bytes());
        text.push(0);
        text.extend_from_slice(h.as_bytes());
        text.push(b'\n');
    }
    kvlower_core::catalog::sha256_hex(&text)
}

/// A repository-relative path as a campaign may name one: not absolute, no `..`, not empty.
pub(crate) fn relative(path: &str) -> bool {
    let p = std::path::Path::new(path);
    !path.is_empty()
        && !p.is_absolute()
        && !path.starts_with('/')
        && p.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
}
