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

import hashlib
import json
import sys
from pathlib import Path

TRUTH_RECORDER = "kvlower-engine-truth-recorder-3"
TRUTH_SCHEMA = "kvlower-engine-truth/1"
REPO = Path(__file__).resolve().parents[3]


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
        from vllm.v1.kv_cache_interface import group_kernel_blocks

        # The engine's own KV tensors, one per attention layer (what vLLM binds to each
        # layer and hands the offloading worker), each viewed with the manager's blocks as
        # dim 0 exactly as vLLM's offloading worker views them (group_kernel_blocks). Both
        # campaigns digest what was stored and restored from them (docs/conformance.md).
        ctx = scheduler.vllm_config.compilation_config.static_forward_context
        num_blocks = scheduler.kv_cache_config.num_blocks
        self._kv = []
        for name in sorted(ctx):
            kv = getattr(ctx[name], "kv_cache", None)
            if isinstance(kv, list):
                (kv,) = kv
            if kv is not None and hasattr(kv, "shape") and kv.numel():
                self._kv.append(group_kernel_blocks(kv, num_blocks))
        assert self._kv, "engine_truth: no KV-cache tensor found"
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
            self.before_step(scheduler, scheduler_output, model_runner_output)
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

    def block_digest(self, block_id: int) -> str:
        """SHA-256 of one block's KV pages: every layer's bytes of the block, layers in name
        order."""
        h = hashlib.sha256()
        for t in self._kv:
            h.update(t[block_id].contiguous().view(-1).view(torch_uint8()).numpy().tobytes())
        return h.hexdigest()

    @staticmethod
    def kv_blocks(digests: dict, rid: str):
        """The digests recorded under our request `rid` (vLLM's id may carry a suffix)."""
        for k, v in digests.items():
            if k == rid or k.startswith(rid + "-"):
                return v
        return None

    def before_step(self, scheduler, scheduler_output, model_runner_output) -> None:
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
    each step's kv_connector_output reports, and whose they are; and the content of the KV
    pages each store job copied to the tier and each load job filled from it, digested per
    block from the engine's own KV tensors (docs/conformance.md, "Connector runs": a restore
    counts only when the restored KV equals the stored KV)."""

    def reset(self) -> None:
        super().reset()
        self.invalid_block_ids: list[list[int]] = []
        self.failed_blocks_by_request: dict[str, list[int]] = {}
        self.kv_stored: dict[str, list[str]] = {}
        self.kv_restored: dict[str, list[str]] = {}

    def before_step(self, scheduler, scheduler_output, model_runner_output) -> None:
        # After the model's step, before the scheduler handles its output: a store job of
        # this step copies pages the model has now written (vLLM's worker submits it at the
        # start of the next step; nothing writes a full block in between), and a load job of
        # this step has filled its pages (the worker loads before the model runs). Each
        # request's stored blocks accumulate in job order; its restored blocks are those of
        # its last step with a load (a retried load replaces a failed one).
        meta = scheduler_output.kv_connector_metadata
        for job in (getattr(meta, "store_jobs", None) or {}).values():
            self.kv_stored.setdefault(job.req_id, []).extend(
                self.block_digest(int(b)) for b in job.src_spec.block_ids)
        loaded: dict[str, list[str]] = {}
        for job in (getattr(meta, "load_jobs", None) or {}).values():
            loaded.setdefault(job.req_id, []).extend(self.block_digest(int(b)) for b in job.dst_spec.block_ids)
        self.kv_restored.update(loaded)
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

    def run_record(self, run: str, scenario: str, trace: str, inputs: dict, sent: list[tuple],
                   outputs: dict, references: dict | None = None) -> dict:
        """One run's truth, assembled here (judging code), not by the driver: the engine's
        facts about each request the driver sent (`sent`: (request, claim id, role, prompt
        tokens); `outputs`: the RequestOutputs by engine request id), the content of the
        blocks stored and restored for each, the no-reuse reference of each reuse
        (`references`: request -> (the reference's request id, its RequestOutput), run by the
        driver after the run with the prefix cache and the tier emptied) and the run's
        labelled inputs (`claims`, `scheduler_failure_policy`, `injection_armed`,
        `injection_target_claim_id`, `injection_fired`)."""
        references = references or {}
        requests = []
        for rid, claim_id, role, prompt_tokens in sent:
            out = outputs[match_request(outputs, rid)]
            seen = self.request(rid, out)
            ref = references.get(rid)
            reference = None
            if ref is not None:
                ref_seen = self.request(ref[0], ref[1])
                reference = {"request": ref[0], **client_output(ref[1]),
                             "num_cached_tokens": ref_seen["num_cached_tokens"], "prefills": ref_seen["prefills"]}
            requests.append({
                "request": rid,
                "engine_request_id_suffixed": seen["engine_request_id_suffixed"],
                "claim_id": claim_id,
                "role": role,
                "prompt_tokens": prompt_tokens,
                "finish_reason": seen["finish_reason"],
                "engine_finish_reason": seen["engine_finish_reason"],
                "num_cached_tokens": seen["num_cached_tokens"],
                "prefills": seen["prefills"],
                "external_tokens_served": seen["external_tokens_served"],
                "blocks_reported_failed": self.blocks_failed(rid),
                "kv_blocks_stored": self.kv_blocks(self.kv_stored, rid),
                "kv_blocks_restored": self.kv_blocks(self.kv_restored, rid),
                "output": client_output(out) if out is not None else None,
                "reference": reference,
            })
        return {"run": run, "scenario": scenario, "trace": trace, **inputs, "requests": requests,
                "engine_steps": self.steps, "invalid_block_ids_reported": self.invalid_block_ids,
                "engine_transfers": self.engine_transfers()}


def torch_uint8():
    import torch

    return torch.uint8


def client_output(request_output) -> dict:
    """A RequestOutput's sampled token ids and each one's log-probability, as the client
    received them (SamplingParams(logprobs=0): the sampled token's own)."""
    c = request_output.outputs[0]
    logprobs = c.logprobs or []
    return {"token_ids": list(c.token_ids),
            "logprobs": [lp[t].logprob for t, lp in zip(c.token_ids, logprobs, strict=True)]}


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
        self.recording = True  # False after end_run(): the no-reuse reference is no part of the run
        self.per_step: list[dict] = []  # after each step
        self.per_step_scheduled: list[dict] = []  # after each schedule(), before the step's output
        # The claim's footprint blocks, digested from the engine's KV tensors: position i of
        # the footprint -> its digest when last stored to the host tier (whatever request's
        # store job copied it), and, per request, when that request's load job restored it.
        # Store and restore run under different requests' jobs (the claim request stores, the
        # probe loads): they are paired by the claim's block hashes.
        self.kv_stored: dict[int, str] = {}
        self.kv_restored: dict[str, dict[int, str]] = {}

    def end_run(self) -> None:
        """The run is over: what the engine does next (the driver's no-reuse reference of the
        probe) is no sample and no store or restore of the claim."""
        self.recording = False

    def _footprint_position(self, req_id: str, block_id: int) -> int | None:
        """Which block of the claim's footprint the engine block `block_id` of request
        `req_id`'s job holds: the block hash at its position in the request's block table (a
        load's destination is not cached yet), else the hash the BlockPool caches it under."""
        mgr = self.scheduler.kv_cache_manager
        req = self.scheduler.requests.get(req_id)
        if req is not None:
            (table,) = mgr.get_block_ids(req_id)
            if block_id in table:
                pos = list(table).index(block_id)
                if pos < len(req.block_hashes):
                    return self._claim_pos.get(req.block_hashes[pos])
        cached = mgr.block_pool.blocks[block_id].block_hash
        return self._claim_key_pos.get(cached) if cached is not None else None

    def _digest_jobs(self, scheduler_output) -> None:
        # After the model's step, before the scheduler handles its output, as for the
        # connector campaign (ConnectorTruth.before_step): a store job's source pages are
        # written, a load job's destination pages filled.
        meta = scheduler_output.kv_connector_metadata
        for job in (getattr(meta, "store_jobs", None) or {}).values():
            for b in job.src_spec.block_ids:
                pos = self._footprint_position(job.req_id, int(b))
                if pos is not None:
                    self.kv_stored[pos] = self.block_digest(int(b))
        for job in (getattr(meta, "load_jobs", None) or {}).values():
            for b in job.dst_spec.block_ids:
                pos = self._footprint_position(job.req_id, int(b))
                if pos is not None:
                    self.kv_restored.setdefault(job.req_id, {})[pos] = self.block_digest(int(b))

    def footprint_digests(self, by_position: dict[int, str] | None) -> list | None:
        """One entry per footprint block, in order: its digest, or None (null: none at all)."""
        if not by_position:
            return None
        return [by_position.get(i) for i in range(self.claim_footprint)]

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
            self._claim_pos = {h: i for i, h in enumerate(self.claim_hashes)}
            self._claim_key_pos = {self._key(h, 0): i for i, h in enumerate(self.claim_hashes)}

    def before_step(self, scheduler, scheduler_output, model_runner_output) -> None:
        # After schedule() (where a patch pins, refuses, demotes or expires) and the model's
        # step, before the scheduler processes the step's output (finished requests, the
        # offloading manager's completed stores).
        if self.claim_hashes is not None and self.recording:
            self._digest_jobs(scheduler_output)
            self.per_step_scheduled.append({"step": self.steps, **self.sample()})

    def after_step(self) -> None:
        if not self.recording:
            return
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


# --------------------------------------------------------------------------- the documents
# This file is kvlower's judging code: the catalog pins it by content (modes/modes.yaml,
# judging_code; docs/conformance.md, "Judging code"), and it assembles the truth document
# and its digests itself, so that no judged file (patch, driver) writes a fact of it.


def residency_run_record(t: ResidencyTruth, run: str, scenario: str, trace: str, inputs: dict, sent: list[dict],
                         done: dict, phases: list[dict], footprint: int, references: dict | None = None) -> dict:
    """One residency run's truth, assembled here (judging code), not by the driver: the
    engine's facts about each request the driver sent (`sent`: request, internal id, role,
    prompt and max tokens, whether the campaign aborted it and the scheduler's status then;
    `done`: the RequestOutputs), the claim's blocks after every step and phase, the digests
    of the claim's blocks stored to and restored from the host tier, the no-reuse reference
    of the probe (`references`: request -> (the reference's internal id, its RequestOutput),
    run by the driver after end_run() with the prefix cache and the tier emptied), and the
    run's labelled inputs (`claim_id`, `claim_input`, `protected_budget_blocks`,
    `patch_controls`, `injected_misbehaviour`, `injected_claim_ids`)."""
    references = references or {}
    requests = []
    for s in sent:
        out = done.get(s["request"])
        seen = t.request(s["internal"], out)
        ref = references.get(s["request"])
        reference = None
        if ref is not None:
            ref_seen = t.request(ref[0], ref[1])
            reference = {"request": ref[0], **client_output(ref[1]),
                         "num_cached_tokens": ref_seen["num_cached_tokens"], "prefills": ref_seen["prefills"]}
        requests.append({
            "request": s["request"],
            "role": s["role"],
            "prompt_tokens": s["prompt_tokens"],
            "max_tokens": s["max_tokens"],
            "aborted_by_campaign": s["aborted_by_campaign"],
            "finish_reason": seen["finish_reason"],
            "status_before_abort": s.get("status_before_abort"),
            "request_status_after_abort": s.get("request_status_after_abort"),
            "engine_finish_reason": seen["engine_finish_reason"],
            "num_cached_tokens": seen["num_cached_tokens"],
            "prefills": seen["prefills"],
            "local_tokens_served": seen["local_tokens_served"],
            "external_tokens_served": seen["external_tokens_served"],
            "first_scheduled_step": seen["first_scheduled_step"],
            "finished_step": seen["finished_step"],
            "kv_blocks_restored": t.footprint_digests(t.kv_blocks(t.kv_restored, s["internal"])),
            "output": client_output(out) if out is not None else None,
            "reference": reference,
        })
    return {
        "run": run,
        "scenario": scenario,
        "trace": trace,
        **inputs,
        "requests": requests,
        # the requests vLLM finished with an error (RequestOutput and scheduler output agree)
        "refused_requests": [r["request"] for r in requests
                             if r["finish_reason"] == "error" and r["engine_finish_reason"] == "error"],
        "engine_steps": t.steps,
        "engine_transfers": t.engine_transfers(),
        "claim_blocks": {
            "per_step": t.per_step,
            "per_step_scheduled": t.per_step_scheduled,
            "kv_stored": t.footprint_digests(t.kv_stored),
            "after_phase": phases,
            "claim_request_first_scheduled_step": next(
                (r["first_scheduled_step"] for r in requests if r["role"] == "claim"), None),
            **t.claim_summary(footprint),
        },
    }


def _relative(path: str) -> str | None:
    try:
        return Path(path).resolve().relative_to(REPO).as_posix()
    except (ValueError, OSError):
        return None


def digest(files: list[str]) -> str:
    """docs/conformance.md, the source digest: SHA-256 over the files sorted by path (bytewise)
    of `path NUL sha256hex(bytes) LF` (the recorder's digest is computed the same way)."""
    h = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.encode()):
        h.update(path.encode() + b"\0" + hashlib.sha256((REPO / path).read_bytes()).hexdigest().encode() + b"\n")
    return h.hexdigest()


def recorder() -> dict:
    """The judging code that wrote the truth: this file, by content."""
    files = [_relative(__file__)]
    return {"files": files, "sha256": digest(files)}


def loaded_files() -> list[str]:
    """Every repository file loaded as a module in this process (sys.modules): `check`
    requires each inside the source digest or the recorder's files, which catches a module
    loaded by a computed name, which no import statement shows."""
    out = set()
    for m in list(sys.modules.values()):
        f = getattr(m, "__file__", None)
        # A module of no file (torch's `_classes`, whose __file__ is the bare name
        # "_classes.py") is not one of ours: only an absolute path names a file.
        rel = _relative(f) if isinstance(f, str) and Path(f).is_absolute() else None
        if rel is not None:
            out.add(rel)
    return sorted(out, key=str.encode)


def _served(r: dict) -> bool:
    return r["finish_reason"] in ("length", "stop") and r["finish_reason"] == r["engine_finish_reason"]


def _refused(r: dict) -> bool:
    return r["finish_reason"] == "error" and r["engine_finish_reason"] == "error"


def _bits(logprobs: list) -> list[str]:
    return [float(x).hex() for x in logprobs]


def restored_as_stored(run: dict, reuse: dict, blocks: int) -> bool:
    """The reuse restored what its run's one resident request of the same claim (None: of no
    claim) stored, its first `blocks` block digests equal, and its output equals its no-reuse
    reference's, token ids and log-probabilities bit for bit (docs/conformance.md, "Connector
    runs" and "Control outcomes")."""
    residents = [r for r in run["requests"] if r["claim_id"] == reuse["claim_id"] and r["role"] == "resident"]
    if len(residents) != 1:
        return False
    stored, restored = residents[0]["kv_blocks_stored"], reuse["kv_blocks_restored"]
    if not stored or not restored or len(stored) < blocks or len(restored) < blocks:
        return False
    if stored[:blocks] != restored[:blocks]:
        return False
    out, ref = reuse["output"], reuse["reference"]
    if not out or not out["token_ids"] or not ref:
        return False
    if ref["num_cached_tokens"] != 0 or not ref["prefills"]:
        return False
    if any(p["local"] or p["external"] for p in ref["prefills"]):
        return False
    return out["token_ids"] == ref["token_ids"] and _bits(out["logprobs"]) == _bits(ref["logprobs"])


def connector_outcome(run: dict, engine: dict) -> str:
    """What the engine showed of a connector run's reuse requests (docs/conformance.md,
    "Control outcomes"): failed_closed, recomputed, served_from_tier (every reuse served the
    claimed prefix from the tier, restored as stored and with its reference's output) or
    served_without_tier."""
    reuse = [r for r in run["requests"] if r["role"] == "reuse"]
    prefix = engine["claim_prefix_tokens"]
    blocks = -(-prefix // engine["block_size"])
    if any(_refused(r) and r["blocks_reported_failed"] for r in reuse):
        return "failed_closed"
    if any(_served(r) and r["blocks_reported_failed"] for r in reuse):
        return "recomputed"
    if reuse and all(_served(r) and r["external_tokens_served"] >= prefix and restored_as_stored(run, r, blocks)
                     for r in reuse):
        return "served_from_tier"
    return "served_without_tier"


def residency_outcome(run: dict) -> str:
    """What the engine showed of a residency run's claim (docs/conformance.md, "Control
    outcomes"), from the per-step samples and the pressure requests: not_materialized,
    never_protected, refused, waited, released_whole or released_partial (or other)."""
    f = run["claim_input"]["footprint_blocks"]
    steps = run["claim_blocks"]["per_step"]
    mat = next((s for s in steps if s["device_cached"] >= f), None)
    if mat is None:
        return "not_materialized"
    after = [s for s in steps if s["step"] >= mat["step"]]
    unprotected = next((s["step"] for s in after if s["evictable"] > 0 or s["device_cached"] < f), None)
    loss = next((s["step"] for s in after if s["device_cached"] < f), None)
    if unprotected == mat["step"]:
        return "never_protected"
    pressure = [r for r in run["requests"] if r["role"] == "pressure"]
    if loss is None and pressure and all(_refused(r) for r in pressure):
        return "refused"
    if loss is None and any(r["aborted_by_campaign"] for r in pressure):
        return "waited"
    if unprotected is not None:
        before = [s["host_tier"] for s in steps if s["step"] < unprotected]
        return "released_whole" if before and before[-1] >= f else "released_partial"
    return "other"


def truth_document(family: str, runtime: list[dict], files: list[str], engine: dict, runs: list[dict],
                   extra: dict) -> dict:
    """The engine-truth document (docs/conformance.md, kvlower-engine-truth/1): the judged
    source files and their digest, the judging code that wrote it, the repository files that
    were loaded, the engine's configuration and the runs."""
    for run in runs:
        run["engine_outcome"] = connector_outcome(run, engine) if family == "connector" else residency_outcome(run)
    return {"schema": TRUTH_SCHEMA, "family": family, "runtime": runtime, "source_files": files,
            "source_digest": digest(files), "recorder": recorder(), "loaded_files": loaded_files(),
            "engine": engine, "runs": runs, **extra, "truth_recorder": TRUTH_RECORDER}


def write_truth(path: Path, doc: dict) -> None:
    """The truth document: sorted keys, one-space indent, a final newline (deterministic)."""
    path.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
