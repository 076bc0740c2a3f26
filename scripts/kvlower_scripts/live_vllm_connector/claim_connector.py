"""The kvlower claim connector: a patch of vLLM 0.32's OffloadingConnector path, loaded
through vLLM's own plug-in points (no file of vLLM is edited).

    kv_transfer_config = KVTransferConfig(
        kv_connector="ClaimOffloadingConnector",
        kv_connector_module_path="kvlower_scripts.live_vllm_connector.claim_connector",
        kv_role="kv_both", kv_load_failure_policy="fail",
        kv_connector_extra_config={"spec_name": "HostOffloadingSpec", "cpu_bytes_to_use": N,
            "spec_module_path": "kvlower_scripts.live_vllm_connector.claim_connector"})
    scheduler_cls="kvlower_scripts.live_vllm_connector.claim_connector.ClaimScheduler"

(engine.py builds exactly this; scripts/ must be on the engine process's module path.)

What vLLM supplies (unchanged): the OffloadingConnector's scheduler side (lookup, store and
load jobs, CPUOffloadingManager), its worker side (job bookkeeping, finished_recving), the
model runner's connector calls, and the scheduler's invalid-KV-load path
(update_from_output -> _handle_invalid_blocks -> finish_requests(FINISHED_ERROR), or a retry
when kv_load_failure_policy is "recompute").

What this patch adds (paper §7, "the patch supplies"):
  * HostOffloadingSpec / HostOffloadingWorker: vLLM's CPUOffloadingSpec and manager, with a
    worker that copies pages between the engine's KV tensors and host tensors (plain torch
    index copies). vLLM's own CPU worker needs a CUDA-alike or XPU device.
  * failed loads: a load the injector fails returns TransferResult(success=False); its
    destination blocks are reported by get_block_ids_with_load_errors() (vLLM's stock
    OffloadingConnector asserts every transfer succeeded and reports none), and the request
    is still reported in finished_recving, as KVConnectorBase_V1 requires.
  * claim propagation: the claim rides on the request (SamplingParams.extra_args
    {"kv_transfer_params": {"resident_claim": {...}}}); the scheduler-side connector puts
    each job's claim into the connector metadata (ClaimConnectorMetadata.job_claims) for the
    worker, and the worker returns failed jobs with their claim attribution in its worker
    metadata (ClaimWorkerMetadata.failed_jobs) for the scheduler.
  * controlled failure injection (INJECTOR): off unless armed; matches CPU->GPU loads only;
    filters by claim id, or, unfiltered, fails any claimed load and attributes it to the
    armed claim (the wrong-claim control); unclaimed loads fail only with their own flag.
  * trace events (RECORDER): kvlower's connector family (docs/trace-format.md), one JSON
    Lines file per run, every file starting with the runtime header line.
  * ClaimScheduler: vLLM's Scheduler with the scheduler-boundary events emitted where
    _handle_invalid_blocks has decided, before update_from_output's finish_requests.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from vllm.distributed.kv_transfer.kv_connector.v1.offloading.common import (
    OffloadingConnectorMetadata,
    OffloadingWorkerMetadata,
)
from vllm.distributed.kv_transfer.kv_connector.v1.offloading_connector import (
    OffloadingConnector,
)
from vllm.v1.core.sched.scheduler import Scheduler
from vllm.v1.kv_offload.base import (
    CanonicalKVCaches,
    GPULoadStoreSpec,
    LoadStoreSpec,
    OffloadingWorker,
    TransferResult,
)
from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec
from vllm.v1.request import RequestStatus

from kvlower_scripts.common import trace_header

PATCH = "kvlower-claim-connector-1"
# A deliberately broken variant of the patch, for the sabotage runs only (SABOTAGE.md); unset
# for every committed campaign. Read once, at import. "silent_recompute": a claimed request
# whose load failed is retried by vLLM (the recompute policy, silently) while the trace
# reports the fail-closed refusal and hides the retry.
SABOTAGE = os.environ.get("KVLOWER_SABOTAGE") or None
HEADER = trace_header(PATCH)
FAILURE_REASON = "controlled_resident_claim_cpu_to_gpu_load_failure"
STORE = ["GPU", "CPU"]
LOAD = ["CPU", "GPU"]
# The claim's fields copied onto every event of the claim (docs/trace-format.md, "Claims and
# identity": the six identity fields keep one value per claim).
IDENTITY_FIELDS = (
    "predicate_id",
    "prefix_id",
    "reusable_object_id",
    "cache_identity",
    "request_token_map_id",
    "materialization_predicate",
)
GENERIC_EVENTS = (
    "generic_kv_blocks_offloaded",
    "generic_kv_blocks_onboarded",
    "generic_kv_transfer_failed_counter",
    "generic_request_error_counter",
)


# --------------------------------------------------------------------------- trace recorder


class Recorder:
    """Writes one run's trace. Process-global: the scheduler-side and worker-side connector
    instances and the scheduler all run in the engine process (in-process engine).

    mode "full": every event. mode "generic": lifecycle events are counted, not written, and
    close() writes only the generic counters a runtime without claim telemetry exposes.
    """

    def __init__(self) -> None:
        self._file = None
        self.mode = "full"
        self._seq = 0
        self.counts: dict[str, int] = {}
        # The header line: the campaign driver sets it with the source digest
        # (common.trace_header(PATCH, digest)).
        self.header: dict[str, Any] = HEADER
        self.silenced: set[str] = set()  # sabotage only: request ids whose later events are dropped

    def open(self, path, mode: str = "full") -> None:
        assert self._file is None, "a trace is already open"
        # The file stays open across engine steps, until close().
        self._file = open(path, "w", encoding="ascii", newline="\n")  # noqa: SIM115
        self._file.write(json.dumps(self.header) + "\n")  # the header's own key order
        self.mode = mode
        self._seq = 0
        self.counts = {}
        self.silenced = set()

    def close(self) -> dict[str, int]:
        assert self._file is not None
        if self.mode == "generic":
            c = self.counts
            self._write("generic_kv_blocks_offloaded", {"block_count": c.get("stored_blocks", 0)})
            self._write("generic_kv_blocks_onboarded", {"block_count": c.get("loaded_blocks", 0)})
            self._write("generic_kv_transfer_failed_counter",
                        {"failure_count": c.get("failed_transfers", 0), "transfer_type": LOAD})
            self._write("generic_request_error_counter", {"request_failures": c.get("failed_requests", 0)})
        self._file.close()
        self._file = None
        counts, self.counts = self.counts, {}
        return counts

    def count(self, key: str, n: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + n

    def emit(self, event: str, scope: str, **fields: Any) -> None:
        if self._file is None:
            return
        if self.mode == "generic" and event not in GENERIC_EVENTS:
            return
        if fields.get("request_id") in self.silenced:
            return
        fields["hook_scope"] = PATCH
        fields["instrumentation_scope"] = scope
        self._write(event, fields)

    def _write(self, event: str, fields: dict[str, Any]) -> None:
        # `monotonic_ns` is a logical clock, the event's sequence number in its run: the
        # connector family's envelope marker (docs/trace-format.md) and a time that only
        # increases, without a reading of the process's clock a second live run could not
        # repeat (docs/conformance.md, "Reproduction"). Order is by event_sequence.
        line = {"event": event, "event_sequence": self._seq, "monotonic_ns": self._seq, **fields}
        self._seq += 1
        self._file.write(json.dumps(line, sort_keys=True) + "\n")


RECORDER = Recorder()


# --------------------------------------------------------------------------- failure injection


@dataclass
class Injector:
    """Controlled CPU->GPU load failure (paper §7: off unless the resident-claim load-failure
    flag is on; matches only CPU->GPU transfers; can filter by claim id; unclaimed failures
    need a separate flag). `remaining` bounds how many loads fail (None: every match)."""

    armed: bool = False
    target_claim_id: str | None = None
    filter_by_claim: bool = True
    fail_unclaimed: bool = False
    remaining: int | None = None
    fired: list[dict[str, Any]] = field(default_factory=list)

    def arm(self, target_claim_id=None, filter_by_claim=True, fail_unclaimed=False, remaining=None):
        self.armed, self.target_claim_id = True, target_claim_id
        self.filter_by_claim, self.fail_unclaimed, self.remaining = filter_by_claim, fail_unclaimed, remaining
        self.fired = []

    def disarm(self) -> None:
        """Off, and no firing remembered: a run that arms nothing records no firing (an
        earlier run's firings named its claims, not this run's: docs/conformance.md 2.3)."""
        self.armed, self.target_claim_id, self.remaining = False, None, None
        self.filter_by_claim, self.fail_unclaimed = True, False
        self.fired = []

    def decide(self, claim_id: str | None) -> dict[str, Any] | None:
        """The failure to inject into a load of `claim_id`'s request, or None."""
        if not self.armed or self.remaining == 0:
            return None
        if SABOTAGE == "silent_recompute" and any(f["request_claim_id"] == claim_id for f in self.fired):
            return None  # the sabotage's silent retry: its load is not failed again
        if claim_id is None:
            if not self.fail_unclaimed:
                return None
            target = matched = None
        elif self.filter_by_claim:
            if claim_id != self.target_claim_id:
                return None
            target = matched = claim_id
        else:
            # Unfiltered: any claimed load fails and the hook attributes it to the armed claim.
            target = matched = self.target_claim_id
        if self.remaining is not None:
            self.remaining -= 1
        failure = {"failure_target_claim_id": target, "failure_matched_claim_id": matched}
        self.fired.append({"request_claim_id": claim_id, **failure})
        return failure


