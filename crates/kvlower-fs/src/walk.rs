//! Walking directories: the one directory listing ([`list`]) and the trace walker of
//! `kvlower gate PATH…` ([`find_jsonl`]), which expands a directory to the `*.jsonl`
//! files below it, never follows a directory link, and reports everything it cannot
//! read or will not follow as a refused entry of its own, so no trace is dropped
//! without a word. Its entries are opened by [`open_found`], which applies the rules
//! of every read (regular files only, checked before opening, never blocking) with no
//! per-kind cap: the gate bounds its own reading (`--max-bytes`).

use std::ffi::OsStr;
use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use crate::open::{is_pseudo, open_nonblocking, replaced, same_file};
use crate::refusal::not_regular;
use crate::{FileKind, Refusal};

/// The entries of the directory `dir`, in the order the system lists them.
pub fn list(dir: &Path) -> io::Result<std::fs::ReadDir> {
    std::fs::read_dir(dir)
}

/// One input a walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A regular file (after links), named as a PATH or reached through a link, and its
    /// size.
    File(PathBuf, u64),
    /// A file a directory walk listed by its entry as a regular file (no link) below a
    /// directory outside the kernel's pseudo-file systems: not stat-ed before it is
    /// opened (the open tells its size), with the device of its directory, which the
    /// opened file must be on.
    Listed(PathBuf, u64),
    /// Refused or unreadable before reading.
    Refused(PathBuf, Unread),
}

impl Found {
    /// The path, in the form it was given in or listed (never made absolute).
    pub fn path(&self) -> &Path {
        match self {
            Found::File(p, _) | Found::Listed(p, _) | Found::Refused(p, _) => p,
        }
    }
}

/// Why a found input is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unread {
    /// Not a regular file: what it is ("a FIFO", "a directory", ...).
    NotRegular(&'static str),
    /// It could not be read (missing, no permission, ...): why.
    Read(String),
}

/// What a PATH named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Named {
    /// A directory: its `*.jsonl` files were added, sorted (maybe none).
    Directory,
    /// Anything else: one entry was added.
    Entry,
}

/// Adds the inputs `path` names to `found`: the path itself, or for a directory every
/// `*.jsonl` below it, sorted by path, and every directory or entry that cannot be read
/// as a refused input (so one unreadable subdirectory is reported and the rest still
/// found). A path that cannot be stat-ed (missing, no permission) is a refused input.
pub fn find_jsonl(path: &Path, found: &mut Vec<Found>) -> Named {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => {
            found.push(Found::Refused(
                path.to_path_buf(),
                Unread::Read(e.to_string()),
            ));
            return Named::Entry;
        }
    };
    if !meta.is_dir() {
        found.push(classify(path.to_path_buf(), &meta));
        return Named::Entry;
    }
    // Resolved once: a directory link below it is judged against this.
    let top = std::fs::canonicalize(path).ok();
    let walk = Walk {
        listed_ok: outside_pseudo_fs(path),
        top: top.as_deref(),
    };
    walk_jsonl(path, &walk, found);
    Named::Directory
}

/// Opens an input [`find_jsonl`] found, or says why it is refused. A listed file that
/// does not simply open as a regular file on its directory's device is checked as a
/// named one is (stat through links, then open and check again), so every refusal and
/// message is theirs.
pub fn open_found(found: &Found) -> Result<(File, u64), Unread> {
    match found {
        Found::File(path, _) => open_named(path),
        Found::Listed(path, device) => open_listed(path, *device),
        Found::Refused(_, why) => Err(why.clone()),
    }
}

fn open_listed(path: &Path, dir_device: u64) -> Result<(File, u64), Unread> {
    if let Some(opened) = open_walked_regular(path, dir_device) {
        return Ok(opened);
    }
    let meta = std::fs::metadata(path).map_err(|e| Unread::Read(e.to_string()))?;
    if let Some(kind) = not_regular_kind(&meta) {
        return Err(Unread::NotRegular(kind));
    }
    // Replaced by a link since the walk: a link is opened the long way.
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        open_listed_regular(path, &meta).map_err(unread)
    } else {
        open_named(path)
    }
}

/// Opens `path` for reading only if it is a regular file (after links), like every
/// other read: a FIFO or a device is refused before it is opened (so it cannot block),
/// and the opened file is checked again (it may have been replaced in between). The
/// size is bounded by the caller, not a file cap.
fn open_named(path: &Path) -> Result<(File, u64), Unread> {
    FileKind::Trace
        .open()
        .bounded_by_caller()
        .file(path)
        .map_err(unread)
}

fn unread(refusal: Refusal) -> Unread {
    match refusal {
        Refusal::NotRegular { what, .. } => Unread::NotRegular(what),
        Refusal::PseudoFile { .. } => Unread::NotRegular("a kernel pseudo-file"),
        other => Unread::Read(other.to_string()),
    }
}

