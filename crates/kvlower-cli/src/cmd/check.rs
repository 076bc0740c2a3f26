//! `kvlower check`: validate every input and check that every generated
//! result is fresh. Never writes.

use std::io::Write;
use std::path::{Path, PathBuf};

use kvlower_load::{Code, Diagnostic, LoadFailure, load_repository};

use crate::Exit;
use crate::output::{Format, ReportOptions, report};
use crate::results::{GeneratedFile, generate};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Repository root holding modes/, capabilities/ and results/
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Fail (exit 1) on any positive row whose grade is `cited`: accept only
    /// positives that `check` re-ran from files committed here
    #[arg(long)]
    pub require_verified: bool,
    #[command(flatten)]
    pub report: ReportOptions,
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
            let summary = format!(
                "kvlower check: {} finding(s); nothing judged",
                diagnostics.len()
            );
            report(&args.report, "check", &diagnostics, &summary, out, err)?;
            return Ok(Exit::Findings);
        }
    };
    let mut diffs = String::new();
    if diagnostics.is_empty() {
        for file in generate(&repo) {
            if let Some(d) = freshness(&repo.root, &file, &mut diffs) {
                diagnostics.push(d);
            }
        }
        diagnostics.extend(crate::cmd::bad_lowering::suite_diagnostics(&repo));
    }
    if args.require_verified {
        diagnostics.extend(cited_positives(&repo));
    }
    diagnostics.sort();
    let human = matches!(args.report.format, Format::Human | Format::Github);
    if human && !args.report.quiet && !diffs.is_empty() {
        write!(err, "{diffs}")?;
    }
    let stale = diagnostics
        .iter()
        .any(|d| matches!(d.code, Code::StaleResult | Code::MissingResult));
    let summary = format!(
        "kvlower check: {} descriptor(s), {} finding(s){}",
        repo.descriptors.len(),
        diagnostics.len(),
        if diagnostics.is_empty() {
            "; all results fresh".to_string()
        } else if stale {
            format!(
                "; regenerate with `kvlower matrix --root {}` and commit the result",
                args.root.display()
            )
        } else {
            String::new()
        }
    );
    report(&args.report, "check", &diagnostics, &summary, out, err)?;
    Ok(if diagnostics.is_empty() {
        Exit::Success
    } else {
        Exit::Findings
    })
}

/// Compares one generated file with the committed one; appends a unified diff when stale.
fn freshness(root: &Path, file: &GeneratedFile, diffs: &mut String) -> Option<Diagnostic> {
    let Ok(bytes) = std::fs::read(root.join(file.path)) else {
        return Some(
            Diagnostic::new(
                Code::MissingResult,
                file.path,
                "generated result is not committed",
            )
            .with_hint("run `kvlower matrix`"),
        );
    };
    let committed = String::from_utf8_lossy(&bytes);
    if committed == file.contents {
        return None;
    }
    let diff = similar::TextDiff::from_lines(committed.as_ref(), &file.contents);
    diffs.push_str(
        &diff
            .unified_diff()
            .context_radius(2)
            .header(
                &format!("a/{} (committed)", file.path),
                &format!("b/{} (regenerated)", file.path),
            )
            .to_string(),
    );
    Some(
        Diagnostic::new(
            Code::StaleResult,
            file.path,
            "committed result differs from the regenerated one",
        )
        .with_hint("run `kvlower matrix` and commit the result"),
    )
}

/// `--require-verified`: one finding per positive row that rests on a cited
/// (not re-run) anchor.
fn cited_positives(repo: &kvlower_load::Repository) -> Vec<Diagnostic> {
    let env = kvlower_load::FsEnvironment::new(repo.root.clone());
    let rows = kvlower_core::matrix::judge_all(
        &repo.catalog,
        repo.descriptors
            .iter()
            .map(|d| (d.path.as_str(), &d.descriptor)),
        &env,
    );
    rows.iter()
        .filter(|r| r.judgment.grade == Some(kvlower_core::Grade::Cited))
        .map(|r| {
            Diagnostic::new(
                Code::CitedPositive,
                r.descriptor_path,
                format!(
                    "row {}@{} is {} but its grade is `cited`: some anchor was not re-run by `check`",
                    r.judgment.mode, r.judgment.depth, r.judgment.label
                ),
            )
            .with_hint(format!(
                "run `kvlower explain {} --mode {} --depth {}` to see which anchors are cited",
                r.descriptor_path, r.judgment.mode, r.judgment.depth
            ))
        })
        .collect()
}