INJECTOR = Injector()


def claim_fields(kv_transfer_params: dict[str, Any] | None) -> dict[str, Any]:
    """The claim fields every event of a claimed request carries ({} when unclaimed)."""
    claim = (kv_transfer_params or {}).get("resident_claim")
    if not claim:
        return {}
    out = {"claim_id": claim["claim_id"], "resident_claim_id": claim["claim_id"], "resident_claim": True,
           "resident_claim_role": claim.get("role")}
    for k in IDENTITY_FIELDS:
        out[k] = claim[k]
    return out


# --------------------------------------------------------------------------- host offloading


class HostOffloadingWorker(OffloadingWorker):
    """Copies KV pages between the engine's KV tensors and host tensors, synchronously.

    On this CPU backend the engine's "GPU" KV cache is host memory too; the offload tier is a
    second set of host tensors managed by vLLM's CPUOffloadingManager. A load the injector
    fails is not copied and finishes with success=False.
    """

    def __init__(self, kv_caches: CanonicalKVCaches, blocks_per_chunk: int, num_chunks: int):
        assert blocks_per_chunk == 1, "the host worker copies whole blocks (blocks_per_chunk=1)"
        assert len(kv_caches.group_data_refs) == 1, "one KV-cache group"
        self._engine = [t.tensor for t in kv_caches.tensors]
        self._host = [torch.zeros((num_chunks, t.shape[1]), dtype=t.dtype, device="cpu") for t in self._engine]
        self._finished: list[TransferResult] = []
        self._fail: set[int] = set()

    def fail_next(self, job_id: int) -> None:
        self._fail.add(job_id)

    @staticmethod
    def _ids(spec: LoadStoreSpec) -> torch.Tensor:
        return torch.from_numpy(spec.block_ids.astype("int64"))

    def _copy(self, job_id: int, src_ids, dst_ids, to_host: bool) -> None:
        t0 = time.perf_counter()
        size = 0
        for engine, host in zip(self._engine, self._host, strict=True):
            if to_host:
                host[dst_ids] = engine[src_ids]
            else:
                engine[dst_ids] = host[src_ids]
            size += int(src_ids.numel()) * engine.shape[1]
        self._finished.append(TransferResult(job_id, True, size, time.perf_counter() - t0))

    def submit_store(self, job_id: int, src_spec: GPULoadStoreSpec, dst_spec: LoadStoreSpec) -> bool:
        self._copy(job_id, self._ids(src_spec), self._ids(dst_spec), to_host=True)
        return True

    def submit_load(self, job_id: int, src_spec: LoadStoreSpec, dst_spec: GPULoadStoreSpec) -> bool:
        if job_id in self._fail:
            self._fail.discard(job_id)
            self._finished.append(TransferResult(job_id, False, 0, 0.0))
            return True
        self._copy(job_id, self._ids(src_spec), self._ids(dst_spec), to_host=False)
        return True

    def get_finished(self) -> list[TransferResult]:
        out, self._finished = self._finished, []
        return out

    def wait(self, job_ids: set[int]) -> None:
        return  # transfers complete in submit_*


