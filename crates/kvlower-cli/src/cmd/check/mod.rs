//! `kvlower check`: validate every input and check that every generated
//! result is fresh. Never writes.
//!
//! - this module: the arguments, the run and how its findings are reported;
//! - [`freshness`]: each generated result against the committed one (stale, missing,
//!   stray files, the bounded diff);
//! - [`rows`]: the findings about the judged rows (blank non-claims, cited positives,
//!   inert evidence);
//! - [`verbose`]: the `-v` account of what it read.

mod freshness;
mod rows;
mod verbose;

pub use freshness::{
    DIFF_DEADLINE, DIFF_MAX_LINES, DIFF_MAX_PRINTED_LINES, bounded_diff, freshness, stray_files,
};

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kvlower_codes::{Code, Finding};
use kvlower_load::{CAPABILITIES_DIR, LoadFailure};

use crate::Exit;
use crate::opening::{Stop, load_or_stop, stop_on};
use crate::output::{ColorChoice, Form, Format, Outcome, Style};

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// Only these descriptors (paths from the current directory); the generated
    /// results are compared only when every descriptor is checked
    pub descriptors: Vec<PathBuf>,
    /// Repository root holding modes/, capabilities/ and results/ [default: the
    /// nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
    /// Fail (exit 1) on any positive row whose grade is `cited`: accept only
    /// positives that `check` re-ran from files committed here (also
    /// `require_verified = true` under `[check]` in kvlower.toml)
    #[arg(long)]
    pub require_verified: bool,
    /// Output format
    #[arg(long, value_parser = Format::parser(Format::CHECK), default_value_t = Format::Human)]
    pub format: Format,
    /// Colour for human output (honours NO_COLOR)
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// Print only the summary line
    #[arg(short, long)]
    pub quiet: bool,
    /// Fail (exit 1) on warnings too (inert evidence: `kvlower codes` marks them)
    #[arg(long)]
    pub deny_warnings: bool,
    /// Report every finding but exit 0 (usage errors and unreadable inputs still exit 2), e.g. to collect SARIF
    #[arg(long)]
    pub exit_zero: bool,
    /// Say on stderr which root, catalog and descriptors were read
    #[arg(short, long)]
    pub verbose: bool,
}

impl CheckArgs {
    /// `exit` under `--exit-zero`: findings exit 0; an input that could not be
    /// read still exits 2 (the check did not run on it).
    fn exit_of(&self, exit: Exit) -> Exit {
        if self.exit_zero && exit == Exit::Findings {
            Exit::Success
        } else {
            exit
        }
    }

    /// The shared report options.
    /// How the run asked for its outcome to be shown.
    pub fn style(&self) -> Style {
        Style {
            format: self.format,
            color: self.color,
            quiet: self.quiet,
        }
    }
}

pub fn run(args: &CheckArgs, ctx: &crate::ctx::Ctx) -> anyhow::Result<Outcome<()>> {
    // What `-v` says, and the stale results' diffs: lines on stderr, before the findings.
    let mut notes = Vec::new();
    if args.verbose {
        notes.push(verbose::verbose_root(&args.root));
    }
    let outcome = judged(args, ctx, &mut notes)?;
    Ok(outcome.with_notes(notes))
}

