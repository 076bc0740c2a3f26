//! `kvlower check`: validate every input and check that every generated
//! result is fresh. Never writes.

use std::io::Write;
use std::path::PathBuf;

use kvlower_load::{Code, Diagnostic, LoadFailure, load_repository};

use crate::Exit;
use crate::results::{GeneratedFile, generate};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Repository root holding modes/, capabilities/ and results/
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
}

pub fn run(args: &CheckArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let (repo, mut diagnostics) = match load_repository(&args.root) {
        Ok(loaded) => loaded,
        Err(LoadFailure::NoDescriptors { dir }) => {
            writeln!(
                err,
                "error: no descriptors found in {} (expected capabilities/*.yaml under --root {})",
                dir.display(),
                args.root.display()
            )?;
            return Ok(Exit::Usage);
        }
        Err(LoadFailure::Invalid(diagnostics)) => {
            report(err, &diagnostics)?;
            writeln!(
                out,
                "kvlower check: {} finding(s); nothing judged",
                diagnostics.len()
            )?;
            return Ok(Exit::Findings);
        }
    };
    let mut stale = Vec::new();
    if diagnostics.is_empty() {
        for file in generate(&repo) {
            if let Some(d) = freshness(&repo.root, &file, err)? {
                stale.push(file.path);
                diagnostics.push(d);
            }
        }
    }
    diagnostics.sort();
    report(err, &diagnostics)?;
    if !stale.is_empty() {
        writeln!(
            err,
            "hint: regenerate with `kvlower matrix --root {}` and commit the result",
            args.root.display()
        )?;
    }
    writeln!(
        out,
        "kvlower check: {} descriptor(s), {} finding(s){}",
        repo.descriptors.len(),
        diagnostics.len(),
        if diagnostics.is_empty() {
            "; all results fresh"
        } else {
            ""
        }
    )?;
    Ok(if diagnostics.is_empty() {
        Exit::Success
    } else {
        Exit::Findings
    })
}

/// Compares one generated file with the committed one; prints a unified diff when stale.
fn freshness(
    root: &std::path::Path,
    file: &GeneratedFile,
    err: &mut dyn Write,
) -> anyhow::Result<Option<Diagnostic>> {
    let committed = match std::fs::read(root.join(file.path)) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => {
            return Ok(Some(
                Diagnostic::new(
                    Code::MissingResult,
                    file.path,
                    "generated result is not committed",
                )
                .with_hint("run `kvlower matrix`"),
            ));
        }
    };
    if committed == file.contents {
        return Ok(None);
    }
    let diff = similar::TextDiff::from_lines(&committed, &file.contents);
    write!(
        err,
        "{}",
        diff.unified_diff().context_radius(2).header(
            &format!("a/{} (committed)", file.path),
            &format!("b/{} (regenerated)", file.path)
        )
    )?;
    Ok(Some(
        Diagnostic::new(
            Code::StaleResult,
            file.path,
            "committed result differs from the regenerated one",
        )
        .with_hint("run `kvlower matrix` and commit the result"),
    ))
}

/// Prints every diagnostic, one block each.
pub fn report(err: &mut dyn Write, diagnostics: &[Diagnostic]) -> std::io::Result<()> {
    for d in diagnostics {
        writeln!(err, "{d}")?;
    }
    Ok(())
}
