"""The patch: a vLLM offloading spec that runs the tiering stack (CPU primary tier + KVCR) on a CPU build.

vLLM 0.32.0's `CPUOffloadingSpec.get_worker` refuses any platform that is not CUDA-alike or
XPU ("CPU Offloading is currently only supported on CUDA-alike and XPU GPUs",
`vllm/v1/kv_offload/cpu/spec.py`), and its worker (`cpu/gpu_worker.py`) copies with device
streams and events. This module subclasses `TieringOffloadingSpec` and replaces only
`get_worker`: the worker below copies synchronously, on the CPU, between the engine's KV
tensors and the tier's shared region (`SharedOffloadRegion.create_next_worker_view`, the
same region and layout the scheduler-side primary tier and KVCR read). Everything else --
the scheduler-side connector, the primary tier's manager and events, the KVCR secondary tier
(`vllm/v1/kv_offload/tiering/kvcr/manager.py`) -- runs unchanged from the wheel.

Loaded by vLLM itself through `kv_connector_extra_config`:
    {"spec_name": "KvlowerCpuTieringSpec",
     "spec_module_path": "kvlower_scripts.live_kvcr.cpu_spec", ...}

Limits (checked, not assumed): one KV-cache group layout is copied as the direct
(worker-private) layout; `canonical_layout` is refused.
"""

from __future__ import annotations

import time

import torch
from vllm.v1.kv_offload.base import (
    BlockIDsLoadStoreSpec,
    CanonicalKVCaches,
    GPULoadStoreSpec,
    LoadStoreSpec,
    OffloadingWorker,
    TransferResult,
)
from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec


class SyncCpuBlockCopier(OffloadingWorker):
    """Synchronous copies between the engine's KV blocks and the shared region's chunks.

    A chunk holds `blocks_per_chunk` engine blocks; a job's first chunk may start mid-chunk
    (`GPULoadStoreSpec.block_indices`), exactly as vLLM's own worker reads it.
    """

    def __init__(self, kv_caches: CanonicalKVCaches, blocks_per_chunk: int, region: SharedOffloadRegion):
        self._region = region
        self._bpc = blocks_per_chunk
        self._refs = kv_caches.group_data_refs
        self._dev: list[torch.Tensor] = []
        self._host: list[torch.Tensor] = []
        self._page: list[int] = []
        for t in kv_caches.tensors:
            page = t.page_size_bytes
            self._dev.append(t.tensor.view(torch.int8).view((-1, page)))
            self._host.append(region.create_next_worker_view(page * blocks_per_chunk))
            self._page.append(page)
        self._finished: list[TransferResult] = []

    def _copy(self, job_id: int, gpu: GPULoadStoreSpec, cpu: LoadStoreSpec, to_host: bool) -> bool:
        assert isinstance(cpu, BlockIDsLoadStoreSpec)
        t0 = time.perf_counter()
        gids = [int(b) for b in gpu.block_ids]
        cids = [int(c) for c in cpu.block_ids]
        g_off = c_off = 0
        nbytes = 0
        for g, (size, first) in enumerate(zip(gpu.group_sizes, gpu.block_indices, strict=True)):
            if size == 0:
                continue
            skip = first % self._bpc
            nchunks = -(-(size + skip) // self._bpc)
            blocks = gids[g_off : g_off + size]
            chunks = cids[c_off : c_off + nchunks]
            for ref in self._refs[g]:
                t, ps, page = ref.tensor_idx, ref.page_size_bytes, self._page[ref.tensor_idx]
                for i, blk in enumerate(blocks):
                    pos = skip + i
                    sub = (pos % self._bpc) * page
                    host = self._host[t][chunks[pos // self._bpc], sub : sub + ps]
                    dev = self._dev[t][blk, :ps]
                    if to_host:
                        host.copy_(dev)
                    else:
                        dev.copy_(host)
                    nbytes += ps
            g_off += size
            c_off += nchunks
        if g_off != len(gids) or c_off != len(cids):
            raise RuntimeError(f"copier: job {job_id} covers {g_off}/{len(gids)} blocks, {c_off}/{len(cids)} chunks")
        self._finished.append(TransferResult(job_id=job_id, success=True, transfer_size=nbytes,
                                             transfer_time=time.perf_counter() - t0))
        return True

    def submit_store(self, job_id: int, src_spec: GPULoadStoreSpec, dst_spec: LoadStoreSpec) -> bool:
        return self._copy(job_id, src_spec, dst_spec, to_host=True)

    def submit_load(self, job_id: int, src_spec: LoadStoreSpec, dst_spec: GPULoadStoreSpec) -> bool:
        return self._copy(job_id, dst_spec, src_spec, to_host=False)

    def get_finished(self) -> list[TransferResult]:
        done, self._finished = self._finished, []
        return done

    def wait(self, job_ids: set[int]) -> None:
        return  # every copy completed when it was submitted

    def shutdown(self) -> None:
        self._dev.clear()
        self._host.clear()
        self._region.cleanup()


class KvlowerCpuTieringSpec(TieringOffloadingSpec):
    """`TieringOffloadingSpec` with `get_worker` replaced by `SyncCpuBlockCopier`."""

    def get_worker(self, kv_caches: CanonicalKVCaches) -> OffloadingWorker:
        if self.config.canonical_layout:
            raise RuntimeError("KvlowerCpuTieringSpec copies the direct layout only; drop canonical_layout")
        if self._worker is None:
            rank = 0 if self.replicated_layout else self.config.parallel.rank
            region = SharedOffloadRegion(
                engine_id=self._engine_id,
                num_chunks=self.num_chunks,
                rank=rank,
                kv_bytes_per_chunk=self.kv_bytes_per_chunk,
                cpu_page_size=self.cpu_page_size_per_worker,
            )
            self._worker = SyncCpuBlockCopier(kv_caches, self.blocks_per_chunk, region)
        return self._worker
