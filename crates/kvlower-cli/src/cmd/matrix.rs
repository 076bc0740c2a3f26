//! `kvlower matrix`: regenerate every result under `results/`.
//!
//! Writes only when every input is valid, and each file atomically (a
//! temporary file in the same directory, then a rename), so a crash or an
//! error never leaves a half-written result. Unchanged files are not touched.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use kvlower_load::{LoadFailure, load_repository};

use crate::Exit;
use crate::results::generate;

#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// Repository root holding modes/, capabilities/ and results/
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

pub fn run(args: &MatrixArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let (repo, diagnostics) = match load_repository(&args.root) {
        Ok(loaded) => loaded,
        Err(LoadFailure::NoDescriptors { dir }) => {
            writeln!(err, "error: no descriptors found in {}", dir.display())?;
            return Ok(Exit::Usage);
        }
        Err(LoadFailure::Invalid(diagnostics)) => {
            print_findings(err, &diagnostics)?;
            writeln!(err, "kvlower matrix: nothing written")?;
            return Ok(Exit::Findings);
        }
    };
    if !diagnostics.is_empty() {
        print_findings(err, &diagnostics)?;
        writeln!(
            err,
            "kvlower matrix: {} finding(s); nothing written",
            diagnostics.len()
        )?;
        return Ok(Exit::Findings);
    }
    let files = generate(&repo);
    let mut written = 0;
    for file in &files {
        if write_if_changed(&args.root.join(file.path), &file.contents)? {
            written += 1;
            writeln!(out, "wrote {}", file.path)?;
        }
    }
    writeln!(
        out,
        "kvlower matrix: {} file(s) written, {} unchanged",
        written,
        files.len() - written
    )?;
    Ok(Exit::Success)
}

/// Atomically replaces `path` with `contents` unless it already holds them.
pub fn write_if_changed(path: &Path, contents: &str) -> anyhow::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == contents.as_bytes()) {
        return Ok(false);
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tmp = readable_temp_file(dir)
        .with_context(|| format!("creating a temporary file in {}", dir.display()))?;
    tmp.write_all(contents.as_bytes())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(true)
}

fn print_findings(
    err: &mut dyn Write,
    diagnostics: &[kvlower_load::Diagnostic],
) -> std::io::Result<()> {
    for d in diagnostics {
        writeln!(err, "{d}")?;
    }
    Ok(())
}

/// A temporary file in `dir` (same file system, so the final rename is atomic)
/// with ordinary permissions: tempfile creates them private (0600).
pub fn readable_temp_file(dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let tmp = tempfile::NamedTempFile::new_in(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    Ok(tmp)
}
