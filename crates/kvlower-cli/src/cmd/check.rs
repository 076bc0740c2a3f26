//! `kvlower check`: validate every input and check that every generated
//! result is fresh. Never writes.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use kvlower_load::{CAPABILITIES_DIR, Code, Diagnostic, LoadFailure, load_repository};

use crate::Exit;
use crate::output::{ColorChoice, Format, ReportOptions, report, report_error, sarif};
use crate::results::{GeneratedFile, generate};

/// `check`'s output formats: every shared one, plus SARIF for code scanning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    /// For people: `file:line:col: error[code]: message`, the source line with a caret, a hint
    Human,
    /// One JSON document on stdout (the shared envelope, with a `schema_version`)
    Json,
    /// GitHub Actions `::error` annotations, then the human report
    Github,
    /// A Markdown summary, e.g. for `$GITHUB_STEP_SUMMARY`
    Markdown,
    /// SARIF 2.1.0 for GitHub code scanning (rules = diagnostic codes)
    Sarif,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Repository root holding modes/, capabilities/ and results/
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Fail (exit 1) on any positive row whose grade is `cited`: accept only
    /// positives that `check` re-ran from files committed here
    #[arg(long)]
    pub require_verified: bool,
    /// Output format
    #[arg(long, value_enum, default_value_t = CheckFormat::Human)]
    pub format: CheckFormat,
    /// Colour for human output (honours NO_COLOR)
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only the summary line
    #[arg(short, long)]
    pub quiet: bool,
}

impl CheckArgs {
    /// The shared report options (SARIF is printed by `check` itself).
    fn report_options(&self) -> ReportOptions {
        ReportOptions {
            format: match self.format {
                CheckFormat::Human | CheckFormat::Sarif => Format::Human,
                CheckFormat::Json => Format::Json,
                CheckFormat::Github => Format::Github,
                CheckFormat::Markdown => Format::Markdown,
            },
            color: self.color,
            quiet: self.quiet,
        }
    }
}

pub fn run(args: &CheckArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let (repo, mut diagnostics) = match load_repository(&args.root) {
        Ok(loaded) => loaded,
        Err(LoadFailure::NoDescriptors { dir }) => {
            let message = format!(
                "no descriptors found in {} (expected capabilities/*.yaml under --root {})",
                dir.display(),
                args.root.display()
            );
            if args.format == CheckFormat::Sarif {
                write!(out, "{}", sarif(&[], Some(&message)))?;
            } else {
                report_error(
                    args.report_options().format,
                    "check",
                    Exit::Usage,
                    &message,
                    out,
                    err,
                )?;
            }
            return Ok(Exit::Usage);
        }
        Err(LoadFailure::Invalid(diagnostics)) => {
            let summary = format!(
                "kvlower check: {} finding(s); nothing judged",
                diagnostics.len()
            );
            emit(args, Exit::Findings, &diagnostics, &summary, out, err)?;
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
    let human = matches!(args.format, CheckFormat::Human | CheckFormat::Github);
    if human && !args.quiet && !diffs.is_empty() {
        write!(err, "{diffs}")?;
    }
    let stale = diagnostics
        .iter()
        .any(|d| matches!(d.code, Code::StaleResult | Code::MissingResult));
    let (found, invalid) = descriptor_counts(&repo, &diagnostics);
    let summary = format!(
        "kvlower check: {found} descriptor(s), {invalid} invalid, {} finding(s){}",
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
    let exit = if diagnostics.is_empty() {
        Exit::Success
    } else {
        Exit::Findings
    };
    emit(args, exit, &diagnostics, &summary, out, err)?;
    Ok(exit)
}

/// Prints the report in `check`'s format.
fn emit(
    args: &CheckArgs,
    exit: Exit,
    diagnostics: &[Diagnostic],
    summary: &str,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> std::io::Result<()> {
    if args.format == CheckFormat::Sarif {
        return write!(out, "{}", sarif(diagnostics, None));
    }
    report(
        &args.report_options(),
        "check",
        exit,
        diagnostics,
        summary,
        Some(&args.root),
        out,
        err,
    )
}

/// How many descriptors were found (loaded or not) and how many of them have a finding.
fn descriptor_counts(
    repo: &kvlower_load::Repository,
    diagnostics: &[Diagnostic],
) -> (usize, usize) {
    let prefix = format!("{CAPABILITIES_DIR}/");
    let invalid: BTreeSet<&str> = diagnostics
        .iter()
        .filter(|d| d.file.starts_with(&prefix))
        .map(|d| d.file.as_str())
        .collect();
    let mut found: BTreeSet<&str> = repo.descriptors.iter().map(|d| d.path.as_str()).collect();
    found.extend(invalid.iter().copied());
    (found.len(), invalid.len())
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
