//! Slot truth (`family: slot`, docs/conformance.md section 6): what an engine without an
//! event stream showed of a claim's saved and restored state, and the `reference_lifecycle`
//! verdict kvlower derives from it alone.
//!
//! Why a family of its own: llama.cpp's `llama-server` publishes no KV events, so the
//! truth is not the engine's objects read in-process (as for vLLM) but every call the
//! campaign made to the engine, as the recorder's tap saw it (the HTTP status, the
//! `/metrics` deltas around it, the token ids and log-probabilities it returned), the
//! slot-save files parsed offline, and the recorder's own probes: the slot's state saved
//! again right after each restore, and a no-cache reference run of each reuse.
//!
//! The rule (kvlower's, re-derived independently by the Python verifier): a claim earns
//! `reference_lifecycle` only when the engine restored, with a 200, a state byte-equal to
//! one it saved for the claim, the first reuse after it was served from that state for the
//! whole claimed prefix with output equal to the no-cache reference (token ids and
//! log-probabilities, exactly), and a later restore of a damaged file was refused by the
//! engine, which cleared the slot, with no reuse of the claim served from cache after it.
//!
//! Pure: the recorder read the engine; nothing here opens a file.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use crate::CampaignProblem as P;

/// Claim → (pass, the engine fact it rests on) for `reference_lifecycle`: plain values, so
/// this module depends on nothing of `crate::truth` (which calls it).
pub(crate) type SlotVerdicts = BTreeMap<String, (bool, String)>;

#[derive(Debug, Clone, Deserialize)]
struct SlotClaim {
    claim_id: String,
    prefix_tokens: u64,
}

#[derive(Debug, Clone, Deserialize)]
struct Output {
    token_ids: Vec<u64>,
    logprobs: Vec<f64>,
}

