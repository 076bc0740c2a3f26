"""A second patch, for the optional pin control only: a claim-scoped pin on KVCR.

vLLM 0.32.0's KVCR tier deposits every primary-tier chunk with `deposit(blocks)` and never
asks KVCR to hold anything (`vllm/v1/kv_offload/tiering/kvcr/manager.py`, `submit_store`).
kvcr 0.1.1 can: `deposit(blocks, no_evict=True)` answers each key with a release handle and
keeps its slot until `release(handle)` (`kvcr/local_dram.py`, `deposit` and
`_new_public_claim`). This subclass of the tier, loaded by vLLM through the secondary tier's
`type` + `module_path`, deposits a store job with `no_evict=True` when it holds a block of a
pinned claim (`pin_claim(claim_id, offload_keys)`, called by the driver before the first
request), keeps the release handles per claim, and releases them on `release_claim`.
Nothing else of the tier changes. It is NOT what the committed row rests on
(`cpu_spec.py` is that patch); see README.md, "The pin control".
"""

from __future__ import annotations

from collections.abc import Collection

from kvcr.types import BlockKey, ReleaseHandle
from vllm.v1.kv_offload.base import OffloadKey
from vllm.v1.kv_offload.tiering.base import TransferJob
from vllm.v1.kv_offload.tiering.kvcr.manager import KVCRSecondaryTierManager


class KvlowerClaimPinKVCRTier(KVCRSecondaryTierManager):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._pinned: dict[BlockKey, str] = {}  # key -> claim id
        self._pin_ops: set[object] = set()
        self.handles: dict[str, dict[BlockKey, ReleaseHandle]] = {}
        self.pin_log: list[dict] = []
        poll = self._kvcr.poll_completed

        def poll_completed():
            done = list(poll())
            for op, entries in done:
                if op not in self._pin_ops:
                    continue
                self._pin_ops.discard(op)
                for key, entry in entries.items():
                    claim = self._pinned.get(key)
                    if claim is not None and entry.release_handle is not None:
                        self.handles.setdefault(claim, {})[key] = entry.release_handle
                    self.pin_log.append({"claim": claim, "status": entry.status.value,
                                         "held": entry.release_handle is not None})
            return done

        self._kvcr.poll_completed = poll_completed

    def pin_claim(self, claim_id: str, keys: Collection[OffloadKey]) -> None:
        for k in keys:
            self._pinned[self._key_adapter.encode(k)] = claim_id

    def release_claim(self, claim_id: str) -> list:
        handles = self.handles.pop(claim_id, {})
        return list(self._kvcr.release(list(handles.values()))) if handles else []

    def submit_store(self, job_metadata: TransferJob) -> None:
        keys = [self._key_adapter.encode(k) for k in job_metadata.keys]
        if not any(k in self._pinned for k in keys):
            return super().submit_store(job_metadata)
        blocks = {
            self._key_adapter.encode(key): [self._make_descriptor(int(chunk_id))]
            for key, chunk_id in zip(job_metadata.keys, job_metadata.chunk_ids, strict=True)
        }
        op_handle = self._kvcr.deposit(blocks, no_evict=True)
        self._pin_ops.add(op_handle)
        self._jobs_by_op[op_handle] = (job_metadata.job_id, len(blocks), True, None)
