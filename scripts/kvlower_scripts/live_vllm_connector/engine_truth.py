"""The engine-truth recorder of the two claim campaigns: what vLLM's own objects say about
every run, read outside the patch's code.

It imports the standard library and vLLM, never the patch (claim_connector, claim_residency)
nor any other module of kvlower_scripts: the patch cannot hand it a fact, and a recorder that
read the patch's state would have to import it (verify.py and residency_verify.py refuse an
engine_truth.py that does; docs/conformance.md). It reads:

  * the scheduler's update_from_output, wrapped read-only on the instance (the wrapper calls
    whatever update_from_output the scheduler class defines and returns its result):
    each step's SchedulerOutput (the requests scheduled for the first time, the load and
    store jobs in the connector metadata vLLM hands its worker), ModelRunnerOutput's
    kv_connector_output (the block ids reported as failed loads; whose blocks they are, from
    the KV-cache manager before the scheduler acts), and every EngineCoreOutput (finish
    reason, prefill stats: prompt tokens from the local prefix cache and from the external
    tier);
  * for a residency claim, after every step: the BlockPool (which of the claim's block hashes
    map to a block in its cached-hash map, which of those blocks have ref_cnt 0, i.e. sit in
    the free queue the allocator evicts from) and vLLM's offloading manager (which of them
    the host tier holds, ready: CPUOffloadingManager.lookup);
  * each request's RequestOutput (finish_reason, num_cached_tokens), handed over by the
    driver that received it from vLLM.

The campaign driver passes the experiment's inputs (scenario, the patch's switches, what the
injector was armed with and fired) separately; they are labelled inputs, never observations.
"""

from __future__ import annotations

import json
from pathlib import Path

TRUTH_RECORDER = "kvlower-engine-truth-recorder-1"


def record_core_output(core_outputs: dict[str, dict], o, step: int) -> dict:
    """Adds one EngineCoreOutput's prefill stats (tokens from the local prefix cache, from the
    external tier, computed) and finish reason to core_outputs[request id]; returns that."""
    rec = core_outputs.setdefault(o.request_id, {"prefills": []})
    if o.prefill_stats is not None:
        ps = o.prefill_stats
        rec["prefills"].append({"local": ps.num_local_cached_tokens,
                                "external": ps.num_external_cached_tokens,
                                "computed": ps.num_computed_tokens})
    if o.finish_reason is not None:
        rec["finish_reason"] = o.finish_reason.name.lower()
        rec["finished_step"] = step
    return rec


def match_request(ids, rid: str) -> str:
    """The engine's id of our request `rid` (vLLM adds a random suffix): the one id that is
    rid or starts with rid + '-'."""
    (out,) = [k for k in ids if k == rid or k.startswith(rid + "-")]
    return out


