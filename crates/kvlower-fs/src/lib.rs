//! The one way kvlower opens a file for reading.
//!
//! kvlower reads files it does not control: descriptors and the catalog from a
//! pull request, traces and event files named by those descriptors, results a
//! previous run wrote. Every read goes through this crate, which
//!
//! 1. resolves the path, symbolic links included, and — when a root applies —
//!    refuses anything that resolves outside it (a link to `/etc/passwd`, a
//!    `../../x`, an absolute path);
//! 2. refuses anything that is not a regular file *before* opening it for
//!    reading, and opens with `O_NONBLOCK` then re-checks the open descriptor,
//!    so a FIFO or a device can never make kvlower wait (and a file swapped
//!    for one between the check and the open is still refused);
//! 3. refuses kernel pseudo-files (`/proc`, `/sys`), which claim to be regular
//!    files but can block or never end;
//! 4. caps the bytes read per [`FileKind`] (a descriptor does not need 2 GB);
//! 5. reports every refusal as a typed [`Refusal`] that callers turn into a
//!    coded finding.
//!
//! The caps are listed in `docs/files.md`; [`FileKind::cap`] is the source.

mod finding;
pub mod lines;

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// What a file is for; decides its byte cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileKind {
    /// `capabilities/*.yaml`.
    Descriptor,
    /// `modes/modes.yaml`.
    Catalog,
    /// `bad_lowering/*.yaml`.
    BadLoweringCase,
    /// A `kvlower join` block registry.
    Registry,
    /// A registry's `token_map.file`.
    TokenMap,
    /// A gate trace (JSON lines); read streaming.
    Trace,
    /// A committed `*.join.json` evidence document.
    JoinDocument,
    /// A join event file (JSON lines or msgpack); read streaming.
    EventFile,
    /// A routing trace (`kvlower route`, docs/routing-trace.md), or the routing gate
    /// document that names one.
    RoutingTrace,
    /// A generated file in `results/` or `schemas/`, read back by `check`.
    Result,
    /// The README, whose generated runtimes table `matrix` rewrites and `check` compares.
    Readme,
    /// A file a finding points into, re-read to show the offending line beside it.
    Snippet,
}

