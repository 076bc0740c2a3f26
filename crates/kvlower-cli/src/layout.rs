//! The results layout: where `kvlower matrix` writes what it generates, and how the
//! set is replaced. Policy only (which directories, the journal's name, the stage
//! prefix, the pinned matrix); the writing itself is kvlower-fs's
//! ([`kvlower_fs::write`]). `matrix` and `bad-lowering` write through [`write_set`],
//! `check` reads the same names back, so no command imports another for them.
//!
//! The generated set is written as a whole ([`write_set`]): every changed file is
//! staged beside its target first (so an unwritable `schemas/` is found before any
//! result is replaced), a journal then records the commit, and only then are the
//! staged files renamed into place. A run killed at any point leaves either the old
//! set, the new set, or a journal that the next `kvlower matrix` completes; staged
//! files of a run that died before its journal are removed by the next run.
//! `kvlower check` reports every leftover as a `stray-file`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use kvlower_fs::write::WriteError;

use crate::generated::GeneratedFile;

/// The directories whose every file `kvlower matrix` generates.
pub const GENERATED_DIRS: &[&str] = &["results", "schemas"];
/// Staged files and the journal's own temporary file start with this.
pub const STAGE_PREFIX: &str = ".kvlower-stage.";
/// Lists `staged<TAB>target` pairs once every file is staged; its presence
/// means "this set is committed: finish the renames".
pub const JOURNAL: &str = "results/.kvlower-journal";
/// The generated result that records the catalog digest (`catalog.digest`).
pub const PINNED_MATRIX: &str = "results/lowering-matrix.json";

/// What [`write_set`] did.
#[derive(Debug, Default)]
pub struct WriteOutcome {
    /// Files replaced, relative to the root, in the order given.
    pub written: Vec<String>,
    /// Files an interrupted earlier run had committed and this run renamed.
    pub completed: Vec<String>,
    /// Leftover temporary files of an earlier run, removed.
    pub removed: Vec<String>,
}

/// What a write recovered, removed and wrote ([`WriteOutcome`]'s three lists), a line
/// each, for people.
pub fn report_paths(completed: &[String], removed: &[String], written: &[String]) -> String {
    let mut text = String::new();
    for path in completed {
        text.push_str(&format!(
            "completed {path} (an interrupted run had staged it)\n"
        ));
    }
    for path in removed {
        text.push_str(&format!("removed leftover {path}\n"));
    }
    for path in written {
        text.push_str(&format!("wrote {path}\n"));
    }
    text
}

/// Replaces the changed files of `files` (paths relative to `root`, each in
/// one of [`GENERATED_DIRS`]) all together or not at all. Unchanged files
/// are not touched. Refuses to write through a symbolic link or into a
/// directory that is not one.
pub fn write_set(root: &Path, files: &[GeneratedFile]) -> anyhow::Result<WriteOutcome> {
    write_set_until(root, files, &mut Crash(None))
}

/// A simulated kill for the tests: `Crash(Some(n))` stops [`write_set_until`]
/// dead (no clean-up, like SIGKILL) before its `n`-th file-system step.
struct Crash(Option<usize>);

#[derive(Debug)]
struct Crashed;

impl std::fmt::Display for Crashed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("simulated crash")
    }
}

impl std::error::Error for Crashed {}

