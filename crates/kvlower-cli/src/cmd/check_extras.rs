//! What `kvlower check` adds beside the findings that fail it: warnings for inert
//! evidence, and the `-v` account of what it read.

use std::io::Write;

use kvlower_codes::Diagnostic;
use kvlower_evidence::FsEnvironment;
use kvlower_load::{MODES_PATH, Repository, inert_warnings};

/// Warnings for every loaded descriptor's inert evidence (evidence the judgment
/// never counts; they change no label). Sorted with the other findings by `check`.
pub fn inert_warnings_of(repo: &Repository, env: &FsEnvironment) -> Vec<Diagnostic> {
    use rayon::prelude::*;
    let per_descriptor: Vec<Vec<Diagnostic>> = repo
        .descriptors
        .par_iter()
        .map(|d| inert_warnings(&repo.root, d, &repo.catalog, env))
        .collect();
    per_descriptor.into_iter().flatten().collect()
}

/// `check -v`, before loading: the root, as given and resolved.
pub fn verbose_root(root: &std::path::Path, err: &mut dyn Write) -> std::io::Result<()> {
    let resolved = kvlower_fs::inspect::resolved(root).map_or_else(
        |_| "does not resolve".to_string(),
        |p| p.display().to_string(),
    );
    writeln!(
        err,
        "kvlower check: root {} ({})",
        crate::output::escape_control(&root.display().to_string()),
        crate::output::escape_control(&resolved)
    )
}

/// `check -v`, once loaded: the catalog and every descriptor read.
pub fn check_inputs(repo: &Repository, err: &mut dyn Write) -> std::io::Result<()> {
    writeln!(err, "kvlower check: read catalog {MODES_PATH}")?;
    for d in &repo.descriptors {
        writeln!(
            err,
            "kvlower check: read descriptor {}",
            crate::output::escape_control(&d.path)
        )?;
    }
    writeln!(
        err,
        "kvlower check: {} descriptor(s) loaded",
        repo.descriptors.len()
    )
}

/// The most descriptors a stale result names.
const STALE_CAUSES_MAX: usize = 20;

/// Names the descriptors whose rows differ between a committed and a regenerated
/// JSON result (`{"rows": [{"descriptor": ...}, ...]}`, e.g.
/// results/lowering-matrix.json): in the message and as related files (SARIF's
/// `relatedLocations`). Other results are returned unchanged (cause unknown).
pub fn with_stale_causes(mut d: Diagnostic, committed: &[u8], regenerated: &str) -> Diagnostic {
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
