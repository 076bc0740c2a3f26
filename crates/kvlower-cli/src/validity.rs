//! What "invalid" means, once (issue 42, item 8): `check` counts a descriptor invalid
//! when it has an error finding, `matrix` writes nothing while any descriptor is
//! invalid, and `explain` labels no row of an invalid descriptor. A descriptor's error
//! findings come from two places, and every command asks both through here:
//!
//! - loading it (`kvlower_load`: schema, vocabulary, anchors, blank and control text, ...),
//!   which `matrix` and `explain` already refused on;
//! - its judged rows ([`row_findings`]): a positive row whose non-claim is blank
//!   (`blank-value`) or that rests on a cited anchor without `allow_cited_positives`
//!   (`cited-positive`), and its acknowledgements ([`acknowledgement_findings`]: one
//!   naming an error or giving no reason, `invalid-acknowledgement`), which only `check`
//!   used to look at. [`findings`] is both, for the commands that do not print them
//!   otherwise (`matrix`, `explain`).

use std::path::Path;

use kvlower_codes::{Code, Finding};
use kvlower_core::matrix::MatrixRow;
use kvlower_load::CAPABILITIES_DIR;

/// Whether `finding` makes its descriptor invalid: an error (never a warning) about a
/// file under `capabilities/`. `check`'s "N invalid" counts the files of these.
pub fn makes_invalid(finding: &Finding) -> bool {
    !finding.is_warning()
        && finding
            .file
            .strip_prefix(CAPABILITIES_DIR)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The error findings of judged rows (every row of the descriptors concerned: a
/// caller that shows some rows judges all of them for this): blank non-claims of
/// positive rows and cited positives not allowed. `require_verified` is `check`'s
/// (the `--require-verified` flag or `[check] require_verified` in kvlower.toml).
pub fn row_findings(root: &Path, rows: &[MatrixRow<'_>], require_verified: bool) -> Vec<Finding> {
    let mut found = cited_positives(require_verified, rows);
    found.extend(blank_non_claims(root, rows));
    found
}

/// The error findings of the descriptors' acknowledgements (`invalid-acknowledgement`):
/// `check` adds them when it applies the acknowledgements to its findings.
pub fn acknowledgement_findings(
    root: &Path,
    descriptors: &[kvlower_load::LoadedDescriptor],
) -> Vec<Finding> {
    kvlower_load::acknowledge::apply(root, descriptors, Vec::new())
        .findings
        .into_iter()
        .filter(makes_invalid)
        .collect()
}

/// Every error finding beyond loading that makes one of `descriptors` invalid: what
/// `matrix` and `explain` stop on.
pub fn findings(
    root: &Path,
    descriptors: &[kvlower_load::LoadedDescriptor],
    rows: &[MatrixRow<'_>],
    require_verified: bool,
) -> Vec<Finding> {
    let mut found = row_findings(root, rows, require_verified);
    found.extend(acknowledgement_findings(root, descriptors));
    found
}

/// One `blank-value` finding per blank non-claim (`non_claims.default`, or the
/// mode's `non_claims.modes.<mode>` that replaces it) that a positive row carries,
/// in every configuration: a positive row must say what it does not claim, and
/// before this only the provenance audit (kept by few repositories) saw it.
fn blank_non_claims(root: &Path, rows: &[kvlower_core::matrix::MatrixRow<'_>]) -> Vec<Finding> {
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
fn cited_positives(
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