/// Opens `path`, which a directory walk that follows no link has just listed as a
/// regular file with metadata `listed`, without resolving the path and stat-ing it
/// again (the listing did both), below a directory checked once to be outside the
/// kernel's pseudo-file systems. The open is non-blocking and the opened file is
/// checked again: still a regular file, and the one listed.
fn open_listed_regular(path: &Path, listed: &Metadata) -> Result<(File, u64), Refusal> {
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
        return Err(replaced(shown()));
    }
    Ok((file, after.len()))
}

/// The device of the directory `dir` (after links), which [`open_walked_regular`] asks
/// of every file listed in it: one `statx` per walked directory. `None` where that is
/// not known (the directory cannot be stat-ed, or not on Unix): its files are then
/// checked the long way.
#[cfg(unix)]
fn directory_device(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(dir)
        .ok()
        .filter(Metadata::is_dir)
        .map(|m| m.dev())
}

/// Elsewhere no walked file is opened without the long checks.
#[cfg(not(unix))]
fn directory_device(_dir: &Path) -> Option<u64> {
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
/// ([`open_listed_regular`] or [`open_named`], which refuse kernel pseudo-files), which
/// tells why. One `openat` and one `fstat` for the common case instead of a `statx` of
/// the path before them. Returns the file and its length.
#[cfg(unix)]
fn open_walked_regular(path: &Path, dir_device: u64) -> Option<(File, u64)> {
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
fn open_walked_regular(_path: &Path, _dir_device: u64) -> Option<(File, u64)> {
    None
}

/// Whether `dir` resolves outside `/proc` and `/sys`, so that no file listed below it (not
/// following links) is a kernel pseudo-file; `false` when it cannot be resolved.
fn outside_pseudo_fs(dir: &Path) -> bool {
    std::fs::canonicalize(dir).is_ok_and(|resolved| !is_pseudo(&resolved))
}

/// What a non-regular file is, or `None` for a regular file (the gate's words, shorter
/// than a read refusal's).
fn not_regular_kind(meta: &Metadata) -> Option<&'static str> {
    let kind = meta.file_type();
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return Some("a FIFO");
        }
        if kind.is_char_device() {
            return Some("a character device");
        }
        if kind.is_block_device() {
            return Some("a block device");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
    }
    Some("not a regular file")
}

fn classify(path: PathBuf, meta: &Metadata) -> Found {
    match not_regular_kind(meta) {
        None => Found::File(path, meta.len()),
        Some(kind) => Found::Refused(path, Unread::NotRegular(kind)),
    }
}

/// Adds every `*.jsonl` below `dir` to `found`, and every directory or entry that cannot
/// be read as a refused input (so one unreadable subdirectory is reported and the rest
/// still judged), sorted by path: each directory's entries are visited in the order of
/// their names, a subdirectory's files where its name sorts, so the walk lists the paths
/// in `Path`'s component order without comparing whole paths (sorting the campaign's
/// paths afterwards cost more than listing them). Directory links are never followed, so
/// a link cycle cannot loop, and no trace is dropped without a word: a link (of any name
/// but `*.jsonl`) to a directory inside the walked directory adds nothing (the walk
/// reaches that directory, and every trace in it, by its real path, once); a link to a
/// directory outside it, and a link whose target cannot be reached (it may have been a
/// directory), are refused inputs of their own (exit 2), so the tally never silently
/// leaves reachable traces out.
fn walk_jsonl(dir: &Path, walk: &Walk<'_>, found: &mut Vec<Found>) {
    let unreadable = |e: io::Error| Unread::Read(format!("cannot read directory: {e}"));
    let listing = match list(dir) {
        Ok(entries) => entries,
        Err(e) => return found.push(Found::Refused(dir.to_path_buf(), unreadable(e))),
    };
    // Only what the walk uses is kept and sorted (directories, `*.jsonl` and entries
    // whose type cannot be read): a campaign directory may hold many other files.
    let mut entries = Vec::new();
    for entry in listing {
        match entry {
            Ok(entry) => {
                let name = entry.file_name();
                let kind = entry.file_type();
                let wanted = match &kind {
                    Ok(kind) => kind.is_dir() || kind.is_symlink() || is_jsonl(&name),
                    Err(_) => true,
                };
                if wanted {
                    entries.push((name, entry.path(), kind));
                }
            }
            // Named by `dir`, which sorts before everything below it.
            Err(e) => found.push(Found::Refused(dir.to_path_buf(), unreadable(e))),
        }
    }
    entries.sort_unstable_by(|(a, ..), (b, ..)| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    // Files listed here are opened without a stat when they are on this directory's device.
    let device = if walk.listed_ok {
        directory_device(dir)
    } else {
        None
    };
    for (name, path, kind) in entries {
        let kind = match kind {
            Ok(kind) => kind,
            Err(e) => {
                found.push(Found::Refused(path, Unread::Read(e.to_string())));
                continue;
            }
        };
        if kind.is_dir() {
            walk_jsonl(&path, walk, found);
        } else if kind.is_symlink() && !is_jsonl(&name) {
            if let Some(refused) = unwalked_link(path, walk.top) {
                found.push(refused);
            }
        } else if is_jsonl(&name) {
            if let Some(device) = device.filter(|_| kind.is_file()) {
                found.push(Found::Listed(path, device));
                continue;
            }
            // Follow a link to see what it names; never open it here.
            match std::fs::metadata(&path) {
                Ok(meta) => found.push(classify(path, &meta)),
                Err(e) => found.push(Found::Refused(path, Unread::Read(e.to_string()))),
            }
        }
    }
}

/// What a directory walk carries down.
struct Walk<'a> {
    /// The walked directory is outside the kernel's pseudo-file systems, so a regular file
    /// listed below it (no link) is not stat-ed here but opened directly ([`Found::Listed`]).
    listed_ok: bool,
    /// The walked directory, resolved (`None` when it cannot be: every directory link
    /// below it is then refused).
    top: Option<&'a Path>,
}