fn judged(
    args: &CheckArgs,
    ctx: &crate::ctx::Ctx,
    notes: &mut Vec<String>,
) -> anyhow::Result<Outcome<()>> {
    let config = match crate::config::load(&args.root) {
        Ok(config) => config,
        Err(finding) => {
            let summary = "kvlower check: 1 finding(s) in kvlower.toml; nothing judged";
            let exit = args.exit_of(Exit::of_codes([finding.code]));
            return Ok(reported(exit, vec![*finding], summary.into()));
        }
    };
    let require_verified = args.require_verified || config.check.require_verified;
    let loaded = if args.descriptors.is_empty() {
        load_or_stop(ctx)
    } else {
        match load_only(&args.root, &args.descriptors, ctx.env()) {
            Ok(loaded) => stop_on(loaded),
            Err(message) => return Ok(Outcome::error("check", Exit::Usage, &message)),
        }
    };
    let (repo, mut diagnostics) = match loaded {
        Ok(loaded) => loaded,
        Err(Stop::NoDescriptors(dir)) => {
            let message = format!(
                "{} (expected capabilities/*.yaml under --root {}); {}",
                Stop::no_descriptors(&dir),
                args.root.display(),
                crate::opening::first_step(&args.root)
            );
            return Ok(Outcome::error("check", Exit::Usage, &message));
        }
        Err(Stop::Findings(diagnostics)) => {
            let summary = format!(
                "kvlower check: {} finding(s); nothing judged",
                diagnostics.len()
            );
            let exit = args.exit_of(Exit::of_diagnostics(&diagnostics));
            return Ok(reported(exit, diagnostics, summary));
        }
    };
    if args.verbose {
        notes.push(verbose::check_inputs(&repo));
    }
    let mut diffs = String::new();
    let human = matches!(args.format, Format::Human | Format::Github);
    let want_diffs = human && !args.quiet;
    // Only the whole set of descriptors regenerates the results (`None`: compared).
    let partial = (!args.descriptors.is_empty()).then(|| {
        let total = kvlower_load::descriptor_files(&args.root)
            .map_or(0, |(files, misnamed)| files.len() + misnamed.len());
        format!(
            "; results not compared ({} of {total} descriptors checked)",
            args.descriptors.len()
        )
    });
    // One environment for the whole run, the load's (the run's `Ctx`): each anchored
    // join, route, trace or campaign is re-run once, whoever asks.
    let env = ctx.env();
    // Every row judged once: for the results, the audit suites and the cited-positive rule.
    let rows = crate::results::judge_rows(&repo, env);
    let row_findings = crate::validity::row_findings(&repo.root, &rows, require_verified);
    if diagnostics.is_empty() && partial.is_none() {
        // The audit suites run once; their failures are findings of the same run.
        let audit = crate::suites::run_judged(&repo, &rows, env);
        // The committed matrix pins the catalog; when it equals the regenerated one
        // byte for byte, it records this catalog's digest and needs no second read.
        let mut matrix_fresh = false;
        let mut generated: Vec<&'static str> = Vec::new();
        // Each result is streamed into its comparison with the committed file
        // (rendered whole only when stale) before the next one.
        crate::results::each_file(&repo, &rows, &audit, env, &mut |file| {
            if !config.keeps(file.path) {
                return;
            }
            generated.push(file.path);
            let sink = want_diffs.then_some(&mut diffs);
            match freshness(&repo.root, &file, sink) {
                Some(d) => diagnostics.push(d),
                None => matrix_fresh |= file.path == crate::layout::PINNED_MATRIX,
            }
        });
        diagnostics.extend(stray_files(&repo.root, &generated));
        // A README it cannot read is a finding, never a table silently not compared.
        if config.keeps(crate::readme::README) {
            diagnostics.extend(crate::readme::refusal(&repo.root));
        }
        diagnostics.extend(
            crate::suites::diagnostics(&audit)
                .into_iter()
                .filter(|d| config.keeps(&d.file)),
        );
        if !matrix_fresh {
            diagnostics.extend(crate::pin::pin_diagnostic(&repo.root, &repo.catalog));
        }
    }
    drop(rows);
    diagnostics.extend(row_findings);
    diagnostics.extend(rows::inert_warnings_of(&repo, env));
    // Warnings a descriptor acknowledges (with a reason) no longer count; an
    // acknowledgement that matches nothing is a warning of its own.
    let kvlower_load::acknowledge::Acknowledged {
        findings: mut diagnostics,
        acknowledged,
    } = kvlower_load::acknowledge::apply(&repo.root, &repo.descriptors, diagnostics);
    if args.verbose {
        for d in &acknowledged {
            notes.push(format!(
                "kvlower check: acknowledged warning[{}] {}{} ({})\n",
                d.code,
                crate::output::escape_control(&d.file),
                d.location
                    .map(|(l, c)| format!(":{l}:{c}"))
                    .unwrap_or_default(),
                crate::output::escape_control(d.hint.as_deref().unwrap_or_default())
            ));
        }
    }
    diagnostics.sort();
    if want_diffs && !diffs.is_empty() {
        notes.push(diffs);
    }
    let stale = diagnostics
        .iter()
        .any(|d| matches!(d.code, Code::StaleResult | Code::MissingResult));
    let warnings = diagnostics.iter().filter(|d| d.is_warning()).count();
    let errors = diagnostics.len() - warnings;
    let (found, invalid) = descriptor_counts(&repo, &diagnostics);
    let summary = format!(
        "kvlower check: {found} descriptor(s), {invalid} invalid, {errors} finding(s){}{}",
        if let Some(partial) = &partial {
            partial.clone()
        } else if errors == 0 {
            "; all results fresh".to_string()
        } else if stale {
            format!(
                "; regenerate with `kvlower matrix --root {}` and commit the result",
                args.root.display()
            )
        } else {
            String::new()
        },
        if warnings > 0 {
            format!("; {warnings} warning(s)")
        } else {
            String::new()
        },
    );
    let mut summary = summary;
    if !acknowledged.is_empty() {
        summary.push_str(&format!("; {} warning(s) acknowledged", acknowledged.len()));
    }
    let (exit, denied) = match Exit::of_diagnostics(&diagnostics) {
        Exit::Success if args.deny_warnings && warnings > 0 => {
            (Exit::Findings, Some(denied_warnings(&diagnostics)))
        }
        exit => (exit, None),
    };
    if let Some(denied) = &denied {
        summary.push_str("; ");
        summary.push_str(denied);
    }
    let exit = args.exit_of(exit);
    // Under `--exit-zero` nothing failed: no error, the summary still says why it would have.
    let mut outcome = reported(exit, diagnostics, summary);
    outcome.error = denied.filter(|_| exit != Exit::Success);
    Ok(outcome)
}