impl FileKind {
    pub const ALL: &'static [FileKind] = &[
        FileKind::Descriptor,
        FileKind::Catalog,
        FileKind::BadLoweringCase,
        FileKind::Registry,
        FileKind::TokenMap,
        FileKind::Trace,
        FileKind::JoinDocument,
        FileKind::EventFile,
        FileKind::RoutingTrace,
        FileKind::Result,
        FileKind::Readme,
        FileKind::Snippet,
    ];

    /// The most bytes kvlower reads from a file of this kind. Hand-written
    /// YAML gets 1 MiB (the largest committed descriptor is a few KiB);
    /// machine-written inputs get room to grow, streams the most.
    pub const fn cap(self) -> u64 {
        match self {
            FileKind::Descriptor | FileKind::Catalog | FileKind::BadLoweringCase => MIB,
            FileKind::Readme => MIB,
            FileKind::Snippet => 4 * MIB,
            FileKind::Registry => 16 * MIB,
            FileKind::TokenMap => 64 * MIB,
            FileKind::JoinDocument => 64 * MIB,
            FileKind::RoutingTrace => 64 * MIB,
            FileKind::Result => 64 * MIB,
            FileKind::Trace => GIB,
            FileKind::EventFile => 4 * GIB,
        }
    }

    /// How messages name the kind.
    pub const fn name(self) -> &'static str {
        match self {
            FileKind::Descriptor => "descriptor",
            FileKind::Catalog => "catalog",
            FileKind::BadLoweringCase => "bad-lowering case",
            FileKind::Registry => "registry",
            FileKind::TokenMap => "token map",
            FileKind::Trace => "trace",
            FileKind::JoinDocument => "join document",
            FileKind::RoutingTrace => "routing trace",
            FileKind::EventFile => "event file",
            FileKind::Result => "generated result",
            FileKind::Readme => "README",
            FileKind::Snippet => "source shown beside a finding",
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

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

    fn from_io_error(path: &str, error: &io::Error) -> Refusal {
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

/// Makes renames in `dir` durable (best effort: not every platform can sync a
/// directory). Opening a directory reads nothing, but it is a file opened all the
/// same, so it lives here with every other open.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Reads `root/rel` whole, refusing anything that resolves outside `root`.
pub fn read_confined(root: &Path, rel: &str, kind: FileKind) -> Result<Vec<u8>, Refusal> {
    let file = open_checked(&root.join(rel), rel, Some(root), kind)?;
    read_capped(file, rel, kind)
}

/// Reads `path` whole, with no root (a path given on the command line).
pub fn read_path(path: &Path, kind: FileKind) -> Result<Vec<u8>, Refusal> {
    let shown = path.display().to_string();
    let file = open_checked(path, &shown, None, kind)?;
    read_capped(file, &shown, kind)
}

/// Opens `root/rel` for streaming; reading past the cap is an error that
/// [`Refusal::from_io`] turns back into [`Refusal::TooLarge`].
pub fn open_confined_reader(
    root: &Path,
    rel: &str,
    kind: FileKind,
) -> Result<CappedReader<File>, Refusal> {
    let file = open_checked(&root.join(rel), rel, Some(root), kind)?;
    Ok(CappedReader::new(file, kind, rel))
}

/// Opens `path` for streaming, with no root.
pub fn open_path_reader(path: &Path, kind: FileKind) -> Result<CappedReader<File>, Refusal> {
    let shown = path.display().to_string();
    let file = open_checked(path, &shown, None, kind)?;
    Ok(CappedReader::new(file, kind, &shown))
}

/// Opens `path` for reading if it is a regular file, with no per-kind cap: for a
/// caller that bounds its own reading (`kvlower gate --max-bytes`). The same
/// checks as every other read: links resolved, non-regular files and kernel
/// pseudo-files refused before opening, a non-blocking open, the opened file
/// checked again and required to be the one that was checked. Returns the file
/// and its length.
pub fn open_regular_unbounded(path: &Path) -> Result<(File, u64), Refusal> {
    let shown = path.display().to_string();
    let resolved = resolve(path, &shown, None)?;
    let before = std::fs::metadata(&resolved).map_err(|e| Refusal::from_io_error(&shown, &e))?;
    check_regular(&before, &shown)?;
    let file = open_nonblocking(&resolved).map_err(|e| Refusal::from_io_error(&shown, &e))?;
    let after = file
        .metadata()
        .map_err(|e| Refusal::from_io_error(&shown, &e))?;
    check_regular(&after, &shown)?;
    if !same_file(&before, &after) {
        return Err(Refusal::Io {
            path: shown,
            message: "the file was replaced while it was being opened".to_string(),
        });
    }
    Ok((file, after.len()))
}

/// Opens `path`, which a directory walk that follows no link has just listed as a
/// regular file with metadata `listed`: [`open_regular_unbounded`] without resolving the
/// path and stat-ing it again (the listing did both), for a caller that checked once,
/// with [`outside_pseudo_fs`], that the walked directory is no kernel pseudo-file system.
/// The open is non-blocking and the opened file is checked again: still a regular file,
/// and the one listed. Returns the file and its length.
pub fn open_listed_regular(path: &Path, listed: &Metadata) -> Result<(File, u64), Refusal> {
    // The path is shown only in a refusal: formatting it for every file of a campaign
    // would cost an allocation per file.
    let shown = || path.display().to_string();
    if !listed.is_file() {
        return Err(not_regular(listed, shown()));
    }
    let file = open_nonblocking(path).map_err(|e| Refusal::from_io_error(&shown(), &e))?;
    let after = file
        .metadata()
        .map_err(|e| Refusal::from_io_error(&shown(), &e))?;
    if !after.is_file() {
        return Err(not_regular(&after, shown()));
    }
    if !same_file(listed, &after) {
        return Err(Refusal::Io {
            path: shown(),
            message: "the file was replaced while it was being opened".to_string(),
        });
    }
    Ok((file, after.len()))
}

/// The device of the directory `dir` (after links), which [`open_walked_regular`] asks
/// of every file listed in it: one `statx` per walked directory. `None` where that is
/// not known (the directory cannot be stat-ed, or not on Unix): its files are then
/// checked the long way.
#[cfg(unix)]
pub fn directory_device(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir)
        .ok()
        .filter(Metadata::is_dir)
        .map(|m| m.dev())
}

/// Elsewhere no walked file is opened without the long checks.
#[cfg(not(unix))]
pub fn directory_device(_dir: &Path) -> Option<u64> {
    None
}

/// Opens `path`, which a directory walk below a directory outside the kernel's
/// pseudo-file systems ([`outside_pseudo_fs`]) has listed by its directory entry as a
/// regular file (no link) in a directory on device `dir_device`
/// ([`directory_device`]), without stat-ing it first: non-blocking, never following a
/// link, then checked on the open descriptor: a regular file on that same device.
/// `None` otherwise (it cannot be opened, it is a link or not a regular file any more,
/// or it lies on another device: a directory on the way was replaced by a link since
/// the walk, or a file system is mounted there): the caller then checks it the long way
/// ([`open_listed_regular`] or [`open_regular_unbounded`], which refuse kernel
/// pseudo-files), which tells why. One `openat` and one `fstat` for the common case
/// instead of a `statx` of the path before them. Returns the file and its length.
#[cfg(unix)]
pub fn open_walked_regular(path: &Path, dir_device: u64) -> Option<(File, u64)> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    (meta.is_file() && meta.dev() == dir_device).then_some((file, meta.len()))
}

