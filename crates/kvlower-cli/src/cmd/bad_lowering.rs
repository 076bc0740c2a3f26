//! `kvlower bad-lowering`: run the bad-lowering counterexamples of
//! `bad_lowering/*.yaml` through the real checker and gate and write
//! `results/bad-lowering-counterexamples.{md,json}`.
//!
//! Also the CLI's bridge to `kvlower-audit` (which is pure): this module reads
//! the counterexample files, hands every audit result to [`crate::results`]
//! (so `kvlower matrix` writes and `kvlower check` compares them), and turns
//! suite failures into `check` findings.

use std::io::Write;
use std::path::{Path, PathBuf};

use kvlower_audit::{Audit, BAD_LOWERING_DIR, CaseSource};
use kvlower_load::{Code, Diagnostic, FsEnvironment, LoadFailure, Repository, load_repository};

use crate::Exit;
use crate::cmd::matrix::{report_outcome, write_set};
use crate::output::{SimpleFormat, envelope_json, report_error};
use crate::results::GeneratedFile;

#[derive(Debug, clap::Args)]
pub struct BadLoweringArgs {
    /// Repository root holding modes/, capabilities/, bad_lowering/ and results/
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Output format (`json`: the shared envelope, the cases as its payload)
    #[arg(long, value_enum, default_value_t = SimpleFormat::Human)]
    pub format: SimpleFormat,
}

/// The `payload` of `bad-lowering --format json`.
#[derive(Debug, serde::Serialize)]
struct Payload<'a> {
    /// Result files replaced, relative to the root.
    written: &'a [String],
    /// Every case with its expected and actual outcome.
    cases: &'a [kvlower_audit::bad_lowering::CaseResult],
}

/// The counterexample files under `root/bad_lowering` (`*.yaml`, `*.yml`), sorted;
/// `None` when the directory does not exist (a scratch repository: the suite and
/// its results are then left out; the committed repository's eleven cases are
/// guarded by `tests/tests/bad_lowering.rs`). A file or directory that cannot be
/// read is handed on with empty contents, so that the suite reports a case error
/// instead of silently dropping it.
pub fn read_cases(root: &Path) -> Option<Vec<CaseSource>> {
    let dir = root.join(BAD_LOWERING_DIR);
    if !dir.exists() {
        return None;
    }
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Some(vec![CaseSource {
            path: BAD_LOWERING_DIR.to_string(),
            contents: String::new(),
        }]);
    };
    // Every `*.yaml` entry is handed on, including a FIFO, device, link out of
    // the root or oddly named file: `kvlower_fs` refuses to read it (without
    // blocking) and the empty contents make it a case error, never a skip.
    let mut cases: Vec<CaseSource> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml") || name.ends_with(".yml"))
        .map(|name| {
            let path = format!("{BAD_LOWERING_DIR}/{name}");
            let contents = read_case(root, &path);
            CaseSource {
                path: kvlower_load::diagnostic::excerpt(&path, 200),
                contents,
            }
        })
        .collect();
    cases.sort_by(|a, b| a.path.cmp(&b.path));
    Some(cases)
}

/// A case file's text, or empty when it is refused, unreadable or not UTF-8
/// (a non-UTF-8 name reads as a missing file, since `\u{fffd}` replaced a byte).
fn read_case(root: &Path, rel: &str) -> String {
    kvlower_fs::read_confined(root, rel, kvlower_fs::FileKind::BadLoweringCase)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
}

/// Runs every audit suite over a loaded repository.
pub fn audit(repo: &Repository) -> Audit {
    let env = FsEnvironment::new(repo.root.clone());
    let descriptors: Vec<(&str, &kvlower_core::Descriptor)> = repo
        .descriptors
        .iter()
        .map(|d| (d.path.as_str(), &d.descriptor))
        .collect();
    let cases = read_cases(&repo.root);
    Audit::run(&repo.catalog, &descriptors, &env, cases.as_deref())
}

/// The result files of an audit already run, for [`crate::results::generate`].
pub fn audit_files(audit: &Audit) -> Vec<GeneratedFile> {
    audit
        .files()
        .into_iter()
        .map(|f| GeneratedFile {
            path: f.path,
            contents: f.contents,
        })
        .collect()
}

/// One `check` finding per way an audit suite does not pass (from an audit
/// already run: the suites are the most expensive part of `check`).
pub fn audit_diagnostics(audit: &Audit) -> Vec<Diagnostic> {
    audit
        .failures()
        .into_iter()
        .map(|(path, message)| {
            Diagnostic::new(Code::AuditSuiteFailed, path, message)
                .with_hint("an audit suite does not pass; see the result file for the failing case")
        })
        .collect()
}

pub fn run(
    args: &BadLoweringArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    let json = args.format == SimpleFormat::Json;
    let repo = match load_repository(&args.root) {
        Ok((repo, diagnostics)) if diagnostics.is_empty() => repo,
        Ok((_, diagnostics)) | Err(LoadFailure::Invalid(diagnostics)) => {
            let summary = format!(
                "kvlower bad-lowering: {} finding(s); nothing written",
                diagnostics.len()
            );
            if json {
                let doc = envelope_json::<()>(
                    "bad-lowering",
                    Exit::Findings,
                    &summary,
                    &diagnostics,
                    None,
                    None,
                );
                write!(out, "{doc}")?;
            } else {
                for d in &diagnostics {
                    writeln!(err, "{d}")?;
                }
                writeln!(err, "{summary}")?;
            }
            return Ok(Exit::Findings);
        }
        Err(LoadFailure::NoDescriptors { dir }) => {
            let message = format!("no descriptors found in {}", dir.display());
            report_error(
                args.format.shared(),
                "bad-lowering",
                Exit::Usage,
                &message,
                out,
                err,
            )?;
            return Ok(Exit::Usage);
        }
    };
    let env = FsEnvironment::new(repo.root.clone());
    let cases = read_cases(&repo.root).unwrap_or_default();
    if cases.is_empty() {
        let message = format!(
            "no counterexamples found in {}",
            repo.root.join(BAD_LOWERING_DIR).display()
        );
        report_error(
            args.format.shared(),
            "bad-lowering",
            Exit::Usage,
            &message,
            out,
            err,
        )?;
        return Ok(Exit::Usage);
    }
    let suite = kvlower_audit::bad_lowering::run(&repo.catalog, &cases, &env);
    let files = [
        GeneratedFile {
            path: kvlower_audit::BAD_LOWERING_JSON,
            contents: suite.json(),
        },
        GeneratedFile {
            path: kvlower_audit::BAD_LOWERING_MD,
            contents: suite.markdown(),
        },
    ];
    let outcome = write_set(&args.root, &files)?;
    let exit = if suite.failures().is_empty() {
        Exit::Success
    } else {
        Exit::Findings
    };
    if json {
        let summary = format!("kvlower bad-lowering: {}", suite.summary());
        let payload = Payload {
            written: &outcome.written,
            cases: &suite.cases,
        };
        write!(
            out,
            "{}",
            envelope_json("bad-lowering", exit, &summary, &[], None, Some(payload))
        )?;
        return Ok(exit);
    }
    report_outcome(&outcome, out)?;
    for c in &suite.cases {
        writeln!(
            out,
            "{} {}: expected {}, got {}",
            if c.pass { "ok  " } else { "FAIL" },
            c.id,
            c.expected
                .map_or("(unreadable)".to_string(), |e| e.to_string()),
            c.actual
        )?;
    }
    writeln!(out, "kvlower bad-lowering: {}", suite.summary())?;
    Ok(exit)
}