impl Crash {
    fn step(&mut self) -> anyhow::Result<()> {
        match &mut self.0 {
            Some(0) => Err(Crashed.into()),
            Some(n) => {
                *n -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

fn write_set_until(
    root: &Path,
    files: &[GeneratedFile],
    crash: &mut Crash,
) -> anyhow::Result<WriteOutcome> {
    let mut outcome = WriteOutcome::default();
    let dirs = prepare_dirs(root)?;
    recover(root, &dirs, &mut outcome, crash)?;

    let changed: Vec<&GeneratedFile> = files
        .iter()
        .filter(|f| {
            kvlower_fs::FileKind::Result
                .open()
                .within(root)
                .read(f.path)
                .map_or(true, |old| old != f.contents.as_bytes())
        })
        .collect();
    if changed.is_empty() {
        return Ok(outcome);
    }
    for file in &changed {
        // The README's generated table is the one generated file outside them.
        let dir = match file.path.split_once('/') {
            Some((dir, _)) => dir,
            None if file.path == crate::readme::README => GENERATED_DIRS[0],
            None => bail!("{} is not in a generated directory", file.path),
        };
        if !GENERATED_DIRS.contains(&dir) {
            bail!("{} is not in a generated directory", file.path);
        }
        let target = root.join(file.path);
        if let Ok(meta) = kvlower_fs::inspect::lstat(&target)
            && meta.is_dir()
        {
            bail!("{} is a directory; nothing written", file.path);
        }
    }

    // Stage everything first: any unwritable directory fails here, before a
    // single target is replaced.
    let mut staged: Vec<(String, String)> = Vec::new();
    for file in &changed {
        let stage = stage_path(file.path);
        crash.step()?;
        if let Err(e) = write_durably(&root.join(&stage), file.contents.as_bytes()) {
            for (s, _) in &staged {
                let _ = kvlower_fs::write::remove_file(&root.join(s));
            }
            let _ = kvlower_fs::write::remove_file(&root.join(&stage));
            return Err(e.context(format!(
                "cannot write {}; nothing written (the generated set is replaced all together)",
                file.path
            )));
        }
        staged.push((stage, file.path.to_string()));
    }

    // The commit point: once the journal exists, the new set is the set.
    let journal_text: String = staged
        .iter()
        .map(|(stage, target)| format!("{stage}\t{target}\n"))
        .collect();
    let journal_tmp = stage_path(JOURNAL);
    crash.step()?;
    if let Err(e) = write_durably(&root.join(&journal_tmp), journal_text.as_bytes())
        .and_then(|()| rename_durably(root, &journal_tmp, JOURNAL))
    {
        for (s, _) in &staged {
            let _ = kvlower_fs::write::remove_file(&root.join(s));
        }
        let _ = kvlower_fs::write::remove_file(&root.join(&journal_tmp));
        return Err(e.context("cannot write the journal; nothing written"));
    }
    complete(root, &staged, &dirs, crash)?;
    outcome.written = staged.into_iter().map(|(_, target)| target).collect();
    Ok(outcome)
}

/// `results/x.json` -> `results/.kvlower-stage.x.json`.
pub fn stage_path(target: &str) -> String {
    match target.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/{STAGE_PREFIX}{name}"),
        None => format!("{STAGE_PREFIX}{target}"),
    }
}

/// Creates the generated directories; refuses a link or a non-directory.
fn prepare_dirs(root: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for dir in GENERATED_DIRS {
        let path = root.join(dir);
        match kvlower_fs::inspect::lstat(&path) {
            Ok(meta) if meta.file_type().is_symlink() => bail!(
                "{dir}/ is a symbolic link; kvlower matrix never writes through one \
                 (replace it with a directory); nothing written"
            ),
            Ok(meta) if !meta.is_dir() => {
                bail!("{dir}/ is not a directory; nothing written")
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                kvlower_fs::write::create_dir(&path).with_context(|| format!("creating {dir}/"))?;
            }
            Err(e) => return Err(e).with_context(|| format!("inspecting {dir}/")),
        }
        dirs.push(path);
    }
    Ok(dirs)
}

/// Finishes a journaled set, then removes every leftover temporary file
/// (staged files without a journal are an uncommitted set: rolled back).
fn recover(
    root: &Path,
    dirs: &[PathBuf],
    outcome: &mut WriteOutcome,
    crash: &mut Crash,
) -> anyhow::Result<()> {
    match kvlower_fs::FileKind::Result
        .open()
        .within(root)
        .read(JOURNAL)
    {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let mut pairs = Vec::new();
            for line in text.lines() {
                let Some((stage, target)) = line.split_once('\t') else {
                    continue;
                };
                // Only pairs this program writes: a generated target and its stage.
                let valid = stage_path(target) == stage
                    && GENERATED_DIRS
                        .iter()
                        .any(|d| target.strip_prefix(d).is_some_and(|r| r.starts_with('/')))
                    && !target.contains("..")
                    && target.matches('/').count() == 1;
                if valid && kvlower_fs::inspect::is_file(&root.join(stage)) {
                    pairs.push((stage.to_string(), target.to_string()));
                }
            }
            complete(root, &pairs, dirs, crash)?;
            outcome
                .completed
                .extend(pairs.into_iter().map(|(_, target)| target));
        }
        Err(kvlower_fs::Refusal::Missing { .. }) => {}
        Err(refusal) => bail!("{refusal}; remove {JOURNAL} and run kvlower matrix again"),
    }
    for (dir, path) in GENERATED_DIRS.iter().zip(dirs) {
        let Ok(entries) = kvlower_fs::walk::list(path) else {
            continue;
        };
        for entry in entries {
            let entry =
                entry.with_context(|| format!("reading an entry of {dir}/ to remove leftovers"))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            // `.tmp*` are what earlier versions (tempfile's default) left behind.
            if (name.starts_with(STAGE_PREFIX) || name.starts_with(".tmp"))
                && entry.file_type().is_ok_and(|t| t.is_file())
            {
                crash.step()?;
                kvlower_fs::write::remove_file(&entry.path())
                    .with_context(|| format!("removing the leftover {dir}/{name}"))?;
                outcome.removed.push(format!("{dir}/{name}"));
            }
        }
    }
    Ok(())
}

/// Renames each staged file onto its target, then removes the journal.
fn complete(
    root: &Path,
    pairs: &[(String, String)],
    dirs: &[PathBuf],
    crash: &mut Crash,
) -> anyhow::Result<()> {
    for (stage, target) in pairs {
        crash.step()?;
        kvlower_fs::write::rename(&root.join(stage), &root.join(target))
            .with_context(|| format!("replacing {target}"))?;
    }
    for dir in dirs {
        sync_dir(dir);
    }
    crash.step()?;
    match kvlower_fs::write::remove_file(&root.join(JOURNAL)) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("removing {JOURNAL}")),
    }
    if let Some(dir) = dirs.first() {
        sync_dir(dir);
    }
    Ok(())
}