class _StepTruth:
    """The read-only wrapper around the scheduler's update_from_output shared by both
    campaigns; `after_step(scheduler)` is each campaign's extra read after the step."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.reset()
        inner = scheduler.update_from_output

        def update_from_output(scheduler_output, model_runner_output):
            self.steps += 1
            for r in scheduler_output.scheduled_new_reqs:
                self.first_scheduled.setdefault(r.req_id, self.steps)
            meta = scheduler_output.kv_connector_metadata
            for kind in ("load_jobs", "store_jobs"):
                for job in (getattr(meta, kind, None) or {}).values():
                    t = self.transfers.setdefault(kind, {"jobs": 0, "blocks": 0})
                    t["jobs"] += 1
                    t["blocks"] += len(job.dst_spec.block_ids if kind == "load_jobs" else job.src_spec.block_ids)
            self.before_step(scheduler, model_runner_output)
            outputs = inner(scheduler_output, model_runner_output)
            for eco in outputs.values():
                for o in eco.outputs:
                    record_core_output(self.core_outputs, o, self.steps)
            self.after_step()
            return outputs

        scheduler.update_from_output = update_from_output

    def reset(self) -> None:
        self.steps = 0
        self.first_scheduled: dict[str, int] = {}
        self.core_outputs: dict[str, dict] = {}
        self.transfers: dict[str, dict] = {}

    def before_step(self, scheduler, model_runner_output) -> None:
        return

    def after_step(self) -> None:
        return

    def request(self, rid: str, request_output) -> dict:
        """What the engine says about our request `rid`: its EngineCoreOutputs and its
        RequestOutput (None when none reached the client, e.g. an abort)."""
        core_id = match_request(self.core_outputs, rid) if any(
            k == rid or k.startswith(rid + "-") for k in self.core_outputs) else None
        core = self.core_outputs.get(core_id, {}) if core_id else {}
        prefills = core.get("prefills", [])
        return {
            "engine_request_id_suffixed": core_id is not None and core_id != rid,
            "finish_reason": request_output.outputs[0].finish_reason if request_output is not None else None,
            "engine_finish_reason": core.get("finish_reason"),
            "num_cached_tokens": request_output.num_cached_tokens if request_output is not None else None,
            "prefills": prefills,
            "local_tokens_served": prefills[-1]["local"] if prefills else 0,
            "external_tokens_served": prefills[-1]["external"] if prefills else 0,
            "first_scheduled_step": next((s for k, s in self.first_scheduled.items()
                                          if k == rid or k.startswith(rid + "-")), None),
            "finished_step": core.get("finished_step"),
        }

    def engine_transfers(self) -> dict:
        """The load and store jobs (and their blocks) the connector metadata handed vLLM's
        worker during the run."""
        return {k: dict(v) for k, v in sorted(self.transfers.items())}


class ConnectorTruth(_StepTruth):
    """The connector campaign's truth: besides the shared reads, the failed-load block ids
    each step's kv_connector_output reports, and whose they are."""

    def reset(self) -> None:
        super().reset()
        self.invalid_block_ids: list[list[int]] = []
        self.failed_blocks_by_request: dict[str, list[int]] = {}

    def before_step(self, scheduler, model_runner_output) -> None:
        kco = model_runner_output.kv_connector_output
        if kco is None or not kco.invalid_block_ids:
            return
        bad = set(kco.invalid_block_ids)
        self.invalid_block_ids.append(sorted(bad))
        # Whose blocks they are, from the KV-cache manager, before the scheduler acts on them.
        mgr = scheduler.kv_cache_manager
        for rid in sorted(scheduler.requests):
            (ids,) = mgr.get_block_ids(rid)
            if bad & set(ids):
                self.failed_blocks_by_request[rid] = sorted(bad & set(ids))

    def blocks_failed(self, rid: str) -> list[int]:
        for k, v in self.failed_blocks_by_request.items():
            if k == rid or k.startswith(rid + "-"):
                return v
        return []


