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
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::Exit;

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

pub fn run(args: &ReproduceArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let committed = read_folder(&args.committed)?;
    let fresh = read_folder(&args.fresh)?;
    match kvlower_reproduce::compare(&committed, &fresh) {
        Ok(n) => {
            writeln!(
                out,
                "reproduce-diff: {n} files agree ({} and {})",
                args.committed.display(),
                args.fresh.display()
            )?;
            Ok(Exit::Success)
        }
        Err(d) => {
            writeln!(
                err,
                "reproduce-diff: the fresh run differs from {}: {d}",
                args.committed.display()
            )?;
            Ok(Exit::Findings)
        }
    }
}

fn read_folder(root: &Path) -> anyhow::Result<BTreeMap<String, Vec<u8>>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            let path = entry.path();
            let kind = entry.file_type()?;
            if kind.is_dir() {
                stack.push(path);
                continue;
            }
            if !kind.is_file() {
                bail!("{}: not a regular file (a link is refused)", path.display());
            }
            if files.len() >= MAX_FILES {
                bail!("{}: more than {MAX_FILES} files", root.display());
            }
            let len = entry.metadata()?.len();
            if len > MAX_FILE_BYTES {
                bail!(
                    "{}: {len} bytes, over the cap of {MAX_FILE_BYTES}",
                    path.display()
                );
            }
            let rel = path
                .strip_prefix(root)
                .expect("a path found under root")
                .to_string_lossy()
                .replace('\\', "/");
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            files.insert(rel, bytes);
        }
    }
    Ok(files)
}
