//! What the engine showed in a run, derived from its truth alone (docs/conformance.md,
//! "Control outcomes"). A control of kind K counts only when its run shows the outcome the
//! catalog names for K: a run that fails the gate for another reason (the refusal the
//! control is about disabled, and the claim demoted short instead) is no control.
//!
//! The names are runtime-neutral (`kvlower_core::baseline::CONTROL_OUTCOME_NAMES`); each
//! truth family derives them from its own facts.

use super::{ConnectorRun, ResidencyRequest, ResidencyRun, is_served};

fn refused(r: &ResidencyRequest) -> bool {
    r.finish_reason.as_deref() == Some("error")
        && r.engine_finish_reason.as_deref() == Some("error")
}

/// A connector run, from its reuse requests: `failed_closed` (one finished `error` with
/// blocks reported failed), `recomputed` (one had blocks reported failed and was served),
/// `served_from_tier` (every one served with the claimed prefix from the tier, the KV it
/// restored equal to the KV its resident request of the same claim, or of no claim, stored,
/// and its output equal to its no-reuse reference's), else `served_without_tier`. The
/// content counts because the control `ordinary_offload_without_claim` must show
/// `served_from_tier`: a patch restoring garbage for unclaimed offload served nothing from
/// the tier.
pub(super) fn connector_outcome(run: &ConnectorRun, prefix: u64, block_size: u64) -> &'static str {
    let blocks = usize::try_from(prefix.div_ceil(block_size.max(1))).unwrap_or(usize::MAX);
    let reuse: Vec<_> = run.requests.iter().filter(|r| r.role == "reuse").collect();
    let served = |r: &&super::ConnectorRequest| {
        is_served(r.finish_reason.as_deref()) && r.finish_reason == r.engine_finish_reason
    };
    let error = |r: &&super::ConnectorRequest| {
        r.finish_reason.as_deref() == Some("error")
            && r.engine_finish_reason.as_deref() == Some("error")
    };
    if reuse
        .iter()
        .any(|r| error(r) && !r.blocks_reported_failed.is_empty())
    {
        "failed_closed"
    } else if reuse
        .iter()
        .any(|r| served(r) && !r.blocks_reported_failed.is_empty())
    {
        "recomputed"
    } else if !reuse.is_empty()
        && reuse.iter().all(|r| {
            served(r)
                && r.external_tokens_served >= prefix
                && super::restore::restored_as_stored(run, r.claim_id.as_deref(), r, blocks).is_ok()
        })
    {
        "served_from_tier"
    } else {
        "served_without_tier"
    }
}

/// A residency run, from the claim's per-step samples and its pressure requests:
/// `not_materialized`; `never_protected` (evictable or short at the step it materialized);
/// `refused` (no loss, every pressure request refused); `waited` (no loss, a pressure request
/// neither refused nor served: aborted by the campaign); `released_whole` /
/// `released_partial` (it became unprotected with / without its whole footprint in the host
/// tier the step before); else `other`.
pub(super) fn residency_outcome(run: &ResidencyRun) -> &'static str {
    let f = run.claim_input.footprint_blocks;
    let steps = &run.claim_blocks.per_step;
    let Some(mat) = steps.iter().find(|s| s.device_cached >= f).map(|s| s.step) else {
        return "not_materialized";
    };
    let after = || steps.iter().filter(|s| s.step >= mat);
    let unprotected = after()
        .find(|s| s.evictable > 0 || s.device_cached < f)
        .map(|s| s.step);
    let loss = after().find(|s| s.device_cached < f).map(|s| s.step);
    if unprotected == Some(mat) {
        return "never_protected";
    }
    let pressure: Vec<&ResidencyRequest> = run
        .requests
        .iter()
        .filter(|r| r.role == "pressure")
        .collect();
    if loss.is_none() && !pressure.is_empty() && pressure.iter().all(|r| refused(r)) {
        return "refused";
    }
    if loss.is_none() && pressure.iter().any(|r| r.aborted_by_campaign) {
        return "waited";
    }
    match unprotected {
        Some(u) => {
            let before = steps.iter().take_while(|s| s.step < u).last();
            if before.is_some_and(|s| s.host_tier >= f) {
                "released_whole"
            } else {
                "released_partial"
            }
        }
        None => "other",
    }
}
