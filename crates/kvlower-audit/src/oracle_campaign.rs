//! The oracle's campaign rules, written again from docs/conformance.md (sections 1.6 and 3.1),
//! not shared with the checker: the judging code is pinned, and a control counts only with
//! the outcome its kind must show.

use kvlower_core::catalog_doc::{CampaignControls, CatalogDoc};
use kvlower_core::environment::CampaignGateCounts;

/// Every file of the truth's judging code is pinned by the catalog at its current bytes.
pub(crate) fn recorder_pinned(doc: &CatalogDoc, recorder: &[(String, String)]) -> bool {
    !recorder.is_empty()
        && recorder.iter().all(|(path, sha)| {
            doc.judging_code
                .iter()
                .any(|p| &p.path == path && &p.sha256 == sha)
        })
}

/// The gate's minimum positives, and every control kind's minimum among the runs showing
/// the kind's outcome.
pub(crate) fn runs_met(rule: &CampaignControls, counts: Option<&CampaignGateCounts>) -> bool {
    let counts = counts.cloned().unwrap_or_default();
    counts.positives >= rule.min_positive_runs
        && rule.controls.iter().all(|(kind, min)| {
            let shown = rule
                .outcomes
                .get(kind)
                .and_then(|o| counts.outcomes.get(kind).and_then(|by| by.get(o)))
                .copied()
                .unwrap_or(0);
            shown >= *min
        })
}