/// Elsewhere every walked file is checked the long way.
#[cfg(not(unix))]
pub fn open_walked_regular(_path: &Path, _dir_device: u64) -> Option<(File, u64)> {
    None
}

/// Whether `dir` resolves outside `/proc` and `/sys`, so that no file listed below it (not
/// following links) is a kernel pseudo-file; `false` when it cannot be resolved.
pub fn outside_pseudo_fs(dir: &Path) -> bool {
    std::fs::canonicalize(dir)
        .is_ok_and(|resolved| !resolved.starts_with("/proc") && !resolved.starts_with("/sys"))
}

/// Resolves `root/rel` to a regular file inside `root` without opening it:
/// for anchors whose existence is all that matters, so an anchor outside the
/// root or on a FIFO is refused before anything is opened.
pub fn resolve_confined(root: &Path, rel: &str) -> Result<PathBuf, Refusal> {
    let resolved = resolve(&root.join(rel), rel, Some(root))?;
    let meta = std::fs::metadata(&resolved).map_err(|e| Refusal::from_io_error(rel, &e))?;
    check_regular(&meta, rel)?;
    Ok(resolved)
}

/// Resolves links and `..`, and checks the result against `root`.
fn resolve(path: &Path, shown: &str, root: Option<&Path>) -> Result<PathBuf, Refusal> {
    let resolved = std::fs::canonicalize(path).map_err(|e| Refusal::from_io_error(shown, &e))?;
    if let Some(root) = root {
        let root = std::fs::canonicalize(root).map_err(|e| Refusal::Io {
            path: shown.to_string(),
            message: format!("the root cannot be resolved: {e}"),
        })?;
        if !resolved.starts_with(&root) {
            return Err(Refusal::OutsideRoot {
                path: shown.to_string(),
            });
        }
    }
    if resolved.starts_with("/proc") || resolved.starts_with("/sys") {
        return Err(Refusal::PseudoFile {
            path: shown.to_string(),
        });
    }
    Ok(resolved)
}

/// Resolve, check the type and size by metadata, open without blocking, and
/// check the open descriptor again (the file may have been swapped).
fn open_checked(
    path: &Path,
    shown: &str,
    root: Option<&Path>,
    kind: FileKind,
) -> Result<File, Refusal> {
    let resolved = resolve(path, shown, root)?;
    let before = std::fs::metadata(&resolved).map_err(|e| Refusal::from_io_error(shown, &e))?;
    check_regular(&before, shown)?;
    check_size(&before, shown, kind)?;
    let file = open_nonblocking(&resolved).map_err(|e| Refusal::from_io_error(shown, &e))?;
    let after = file
        .metadata()
        .map_err(|e| Refusal::from_io_error(shown, &e))?;
    check_regular(&after, shown)?;
    check_size(&after, shown, kind)?;
    if !same_file(&before, &after) {
        return Err(Refusal::Io {
            path: shown.to_string(),
            message: "the file was replaced while it was being opened".to_string(),
        });
    }
    Ok(file)
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK stays set while reading: it has no effect on regular files,
    // and a pseudo-file that slipped through answers EAGAIN instead of hanging.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(not(unix))]
fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &Metadata, _: &Metadata) -> bool {
    true
}

