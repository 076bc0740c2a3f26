//! The one open builder: every read of a file kvlower does not control starts here.
//!
//! ```text
//! FileKind::Descriptor.open().within(root).read("capabilities/x.yaml")  // whole, capped
//! FileKind::Trace.open().reader(path)                                   // streamed, capped
//! FileKind::Trace.open().bounded_by_caller().file(path)                 // the caller caps
//! FileKind::Snippet.open().within(root).resolve(rel)                    // opened by no one
//! ```
//!
//! Whatever the call, the same rules, in order: links and `..` resolved and, when a root
//! applies, the result kept inside it; kernel pseudo-files refused; anything but a
//! regular file refused *before* it is opened; the size checked against the kind's cap;
//! a non-blocking open; the open descriptor checked again (still a regular file, still
//! within the cap, still the file that was checked).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::refusal::{not_regular, too_large};
use crate::{CappedReader, FileKind, Refusal};

/// How to open a file: what it is for (its cap) and the root it must stay in. Made by
/// [`FileKind::open`]; consumed by [`Open::read`], [`Open::reader`], [`Open::file`] or
/// [`Open::resolve`].
#[derive(Debug, Clone, Copy)]
#[must_use = "an `Open` opens nothing until `read`, `reader`, `file` or `resolve` is called"]
pub struct Open<'r> {
    kind: FileKind,
    root: Option<Root<'r>>,
    size_checked: bool,
}

/// The root a path must stay in, as given or already resolved.
#[derive(Debug, Clone, Copy)]
enum Root<'r> {
    Given(&'r Path),
    Resolved(&'r Path),
}

impl FileKind {
    /// Starts opening a file of this kind: capped at [`FileKind::cap`], with no root
    /// (a path given on the command line) until [`Open::within`].
    pub const fn open(self) -> Open<'static> {
        Open {
            kind: self,
            root: None,
            size_checked: true,
        }
    }
}

