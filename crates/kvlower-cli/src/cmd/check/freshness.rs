//! `check`'s freshness: every generated result compared with the committed one
//! (`stale-result`, `missing-result`, a refusal), with a bounded diff and the
//! descriptors that caused it, and every file in a generated directory that is not
//! generated (`stray-file`).

use std::path::Path;

use kvlower_codes::{Code, Finding};

use crate::generated::{GeneratedFile, LazyFile};
use crate::layout::{GENERATED_DIRS, JOURNAL, STAGE_PREFIX};

/// Above this many lines (committed plus regenerated) a stale result gets a
/// summary instead of a diff: a garbage or shuffled file would otherwise cost
/// minutes of diffing for output nobody reads.
pub const DIFF_MAX_LINES: usize = 20_000;
/// The diff gives up on finding a minimal edit script after this long (it
/// still prints a correct, if longer, diff).
pub const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(500);
/// At most this many diff lines are printed per file.
pub const DIFF_MAX_PRINTED_LINES: usize = 400;

/// Compares one generated file with the committed one; appends a bounded
/// unified diff (or a summary) when stale and `diffs` is wanted. With
/// `diffs == None` (`-q`, `--format json`) no diff is computed at all.
///
/// A fresh result is streamed into the comparison as it is rendered, never
/// held whole ([`crate::compare`]); only a result that differs (or is missing
/// or unreadable) is rendered whole again and read whole, to say how.
pub fn freshness(root: &Path, file: &LazyFile<'_>, diffs: Option<&mut String>) -> Option<Finding> {
    if crate::compare::equal_on_disk(root, file) {
        return None;
    }
    stale_finding(root, &GeneratedFile::of(file), diffs)
}

/// What is wrong with a committed result that did not compare equal: missing,
/// refused, or stale (with its diff); `None` if it turns out equal after all
/// (a file rewritten while `check` ran).
fn stale_finding(root: &Path, file: &GeneratedFile, diffs: Option<&mut String>) -> Option<Finding> {
    let bytes = match kvlower_fs::FileKind::Result
        .open()
        .within(root)
        .read(file.path)
    {
        Ok(bytes) => bytes,
        Err(kvlower_fs::Refusal::Missing { .. }) => {
            return Some(
                Finding::new(
                    Code::MissingResult,
                    file.path,
                    "generated result is not committed",
                )
                .with_hint("run `kvlower matrix`"),
            );
        }
        // Unreadable, a link out of the root, a FIFO, too large: say so.
        Err(refusal) => return Some(refusal.finding(file.path)),
    };
    if bytes == file.contents.as_bytes() {
        return None;
    }
    if let Some(diffs) = diffs {
        diffs.push_str(&bounded_diff(file.path, &bytes, &file.contents));
    }
    let stale = Finding::new(
        Code::StaleResult,
        file.path,
        "committed result differs from the regenerated one",
    )
    .with_hint("run `kvlower matrix` and commit the result");
    Some(with_stale_causes(stale, &bytes, &file.contents))
}

/// A unified diff of `committed` against `regenerated`, bounded in time
/// ([`DIFF_DEADLINE`]), input ([`DIFF_MAX_LINES`]) and output
/// ([`DIFF_MAX_PRINTED_LINES`]).
pub fn bounded_diff(path: &str, committed: &[u8], regenerated: &str) -> String {
    let committed = String::from_utf8_lossy(committed);
    let old_lines = committed.lines().count();
    let new_lines = regenerated.lines().count();
    if old_lines + new_lines > DIFF_MAX_LINES {
        return format!(
            "--- a/{path} (committed): {old_lines} lines, {} bytes\n\
             +++ b/{path} (regenerated): {new_lines} lines, {} bytes\n\
             (diff not shown: more than {DIFF_MAX_LINES} lines in all)\n",
            committed.len(),
            regenerated.len()
        );
    }
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(DIFF_DEADLINE)
        .diff_lines(committed.as_ref(), regenerated);
    let text = diff
        .unified_diff()
        .context_radius(2)
        .header(
            &format!("a/{path} (committed)"),
            &format!("b/{path} (regenerated)"),
        )
        .to_string();
    let total = text.lines().count();
    if total <= DIFF_MAX_PRINTED_LINES {
        return text;
    }
    let mut out: String = text
        .lines()
        .take(DIFF_MAX_PRINTED_LINES)
        .flat_map(|l| [l, "\n"])
        .collect();
    out.push_str(&format!(
        "... {} more diff line(s) not shown\n",
        total - DIFF_MAX_PRINTED_LINES
    ));
    out
}