fn check_regular(meta: &Metadata, shown: &str) -> Result<(), Refusal> {
    if meta.is_file() {
        return Ok(());
    }
    Err(not_regular(meta, shown.to_string()))
}

fn not_regular(meta: &Metadata, path: String) -> Refusal {
    Refusal::NotRegular {
        path,
        what: describe(meta),
    }
}

fn check_size(meta: &Metadata, shown: &str, kind: FileKind) -> Result<(), Refusal> {
    if meta.len() > kind.cap() {
        return Err(too_large(shown, kind));
    }
    Ok(())
}

fn too_large(shown: &str, kind: FileKind) -> Refusal {
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

/// Reads at most `cap` bytes; one byte more is a refusal, not a truncation.
fn read_capped(file: File, shown: &str, kind: FileKind) -> Result<Vec<u8>, Refusal> {
    let mut bytes = Vec::new();
    CappedReader::new(file, kind, shown)
        .read_to_end(&mut bytes)
        .map_err(|e| Refusal::from_io_error(shown, &e))?;
    Ok(bytes)
}

/// A reader that fails with [`Refusal::TooLarge`] (wrapped in an
/// `io::Error`) as soon as its input goes past the kind's cap, and turns a
/// `WouldBlock` into [`Refusal::WouldBlock`] so no caller spins on it.
/// Usable on any reader, e.g. standard input.
#[derive(Debug)]
pub struct CappedReader<R> {
    inner: R,
    remaining: u64,
    kind: FileKind,
    shown: String,
}

impl<R: Read> CappedReader<R> {
    pub fn new(inner: R, kind: FileKind, shown: &str) -> CappedReader<R> {
        CappedReader {
            inner,
            remaining: kind.cap(),
            kind,
            shown: shown.to_string(),
        }
    }

    /// Bytes read so far.
    pub fn consumed(&self) -> u64 {
        self.kind.cap() - self.remaining
    }

    fn refuse(&self, refusal: Refusal) -> io::Error {
        io::Error::other(refusal)
    }
}

impl<R: Read> Read for CappedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let result = if self.remaining == 0 {
            // At the cap: one more byte means the file is too large.
            let mut probe = [0u8; 1];
            match self.inner.read(&mut probe) {
                Ok(0) => return Ok(0),
                Ok(_) => return Err(self.refuse(too_large(&self.shown, self.kind))),
                Err(e) => Err(e),
            }
        } else {
            let limit = usize::try_from(self.remaining).unwrap_or(usize::MAX);
            let len = buf.len().min(limit);
            self.inner.read(&mut buf[..len])
        };
        match result {
            Ok(n) => {
                self.remaining -= n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                Err(self.refuse(Refusal::WouldBlock {
                    path: self.shown.clone(),
                }))
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Runs `f` on a thread and fails (instead of hanging the suite) if it
    /// does not return within 5 s: the property under test is "never blocks".
    fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the read blocked")
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
    }

    fn root() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::create_dir(dir.path().join("capabilities")).expect("mkdir");
        dir
    }

    #[test]
    fn reads_a_regular_file_inside_the_root() {
        let dir = root();
        std::fs::write(dir.path().join("capabilities/x.yaml"), "runtime: x\n").unwrap();
        let bytes = read_confined(dir.path(), "capabilities/x.yaml", FileKind::Descriptor).unwrap();
        assert_eq!(bytes, b"runtime: x\n");
    }

    #[test]
    fn follows_a_link_that_stays_inside_the_root() {
        let dir = root();
        std::fs::write(dir.path().join("real.yaml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink("../real.yaml", dir.path().join("capabilities/x.yaml")).unwrap();
        let bytes = read_confined(dir.path(), "capabilities/x.yaml", FileKind::Descriptor).unwrap();
        assert_eq!(bytes, b"a: 1\n");
    }

    #[test]
    fn a_walked_file_opens_only_as_a_regular_file_reached_without_a_link() {
        let dir = root();
        let real = dir.path().join("capabilities/x.jsonl");
        std::fs::write(&real, "{}\n").unwrap();
        let dev = directory_device(&dir.path().join("capabilities")).expect("a directory");
        let (_, len) = open_walked_regular(&real, dev).expect("a regular file opens");
        assert_eq!(len, 3);
        // On another device than its directory's: a directory on the way was replaced by
        // a link (to /proc, say) since the walk. Left to the long checks.
        assert!(open_walked_regular(&real, dev.wrapping_add(1)).is_none());
        // Replaced since the walk by a link, a FIFO or a directory, or gone: left to the
        // long checks, never opened through a link, and never blocking.
        let link = dir.path().join("capabilities/link.jsonl");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert!(open_walked_regular(&link, dev).is_none());
        let fifo = dir.path().join("capabilities/fifo.jsonl");
        mkfifo(&fifo);
        assert!(within_deadline(
            move || open_walked_regular(&fifo, dev).is_none()
        ));
        assert!(open_walked_regular(&dir.path().join("capabilities"), dev).is_none());
        assert!(open_walked_regular(&dir.path().join("capabilities/gone.jsonl"), dev).is_none());
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = root();
        mkfifo(&dir.path().join("capabilities/x.yaml"));
        let root = dir.path().to_path_buf();
        let confined = within_deadline(move || {
            read_confined(&root, "capabilities/x.yaml", FileKind::Descriptor)
        });
        assert!(
            matches!(confined, Err(Refusal::NotRegular { what, .. }) if what.contains("FIFO")),
            "{confined:?}"
        );
        let path = dir.path().join("capabilities/x.yaml");
        let streamed =
            within_deadline(move || open_path_reader(&path, FileKind::Trace).map(|_| ()));
        assert!(matches!(streamed, Err(Refusal::NotRegular { .. })));
    }

    #[test]
    fn a_link_to_dev_zero_is_refused() {
        let dir = root();
        let link = dir.path().join("capabilities/x.yaml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        // No root: the device itself is refused.
        let result = within_deadline(move || read_path(&link, FileKind::Catalog));
        assert!(
            matches!(&result, Err(Refusal::NotRegular { what, .. }) if what.contains("character")),
            "{result:?}"
        );
        // With a root, it is refused earlier: it resolves outside.
        let root = dir.path().to_path_buf();
        let confined =
            within_deadline(move || read_confined(&root, "capabilities/x.yaml", FileKind::Catalog));
        assert!(matches!(confined, Err(Refusal::OutsideRoot { .. })));
    }

    #[test]
    fn dev_zero_named_directly_is_refused() {
        let result = within_deadline(|| read_path(Path::new("/dev/zero"), FileKind::Trace));
        assert!(
            matches!(result, Err(Refusal::NotRegular { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn links_and_dotdot_out_of_the_root_are_refused() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::write(outer.path().join("secret"), "root:x:0:0\n").unwrap();
        let dir = outer.path().join("repo");
        std::fs::create_dir_all(dir.join("capabilities")).unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret"), dir.join("capabilities/x.yaml"))
            .unwrap();
        for rel in [
            "capabilities/x.yaml",
            "../secret",
            "capabilities/../../secret",
        ] {
            let result = read_confined(&dir, rel, FileKind::Descriptor);
            assert_eq!(
                result,
                Err(Refusal::OutsideRoot {
                    path: rel.to_string()
                }),
                "{rel}"
            );
        }
        let absolute = outer.path().join("secret");
        let result = read_confined(&dir, absolute.to_str().unwrap(), FileKind::Descriptor);
        assert!(matches!(result, Err(Refusal::OutsideRoot { .. })));
        assert!(matches!(
            resolve_confined(&dir, "../secret"),
            Err(Refusal::OutsideRoot { .. })
        ));
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = root();
        std::fs::create_dir(dir.path().join("capabilities/x.yaml")).unwrap();
        let result = read_confined(dir.path(), "capabilities/x.yaml", FileKind::Descriptor);
        assert!(matches!(
            result,
            Err(Refusal::NotRegular {
                what: "a directory",
                ..
            })
        ));
        assert!(matches!(
            resolve_confined(dir.path(), "capabilities"),
            Err(Refusal::NotRegular { .. })
        ));
    }

    #[test]
    fn missing_and_broken_links_are_missing() {
        let dir = root();
        std::os::unix::fs::symlink("nowhere", dir.path().join("capabilities/b.yaml")).unwrap();
        for rel in ["capabilities/a.yaml", "capabilities/b.yaml"] {
            assert_eq!(
                read_confined(dir.path(), rel, FileKind::Descriptor),
                Err(Refusal::Missing {
                    path: rel.to_string()
                })
            );
        }
    }

    #[test]
    #[expect(
        clippy::print_stderr,
        reason = "a skipped property says so on the test output"
    )]
    fn an_unreadable_file_is_permission_denied() {
        use std::os::unix::fs::PermissionsExt;
        let dir = root();
        let path = dir.path().join("capabilities/x.yaml");
        std::fs::write(&path, "a: 1\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        // Tests may run as root (CI containers), where mode bits do not deny
        // reads; the property is only observable for an unprivileged user.
        if File::open(&path).is_ok() {
            eprintln!("skipped: running with privileges that ignore mode bits");
            return;
        }
        let result = read_confined(dir.path(), "capabilities/x.yaml", FileKind::Descriptor);
        assert!(
            matches!(result, Err(Refusal::PermissionDenied { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn proc_files_are_refused() {
        let result = within_deadline(|| read_path(Path::new("/proc/self/status"), FileKind::Trace));
        assert!(
            matches!(result, Err(Refusal::PseudoFile { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn the_cap_is_inclusive_and_one_byte_more_is_refused() {
        let dir = root();
        let cap = FileKind::Descriptor.cap() as usize;
        std::fs::write(dir.path().join("capabilities/ok.yaml"), vec![b'a'; cap]).unwrap();
        std::fs::write(
            dir.path().join("capabilities/big.yaml"),
            vec![b'a'; cap + 1],
        )
        .unwrap();
        assert_eq!(
            read_confined(dir.path(), "capabilities/ok.yaml", FileKind::Descriptor)
                .unwrap()
                .len(),
            cap
        );
        assert_eq!(
            read_confined(dir.path(), "capabilities/big.yaml", FileKind::Descriptor),
            Err(Refusal::TooLarge {
                path: "capabilities/big.yaml".to_string(),
                kind: FileKind::Descriptor,
                cap: cap as u64
            })
        );
        // The bigger kinds accept it.
        assert!(read_confined(dir.path(), "capabilities/big.yaml", FileKind::Registry).is_ok());
    }

    #[test]
    fn a_capped_reader_refuses_an_endless_stream() {
        // An endless reader (what /dev/zero is) stops at the cap.
        let mut reader = CappedReader::new(io::repeat(0), FileKind::Descriptor, "-");
        let mut sink = Vec::new();
        let err = reader.read_to_end(&mut sink).unwrap_err();
        assert!(matches!(
            Refusal::from_io(&err),
            Some(Refusal::TooLarge { .. })
        ));
        assert_eq!(sink.len() as u64, FileKind::Descriptor.cap());
    }

    #[test]
    fn a_capped_reader_streams_a_file_within_the_cap() {
        let dir = root();
        std::fs::write(dir.path().join("t.jsonl"), "{}\n{}\n").unwrap();
        let mut reader = open_confined_reader(dir.path(), "t.jsonl", FileKind::Trace).unwrap();
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert_eq!(text, "{}\n{}\n");
        assert_eq!(reader.consumed(), 6);
    }

    #[test]
    fn caps_grow_from_hand_written_to_streamed() {
        assert!(FileKind::Descriptor.cap() <= FileKind::Registry.cap());
        assert!(FileKind::Registry.cap() <= FileKind::Trace.cap());
        assert!(FileKind::Trace.cap() <= FileKind::EventFile.cap());
        for kind in FileKind::ALL {
            assert!(kind.cap() > 0, "{kind}");
        }
    }
}
