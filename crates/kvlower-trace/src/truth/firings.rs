//! What binds a connector run's injected failures to that run.

use super::ConnectorRun;
use crate::CampaignProblem as P;

/// Binds every injected failure a connector run records (`injection_fired`) to that run
/// (docs/conformance.md, "Every run is judged by truth about its own claims"): each claim
/// id a firing names is one of the run's `claims` or the target it armed its injector with
/// (`injection_target_claim_id`), and each firing's target is that armed target.
///
/// Why: `connector_failure_outcome` reads the firings of a claim. A firing naming another
/// run's claim (an injector's record carried over from an earlier run, as the committed
/// ordinary-offload runs once showed) is a fact about that other run, and a firing for a
/// target the run never armed is no firing of this run's injector: either way the run's
/// truth is not about its own claims alone.
pub(super) fn bind_firings(run: &ConnectorRun) -> Result<(), P> {
    let target = run.injection_target_claim_id.as_deref();
    let own = |c: &str| run.claims.iter().any(|k| k == c) || target == Some(c);
    for f in &run.injection_fired {
        let names = [
            &f.request_claim_id,
            &f.failure_target_claim_id,
            &f.failure_matched_claim_id,
        ];
        if let Some(name) = names.into_iter().flatten().find(|c| !own(c)) {
            return Err(P::FiringNamesAnotherClaim {
                claim: name.clone(),
            });
        }
        if f.failure_target_claim_id.as_deref() != target {
            return Err(P::FiringTargetsAnotherClaim {
                target: f.failure_target_claim_id.clone(),
                armed: target.map(str::to_owned),
            });
        }
    }
    Ok(())
}