impl<'r> Open<'r> {
    /// Confines the path to `root`: the path is taken relative to it, and anything that
    /// resolves outside it (a link, `..`, an absolute path) is [`Refusal::OutsideRoot`].
    pub fn within(self, root: &Path) -> Open<'_> {
        Open {
            kind: self.kind,
            root: Some(Root::Given(root)),
            size_checked: self.size_checked,
        }
    }

    /// [`Open::within`] a root the caller has already resolved (links and `..`), which
    /// is then not resolved again on every open.
    pub fn within_resolved(self, root: &Path) -> Open<'_> {
        Open {
            kind: self.kind,
            root: Some(Root::Resolved(root)),
            size_checked: self.size_checked,
        }
    }

    /// No size check before opening, for a caller that bounds its own reading
    /// (`kvlower gate --max-bytes`) with [`Open::file`]. Every other check stays.
    pub fn bounded_by_caller(self) -> Open<'r> {
        Open {
            size_checked: false,
            ..self
        }
    }

    /// Reads the file whole: at most the kind's cap, one byte more is
    /// [`Refusal::TooLarge`], never a truncation.
    pub fn read(self, path: impl AsRef<Path>) -> Result<Vec<u8>, Refusal> {
        let shown = shown(path.as_ref());
        let (file, _) = self.checked(path.as_ref(), &shown)?;
        let mut bytes = Vec::new();
        CappedReader::new(file, self.kind, &shown)
            .read_to_end(&mut bytes)
            .map_err(|e| Refusal::from_io_error(&shown, &e))?;
        Ok(bytes)
    }

    /// Opens the file for streaming; reading past the cap is an error that
    /// [`Refusal::from_io`] turns back into [`Refusal::TooLarge`].
    pub fn reader(self, path: impl AsRef<Path>) -> Result<CappedReader<File>, Refusal> {
        let shown = shown(path.as_ref());
        let (file, _) = self.checked(path.as_ref(), &shown)?;
        Ok(CappedReader::new(file, self.kind, &shown))
    }

    /// Opens the file and returns it with its length, for a caller that reads it its own
    /// way (with [`Open::bounded_by_caller`]: its own cap).
    pub fn file(self, path: impl AsRef<Path>) -> Result<(File, u64), Refusal> {
        let shown = shown(path.as_ref());
        self.checked(path.as_ref(), &shown)
    }

    /// Resolves the path to a regular file (inside the root, when there is one) without
    /// opening it: for a file whose existence is all that matters, or that is read later
    /// by its resolved path, so a file outside the root or a FIFO is refused before
    /// anything is opened. No size check: the caller has the length.
    pub fn resolve(self, path: impl AsRef<Path>) -> Result<Resolved, Refusal> {
        let shown = shown(path.as_ref());
        let resolved = self.resolve_path(path.as_ref(), &shown)?;
        let meta = std::fs::metadata(&resolved).map_err(|e| Refusal::from_io_error(&shown, &e))?;
        check_regular(&meta, &shown)?;
        Ok(Resolved {
            id: file_id(&meta),
            len: meta.len(),
            path: resolved,
        })
    }

    /// Resolve, check the type and size by metadata, open without blocking, and check
    /// the open descriptor again (the file may have been swapped).
    fn checked(self, path: &Path, shown: &str) -> Result<(File, u64), Refusal> {
        let resolved = self.resolve_path(path, shown)?;
        let before = std::fs::metadata(&resolved).map_err(|e| Refusal::from_io_error(shown, &e))?;
        check_regular(&before, shown)?;
        self.check_size(&before, shown)?;
        let file = open_nonblocking(&resolved).map_err(|e| Refusal::from_io_error(shown, &e))?;
        let after = file
            .metadata()
            .map_err(|e| Refusal::from_io_error(shown, &e))?;
        check_regular(&after, shown)?;
        self.check_size(&after, shown)?;
        if !same_file(&before, &after) {
            return Err(replaced(shown.to_string()));
        }
        Ok((file, after.len()))
    }

    /// Resolves links and `..`, and checks the result against the root.
    fn resolve_path(self, path: &Path, shown: &str) -> Result<PathBuf, Refusal> {
        let joined;
        let path = match self.root {
            Some(Root::Given(root) | Root::Resolved(root)) => {
                joined = root.join(path);
                joined.as_path()
            }
            None => path,
        };
        let resolved =
            std::fs::canonicalize(path).map_err(|e| Refusal::from_io_error(shown, &e))?;
        if let Some(root) = self.root {
            let canonical;
            let root = match root {
                Root::Resolved(root) => root,
                Root::Given(root) => {
                    canonical = std::fs::canonicalize(root).map_err(|e| Refusal::Io {
                        path: shown.to_string(),
                        message: format!("the root cannot be resolved: {e}"),
                    })?;
                    canonical.as_path()
                }
            };
            if !resolved.starts_with(root) {
                return Err(Refusal::OutsideRoot {
                    path: shown.to_string(),
                });
            }
        }
        if is_pseudo(&resolved) {
            return Err(Refusal::PseudoFile {
                path: shown.to_string(),
            });
        }
        Ok(resolved)
    }

    fn check_size(self, meta: &Metadata, shown: &str) -> Result<(), Refusal> {
        if self.size_checked && meta.len() > self.kind.cap() {
            return Err(too_large(shown, self.kind));
        }
        Ok(())
    }
}

/// A file [`Open::resolve`] found: its path after links, its length, and what tells
/// it from every other file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub path: PathBuf,
    pub len: u64,
    /// (device, inode): one file, however many paths name it; `None` where the
    /// platform does not say.
    pub id: Option<(u64, u64)>,
}

/// How a refusal names the path: as the caller gave it (relative to the root for a
/// confined open), never resolved, so messages are the same on every machine.
fn shown(path: &Path) -> String {
    path.display().to_string()
}

/// Whether a resolved path is under the kernel's pseudo-file systems.
pub(crate) fn is_pseudo(resolved: &Path) -> bool {
    resolved.starts_with("/proc") || resolved.starts_with("/sys")
}

pub(crate) fn replaced(path: String) -> Refusal {
    Refusal::Io {
        path,
        message: "the file was replaced while it was being opened".to_string(),
    }
}

#[cfg(unix)]
pub(crate) fn open_nonblocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK stays set while reading: it has no effect on regular files,
    // and a pseudo-file that slipped through answers EAGAIN instead of hanging.
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

#[cfg(not(unix))]
pub(crate) fn open_nonblocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