class HostOffloadingSpec(CPUOffloadingSpec):
    """vLLM's CPUOffloadingSpec (and so its CPUOffloadingManager) with the host worker."""

    def get_worker(self, kv_caches: CanonicalKVCaches) -> OffloadingWorker:
        if not self._worker:
            self._worker = HostOffloadingWorker(kv_caches, self.blocks_per_chunk, self.num_chunks)
        return self._worker


# --------------------------------------------------------------------------- metadata


@dataclass
class ClaimConnectorMetadata(OffloadingConnectorMetadata):
    # job_id -> {"request_id", "is_store", "claim": claim_fields(...)}; scheduler -> worker
    job_claims: dict[int, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ClaimWorkerMetadata(OffloadingWorkerMetadata):
    # job_id -> failure attribution of a failed load; worker -> scheduler
    failed_jobs: dict[int, dict[str, Any]] = field(default_factory=dict)

    def aggregate(self, other):
        merged = super().aggregate(other)
        failed = dict(self.failed_jobs)
        failed.update(getattr(other, "failed_jobs", {}))
        return ClaimWorkerMetadata(merged.completed_jobs, merged.transfer_stats, failed)


# --------------------------------------------------------------------------- the connector


class ClaimOffloadingConnector(OffloadingConnector):
    """vLLM's OffloadingConnector with claim metadata, failed loads and trace events."""

    def __init__(self, vllm_config, role, kv_cache_config):
        super().__init__(vllm_config, role, kv_cache_config)
        # scheduler side
        self._claims: dict[str, dict[str, Any]] = {}
        self._job_claims: dict[int, dict[str, Any]] = {}
        # worker side
        self._worker_jobs: dict[int, dict[str, Any]] = {}
        self._load_dst: dict[int, list[int]] = {}
        self._store_blocks: dict[int, int] = {}
        self._failures: dict[int, dict[str, Any]] = {}
        self._failed_for_meta: dict[int, dict[str, Any]] = {}
        self._invalid_block_ids: set[int] = set()

    # ---- scheduler side

    def _claim(self, req_id: str) -> dict[str, Any]:
        return self._claims.get(req_id, {})

    def on_new_request(self, request) -> None:
        super().on_new_request(request)
        claim = claim_fields(request.kv_transfer_params)
        self._claims[request.request_id] = claim
        RECORDER.emit(
            "request_initialized", "scheduler_connector", request_id=request.request_id,
            has_kv_transfer_params=request.kv_transfer_params is not None,
            num_prompt_tokens=request.num_prompt_tokens, num_block_hashes=len(request.block_hashes),
            cache_salt=request.cache_salt, **claim)

    def get_num_new_matched_tokens(self, request, num_computed_tokens):
        hit, load_async = super().get_num_new_matched_tokens(request, num_computed_tokens)
        if hit is not None:
            RECORDER.emit(
                "offload_lookup_result", "scheduler_connector", request_id=request.request_id,
                num_computed_tokens=num_computed_tokens, num_hit_tokens=hit, will_load_async=load_async,
                **self._claim(request.request_id))
        return hit, load_async

    def update_state_after_alloc(self, request, blocks, num_external_tokens):
        sched = self.scheduler
        status = sched._req_status.get(request.request_id)
        before = set(status.transfer_jobs) if status else set()
        super().update_state_after_alloc(request, blocks, num_external_tokens)
        if num_external_tokens == 0:
            return
        rid = request.request_id
        claim = self._claim(rid)
        (job_id,) = sched._req_status[rid].transfer_jobs - before
        self._job_claims[job_id] = {"request_id": rid, "is_store": False, "claim": claim}
        dst = sched._current_batch_load_jobs[job_id].dst_spec.block_ids.tolist()
        if claim:
            RECORDER.emit(
                "resident_claim_restore_required", "scheduler_connector", request_id=rid, job_id=job_id,
                num_external_tokens=num_external_tokens, restoration_required=True,
                reuse_requires_restoration=True, predicate_satisfied_from_primary=False,
                transfer_type=LOAD, **claim)
        RECORDER.emit(
            "offload_load_job_created", "scheduler_connector", request_id=rid, job_id=job_id,
            num_external_tokens=num_external_tokens, dst_block_count=len(dst), key_count=len(sched._jobs[job_id].keys),
            transfer_type=LOAD, **claim)

    def build_connector_meta(self, scheduler_output):
        meta = super().build_connector_meta(scheduler_output)
        sched = self.scheduler
        for job_id, job in meta.store_jobs.items():
            claim = self._claim(job.req_id)
            self._job_claims[job_id] = {"request_id": job.req_id, "is_store": True, "claim": claim}
            RECORDER.emit(
                "offload_store_job_created", "scheduler_connector", request_id=job.req_id, job_id=job_id,
                key_count=len(sched._jobs[job_id].keys), src_block_count=len(job.src_spec.block_ids),
                transfer_type=STORE, **claim)
        job_claims = {j: self._job_claims[j] for j in (*meta.load_jobs, *meta.store_jobs) if j in self._job_claims}
        return ClaimConnectorMetadata(meta.load_jobs, meta.store_jobs, meta.jobs_to_flush, job_claims)

    def update_connector_output(self, connector_output):
        sched = self.scheduler
        meta = connector_output.kv_connector_worker_meta
        completed = []
        if meta is not None:
            for job_id, count in meta.completed_jobs.items():
                status = sched._jobs.get(job_id)
                if job_id < sched._stale_job_threshold or status is None or status.pending_count - count > 0:
                    continue
                req_status = sched._req_status[status.req_id]
                completed.append((job_id, status.is_store, len(status.keys), status.req_id, req_status.req))
        failed = dict(getattr(meta, "failed_jobs", {}) or {})
        super().update_connector_output(connector_output)
        for job_id, is_store, key_count, rid, request in completed:
            claim = self._claim(rid)
            info = self._job_claims.pop(job_id, {})
            assert info.get("is_store", is_store) == is_store
            if is_store:
                if claim:
                    RECORDER.emit(
                        "resident_claim_offloaded", "scheduler_connector", request_id=rid, job_id=job_id,
                        key_count=key_count, block_count_footprint=key_count, source_tier="GPU",
                        destination_tier="CPU", cache_tier_from="gpu_kv_cache", cache_tier_to="host_offload_tier",
                        transfer_type=STORE, restoration_required=True, **claim)
                RECORDER.emit("offload_job_completed", "scheduler_connector", request_id=rid, job_id=job_id,
                              is_store=True, key_count=key_count, **claim)
            elif job_id not in failed:
                if claim:
                    RECORDER.emit(
                        "resident_claim_restored", "scheduler_connector", request_id=rid, job_id=job_id,
                        restored_from_offload_tier=True, restoration_source="offload_tier",
                        restoration_completed=True, cache_tier_from="host_offload_tier",
                        cache_tier_to="gpu_kv_cache", **claim)
                RECORDER.emit("offload_job_completed", "scheduler_connector", request_id=rid, job_id=job_id,
                              is_store=False, key_count=key_count, **claim)
            else:
                self._emit_load_failure_outcome(job_id, rid, request, failed[job_id], claim)

    def _emit_load_failure_outcome(self, job_id, rid, request, failure, claim) -> None:
        """The connector-level outcome of a failed load: after vLLM's scheduler handled it."""
        flags = {"failure_injection_flag": True, "injected_restoration_failure": True,
                 "controlled_restoration_unavailable": True, "failure_reason": FAILURE_REASON}
        RECORDER.emit("offload_load_job_failed", "scheduler_connector", request_id=rid, job_id=job_id,
                      is_store=False, **flags, **claim)
        attributed = failure.get("failure_matched_claim_id")
        blocking = [attributed] if attributed else []
        if request.status == RequestStatus.FINISHED_ERROR or SABOTAGE == "silent_recompute":
            RECORDER.emit(
                "resident_claim_restoration_failed", "scheduler_connector", request_id=rid, job_id=job_id,
                outcome_claim_id=attributed, blocking_claim_ids=blocking, claim_scoped_outcome=True,
                claim_scoped_outcome_type="refusal", outcome_type="refusal", restored_from_offload_tier=False,
                fallback_recompute_counted_as_satisfaction=False,
                restoration_failure_reason=FAILURE_REASON, **flags, **claim)
            RECORDER.emit(
                "active_request_refused", "scheduler_connector", request_id=rid, outcome_claim_id=attributed,
                blocking_claim_ids=blocking, outcome_type="refusal", arbiter_action="restore_unavailable_refuse",
                feasibility="infeasible_restore_claimed_kv", native_scheduler_refusal=False,
                scheduler_finish_status="FINISHED_ERROR", **claim)
            if SABOTAGE == "silent_recompute":
                RECORDER.silenced.add(rid)  # the retry that follows is never recorded
        else:
            # kv_load_failure_policy="recompute": vLLM retries the request; a later success is
            # a fallback, not the claim's restoration.
            RECORDER.emit(
                "resident_claim_restoration_failed", "scheduler_connector", request_id=rid, job_id=job_id,
                outcome_claim_id=attributed, blocking_claim_ids=blocking, claim_scoped_outcome=True,
                claim_scoped_outcome_type="fallback_recompute_without_claim_satisfaction",
                outcome_type="fallback_recompute_without_claim_satisfaction", scheduler_failure_policy="recompute",
                restored_from_offload_tier=False, fallback_recompute_counted_as_satisfying_claim=False,
                restoration_failure_reason=FAILURE_REASON, request_status=request.status.name, **flags, **claim)

    def _finished(self, request) -> None:
        status = self.scheduler._req_status.get(request.request_id)
        pending = sorted(status.transfer_jobs) if status else []
        event = "offload_request_finished_pending_jobs" if pending else "offload_request_finished_no_pending_jobs"
        RECORDER.emit(event, "scheduler_connector", request_id=request.request_id, pending_job_ids=pending,
                      request_status=request.status.name, **self._claim(request.request_id))
        if request.status == RequestStatus.FINISHED_ERROR:
            RECORDER.count("failed_requests")

    def request_finished(self, request, block_ids):
        self._finished(request)
        return super().request_finished(request, block_ids)

    def request_finished_all_groups(self, request, block_ids):
        self._finished(request)
        return super().request_finished_all_groups(request, block_ids)

    # ---- worker side

    def bind_connector_metadata(self, connector_metadata) -> None:
        super().bind_connector_metadata(connector_metadata)
        self._worker_jobs.update(getattr(connector_metadata, "job_claims", {}))

    def _unsubmitted_stores(self, meta) -> dict[int, int]:
        """Store jobs the worker will submit now (deferred from the previous step, or to
        flush): job id -> number of blocks."""
        worker = self.connector_worker
        out = {job_id: len(src.block_ids) for job_id, src, _ in worker._unsubmitted_store_jobs}
        for job_id in meta.jobs_to_flush or ():
            entry = meta.store_jobs.get(job_id)
            if entry is not None:
                out[job_id] = len(entry.src_spec.block_ids)
        return out

    def _stores_submitted(self, stores: dict[int, int]) -> None:
        for job_id, n_blocks in stores.items():
            self._store_blocks[job_id] = n_blocks
            info = self._worker_jobs.get(job_id, {})
            RECORDER.emit("offload_worker_transfer_submitted", "worker_connector", request_id=info.get("request_id"),
                          job_id=job_id, submitted=True, transfer_type=STORE, block_count=n_blocks,
                          **info.get("claim", {}))

    def handle_preemptions(self, kv_connector_metadata) -> None:
        # vLLM's worker submits the deferred stores here, at the start of the step.
        self._worker_jobs.update(getattr(kv_connector_metadata, "job_claims", {}))
        stores = self._unsubmitted_stores(kv_connector_metadata)
        super().handle_preemptions(kv_connector_metadata)
        self._stores_submitted(stores)

    def start_load_kv(self, forward_context, **kwargs) -> None:
        worker = self.connector_worker
        meta = self._connector_metadata
        stores = {job_id: len(src.block_ids) for job_id, src, _ in worker._unsubmitted_store_jobs}
        loads = list(meta.load_jobs)
        for job_id in loads:
            info = self._worker_jobs.get(job_id, {})
            failure = INJECTOR.decide(info.get("claim", {}).get("claim_id"))
            self._load_dst[job_id] = meta.load_jobs[job_id].dst_spec.block_ids.tolist()
            if failure is not None:
                self._failures[job_id] = failure
                worker.worker.fail_next(job_id)
        super().start_load_kv(forward_context, **kwargs)
        self._stores_submitted(stores)
        for job_id in loads:
            info = self._worker_jobs.get(job_id, {})
            RECORDER.emit("offload_worker_transfer_submitted", "worker_connector", request_id=info.get("request_id"),
                          job_id=job_id, submitted=True, transfer_type=LOAD,
                          block_count=len(self._load_dst[job_id]), **info.get("claim", {}))

    def get_finished(self, finished_req_ids):
        worker = self.connector_worker
        finished_recving: set[str] = set()
        for result in worker.worker.get_finished():
            job_id = result.job_id
            is_load = job_id in worker._load_jobs
            info = self._worker_jobs.pop(job_id, {})
            claim = info.get("claim", {})
            # No transfer_time: a duration differs in every live run (docs/conformance.md,
            # "Reproduction"); vLLM's own transfer stats below still get it.
            fields = {"request_id": info.get("request_id"), "job_id": job_id, "success": result.success,
                      "transfer_type": LOAD if is_load else STORE, "transfer_size": result.transfer_size}
            dst = self._load_dst.pop(job_id, [])
            if result.success:
                if result.transfer_time is not None and result.transfer_size is not None:
                    stats = worker._connector_worker_meta.transfer_stats
                    (stats.load if is_load else stats.store).record(result.transfer_size, result.transfer_time)
                if is_load:
                    RECORDER.count("loaded_blocks", len(dst))
                else:
                    RECORDER.count("stored_blocks", self._store_blocks.pop(job_id, 0))
                RECORDER.emit("offload_worker_transfer_finished", "worker_connector", **fields, **claim)
            else:
                assert is_load, "only loads are failed"
                failure = self._failures.pop(job_id)
                flags = {"injected_restoration_failure": True, "failure_injection_flag": True,
                         "controlled_restoration_unavailable": True, "failure_reason": FAILURE_REASON,
                         "failure_mode": "refusal"}
                RECORDER.count("failed_transfers")
                RECORDER.emit("offload_worker_transfer_finished", "worker_connector", **fields, **flags,
                              **failure, **claim)
                self._invalid_block_ids.update(dst)
                RECORDER.emit("offload_worker_load_failed", "worker_connector", request_id=info.get("request_id"),
                              job_id=job_id, invalid_block_ids=dst, failure_injection_flag=True,
                              failure_reason=FAILURE_REASON, **claim)
                self._failed_for_meta[job_id] = {"request_id": info.get("request_id"),
                                                 "claim_id": claim.get("claim_id"),
                                                 "invalid_block_ids": dst, **failure}
            worker._connector_worker_meta.mark_completed(job_id)
            req_id = worker._load_jobs.pop(job_id, None)
            if req_id is not None:
                finished_recving.add(req_id)
        return set(), finished_recving

    def get_block_ids_with_load_errors(self) -> set[int]:
        out, self._invalid_block_ids = self._invalid_block_ids, set()
        return out

    def build_connector_worker_meta(self):
        meta = super().build_connector_worker_meta()
        if not self._failed_for_meta:
            return meta
        failed, self._failed_for_meta = self._failed_for_meta, {}
        if meta is None:
            return ClaimWorkerMetadata(failed_jobs=failed)
        return ClaimWorkerMetadata(meta.completed_jobs, meta.transfer_stats, failed)

    def reset_cache(self):
        out = super().reset_cache()
        # vLLM dropped its state of finished requests and every job; keep the claims of
        # requests it still tracks.
        live = self.scheduler._req_status
        self._claims = {rid: c for rid, c in self._claims.items() if rid in live}
        self._job_claims.clear()
        return out


# --------------------------------------------------------------------------- the scheduler


class ClaimScheduler(Scheduler):
    """vLLM's Scheduler; emits the scheduler-boundary events at the invalid-KV-load path."""

    def update_from_output(self, scheduler_output, model_runner_output):
        kco = model_runner_output.kv_connector_output
        meta = kco.kv_connector_worker_meta if kco is not None else None
        self._kvlower_failed_jobs = dict(getattr(meta, "failed_jobs", {}) or {})
        return super().update_from_output(scheduler_output, model_runner_output)

    def _handle_invalid_blocks(self, invalid_block_ids, num_scheduled_tokens):
        before = set(self.failed_recving_kv_req_ids)
        policy = self.recompute_kv_load_failures
        if SABOTAGE == "silent_recompute":
            self.recompute_kv_load_failures = True  # vLLM retries, whatever the policy
        handled = super()._handle_invalid_blocks(invalid_block_ids, num_scheduled_tokens)
        self.recompute_kv_load_failures = policy
        result = set(handled)
        if SABOTAGE == "silent_recompute" and not policy:
            result |= self.failed_recving_kv_req_ids - before  # retried, but reported as failed closed
        fail = not self.recompute_kv_load_failures
        # policy fail: `result` is every request update_from_output will finish with
        # FINISHED_ERROR; policy recompute: async failures are queued for a retry instead.
        affected = set(result) if fail else set(result) | (self.failed_recving_kv_req_ids - before)
        failed_jobs = getattr(self, "_kvlower_failed_jobs", {})
        by_request = {f["request_id"]: f for f in failed_jobs.values()}
        for rid in sorted(affected):
            request = self.requests[rid]
            claim = claim_fields(request.kv_transfer_params)
            failure = by_request.get(rid)
            attributed = failure["failure_matched_claim_id"] if failure else claim.get("claim_id")
            blocking = [attributed] if attributed else []
            mine = sorted(set(failure["invalid_block_ids"]) & set(invalid_block_ids)) if failure else []
            common = {"request_id": rid, "outcome_claim_id": attributed, "blocking_claim_ids": blocking,
                      "native_scheduler_admission_refusal": False, "native_scheduler_refusal": False,
                      "scheduler_event_before_finish_requests": True,
                      "scheduler_failure_policy": "fail" if fail else "recompute"}
            if fail:
                RECORDER.emit(
                    "scheduler_resident_claim_restoration_failed", "scheduler", **common,
                    scheduler_side_failure_outcome=True, scheduler_side_refusal=True,
                    finish_status="FINISHED_ERROR", finish_reason="error", claim_scoped_outcome_type="refusal",
                    scheduler_failure_branch="_handle_invalid_blocks", invalid_block_ids=mine,
                    invalid_block_count=len(mine), **claim)
                RECORDER.emit(
                    "scheduler_active_request_refused", "scheduler", **common, scheduler_side_refusal=True,
                    scheduler_side_failure_outcome=True, finish_status="FINISHED_ERROR",
                    claim_scoped_outcome_type="refusal", arbiter_action="scheduler_invalid_kv_load_fail_closed",
                    feasibility="infeasible_restore_claimed_kv", **claim)
                if SABOTAGE == "silent_recompute" and rid not in handled:
                    # the termination vLLM's finish_requests would have caused
                    RECORDER.emit("offload_request_finished_pending_jobs", "scheduler_connector", request_id=rid,
                                  pending_job_ids=sorted(failed_jobs), request_status="FINISHED_ERROR", **claim)
            else:
                RECORDER.emit(
                    "scheduler_resident_claim_restoration_failed", "scheduler", **common,
                    scheduler_side_failure_outcome=False, finish_status=None,
                    claim_scoped_outcome_type="fallback_recompute_without_claim_satisfaction",
                    scheduler_failure_branch="_handle_invalid_blocks", invalid_block_ids=mine,
                    invalid_block_count=len(mine), **claim)
        return handled
