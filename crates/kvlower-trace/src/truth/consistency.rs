//! Truth that contradicts itself (docs/conformance.md, "Truth that contradicts itself"): the
//! fields of one run that bear on a verdict must agree with each other, not only those that
//! match the trace's story. A recorder that rewrote the facts the gates read (a refused
//! request, `error`) left the others standing (128 cached tokens).

use super::{Prefill, ResidencyRun};
use crate::CampaignProblem as P;

/// The facts one request's truth records about the tokens it was served, which must agree
/// with each other (docs/conformance.md, "Truth that contradicts itself"): a request the
/// engine refused (finished `error`) was served nothing, from the tier or the prefix cache;
/// the tokens served are those of its last prefill; and the client's cached-token count is
/// the local and external tokens of that prefill.
pub(super) fn served_tokens_problem(
    request: &str,
    finish: Option<&str>,
    local: Option<u64>,
    external: u64,
    num_cached: Option<u64>,
    prefills: &[Prefill],
) -> Result<(), P> {
    let last = prefills.last();
    if finish == Some("error")
        && (external > 0 || local.is_some_and(|l| l > 0) || num_cached.is_some_and(|n| n > 0))
    {
        return Err(P::RefusedYetServed {
            request: request.to_owned(),
            external,
            local: local.unwrap_or(0),
            num_cached,
        });
    }
    let (want_local, want_external) = last.map_or((0, 0), |p| (p.local, p.external));
    if external != want_external || local.is_some_and(|l| l != want_local) {
        return Err(P::ServedNotLastPrefill {
            request: request.to_owned(),
            external,
            local,
            want_external,
            want_local,
        });
    }
    if let Some(n) = num_cached
        && n != want_local.saturating_add(want_external)
    {
        return Err(P::CachedNotLastPrefill {
            request: request.to_owned(),
            cached: n,
            want_local,
            want_external,
        });
    }
    Ok(())
}

/// A residency run's facts agree with each other: each request's served tokens (as for the
/// connector), a pinned block was never evictable (pinned and evictable blocks are disjoint
/// subsets of the device-cached ones, which are the claim's: at most its footprint), the host
/// tier holds at most the footprint, and a prefix served from the host tier was there to
/// serve (a load job ran, and the tier held as many of the claim's blocks at some step).
pub(super) fn residency_consistent(run: &ResidencyRun, block_size: u64) -> Result<(), P> {
    let f = run.claim_input.footprint_blocks;
    for r in &run.requests {
        served_tokens_problem(
            &r.request,
            r.finish_reason.as_deref(),
            Some(r.local_tokens_served),
            r.external_tokens_served,
            r.num_cached_tokens,
            &r.prefills,
        )?;
    }
    for s in &run.claim_blocks.per_step {
        if s.pinned.saturating_add(s.evictable) > s.device_cached
            || s.device_cached > f
            || s.host_tier > f
        {
            return Err(P::PinnedBlockEvictable {
                step: s.step,
                pinned: s.pinned,
                evictable: s.evictable,
                device_cached: s.device_cached,
                host_tier: s.host_tier,
                footprint: f,
            });
        }
    }
    let most_held = run
        .claim_blocks
        .per_step
        .iter()
        .map(|s| s.host_tier)
        .max()
        .unwrap_or(0);
    for r in run.requests.iter().filter(|r| r.role == "probe") {
        let blocks = r.external_tokens_served.div_ceil(block_size);
        if r.external_tokens_served > 0
            && (run.engine_transfers.load_jobs.blocks == 0 || most_held < blocks.min(f))
        {
            return Err(P::ProbeServedBeyondHostTier {
                request: r.request.clone(),
                tokens: r.external_tokens_served,
                most_held,
                load_blocks: run.engine_transfers.load_jobs.blocks,
            });
        }
    }
    Ok(())
}
