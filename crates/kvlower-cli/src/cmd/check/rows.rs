//! `check`'s findings about the judged rows and their evidence: a positive row with a
//! blank non-claim, a positive row resting on cited evidence, and the warnings for
//! inert evidence.

use std::path::Path;

use kvlower_codes::{Code, Finding};
use kvlower_evidence::FsEnvironment;
use kvlower_load::{Repository, inert_warnings};

/// Warnings for every loaded descriptor's inert evidence (evidence the judgment
/// never counts; they change no label). Sorted with the other findings by `check`.
pub fn inert_warnings_of(repo: &Repository, env: &FsEnvironment) -> Vec<Finding> {
    use rayon::prelude::*;
    let per_descriptor: Vec<Vec<Finding>> = repo
        .descriptors
        .par_iter()
        .map(|d| inert_warnings(&repo.root, d, &repo.catalog, env))
        .collect();
    per_descriptor.into_iter().flatten().collect()
}

/// One `blank-value` finding per blank non-claim (`non_claims.default`, or the
/// mode's `non_claims.modes.<mode>` that replaces it) that a positive row carries,
/// in every configuration: a positive row must say what it does not claim, and
/// before this only the provenance audit (kept by few repositories) saw it.
pub(crate) fn blank_non_claims(
    root: &Path,
    rows: &[kvlower_core::matrix::MatrixRow<'_>],
) -> Vec<Finding> {
    let mut blank: std::collections::BTreeMap<(&str, String), Vec<String>> =
        std::collections::BTreeMap::new();
    for r in rows.iter().filter(|r| r.judgment.label.is_positive()) {
        let mode = r.judgment.mode;
        let claims = &r.descriptor.non_claims;
        if kvlower_core::text::has_visible(claims.for_mode(mode)) {
            continue;
        }
        let path = if claims.modes.contains_key(&mode) {
            format!("non_claims.modes.{mode}")
        } else {
            "non_claims.default".to_string()
        };
        blank
            .entry((r.descriptor_path, path))
            .or_default()
            .push(format!("{mode}@{}", r.judgment.depth));
    }
    blank
        .into_iter()
        .map(|((file, path), positive)| {
            let d = Finding::new(
                Code::BlankValue,
                file,
                format!(
                    "`{path}` is blank, but it is the non-claim of positive row(s) {}",
                    positive.join(", ")
                ),
            )
            .at_path(path)
            .with_hint("say what the positive rows do not claim, in visible characters (docs/descriptor-format.md)");
            // Located in the descriptor's text when it can be read again (best effort): at
            // the key, or at `non_claims` when the key is written in flow style.
            let Ok(bytes) = kvlower_fs::FileKind::Descriptor.open().within(root).read(file) else {
                return d;
            };
            let text = String::from_utf8_lossy(&bytes);
            let d = d.located_in(&text);
            match d.location {
                Some(_) => d,
                None => match kvlower_codes::diagnostic::locate(&text, "non_claims") {
                    Some((line, col)) => d.at(line, col).with_source(&text),
                    None => d,
                },
            }
        })
        .collect()
}

/// One finding per positive row that rests on a cited (not re-run) anchor, unless
/// its descriptor allows cited positives with a reason (`allow_cited_positives`)
/// and `--require-verified` is not given.
pub(crate) fn cited_positives(
    require_verified: bool,
    rows: &[kvlower_core::matrix::MatrixRow<'_>],
) -> Vec<Finding> {
    let allowed = |r: &kvlower_core::matrix::MatrixRow<'_>| {
        !require_verified
            && r.descriptor
                .allow_cited_positives
                .as_deref()
                .is_some_and(kvlower_core::text::has_visible)
    };
    rows.iter()
        .filter(|r| r.judgment.grade == Some(kvlower_core::Grade::Cited))
        .filter(|r| !allowed(r))
        .map(|r| {
            Finding::new(
                Code::CitedPositive,
                r.descriptor_path,
                format!(
                    "row {}@{} is {} but its grade is `cited`: some anchor was not re-run by `check`",
                    r.judgment.mode, r.judgment.depth, r.judgment.label
                ),
            )
            .with_hint(format!(
                "run `kvlower explain {} --mode {} --depth {}` to see which anchors are cited; anchor them to evidence `check` re-runs{}",
                r.descriptor_path,
                r.judgment.mode,
                r.judgment.depth,
                if require_verified {
                    ""
                } else {
                    ", or allow cited positives in the descriptor: `allow_cited_positives: <why>`"
                }
            ))
        })
        .collect()
}
