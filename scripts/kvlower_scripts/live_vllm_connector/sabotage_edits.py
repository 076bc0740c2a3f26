"""sabotage.sh's edits of a scratch tree for the sabotages of issue 43 (SABOTAGE.md); standard
library only, never applied to the committed tree:

    python -m kvlower_scripts.live_vllm_connector.sabotage_edits TREE NAME

NAME:
  recorder_tells_the_story   before the run: the pinned recorder (engine_truth.py) is edited to
                             read each run's trace from disk and write the trace's story as
                             truth (a reuse the trace says failed closed is recorded `error`,
                             served nothing), every digest then recomputed by the run itself;
  host_short_demotes         before the run: the residency patch's refusal for a host tier too
                             short to hold the footprint is disabled: it demotes anyway,
                             recording the whole footprint, and serves the pressure;
  restore_garbage            before the run: the claim connector's host worker fills every
                             restored page with zeroes instead of the bytes it stored (the
                             trace still says restored from the tier, every counter agrees);
  restore_garbage_unclaimed  before the run: the connector driver wraps the patch so that the
                             pages restored for unclaimed requests only are zeroed after the
                             copy (claimed restores stay honest): the
                             ordinary-offload control still shows tokens served from the tier;
  perturb_demoted_restore    before the run: once the residency patch demotes a claim, the host
                             worker flips the low bit of every byte it restores until the run's end
                             (the probe's restore of the demoted claim), every counter agreeing;
  common_edited_after_run    after the run: common.py (imported by the campaign drivers, in the
                             import closure) is edited to wrap the host tier's copy.
"""

from __future__ import annotations

import sys
from pathlib import Path

PKG = Path("scripts/kvlower_scripts")

STORY = '''

# SABOTAGE (issue 43, 1): the trace's story written as truth.
_honest_run_record = ConnectorTruth.run_record


def _story(self, run, scenario, trace, *rest, **kw):
    rec = _honest_run_record(self, run, scenario, trace, *rest, **kw)
    if "scheduler_resident_claim_restoration_failed" in (REPO / trace).read_text():
        for r in rec["requests"]:
            if r["role"] == "reuse" and r["blocks_reported_failed"]:
                r.update(finish_reason="error", engine_finish_reason="error", external_tokens_served=0,
                         num_cached_tokens=0, prefills=[])
    return rec


ConnectorTruth.run_record = _story
'''

ZERO = '''

# SABOTAGE (issue 43, 2): every restore zeroes the KV pages it just filled.
def _zero_restores() -> None:
    from vllm.v1.kv_offload.worker import cpu_gpu

    inner = cpu_gpu.CpuGpuOffloadingHandler.transfer_async

    def transfer_async(self, job_id, spec):
        out = inner(self, job_id, spec)
        for t in getattr(self, "gpu_tensors", []):
            t.zero_()
        return out

    cpu_gpu.CpuGpuOffloadingHandler.transfer_async = transfer_async
'''


GARBAGE_UNCLAIMED = '''

# SABOTAGE (issue 43 item 4, A): every restore of an unclaimed request is zeroed after the copy.
def _garbage_for_unclaimed() -> None:
    import torch

    from kvlower_scripts import vllm_engine

    # The patch module imports vLLM, which must find its kernels pinned already.
    vllm_engine.pin_avx2_kernels()
    from kvlower_scripts.live_vllm_connector import claim_connector as cc

    inner = cc.ClaimOffloadingConnector.start_load_kv

    def start_load_kv(self, forward_context, **kwargs):
        meta = self._connector_metadata
        unclaimed = [j for j in meta.load_jobs if not self._worker_jobs.get(j, {}).get("claim")]
        inner(self, forward_context, **kwargs)
        for j in unclaimed:
            if j in self._failures:
                continue
            ids = torch.from_numpy(meta.load_jobs[j].dst_spec.block_ids.astype("int64"))
            for t in self.connector_worker.worker._engine:
                t[ids] = torch.zeros_like(t[ids])

    cc.ClaimOffloadingConnector.start_load_kv = start_load_kv


_garbage_for_unclaimed()
'''


def replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    if text.count(old) != 1:
        sys.exit(f"sabotage_edits: {path}: the text to replace is not there exactly once: {old!r}")
    path.write_text(text.replace(old, new, 1))


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    tree, name = Path(argv[1]), argv[2]
    if name == "recorder_tells_the_story":
        rec = tree / PKG / "live_vllm_connector" / "engine_truth.py"
        rec.write_text(rec.read_text() + STORY)
    elif name == "host_short_demotes":
        patch = tree / PKG / "live_vllm_connector" / "claim_residency.py"
        replace_once(patch, "        if host < res.footprint:\n", "        if host < res.footprint and False:\n")
        replace_once(patch, '"demoted_blocks": host,', '"demoted_blocks": res.footprint,')
    elif name == "restore_garbage":
        patch = tree / PKG / "live_vllm_connector" / "claim_connector.py"
        replace_once(patch, "                engine[dst_ids] = host[src_ids]\n",
                     "                engine[dst_ids] = torch.zeros_like(host[src_ids])  # SABOTAGE\n")
    elif name == "restore_garbage_unclaimed":
        # In the connector's driver (campaign.py), which only the connector campaign loads: an
        # edit of claim_connector.py would also stale the residency campaign, which loads it.
        driver = tree / PKG / "live_vllm_connector" / "campaign.py"
        replace_once(driver, '\n\nif __name__ == "__main__":', GARBAGE_UNCLAIMED + '\n\nif __name__ == "__main__":')
    elif name == "perturb_demoted_restore":
        patch = tree / PKG / "live_vllm_connector" / "claim_residency.py"
        replace_once(patch, "        res.demoted = True\n        demoted = {",
                     "        res.demoted = True\n        cc.HostOffloadingWorker.perturb_loads = True  # SABOTAGE\n"
                     "        demoted = {")
        replace_once(patch, "        \"\"\"Unpins every claim and records its release (the run's end).\"\"\"\n",
                     "        \"\"\"Unpins every claim and records its release (the run's end).\"\"\"\n"
                     "        cc.HostOffloadingWorker.perturb_loads = False  # SABOTAGE\n")
        connector = tree / PKG / "live_vllm_connector" / "claim_connector.py"
        replace_once(connector, "                engine[dst_ids] = host[src_ids]\n",
                     "                engine[dst_ids] = (host[src_ids] ^ 1 if getattr(self, \"perturb_loads\", False)\n"
                     "                                   else host[src_ids])  # SABOTAGE\n")
    elif name == "common_edited_after_run":
        common = tree / PKG / "common.py"
        common.write_text(common.read_text() + ZERO)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"sabotage_edits: {name} applied to {tree}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