#[cfg(unix)]
pub(crate) fn same_file(a: &Metadata, b: &Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
pub(crate) fn same_file(_: &Metadata, _: &Metadata) -> bool {
    true
}

#[cfg(unix)]
fn file_id(meta: &Metadata) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    Some((meta.dev(), meta.ino()))
}

#[cfg(not(unix))]
fn file_id(_: &Metadata) -> Option<(u64, u64)> {
    None
}

pub(crate) fn check_regular(meta: &Metadata, shown: &str) -> Result<(), Refusal> {
    if meta.is_file() {
        return Ok(());
    }
    Err(not_regular(meta, shown.to_string()))
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
        let bytes = FileKind::Descriptor
            .open()
            .within(dir.path())
            .read("capabilities/x.yaml")
            .unwrap();
        assert_eq!(bytes, b"runtime: x\n");
    }

    #[test]
    fn follows_a_link_that_stays_inside_the_root() {
        let dir = root();
        std::fs::write(dir.path().join("real.yaml"), "a: 1\n").unwrap();
        std::os::unix::fs::symlink("../real.yaml", dir.path().join("capabilities/x.yaml")).unwrap();
        let bytes = FileKind::Descriptor
            .open()
            .within(dir.path())
            .read("capabilities/x.yaml")
            .unwrap();
        assert_eq!(bytes, b"a: 1\n");
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = root();
        mkfifo(&dir.path().join("capabilities/x.yaml"));
        let root = dir.path().to_path_buf();
        let confined = within_deadline(move || {
            FileKind::Descriptor
                .open()
                .within(&root)
                .read("capabilities/x.yaml")
        });
        assert!(
            matches!(confined, Err(Refusal::NotRegular { what, .. }) if what.contains("FIFO")),
            "{confined:?}"
        );
        let path = dir.path().join("capabilities/x.yaml");
        let streamed = within_deadline(move || FileKind::Trace.open().reader(&path).map(|_| ()));
        assert!(matches!(streamed, Err(Refusal::NotRegular { .. })));
    }

    #[test]
    fn a_link_to_dev_zero_is_refused() {
        let dir = root();
        let link = dir.path().join("capabilities/x.yaml");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        // No root: the device itself is refused.
        let result = within_deadline(move || FileKind::Catalog.open().read(&link));
        assert!(
            matches!(&result, Err(Refusal::NotRegular { what, .. }) if what.contains("character")),
            "{result:?}"
        );
        // With a root, it is refused earlier: it resolves outside.
        let root = dir.path().to_path_buf();
        let confined = within_deadline(move || {
            FileKind::Catalog
                .open()
                .within(&root)
                .read("capabilities/x.yaml")
        });
        assert!(matches!(confined, Err(Refusal::OutsideRoot { .. })));
    }

    #[test]
    fn dev_zero_named_directly_is_refused() {
        let result = within_deadline(|| FileKind::Trace.open().read(Path::new("/dev/zero")));
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
            let result = FileKind::Descriptor.open().within(&dir).read(rel);
            assert_eq!(
                result,
                Err(Refusal::OutsideRoot {
                    path: rel.to_string()
                }),
                "{rel}"
            );
        }
        let absolute = outer.path().join("secret");
        let result = FileKind::Descriptor
            .open()
            .within(&dir)
            .read(absolute.to_str().unwrap());
        assert!(matches!(result, Err(Refusal::OutsideRoot { .. })));
        assert!(matches!(
            FileKind::Descriptor
                .open()
                .within(&dir)
                .resolve("../secret"),
            Err(Refusal::OutsideRoot { .. })
        ));
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = root();
        std::fs::create_dir(dir.path().join("capabilities/x.yaml")).unwrap();
        let result = FileKind::Descriptor
            .open()
            .within(dir.path())
            .read("capabilities/x.yaml");
        assert!(matches!(
            result,
            Err(Refusal::NotRegular {
                what: "a directory",
                ..
            })
        ));
        assert!(matches!(
            FileKind::Descriptor
                .open()
                .within(dir.path())
                .resolve("capabilities"),
            Err(Refusal::NotRegular { .. })
        ));
    }

    #[test]
    fn missing_and_broken_links_are_missing() {
        let dir = root();
        std::os::unix::fs::symlink("nowhere", dir.path().join("capabilities/b.yaml")).unwrap();
        for rel in ["capabilities/a.yaml", "capabilities/b.yaml"] {
            assert_eq!(
                FileKind::Descriptor.open().within(dir.path()).read(rel),
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
        let result = FileKind::Descriptor
            .open()
            .within(dir.path())
            .read("capabilities/x.yaml");
        assert!(
            matches!(result, Err(Refusal::PermissionDenied { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn proc_files_are_refused() {
        let result =
            within_deadline(|| FileKind::Trace.open().read(Path::new("/proc/self/status")));
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
            FileKind::Descriptor
                .open()
                .within(dir.path())
                .read("capabilities/ok.yaml")
                .unwrap()
                .len(),
            cap
        );
        assert_eq!(
            FileKind::Descriptor
                .open()
                .within(dir.path())
                .read("capabilities/big.yaml"),
            Err(Refusal::TooLarge {
                path: "capabilities/big.yaml".to_string(),
                kind: FileKind::Descriptor,
                cap: cap as u64
            })
        );
        // The bigger kinds accept it.
        assert!(
            FileKind::Registry
                .open()
                .within(dir.path())
                .read("capabilities/big.yaml")
                .is_ok()
        );
    }

    #[test]
    fn a_capped_reader_streams_a_file_within_the_cap() {
        let dir = root();
        std::fs::write(dir.path().join("t.jsonl"), "{}\n{}\n").unwrap();
        let mut reader = FileKind::Trace
            .open()
            .within(dir.path())
            .reader("t.jsonl")
            .unwrap();
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        assert_eq!(text, "{}\n{}\n");
        assert_eq!(reader.consumed(), 6);
    }

    #[test]
    fn bounded_by_caller_skips_only_the_size_check() {
        let dir = root();
        let cap = FileKind::Descriptor.cap() as usize;
        let big = dir.path().join("capabilities/big.yaml");
        std::fs::write(&big, vec![b'a'; cap + 1]).unwrap();
        assert!(matches!(
            FileKind::Descriptor.open().file(&big),
            Err(Refusal::TooLarge { .. })
        ));
        let (_, len) = FileKind::Descriptor
            .open()
            .bounded_by_caller()
            .file(&big)
            .unwrap();
        assert_eq!(len as usize, cap + 1);
        // Every other refusal stays: a FIFO, a device, a kernel pseudo-file.
        let fifo = dir.path().join("capabilities/fifo");
        mkfifo(&fifo);
        let refused = within_deadline(move || {
            FileKind::Trace
                .open()
                .bounded_by_caller()
                .file(&fifo)
                .map(|_| ())
        });
        assert!(
            matches!(refused, Err(Refusal::NotRegular { .. })),
            "{refused:?}"
        );
        let zero = FileKind::Trace.open().bounded_by_caller().file("/dev/zero");
        assert!(matches!(zero, Err(Refusal::NotRegular { .. })));
        let proc = FileKind::Trace
            .open()
            .bounded_by_caller()
            .file("/proc/self/status");
        assert!(matches!(proc, Err(Refusal::PseudoFile { .. })));
    }

    #[test]
    fn a_resolved_root_confines_like_a_given_one() {
        let outer = tempfile::tempdir().unwrap();
        std::fs::write(outer.path().join("secret"), "x\n").unwrap();
        let dir = outer.path().join("repo");
        std::fs::create_dir_all(dir.join("capabilities")).unwrap();
        std::fs::write(dir.join("capabilities/x.yaml"), "a: 1\n").unwrap();
        let resolved_root = std::fs::canonicalize(&dir).unwrap();
        let open = FileKind::Descriptor.open().within_resolved(&resolved_root);
        assert_eq!(open.read("capabilities/x.yaml").unwrap(), b"a: 1\n");
        assert_eq!(
            open.read("../secret"),
            Err(Refusal::OutsideRoot {
                path: "../secret".to_string()
            })
        );
        let found = open.resolve("capabilities/x.yaml").unwrap();
        assert_eq!(found.len, 5);
        assert_eq!(found.path, resolved_root.join("capabilities/x.yaml"));
        assert!(found.id.is_some());
    }
}