/// Why `--deny-warnings` failed the run: the warnings, by code and place.
fn denied_warnings(diagnostics: &[Finding]) -> String {
    const SHOWN: usize = 5;
    let warnings: Vec<String> = diagnostics
        .iter()
        .filter(|d| d.is_warning())
        .map(|d| {
            format!(
                "{} at {}{}",
                d.code,
                crate::output::escape_control(&d.file),
                d.location
                    .map(|(l, c)| format!(":{l}:{c}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    let more = warnings.len().saturating_sub(SHOWN);
    format!(
        "failed by --deny-warnings: {} warning(s) not acknowledged ({}{})",
        warnings.len(),
        warnings[..warnings.len().min(SHOWN)].join(", "),
        if more > 0 {
            format!(", and {more} more")
        } else {
            String::new()
        }
    )
}

/// Loads the catalog and only the descriptors named on the command line
/// (`check PATH...`); a path outside `root/capabilities/` is a usage error.
fn load_only(
    root: &Path,
    paths: &[PathBuf],
    env: &kvlower_evidence::FsEnvironment,
) -> Result<Result<(kvlower_load::Repository, Vec<Finding>), LoadFailure>, String> {
    let base = canonical(&root.join(CAPABILITIES_DIR));
    let mut rels = Vec::new();
    for path in paths {
        let full = canonical(path);
        let name = full
            .strip_prefix(&base)
            .ok()
            .filter(|rest| rest.components().count() == 1)
            .and_then(|rest| rest.to_str());
        let Some(name) = name else {
            return Err(format!(
                "{} is not a descriptor of this repository (expected a file in {})",
                path.display(),
                root.join(CAPABILITIES_DIR).display()
            ));
        };
        rels.push(format!("{CAPABILITIES_DIR}/{name}"));
    }
    rels.sort();
    rels.dedup();
    let mut diagnostics = Vec::new();
    let Some(catalog) = kvlower_load::load_catalog(root, &mut diagnostics) else {
        diagnostics.sort();
        return Ok(Err(LoadFailure::Invalid(diagnostics)));
    };
    let mut descriptors = Vec::new();
    for rel in rels {
        if let Some(descriptor) =
            kvlower_load::load_descriptor(root, &rel, &catalog, env, &mut diagnostics)
        {
            descriptors.push(kvlower_load::LoadedDescriptor {
                path: rel,
                descriptor,
            });
        }
    }
    diagnostics.sort();
    let repo = kvlower_load::Repository {
        root: root.to_path_buf(),
        catalog,
        descriptors,
    };
    Ok(Ok((repo, diagnostics)))
}

/// `path` with links and `..` resolved when it exists (else made absolute), so
/// that a descriptor named from a subfolder matches the root's `capabilities/`.
fn canonical(path: &Path) -> PathBuf {
    kvlower_fs::inspect::resolved(path)
        .or_else(|_| {
            // A missing file: resolve its directory, keep its name.
            let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
            let dir = kvlower_fs::inspect::resolved(parent.unwrap_or(Path::new(".")))?;
            Ok::<_, std::io::Error>(dir.join(path.file_name().unwrap_or_default()))
        })
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}

/// Prints the report in `check`'s format.
/// `check`'s report: its findings and its summary (no payload).
fn reported(exit: Exit, findings: Vec<Finding>, summary: String) -> Outcome<()> {
    Outcome::report("check", exit, Form::Report, findings, summary)
}

fn descriptor_counts(repo: &kvlower_load::Repository, diagnostics: &[Finding]) -> (usize, usize) {
    let invalid: BTreeSet<&str> = diagnostics
        .iter()
        .filter(|d| crate::validity::makes_invalid(d))
        .map(|d| d.file.as_str())
        .collect();
    let mut found: BTreeSet<&str> = repo.descriptors.iter().map(|d| d.path.as_str()).collect();
    found.extend(invalid.iter().copied());
    (found.len(), invalid.len())
}
