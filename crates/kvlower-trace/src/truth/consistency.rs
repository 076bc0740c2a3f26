//! Truth that contradicts itself (docs/conformance.md, "Truth that contradicts itself"): the
//! fields of one run that bear on a verdict must agree with each other, not only those that
//! match the trace's story. A recorder that rewrote the facts the gates read (a refused
//! request, `error`) left the others standing (128 cached tokens).

use super::{Prefill, ResidencyRun};

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
) -> Result<(), String> {
    let last = prefills.last();
    if finish == Some("error")
        && (external > 0 || local.is_some_and(|l| l > 0) || num_cached.is_some_and(|n| n > 0))
    {
        return Err(format!(
            "request `{request}` finished `error` (refused) yet was served {external} tokens from the tier and {} cached (num_cached_tokens {num_cached:?})",
            local.unwrap_or(0)
        ));
    }
    let (want_local, want_external) = last.map_or((0, 0), |p| (p.local, p.external));
    if external != want_external || local.is_some_and(|l| l != want_local) {
        return Err(format!(
            "request `{request}`: the tokens served ({external} from the tier, {local:?} locally) are not its last prefill's ({want_external}, {want_local})"
        ));
    }
    if let Some(n) = num_cached
        && n != want_local.saturating_add(want_external)
    {
        return Err(format!(
            "request `{request}`: num_cached_tokens {n} is not its last prefill's local and external tokens ({want_local} + {want_external})"
        ));
    }
    Ok(())
}

/// A residency run's facts agree with each other: each request's served tokens (as for the
/// connector), a pinned block was never evictable (pinned and evictable blocks are disjoint
/// subsets of the device-cached ones, which are the claim's: at most its footprint), the host
/// tier holds at most the footprint, and a prefix served from the host tier was there to
/// serve (a load job ran, and the tier held as many of the claim's blocks at some step).
pub(super) fn residency_consistent(run: &ResidencyRun, block_size: u64) -> Result<(), String> {
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
            return Err(format!(
                "step {}: {} pinned and {} evictable of {} device-cached blocks, {} in the host tier (footprint {f}): a pinned block is never evictable",
                s.step, s.pinned, s.evictable, s.device_cached, s.host_tier
            ));
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
            return Err(format!(
                "probe `{}` was served {} tokens from the host tier, which held at most {most_held} of the claim's blocks ({} load job blocks ran)",
                r.request, r.external_tokens_served, run.engine_transfers.load_jobs.blocks
            ));
        }
    }
    Ok(())
}