/// A `stray-file` finding for every entry of `results/` and `schemas/` that
/// is not in `generated` (leftover temporary files, an interrupted run's
/// journal, hand-added files): `git add results/` would commit them.
pub fn stray_files(root: &Path, generated: &[&str]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for dir in GENERATED_DIRS {
        let Ok(entries) = kvlower_fs::walk::list(&root.join(dir)) else {
            continue;
        };
        for entry in entries {
            // An entry the listing cannot read may be anything: say so, never skip it.
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    findings.push(
                        Finding::new(
                            Code::UnreadableFile,
                            *dir,
                            format!("an entry of {dir}/ cannot be read: {e}"),
                        )
                        .with_hint("check the directory's permissions and file system"),
                    );
                    continue;
                }
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let rel = format!("{dir}/{name}");
            if generated.iter().any(|path| *path == rel) {
                continue;
            }
            let shown = kvlower_codes::diagnostic::excerpt(&rel, 200);
            let hint = if rel == JOURNAL || name.starts_with(STAGE_PREFIX) {
                "an interrupted `kvlower matrix` left it; run `kvlower matrix` to complete the set"
            } else if name.starts_with(".tmp") {
                "a leftover temporary file; run `kvlower matrix` (which removes it) or delete it"
            } else {
                "kvlower matrix does not generate it; delete it or move it out of this directory"
            };
            findings.push(
                Finding::new(
                    Code::StrayFile,
                    shown,
                    format!("{dir}/ holds only generated files; this one is not generated"),
                )
                .with_hint(hint),
            );
        }
    }
    findings
}

/// The most descriptors a stale result names.
const STALE_CAUSES_MAX: usize = 20;

/// Names the descriptors whose rows differ between a committed and a regenerated
/// JSON result (`{"rows": [{"descriptor": ...}, ...]}`, e.g.
/// results/lowering-matrix.json): in the message and as related files (SARIF's
/// `relatedLocations`). Other results are returned unchanged (cause unknown).
pub fn with_stale_causes(mut d: Finding, committed: &[u8], regenerated: &str) -> Finding {
    let causes = stale_causes(committed, regenerated);
    if causes.is_empty() {
        return d;
    }
    let shown: Vec<String> = causes
        .iter()
        .take(STALE_CAUSES_MAX)
        .map(|c| crate::output::escape_control(c).into_owned())
        .collect();
    let more = causes.len().saturating_sub(STALE_CAUSES_MAX);
    d.message.push_str(&format!(
        "; the rows of {} changed{}",
        shown.join(", "),
        if more > 0 {
            format!(" (and {more} more)")
        } else {
            String::new()
        }
    ));
    d.related = causes;
    d
}

/// The descriptors (sorted) whose rows differ; empty when either side is not a
/// JSON document with `rows` naming their `descriptor`.
fn stale_causes(committed: &[u8], regenerated: &str) -> Vec<String> {
    use serde_json::Value;
    use std::collections::BTreeMap;
    fn rows(v: &Value) -> Option<BTreeMap<String, Vec<String>>> {
        let mut by = BTreeMap::<String, Vec<String>>::new();
        for row in v.get("rows")?.as_array()? {
            let descriptor = row.get("descriptor")?.as_str()?;
            by.entry(descriptor.to_string())
                .or_default()
                .push(row.to_string());
        }
        Some(by)
    }
    let (Ok(old), Ok(new)) = (
        serde_json::from_slice::<Value>(committed),
        serde_json::from_str::<Value>(regenerated),
    ) else {
        return Vec::new();
    };
    let (Some(old), Some(new)) = (rows(&old), rows(&new)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = old
        .keys()
        .chain(new.keys())
        .filter(|k| old.get(*k) != new.get(*k))
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    names
}
