//! Writing: the mechanism of kvlower's atomic writes. A file is written in full beside
//! its target (a temporary file, or a staged file created new), synced, and only then
//! renamed into place, and the directory synced, so a reader never sees half a file;
//! which files, in which directories, under which names is the caller's policy (the
//! CLI's results layout).

use std::io::{self, Write};
use std::path::Path;

pub use tempfile::NamedTempFile;

/// Why [`create_new_durably`] failed: the file could not be created (it exists, the
/// directory is not writable), or it was created but not written in full.
#[derive(Debug)]
pub enum WriteError {
    Create(io::Error),
    Write(io::Error),
}

/// Creates `path` (which must not exist) with ordinary permissions (0644 before the
/// umask), writes `contents` and syncs it.
pub fn create_new_durably(path: &Path, contents: &[u8]) -> Result<(), WriteError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o644);
    }
    let mut file = options.open(path).map_err(WriteError::Create)?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .map_err(WriteError::Write)
}

/// A temporary file in `dir` (same file system, so the final rename is atomic) with
/// ordinary permissions: tempfile creates them private (0600).
pub fn readable_temp_file(dir: &Path) -> io::Result<NamedTempFile> {
    let tmp = NamedTempFile::new_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(tmp)
}

/// A private temporary file in `dir` whose name starts with `prefix`, for output that
/// is renamed into place only once it is complete.
pub fn temp_file_in(dir: &Path, prefix: &str) -> io::Result<NamedTempFile> {
    tempfile::Builder::new().prefix(prefix).tempfile_in(dir)
}

/// Renames the finished temporary file onto `path`, replacing whatever is there.
pub fn persist_replacing(tmp: NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.persist(path).map(drop).map_err(|e| e.error)
}

/// Renames the finished temporary file to `path`, never over an existing file (even
/// one that appeared meanwhile); the temporary file is removed on failure.
pub fn persist_new(tmp: NamedTempFile, path: &Path) -> io::Result<()> {
    tmp.persist_noclobber(path).map(drop).map_err(|e| e.error)
}

/// Renames `from` onto `to` (atomic within one file system).
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
}

/// Removes the file `path`.
pub fn remove_file(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)
}

/// Removes the directory `path` if it is empty (a rollback never removes what it did
/// not make).
pub fn remove_empty_dir(path: &Path) -> io::Result<()> {
    std::fs::remove_dir(path)
}

/// Creates the directory `path`; its parent must exist.
pub fn create_dir(path: &Path) -> io::Result<()> {
    std::fs::create_dir(path)
}

/// Creates the directory `path` and every missing parent.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    std::fs::create_dir_all(path)
}

/// The first leading part of `rel` (a relative path under `root`: `schemas`, then
/// `schemas/x.json`) that is a symbolic link, if any: what a writer must refuse, since
/// writing into `root/rel` would write wherever the link points (docs/files.md). A part
/// that does not exist ends the walk (nothing below it exists either); `root` itself is
/// the caller's choice and is not looked at.
pub fn first_link(root: &Path, rel: &str) -> Option<String> {
    let mut at = std::path::PathBuf::new();
    for part in Path::new(rel).components() {
        at.push(part);
        match std::fs::symlink_metadata(root.join(&at)) {
            Ok(meta) if meta.file_type().is_symlink() => return Some(at.display().to_string()),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Makes renames in `dir` durable (best effort: not every platform can sync a
/// directory). Opening a directory reads nothing, but it is a file opened all the
/// same, so it lives here with every other open.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_first_link_on_a_path_is_found() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("/", dir.path().join("a/l")).unwrap();
        assert_eq!(first_link(dir.path(), "a/l/x"), Some("a/l".to_string()));
        assert_eq!(first_link(dir.path(), "a/l"), Some("a/l".to_string()));
        assert_eq!(first_link(dir.path(), "a/m/x"), None);
        assert_eq!(first_link(dir.path(), "a"), None);
    }

    #[test]
    fn a_new_file_is_created_once_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x");
        create_new_durably(&path, b"a\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n");
        assert!(matches!(
            create_new_durably(&path, b"b\n"),
            Err(WriteError::Create(e)) if e.kind() == io::ErrorKind::AlreadyExists
        ));
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n");
    }

    #[test]
    fn a_readable_temp_file_persists_new_only_where_nothing_is() {
        let dir = tempfile::tempdir().unwrap();
        let mut tmp = readable_temp_file(dir.path()).unwrap();
        let mode = tmp.as_file().metadata().unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
        tmp.write_all(b"new\n").unwrap();
        let target = dir.path().join("t");
        std::fs::write(&target, "old\n").unwrap();
        assert!(persist_new(tmp, &target).is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"old\n");
        // Nothing left behind but the target.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        let mut tmp = temp_file_in(dir.path(), ".kvlower-x-").unwrap();
        tmp.write_all(b"new\n").unwrap();
        persist_replacing(tmp, &target).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new\n");
    }
}