#[derive(Debug, Clone, Deserialize)]
struct FileAtRestore {
    exists: bool,
    sha256: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct SlotState {
    tokens: u64,
    state_sha256: String,
}

/// One engine call the recorder's tap saw, in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
enum Call {
    Completion {
        status: u16,
        claim_id: Option<String>,
        cache_n: u64,
        token_ids: Vec<u64>,
        logprobs: Vec<f64>,
        reference: Option<Output>,
    },
    Save {
        status: u16,
        file_prefix_claim: Option<String>,
        file_tokens: u64,
        state_sha256: Option<String>,
    },
    Erase {
        status: u16,
    },
    Restore {
        status: u16,
        file_at_restore: FileAtRestore,
        slot_after: SlotState,
    },
}

#[derive(Debug, Clone, Deserialize)]
struct SlotRun {
    claims: Vec<SlotClaim>,
    calls: Vec<Call>,
}

/// A 200 from the engine.
fn ok(status: u16) -> bool {
    status == 200
}

/// What the truth says of one claim: `(pass, fact)`.
fn judge_claim(run: &SlotRun, claim: &SlotClaim) -> (bool, String) {
    let c = claim.claim_id.as_str();
    let k = claim.prefix_tokens;
    // The states the engine wrote for this claim: a save answered 200 whose file holds the
    // claim's whole prefix (the recorder parsed the file's token ids offline).
    let mut saved: Vec<(usize, &str)> = Vec::new();
    let mut every_saved: BTreeSet<&str> = BTreeSet::new();
    for (i, call) in run.calls.iter().enumerate() {
        if let Call::Save {
            status,
            file_prefix_claim,
            file_tokens,
            state_sha256: Some(d),
        } = call
            && ok(*status)
        {
            every_saved.insert(d);
            if file_prefix_claim.as_deref() == Some(c) && *file_tokens >= k {
                saved.push((i, d));
            }
        }
    }
    let first_reuse_after = |i: usize| {
        run.calls
            .iter()
            .enumerate()
            .skip(i + 1)
            .find_map(|(j, x)| match x {
                Call::Completion { claim_id, .. } if claim_id.as_deref() == Some(c) => Some((j, x)),
                _ => None,
            })
    };
    // The success generation: a restore the engine answered 200 that put back a state
    // byte-equal to one saved for the claim before it, then the first reuse served from it
    // for the whole prefix, equal to the no-cache reference.
    let mut success_at = None;
    let mut why_not_success = String::from("no restore the engine answered 200");
    for (i, call) in run.calls.iter().enumerate() {
        let Call::Restore {
            status, slot_after, ..
        } = call
        else {
            continue;
        };
        if !ok(*status) {
            continue;
        }
        let same_state = saved
            .iter()
            .any(|(at, d)| *at < i && *d == slot_after.state_sha256.as_str());
        if !same_state || slot_after.tokens < k {
            why_not_success = format!(
                "the slot's state after the restore ({} tokens) equals no state saved for the claim before it",
                slot_after.tokens
            );
            continue;
        }
        let Some((
            j,
            Call::Completion {
                status,
                cache_n,
                token_ids,
                logprobs,
                reference,
                ..
            },
        )) = first_reuse_after(i)
        else {
            why_not_success = "no reuse of the claim after the restore".into();
            continue;
        };
        let equal = reference.as_ref().is_some_and(|r| {
            !token_ids.is_empty() && r.token_ids == *token_ids && r.logprobs == *logprobs
        });
        if !ok(*status) || *cache_n < k || !equal {
            why_not_success = format!(
                "the reuse after the restore answered {status} with {cache_n} tokens from the cache (the prefix is {k}); output equal to the no-cache reference: {equal}"
            );
            continue;
        }
        success_at = Some(j);
        break;
    }
    let Some(reuse_at) = success_at else {
        return (false, why_not_success);
    };
    // The failure generation: after that reuse, a restore of a file that is not a state
    // the engine wrote, which the engine refused, clearing the slot, and no reuse of the
    // claim served from the cache after it.
    let mut fact = String::from("no restore refused by the engine after the successful reuse");
    for (i, call) in run.calls.iter().enumerate().skip(reuse_at + 1) {
        let Call::Restore {
            status,
            file_at_restore,
            slot_after,
        } = call
        else {
            continue;
        };
        if ok(*status) {
            continue;
        }
        let damaged = !file_at_restore.exists
            || file_at_restore
                .sha256
                .as_deref()
                .is_none_or(|d| !every_saved.contains(d));
        let served_later = run.calls.iter().skip(i + 1).any(|x| {
            matches!(x, Call::Completion { claim_id, cache_n, status, .. }
                if claim_id.as_deref() == Some(c) && ok(*status) && *cache_n >= k)
        });
        if damaged && slot_after.tokens == 0 && !served_later {
            return (
                true,
                format!(
                    "restored with a 200 to a state equal to the saved one and reused from it for the {k}-token prefix, output equal to the no-cache reference; later the engine answered {status} to a damaged file and cleared the slot"
                ),
            );
        }
        fact = format!(
            "the engine answered {status} to a restore (file damaged: {damaged}, slot left with {} tokens, a later reuse served from the cache: {served_later})",
            slot_after.tokens
        );
    }
    (false, fact)
}

/// What the engine showed in a slot run (docs/conformance.md, "Control outcomes"), from its
/// calls alone: `failed_closed` when the engine refused a restore and no reuse of a claim
/// was served from the cache for its whole prefix after it; else `served_from_tier` when a
/// reuse of a claim was served from the cache for its whole prefix (the restored state);
/// else `recomputed` (every reuse computed its prefix again: erased, another claim's state,
/// displaced). The recorder writes the same as `engine_outcome`, and `check` requires the two
/// equal, so a control counts only with the outcome its kind names.
pub(crate) fn slot_outcome(value: &serde_json::Value) -> Result<&'static str, P> {
    let run: SlotRun = serde_json::from_value(value.clone())
        .map_err(|e| P::SlotRunMalformed { why: e.to_string() })?;
    let prefix = |id: &Option<String>| {
        run.claims
            .iter()
            .find(|c| Some(c.claim_id.as_str()) == id.as_deref())
            .map(|c| c.prefix_tokens)
    };
    let served = |call: &Call| {
        matches!(call, Call::Completion { status, claim_id, cache_n, .. }
            if ok(*status) && prefix(claim_id).is_some_and(|k| *cache_n >= k))
    };
    let refused_for_good = run.calls.iter().enumerate().any(|(i, call)| {
        matches!(call, Call::Restore { status, .. } if !ok(*status))
            && !run.calls.iter().skip(i + 1).any(served)
    });
    Ok(if refused_for_good {
        "failed_closed"
    } else if run.calls.iter().any(served) {
        "served_from_tier"
    } else {
        "recomputed"
    })
}

