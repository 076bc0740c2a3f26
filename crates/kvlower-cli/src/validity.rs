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

use kvlower_codes::Finding;
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
    let mut found = crate::cmd::check::rows::cited_positives(require_verified, rows);
    found.extend(crate::cmd::check::rows::blank_non_claims(root, rows));
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