/// Creates `path` (which must not exist), writes and syncs it.
fn write_durably(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    kvlower_fs::write::create_new_durably(path, contents).map_err(|e| match e {
        WriteError::Create(e) => {
            anyhow::Error::new(e).context(format!("creating {}", path.display()))
        }
        WriteError::Write(e) => {
            anyhow::Error::new(e).context(format!("writing {}", path.display()))
        }
    })
}

fn rename_durably(root: &Path, from: &str, to: &str) -> anyhow::Result<()> {
    kvlower_fs::write::rename(&root.join(from), &root.join(to))
        .with_context(|| format!("writing {to}"))?;
    if let Some(parent) = root.join(to).parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// Makes renames in `dir` durable (best effort: not every platform can).
fn sync_dir(dir: &Path) {
    kvlower_fs::write::sync_dir(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "old\n";

    fn new_set() -> Vec<GeneratedFile> {
        [
            "results/a.json",
            "results/b.md",
            "schemas/s.json",
            "schemas/t.json",
        ]
        .into_iter()
        .map(|path| GeneratedFile {
            path,
            contents: format!("new {path}\n"),
        })
        .collect()
    }

    fn old_repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for f in new_set() {
            let path = dir.path().join(f.path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, OLD).expect("write");
        }
        dir
    }

    /// "old", "new", or "mixed" for the visible set; panics on a torn file.
    fn state(root: &Path) -> &'static str {
        let files = new_set();
        let new = files
            .iter()
            .filter(|f| {
                let text = std::fs::read_to_string(root.join(f.path)).expect("target exists");
                assert!(text == OLD || text == f.contents, "torn: {text:?}");
                text == f.contents
            })
            .count();
        match new {
            0 => "old",
            n if n == files.len() => "new",
            _ => "mixed",
        }
    }

    fn litter(root: &Path) -> Vec<String> {
        let files = new_set();
        let mut extra = Vec::new();
        for dir in GENERATED_DIRS {
            for entry in std::fs::read_dir(root.join(dir))
                .expect("read_dir")
                .flatten()
            {
                let rel = format!("{dir}/{}", entry.file_name().to_string_lossy());
                if !files.iter().any(|f| f.path == rel) {
                    extra.push(rel);
                }
            }
        }
        extra
    }

    /// A kill before every single step: the visible set is old or new
    /// unless a journal says how to finish it, and the next run leaves the
    /// new set and nothing else.
    #[test]
    fn a_crash_at_any_step_is_old_new_or_journaled_then_recovered() {
        let mut crashed_at_least_once = false;
        let mut saw_mixed = false;
        for n in 0.. {
            let dir = old_repo();
            let root = dir.path();
            // Stale leftovers of an earlier version, to be cleaned up too.
            std::fs::write(root.join("results/.tmpAbC123"), "partial").expect("write");
            match write_set_until(root, &new_set(), &mut Crash(Some(n))) {
                Err(e) if e.is::<Crashed>() => crashed_at_least_once = true,
                Err(e) => panic!("{e:#}"),
                Ok(_) => {
                    assert_eq!(state(root), "new");
                    assert!(litter(root).is_empty(), "{:?}", litter(root));
                    break;
                }
            }
            let visible = state(root);
            if visible == "mixed" {
                saw_mixed = true;
                assert!(
                    root.join(JOURNAL).is_file(),
                    "mixed set without a journal at step {n}"
                );
            }
            let outcome = write_set(root, &new_set()).expect("recovery run");
            assert_eq!(state(root), "new", "step {n}");
            assert!(litter(root).is_empty(), "step {n}: {:?}", litter(root));
            if visible == "mixed" {
                assert!(!outcome.completed.is_empty());
            }
        }
        assert!(crashed_at_least_once);
        assert!(
            saw_mixed,
            "no crash point between two renames was exercised"
        );
    }

    #[test]
    fn an_unwritable_target_fails_before_any_file_is_replaced() {
        let dir = old_repo();
        let root = dir.path();
        // As root, permission bits do not stop writes; a directory where a
        // file must go does, for any user.
        std::fs::remove_file(root.join("schemas/t.json")).expect("rm");
        std::fs::create_dir(root.join("schemas/t.json")).expect("mkdir");
        assert!(write_set(root, &new_set()).is_err());
        for f in ["results/a.json", "results/b.md", "schemas/s.json"] {
            assert_eq!(
                std::fs::read_to_string(root.join(f)).expect("read"),
                OLD,
                "{f}"
            );
        }
        assert_eq!(litter(root), Vec::<String>::new());
    }

    #[test]
    #[expect(
        clippy::print_stderr,
        reason = "a skipped property says so on the test output"
    )]
    fn a_read_only_directory_fails_before_any_file_is_replaced() {
        use std::os::unix::fs::PermissionsExt;
        let dir = old_repo();
        let root = dir.path();
        let schemas = root.join("schemas");
        std::fs::set_permissions(&schemas, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        // Privileged users (CI containers run as root) ignore mode bits.
        let probe = schemas.join(".probe");
        if std::fs::write(&probe, "").is_ok() {
            let _ = std::fs::remove_file(&probe);
            std::fs::set_permissions(&schemas, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
            eprintln!("skipped: running with privileges that ignore mode bits");
            return;
        }
        let result = write_set(root, &new_set());
        std::fs::set_permissions(&schemas, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert!(result.is_err());
        assert_eq!(state(root), "old");
    }

    #[test]
    fn a_symlinked_results_directory_is_never_written_through() {
        let dir = old_repo();
        let root = dir.path();
        let elsewhere = tempfile::tempdir().expect("tempdir");
        std::fs::remove_dir_all(root.join("results")).expect("rm");
        std::os::unix::fs::symlink(elsewhere.path(), root.join("results")).expect("symlink");
        let err = write_set(root, &new_set()).expect_err("refused");
        assert!(format!("{err:#}").contains("symbolic link"), "{err:#}");
        assert_eq!(
            std::fs::read_dir(elsewhere.path())
                .expect("read_dir")
                .count(),
            0
        );
        assert_eq!(
            std::fs::read_to_string(root.join("schemas/s.json")).expect("read"),
            OLD
        );
    }
}
