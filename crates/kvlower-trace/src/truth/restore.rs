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

fn is_digest(d: &str) -> bool {
    d.len() == 64 && d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The shape the rule needs, refused when broken (malformed truth, the campaign does not
/// hold): every block digest 64 lowercase hex, one log-probability per token.
pub(super) fn shape_problem(r: &ConnectorRequest) -> Result<(), crate::CampaignProblem> {
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
    let outputs = [
        r.output.as_ref().map(|o| (&o.token_ids, &o.logprobs)),
        r.reference.as_ref().map(|o| (&o.token_ids, &o.logprobs)),
    ];
    if outputs.iter().flatten().any(|(t, l)| t.len() != l.len()) {
        return Err(crate::CampaignProblem::OutputLengthsDiffer {
            request: r.request.clone(),
        });
    }
    Ok(())
}

/// Whether claim `claim`'s reuse `reuse` restored what was stored and produced the reference
/// output: `Ok(())`, or `Err(the fact that is missing)`. `blocks` is the number of blocks the
/// claimed prefix spans.
pub(super) fn restored_as_stored(
    run: &ConnectorRun,
    claim: &str,
    reuse: &ConnectorRequest,
    blocks: usize,
) -> Result<(), String> {
    let residents: Vec<&ConnectorRequest> = run
        .requests
        .iter()
        .filter(|r| r.claim_id.as_deref() == Some(claim) && r.role == "resident")
        .collect();
    let [resident] = residents.as_slice() else {
        return Err(format!(
            "{} resident requests carry the claim (not one): no stored KV to compare",
            residents.len()
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
    let output = reuse
        .output
        .as_ref()
        .filter(|o| !o.token_ids.is_empty())
        .ok_or("the reuse records no output (`output`)")?;
    let reference = reuse
        .reference
        .as_ref()
        .ok_or("no no-reuse reference run of the request (`reference`)")?;
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
