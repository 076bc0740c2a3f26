//! What a restore must show before it counts (docs/conformance.md, "Connector runs", issue 43
//! item 4): the KV the engine restored for a claim equals the KV it stored, and the output
//! after the reuse equals a no-reuse reference run of the same request.
//!
//! Why: events and prefill counters say *that* a restore happened, never *what* was restored.
//! A patch that restores garbage (zeroed or perturbed pages) is served "from the tier" with
//! the whole prefix counted; on a tiny model even the greedy token can stay the same. Only
//! the content (the pages' bytes, digested by the pinned recorder from the engine's own
//! tensors at store and after the restore) and the output (token ids and log-probabilities,
//! exactly: a copy is bit-exact) tell a restore from a fake one.

use serde::Deserialize;

use super::{ConnectorRequest, ConnectorRun, Prefill};

/// A request's output as the client received it: the sampled token ids and each one's
/// log-probability.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Output {
    token_ids: Vec<u64>,
    logprobs: Vec<f64>,
}

/// The same request run again with nothing reused (no prefix-cache hit, nothing loaded from
/// the tier): its output and the engine's prefill statistics, which show it computed every
/// prompt token.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Reference {
    token_ids: Vec<u64>,
    logprobs: Vec<f64>,
    num_cached_tokens: Option<u64>,
    prefills: Vec<Prefill>,
}

pub(super) fn is_digest(d: &str) -> bool {
    d.len() == 64 && d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The shape the rule needs, refused when broken (malformed truth, the campaign does not
/// hold): every block digest 64 lowercase hex, one log-probability per token.
pub(super) fn shape_problem(r: &ConnectorRequest) -> Result<(), crate::CampaignProblem> {
    outputs_shape_problem(&r.request, r.output.as_ref(), r.reference.as_ref())?;
    for (what, list) in [
        ("kv_blocks_stored", &r.kv_blocks_stored),
        ("kv_blocks_restored", &r.kv_blocks_restored),
    ] {
        if let Some(bad) = list.iter().flatten().find(|d| !is_digest(d)) {
            return Err(crate::CampaignProblem::BlockDigestMalformed {
                request: r.request.clone(),
                field: what,
                value: bad.clone(),
            });
        }
    }
    Ok(())
}

/// An output's and a reference's token ids and log-probabilities must pair up one to one.
pub(super) fn outputs_shape_problem(
    request: &str,
    output: Option<&Output>,
    reference: Option<&Reference>,
) -> Result<(), crate::CampaignProblem> {
    let outputs = [
        output.map(|o| (&o.token_ids, &o.logprobs)),
        reference.map(|o| (&o.token_ids, &o.logprobs)),
    ];
    if outputs.iter().flatten().any(|(t, l)| t.len() != l.len()) {
        return Err(crate::CampaignProblem::OutputLengthsDiffer {
            request: request.to_owned(),
        });
    }
    Ok(())
}

/// Whether the reuse `reuse` of claim `claim` (`None`: an unclaimed reuse, paired with the
/// run's one unclaimed resident request) restored what was stored and produced the reference
/// output: `Ok(())`, or `Err(the fact that is missing)`. `blocks` is the number of blocks the
/// claimed prefix spans. An unclaimed reuse is held to the same rule because the control
/// `ordinary_offload_without_claim` counts only when its outcome is `served_from_tier`:
/// garbage restored for unclaimed offload is no served-from-tier run (docs/conformance.md,
/// "Control outcomes").
pub(super) fn restored_as_stored(
    run: &ConnectorRun,
    claim: Option<&str>,
    reuse: &ConnectorRequest,
    blocks: usize,
) -> Result<(), String> {
    let residents: Vec<&ConnectorRequest> = run
        .requests
        .iter()
        .filter(|r| r.claim_id.as_deref() == claim && r.role == "resident")
        .collect();
    let [resident] = residents.as_slice() else {
        return Err(format!(
            "{} resident requests carry {} (not one): no stored KV to compare",
            residents.len(),
            claim.map_or("no claim".to_owned(), |c| format!("the claim `{c}`"))
        ));
    };
    let stored = resident
        .kv_blocks_stored
        .as_deref()
        .filter(|s| s.len() >= blocks)
        .ok_or_else(|| {
            format!("no digest of the claim's {blocks} blocks at store (`kv_blocks_stored`)")
        })?;
    let restored = reuse
        .kv_blocks_restored
        .as_deref()
        .filter(|s| s.len() >= blocks)
        .ok_or_else(|| {
            format!(
                "no digest of the claim's {blocks} blocks after the restore (`kv_blocks_restored`)"
            )
        })?;
    if let Some(i) = (0..blocks).find(|&i| stored[i] != restored[i]) {
        return Err(format!(
            "the restored KV is not the stored KV: block {i} of the claim was {} at store and {} after the restore",
            stored[i], restored[i]
        ));
    }
    output_as_reference(reuse.output.as_ref(), reuse.reference.as_ref())
}

/// Whether a reuse's client output equals its no-reuse reference run's exactly (token ids,
/// and log-probabilities bit for bit), the reference having reused nothing.
pub(super) fn output_as_reference(
    output: Option<&Output>,
    reference: Option<&Reference>,
) -> Result<(), String> {
    let output = output
        .filter(|o| !o.token_ids.is_empty())
        .ok_or("the reuse records no output (`output`)")?;
    let reference = reference.ok_or("no no-reuse reference run of the request (`reference`)")?;
    let computed_all = reference.num_cached_tokens == Some(0)
        && !reference.prefills.is_empty()
        && reference
            .prefills
            .iter()
            .all(|p| p.local == 0 && p.external == 0);
    if !computed_all {
        return Err("the reference run reused KV (cached tokens or a prefill served from a cache): it is no no-reuse reference".into());
    }
    let bits = |l: &[f64]| l.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    if output.token_ids != reference.token_ids
        || bits(&output.logprobs) != bits(&reference.logprobs)
    {
        return Err(format!(
            "the output after the reuse (tokens {:?}, logprobs {:?}) differs from the no-reuse reference (tokens {:?}, logprobs {:?})",
            output.token_ids, output.logprobs, reference.token_ids, reference.logprobs
        ));
    }
    Ok(())
}