/// A link not named `*.jsonl` met by the walk: `None` when it names something other
/// than a directory (not a trace, like any other file) or a directory inside the walked
/// one (reached by its real path); otherwise a refused input saying why it was not walked.
fn unwalked_link(path: PathBuf, top: Option<&Path>) -> Option<Found> {
    let problem = match std::fs::metadata(&path) {
        Ok(meta) if !meta.is_dir() => return None,
        Ok(_) => {
            let inside = std::fs::canonicalize(&path)
                .ok()
                .zip(top)
                .is_some_and(|(target, top)| target.starts_with(top));
            if inside {
                return None;
            }
            Unread::NotRegular(
                "a link to a directory outside the walked directory, not followed; name its target as a PATH of its own",
            )
        }
        Err(e) => Unread::Read(format!(
            "a link whose target cannot be reached (it is not walked): {e}"
        )),
    };
    Some(Found::Refused(path, problem))
}

/// Whether a directory entry's name is a trace's: `*.jsonl`.
fn is_jsonl(name: &OsStr) -> bool {
    Path::new(name).extension().is_some_and(|e| e == "jsonl")
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(5))
            .expect("the open blocked")
    }

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo runs");
        assert!(status.success());
    }

    #[test]
    fn a_walked_file_opens_only_as_a_regular_file_reached_without_a_link() {
        let dir = tempfile::tempdir().expect("a temp dir");
        std::fs::create_dir(dir.path().join("capabilities")).expect("mkdir");
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
        let listed = fifo.clone();
        assert!(within_deadline(
            move || open_walked_regular(&listed, dev).is_none()
        ));
        // The long way tells why, without blocking.
        let refused = within_deadline(move || open_found(&Found::Listed(fifo, dev)).map(|_| ()));
        assert_eq!(refused, Err(Unread::NotRegular("a FIFO")));
        assert!(open_walked_regular(&dir.path().join("capabilities"), dev).is_none());
        assert!(open_walked_regular(&dir.path().join("capabilities/gone.jsonl"), dev).is_none());
    }

    #[test]
    fn the_walk_finds_jsonl_sorted_and_refuses_what_it_will_not_follow() {
        let outer = tempfile::tempdir().unwrap();
        let top = outer.path().join("t");
        std::fs::create_dir_all(top.join("b")).unwrap();
        std::fs::create_dir_all(outer.path().join("elsewhere")).unwrap();
        std::fs::write(top.join("b/2.jsonl"), "{}\n").unwrap();
        std::fs::write(top.join("a.jsonl"), "{}\n").unwrap();
        std::fs::write(top.join("notes.txt"), "x\n").unwrap();
        std::os::unix::fs::symlink(top.join("b"), top.join("inside")).unwrap();
        std::os::unix::fs::symlink(outer.path().join("elsewhere"), top.join("outside")).unwrap();
        mkfifo(&top.join("c.jsonl"));
        let mut found = Vec::new();
        assert_eq!(find_jsonl(&top, &mut found), Named::Directory);
        let paths: Vec<_> = found.iter().map(|f| f.path().to_path_buf()).collect();
        assert_eq!(
            paths,
            vec![
                top.join("a.jsonl"),
                top.join("b/2.jsonl"),
                top.join("c.jsonl"),
                top.join("outside")
            ]
        );
        assert!(matches!(found[0], Found::Listed(..)));
        assert!(matches!(
            &found[3],
            Found::Refused(_, Unread::NotRegular(why)) if why.starts_with("a link to a directory outside")
        ));
        // The FIFO was listed, not opened; opening it is refused without blocking.
        let fifo = found[2].clone();
        let opened = within_deadline(move || open_found(&fifo).map(|_| ()));
        assert_eq!(opened, Err(Unread::NotRegular("a FIFO")));
        // A missing PATH is one refused entry.
        let mut missing = Vec::new();
        assert_eq!(find_jsonl(&top.join("nope"), &mut missing), Named::Entry);
        assert!(matches!(&missing[..], [Found::Refused(_, Unread::Read(_))]));
    }
}
