//! `kvlower reproduce-diff`: does a live set-up's fresh evidence folder say what the
//! committed one says?
//!
//! ```text
//! kvlower reproduce-diff COMMITTED FRESH
//! ```
//!
//! Compares every file of the two folders (subfolders included, `reproduce.json`
//! excepted) byte for byte, and a capture file (`*.kvcap`) on its normal form
//! (docs/conformance.md, "Reproduction"; the rule is in the `kvlower-reproduce` crate).
//! Exit: 0 the same; 1 a difference, the first (in path order) named on stderr by file and
//! line; 2 usage, or a folder or file could not be read (more than 10,000 files or a file
//! over 256 MiB is refused, never read in part).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::Exit;
use crate::output::{Form, Outcome};

/// Most files one folder may hold, and the largest file read.
const MAX_FILES: usize = 10_000;
const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, clap::Args)]
pub struct ReproduceArgs {
    /// The committed evidence folder (or a copy of it)
    pub committed: PathBuf,
    /// The folder the live re-run wrote
    pub fresh: PathBuf,
}

/// The folders agree (exit 0, the summary on stdout) or the first difference (exit 1,
/// on stderr: it is what a person reads to mend the run).
pub fn run(args: &ReproduceArgs) -> anyhow::Result<Outcome<()>> {
    let committed = read_folder(&args.committed)?;
    let fresh = read_folder(&args.fresh)?;
    Ok(match kvlower_reproduce::compare(&committed, &fresh) {
        Ok(n) => {
            let summary = format!(
                "reproduce-diff: {n} files agree ({} and {})",
                args.committed.display(),
                args.fresh.display()
            );
            Outcome::report(
                "reproduce-diff",
                Exit::Success,
                Form::Lines,
                Vec::new(),
                summary,
            )
        }
        Err(d) => {
            let message = format!(
                "reproduce-diff: the fresh run differs from {}: {d}",
                args.committed.display()
            );
            Outcome::error("reproduce-diff", Exit::Findings, &message)
                .with_refusal(format!("{message}\n"))
        }
    })
}

/// Every file under `root` by its relative path, through kvlower-fs (a link, or a path
/// that resolves outside `root`, is refused; so is a folder over the caps).
fn read_folder(root: &Path) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel_dir) = stack.pop() {
        let dir = root.join(&rel_dir);
        let entries =
            kvlower_fs::walk::list(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let rel = rel_dir.join(entry.file_name());
            let path = root.join(&rel);
            let meta = kvlower_fs::inspect::lstat(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            if meta.is_dir() {
                stack.push(rel);
                continue;
            }
            if !meta.is_file() {
                bail!("{}: not a regular file (a link is refused)", path.display());
            }
            if files.len() >= MAX_FILES {
                bail!("{}: more than {MAX_FILES} files", root.display());
            }
            if meta.len() > MAX_FILE_BYTES {
                bail!(
                    "{}: {} bytes, over the cap of {MAX_FILE_BYTES}",
                    path.display(),
                    meta.len()
                );
            }
            let bytes = kvlower_fs::FileKind::EventFile
                .open()
                .within(root)
                .read(&rel)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            files.insert(rel.to_string_lossy().replace('\\', "/"), bytes);
        }
    }
    Ok(files)
}