/// Reads one slot run and derives, per claim, the `reference_lifecycle` expectation.
pub(crate) fn slot_expected(value: serde_json::Value) -> Result<SlotVerdicts, P> {
    let run: SlotRun =
        serde_json::from_value(value).map_err(|e| P::SlotRunMalformed { why: e.to_string() })?;
    if run.claims.is_empty() {
        return Err(P::SlotRunNamesNoClaim);
    }
    for call in &run.calls {
        // The engine clears the slot when a restore fails (llama.cpp's server): a failed
        // restore that left tokens in the slot is a truth that contradicts itself.
        if let Call::Restore {
            status, slot_after, ..
        } = call
            && !ok(*status)
            && slot_after.tokens > 0
        {
            return Err(P::FailedRestoreLeftTokens {
                status: *status,
                tokens: slot_after.tokens,
            });
        }
        if let Call::Erase { status } = call
            && !ok(*status)
        {
            return Err(P::EraseFailed { status: *status });
        }
    }
    let mut out = BTreeMap::new();
    for claim in &run.claims {
        if claim.prefix_tokens == 0 {
            return Err(P::SlotPrefixZero {
                claim: claim.claim_id.clone(),
            });
        }
        if out
            .insert(claim.claim_id.clone(), judge_claim(&run, claim))
            .is_some()
        {
            return Err(P::SlotClaimListedTwice {
                claim: claim.claim_id.clone(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn positive() -> serde_json::Value {
        json!({
        "claims": [{"claim_id": "c", "prefix_tokens": 100}],
        "calls": [
          {"call": "completion", "status": 200, "claim_id": "c", "cache_n": 0, "token_ids": [5], "logprobs": [-1.5], "reference": null},
          {"call": "save", "status": 200, "file_prefix_claim": "c", "file_tokens": 104, "state_sha256": "aa"},
          {"call": "erase", "status": 200},
          {"call": "restore", "status": 200, "file_at_restore": {"exists": true, "sha256": "aa"}, "slot_after": {"tokens": 104, "state_sha256": "aa"}},
          {"call": "completion", "status": 200, "claim_id": "c", "cache_n": 101, "token_ids": [7, 8], "logprobs": [-2.25, -3.0],
           "reference": {"token_ids": [7, 8], "logprobs": [-2.25, -3.0]}},
          {"call": "save", "status": 200, "file_prefix_claim": "c", "file_tokens": 106, "state_sha256": "bb"},
          {"call": "erase", "status": 200},
          {"call": "restore", "status": 400, "file_at_restore": {"exists": true, "sha256": "cc"}, "slot_after": {"tokens": 0, "state_sha256": "ee"}}
        ]})
    }

    fn pass_of(v: serde_json::Value) -> bool {
        slot_expected(v).unwrap()["c"].0
    }

    #[test]
    fn the_positive_run_passes() {
        assert!(pass_of(positive()));
    }

    /// Sabotage: the adapter reports a restore the engine answered 400.
    #[test]
    fn a_restore_refused_by_the_engine_is_no_success() {
        let mut v = positive();
        v["calls"][3]["status"] = json!(400);
        v["calls"][3]["slot_after"]["tokens"] = json!(0);
        assert!(!pass_of(v));
    }

    /// Issue 43 item 4: garbage restored (a state other than the saved one) is no success.
    #[test]
    fn a_restored_state_unequal_to_the_stored_one_is_no_success() {
        let mut v = positive();
        v["calls"][3]["slot_after"]["state_sha256"] = json!("dd");
        assert!(!pass_of(v));
    }

    /// Issue 43 item 4: output after reuse must equal the no-cache reference exactly.
    #[test]
    fn an_output_unequal_to_the_reference_is_no_success() {
        let mut v = positive();
        v["calls"][4]["reference"]["logprobs"] = json!([-2.2500001, -3.0]);
        assert!(!pass_of(v));
    }

    #[test]
    fn a_reuse_recomputed_is_no_success() {
        let mut v = positive();
        v["calls"][4]["cache_n"] = json!(1);
        assert!(!pass_of(v));
    }

    /// Sabotage: the adapter reports a failure while the engine served the cached prefix.
    #[test]
    fn a_failure_followed_by_a_cached_reuse_is_no_failure_outcome() {
        let mut v = positive();
        v["calls"].as_array_mut().unwrap().push(json!(
            {"call": "completion", "status": 200, "claim_id": "c", "cache_n": 101, "token_ids": [7], "logprobs": [-2.25], "reference": null}));
        assert!(!pass_of(v));
        let mut v = positive();
        v["calls"][7]["status"] = json!(200);
        assert!(!pass_of(v));
    }

    /// Restoring an intact saved file is not a damaged-file failure.
    #[test]
    fn a_refusal_of_a_file_the_engine_wrote_is_no_controlled_failure() {
        let mut v = positive();
        v["calls"][7]["file_at_restore"]["sha256"] = json!("bb");
        assert!(!pass_of(v));
    }

    #[test]
    fn a_failed_restore_that_left_tokens_contradicts_itself() {
        let mut v = positive();
        v["calls"][7]["slot_after"]["tokens"] = json!(3);
        assert!(matches!(
            slot_expected(v),
            Err(P::FailedRestoreLeftTokens { tokens: 3, .. })
        ));
    }

    #[test]
    fn an_unknown_call_is_malformed() {
        let mut v = positive();
        v["calls"][0]["call"] = json!("teleport");
        assert!(matches!(slot_expected(v), Err(P::SlotRunMalformed { .. })));
    }
}