class ResidencyTruth(_StepTruth):
    """The residency campaign's truth: besides the shared reads, after every step, the claim's
    footprint blocks device-cached, pinned (cached, with a reference beyond the live requests
    whose block tables hold it), evictable (cached, ref_cnt 0: in the free queue) and held by
    the host tier; twice per step (after schedule, after the step's output)."""

    def __init__(self, scheduler):
        from vllm.v1.core.kv_cache_utils import make_block_hash_with_group_id
        from vllm.v1.kv_offload.base import LookupResult, ReqContext, make_offload_key

        self._key = make_block_hash_with_group_id
        self._okey, self._hit, self._ctx = make_offload_key, LookupResult.HIT, ReqContext
        super().__init__(scheduler)

    def reset(self) -> None:
        super().reset()
        self.claim_rid: str | None = None
        self.claim_footprint = 0
        self.claim_hashes = None
        self.per_step: list[dict] = []  # after each step
        self.per_step_scheduled: list[dict] = []  # after each schedule(), before the step's output

    def watch(self, rid: str, footprint: int) -> None:
        """Watch the claim whose blocks are the first `footprint` block hashes of request rid."""
        self.claim_rid, self.claim_footprint = rid, footprint
        self._watch_claim()

    def _watch_claim(self) -> None:
        if self.claim_rid is None or self.claim_hashes is not None:
            return
        req = self.scheduler.requests.get(self.claim_rid)
        if req is not None:
            self.claim_hashes = list(req.block_hashes[: self.claim_footprint])

    def before_step(self, scheduler, model_runner_output) -> None:
        # After schedule() (where a patch pins, refuses, demotes or expires) and the model's
        # step, before the scheduler processes the step's output (finished requests, the
        # offloading manager's completed stores).
        if self.claim_hashes is not None:
            self.per_step_scheduled.append({"step": self.steps, **self.sample()})

    def after_step(self) -> None:
        self._watch_claim()
        if self.claim_hashes is not None:
            self.per_step.append({"step": self.steps, **self.sample()})

    def sample(self) -> dict:
        """The claim's footprint blocks now: device-cached, pinned, evictable, host-held."""
        if self.claim_hashes is None:
            return {"device_cached": 0, "pinned": 0, "evictable": 0, "host_tier": 0}
        mgr = self.scheduler.kv_cache_manager
        pool = mgr.block_pool
        # How many live requests hold each block (their block tables): a reference beyond
        # those is a pin (BlockPool.touch by something that is not a request).
        held: dict[int, int] = {}
        for blocks in mgr.coordinator.single_type_managers[0].req_to_blocks.values():
            for b in blocks:
                held[b.block_id] = held.get(b.block_id, 0) + 1
        cached = evictable = pinned = 0
        for h in self.claim_hashes:
            b = pool.cached_block_hash_to_block.get_one_block(self._key(h, 0))
            if b is not None:
                cached += 1
                evictable += b.ref_cnt == 0
                pinned += b.ref_cnt > held.get(b.block_id, 0)
        offload = self.scheduler.connector.scheduler.manager
        ctx = self._ctx(req_id="kvlower-truth")
        host = sum(offload.lookup(self._okey(h, 0), ctx) == self._hit for h in self.claim_hashes)
        return {"device_cached": cached, "pinned": pinned, "evictable": evictable, "host_tier": host}

    def claim_summary(self, footprint: int) -> dict:
        """Aggregates for the reader, derived from the step samples alone (per_step, unless
        named): the first step the claim was device-cached whole; the first step after that it
        was not protected (a block evictable or gone) and the first loss; the host tier's count
        at the step before the loss and at the first unprotected step; the first sample
        (per_step_scheduled and per_step, in time order) at which the claim, once pinned whole,
        was no longer pinned whole, and the host tier's count at that sample (a demotion is
        safe only if it is the whole footprint). Verifiers recompute them from the samples."""
        updated = self.per_step
        materialized = next((p["step"] for p in updated if p["device_cached"] == footprint), None)
        unprotected = loss = host_before_loss = host_at_unprotected = None
        if materialized is not None:
            prev_host = None
            for p in updated:
                s, c, e, h = p["step"], p["device_cached"], p["evictable"], p["host_tier"]
                if s < materialized:
                    prev_host = h
                    continue
                if unprotected is None and (c < footprint or e > 0):
                    unprotected, host_at_unprotected = s, h
                if loss is None and c < footprint:
                    loss, host_before_loss = s, prev_host
                prev_host = h
        pinned_whole = unpinned = None
        both = sorted([(p["step"], 0, p) for p in self.per_step_scheduled]
                      + [(p["step"], 1, p) for p in self.per_step], key=lambda x: x[:2])
        for _, _, p in both:
            if pinned_whole is None:
                if p["pinned"] == footprint:
                    pinned_whole = p
            elif p["pinned"] < footprint:
                unpinned = p
                break
        return {"materialized_step": materialized, "first_unprotected_step": unprotected,
                "first_loss_step": loss, "host_tier_blocks_before_loss": host_before_loss,
                "host_tier_blocks_at_first_unprotected_step": host_at_unprotected,
                "first_pinned_whole_step": pinned_whole["step"] if pinned_whole else None,
                "first_unpinned_step": unpinned["step"] if unpinned else None,
                "host_tier_blocks_when_unpinned": unpinned["host_tier"] if unpinned else None}


def write_truth(path: Path, doc: dict) -> None:
    """The truth document: sorted keys, one-space indent, a final newline (deterministic)."""
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
