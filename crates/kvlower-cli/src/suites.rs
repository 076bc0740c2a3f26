//! The CLI's bridge to `kvlower-audit` (which is pure): reads the
//! counterexample files, runs every suite once, hands its result files to
//! [`crate::results`] (so `kvlower matrix` writes and `kvlower check` compares
//! them), and turns suite failures into `check` findings.

use std::path::Path;

use kvlower_audit::{Audit, BAD_LOWERING_DIR, CaseSource};
use kvlower_codes::{Code, Finding};
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;

use crate::generated::{GeneratedFile, LazyFile};

/// The counterexample files under `root/bad_lowering` (`*.yaml`, `*.yml`), sorted;
/// `None` when the directory does not exist (a scratch repository: the suite and
/// its results are then left out; the committed repository's eleven cases are
/// guarded by `tests/tests/bad_lowering.rs`). A file or directory that cannot be
/// read is handed on with empty contents, so that the suite reports a case error
/// instead of silently dropping it.
pub fn read_cases(root: &Path) -> Option<Vec<CaseSource>> {
    let dir = root.join(BAD_LOWERING_DIR);
    if !kvlower_fs::inspect::exists(&dir) {
        return None;
    }
    let Ok(entries) = kvlower_fs::walk::list(&dir) else {
        return Some(vec![CaseSource {
            path: BAD_LOWERING_DIR.to_string(),
            contents: String::new(),
        }]);
    };
    // Every `*.yaml` entry is handed on, including a FIFO, device, link out of
    // the root or oddly named file: `kvlower_fs` refuses to read it (without
    // blocking) and the empty contents make it a case error, never a skip.
    // An entry the directory listing cannot read is a case error too (an empty
    // case named after the directory), never silently dropped.
    let mut cases: Vec<CaseSource> = entries
        .map(|e| match e {
            Ok(e) => Some(e.file_name().to_string_lossy().into_owned()),
            Err(_) => None,
        })
        .filter(|name| {
            name.as_deref()
                .is_none_or(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        })
        .map(|name| match name {
            Some(name) => {
                let path = format!("{BAD_LOWERING_DIR}/{name}");
                let contents = read_case(root, &path);
                CaseSource {
                    path: kvlower_codes::diagnostic::excerpt(&path, 200),
                    contents,
                }
            }
            None => CaseSource {
                path: format!("{BAD_LOWERING_DIR}/(unreadable entry)"),
                contents: String::new(),
            },
        })
        .collect();
    cases.sort_by(|a, b| a.path.cmp(&b.path));
    Some(cases)
}

/// A case file's text, or empty when it is refused, unreadable or not UTF-8
/// (a non-UTF-8 name reads as a missing file, since `\u{fffd}` replaced a byte).
fn read_case(root: &Path, rel: &str) -> String {
    kvlower_fs::FileKind::BadLoweringCase
        .open()
        .within(root)
        .read(rel)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_default()
}

/// Runs every audit suite over a loaded repository, judging through `env`
/// (the one environment of the command, so that each anchored trace is read
/// and evaluated once however many suites and results judge it).
pub fn run(repo: &Repository, env: &FsEnvironment) -> Audit {
    let matrix = kvlower_core::matrix::judge_all(
        &repo.catalog,
        repo.descriptors
            .iter()
            .map(|d| (d.path.as_str(), &d.descriptor)),
        env,
    );
    run_judged(repo, &matrix, env)
}

/// [`run`] on the repository's matrix already judged (`results::judge_rows`).
pub fn run_judged(
    repo: &Repository,
    matrix: &[kvlower_core::matrix::MatrixRow<'_>],
    env: &FsEnvironment,
) -> Audit {
    let descriptors: Vec<(&str, &kvlower_core::Descriptor)> = repo
        .descriptors
        .iter()
        .map(|d| (d.path.as_str(), &d.descriptor))
        .collect();
    let cases = read_cases(&repo.root);
    Audit::run_judged(&repo.catalog, &descriptors, matrix, env, cases.as_deref())
}

/// The result files of an audit already run, for [`crate::results::generate`].
pub fn files(audit: &Audit) -> Vec<GeneratedFile> {
    let mut files = Vec::new();
    each_file(audit, &mut |f| files.push(GeneratedFile::of(&f)));
    files
}

/// [`files`] one at a time, in the same order, not rendered yet (see
/// [`Audit::each_file`]).
pub fn each_file(audit: &Audit, each: &mut dyn FnMut(LazyFile<'_>)) {
    audit.each_file(each);
}

/// One `check` finding per way an audit suite does not pass (from an audit
/// already run: the suites are the most expensive part of `check`).
pub fn diagnostics(audit: &Audit) -> Vec<Finding> {
    audit
        .failures()
        .into_iter()
        .map(|(path, message)| {
            Finding::new(Code::AuditSuiteFailed, path, message)
                .with_hint("an audit suite does not pass; see the result file for the failing case")
        })
        .collect()
}
