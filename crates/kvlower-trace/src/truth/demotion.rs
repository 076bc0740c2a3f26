//! What a demotion's restore must show before `claim_demotion` counts it (docs/conformance.md,
//! "Residency runs"): the claim's blocks the probe's load restored from the host tier equal
//! the blocks the engine stored there, and the probe's output equals a no-reuse reference run.
//!
//! Why: a demotion is safe only if the host tier gives the claim back. The per-step counts
//! (the host tier held the footprint, the probe was served it from the tier) say that a
//! restore happened, never what it restored: a patch that restores perturbed pages passes
//! them. The store and the restore run under different requests' jobs (the claim request's
//! store, the probe's load), so the recorder pairs them by the claim's block hashes: entry `i`
//! of both lists is the claim's footprint block `i`.

use super::restore::{is_digest, output_as_reference, outputs_shape_problem};
use super::{ResidencyRequest, ResidencyRun};

/// The shape the rule needs, refused when broken: each list one entry per footprint block,
/// every digest 64 lowercase hex, outputs paired with their log-probabilities.
pub(super) fn shape_problem(run: &ResidencyRun) -> Result<(), crate::CampaignProblem> {
    let f = usize::try_from(run.claim_input.footprint_blocks).unwrap_or(usize::MAX);
    let mut lists = vec![(
        "claim_blocks.kv_stored".to_owned(),
        &run.claim_blocks.kv_stored,
    )];
    for r in &run.requests {
        outputs_shape_problem(&r.request, r.output.as_ref(), r.reference.as_ref())?;
        lists.push((
            format!("request `{}`: kv_blocks_restored", r.request),
            &r.kv_blocks_restored,
        ));
    }
    for (what, list) in lists {
        let Some(list) = list else { continue };
        if list.len() != f {
            return Err(crate::CampaignProblem::DigestListNotPerBlock {
                list: what,
                entries: list.len(),
                footprint: f,
            });
        }
        if let Some(bad) = list.iter().flatten().find(|d| !is_digest(d)) {
            return Err(crate::CampaignProblem::DigestListMalformed {
                list: what,
                value: bad.clone(),
            });
        }
    }
    Ok(())
}

/// Whether the probe restored the claim's stored blocks and produced the no-reuse reference's
/// output: `Ok(())`, or `Err(the fact that is missing)`.
pub(super) fn restored_as_stored(
    run: &ResidencyRun,
    probe: Option<&ResidencyRequest>,
) -> Result<(), String> {
    let stored = run.claim_blocks.kv_stored.as_deref().ok_or(
        "no digest of the claim's blocks at store to the host tier (`claim_blocks.kv_stored`)",
    )?;
    let probe = probe.ok_or("no probe request")?;
    let restored = probe.kv_blocks_restored.as_deref().ok_or(
        "no digest of the claim's blocks after the probe's restore (`kv_blocks_restored`)",
    )?;
    for (i, (s, r)) in stored.iter().zip(restored).enumerate() {
        match (s, r) {
            (Some(s), Some(r)) if s == r => {}
            (None, _) => {
                return Err(format!(
                    "block {i} of the claim was never stored to the host tier"
                ));
            }
            (_, None) => return Err(format!("the probe did not restore block {i} of the claim")),
            (Some(s), Some(r)) => {
                return Err(format!(
                    "the restored KV is not the stored KV: block {i} of the claim was {s} at store and {r} after the probe's restore"
                ));
            }
        }
    }
    if stored.is_empty() || stored.len() != restored.len() {
        return Err("the stored and restored digests do not cover the footprint".into());
    }
    output_as_reference(probe.output.as_ref(), probe.reference.as_ref())
}
