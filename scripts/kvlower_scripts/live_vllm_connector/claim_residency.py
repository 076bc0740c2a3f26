"""The kvlower claim-residency patch: vLLM 0.32's scheduler supplying a ResidentClaim's
protection, demotion and expiry, on top of the claim connector (claim_connector.py), loaded
through vLLM's own plug-in points (no file of vLLM is edited):

    kv_transfer_config = KVTransferConfig(kv_connector="ClaimOffloadingConnector",
        kv_connector_module_path="kvlower_scripts.live_vllm_connector.claim_connector", ...)
                                                                  (as claim_connector.py)
    scheduler_cls="kvlower_scripts.live_vllm_connector.claim_residency.ResidencyScheduler"

What vLLM supplies (unchanged): the BlockPool (ref counts, the free queue the allocator evicts
from, the cached-hash map that prefix caching reads), the scheduler's waiting queue and its
error path (update_from_output -> finish_requests(FINISHED_ERROR) for the ids in its error
sets), the OffloadingConnector and its CPUOffloadingManager (which blocks the host tier holds).

What this patch adds:
  * claim acceptance with a footprint: a claimed request whose claim carries
    {"residency": {"mode": "hard_protected" | "demotable" | "expiring", "prefix_tokens": N,
    "duration_steps": D}} is accepted, or refused up front when its footprint (N / block size
    blocks) would take the protected blocks over the protected budget (half the usable blocks);
  * protection: once the claim's prefix is device-cached (its block hashes in the BlockPool's
    cached-hash map), the claim's blocks are pinned with BlockPool.touch (ref_cnt + 1: out of
    the free queue, so the allocator cannot evict them);
  * pressure: a waiting request that cannot be allocated unless pinned claim blocks are evicted
    (it needs more blocks than are free and more than the usable blocks minus the pinned ones)
    meets a claim-scoped action: for a protected or not-yet-expired claim, the victim exclusion
    is verified on the free queue and recorded, then the request is refused and finished
    through the scheduler's own error path (finish_reason "error" in the same step); for a
    demotable claim, the host tier (the offloading manager's lookup) must hold the claim's
    whole footprint, the demotion is recorded, and the claim is unpinned so the request can
    evict the device copy;
  * expiry: duration_steps engine steps after acceptance the boundary is recorded and the claim
    unpinned;
  * loss: after every allocation and every step the claim's block hashes are looked up in the
    BlockPool's cached-hash map; the first time the claim's device copy is no longer whole, the
    loss is recorded with its cause; release_all() (the run's end) unpins and records how many
    of the claim's blocks were still device-cached;
  * trace events: kvlower's connector family (docs/trace-format.md) with this patch's name in
    the header and in every event's hook_scope, and every event's engine_step.

CONTROLS holds the campaign's knobs (pin, refuse, demote, expire, accept, pin_blocks,
materialize_on_prefill) and the misbehaviour the campaign injects into the record (inject);
all are off/on as in a correct patch unless the campaign sets them. Event names and fields:
scripts/kvlower_scripts/live_vllm_connector/README.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from vllm.v1.core.kv_cache_utils import make_block_hash_with_group_id
from vllm.v1.kv_offload.base import LookupResult, ReqContext, make_offload_key

from kvlower_scripts.common import trace_header
from kvlower_scripts.live_vllm_connector import claim_connector as cc

PATCH = "kvlower-claim-residency-1"
# A deliberately broken variant of the patch, for the sabotage runs only (SABOTAGE.md); unset
# for every committed campaign (claim_connector reads KVLOWER_SABOTAGE once, at import):
#   "no_pin": a claim is never pinned (no BlockPool.touch), but recorded as protected, and a
#             conflicting request is still refused as if its blocks were pinned;
#   "hide_loss": never pinned and nothing refused, but the exclusion and the refusal are
#             recorded, the conflicting request runs, the loss is not recorded and the release
#             says every block intact;
#   "early_demotion": a demotable claim is demoted (and unpinned) at materialization, before
#             the host tier holds its footprint, recorded as a demotion of the whole footprint.
SABOTAGE = cc.SABOTAGE
FAKE_PIN = SABOTAGE in ("no_pin", "hide_loss")
HEADER = trace_header(PATCH)
MODES = ("hard_protected", "demotable", "expiring")
# claim_connector's scope name for its scheduler-side connector events -> this patch's
SCOPES = {"scheduler_connector": "connector"}


# --------------------------------------------------------------------------- trace recorder


class ResidencyRecorder(cc.Recorder):
    """claim_connector's recorder with this patch's header and hook_scope, and the engine step
    on every event. `step` counts the scheduler's schedule() calls since the trace opened."""

    def __init__(self) -> None:
        super().__init__()
        self.step = 0
        self.header = HEADER

    def open(self, path, mode: str = "full") -> None:
        assert mode == "full"
        assert self._file is None, "a trace is already open"
        self._file = open(path, "w", encoding="ascii", newline="\n")  # noqa: SIM115
        self._file.write(json.dumps(self.header) + "\n")  # the header's own key order
        self.mode = "full"
        self._seq = 0
        self.counts = {}
        self.step = 0

    def emit(self, event: str, scope: str, **fields: Any) -> None:
        if self._file is None:
            return
        fields["hook_scope"] = PATCH
        fields["instrumentation_scope"] = SCOPES.get(scope, scope)
        fields["engine_step"] = self.step
        self._write(event, fields)


RECORDER = ResidencyRecorder()
# The connector's events go to the same trace: claim_connector looks RECORDER up at each call.
cc.RECORDER = RECORDER


# --------------------------------------------------------------------------- campaign knobs


INJECTIONS = (
    None,
    "wrong_blocking_ids",  # the conflict action names another claim only
    "no_blocking_ids",  # the conflict action names no claim
    "accepted_after_pressure",  # the acceptance is recorded after the conflict action
    "no_release_record",  # the run's end unpins without a release record
    "demotion_after_loss",  # the demotion is recorded after the device copy's loss
    "demotion_other_claim",  # the demotion record names another claim
    "boundary_other_claim",  # the expiry boundary record names another claim
)


@dataclass
class Controls:
    pin: bool = True  # pin a materialized claim (False: never pinned)
    refuse: bool = True  # refuse a request that needs protected blocks (False: it waits)
    demote: bool = True  # demote a demotable claim at pressure (False: drop its pin unrecorded)
    expire: bool = True  # record an expiring claim's boundary (False: never; it stays pinned)
    accept: bool = True  # accept (or refuse) a claim (False: neither, nothing recorded; it is only watched)
    pin_blocks: int | None = None  # pin only the first N materialized blocks (None: all of them)
    materialize_on_prefill: bool = False  # the claim counts as materialized once its request's prompt
    # is computed, with whatever part of the footprint is device-cached (the predicate recorded as evaluated)
    inject: str | None = None

    def reset(self) -> None:
        self.pin = self.refuse = self.demote = self.expire = self.accept = True
        self.pin_blocks = None
        self.materialize_on_prefill = False
        self.inject = None


CONTROLS = Controls()


def other_claim(claim: dict[str, Any]) -> dict[str, Any]:
    """A second claim, with its own identity, that an injected record names instead."""
    cid = claim["claim_id"] + "-other"
    out = {"claim_id": cid, "resident_claim_id": cid}
    for k in cc.IDENTITY_FIELDS:
        out[k] = claim[k] if k == "cache_identity" else claim[k].replace(claim["claim_id"], cid)
    return out


# --------------------------------------------------------------------------- claim state


@dataclass
class Residency:
    fields: dict[str, Any]  # claim_id, resident_claim_id and the six identity fields
    mode: str
    footprint: int
    duration: int | None
    request: Any  # the vLLM Request that materializes the claim
    accepted: bool = False
    accepted_at_step: int | None = None
    materialized: bool = False
    block_ids: list = field(default_factory=list)  # the blocks it materialized in, in prefix order
    evicted: set = field(default_factory=set)  # positions of materialized blocks seen evicted
    blocks: list = field(default_factory=list)  # pinned KVCacheBlocks, in prefix order
    demoted: bool = False
    expired: bool = False
    lost: bool = False
    deferred: list = field(default_factory=list)  # injected records written later

    @property
    def claim_id(self) -> str:
        return self.fields["claim_id"]

    @property
    def pinned(self) -> bool:
        return bool(self.blocks)

    def hashes(self):
        return self.request.block_hashes[: self.footprint]


def residency_of(request, block_size: int) -> Residency | None:
    claim = ((request.kv_transfer_params or {}).get("resident_claim")) or {}
    res = claim.get("residency")
    if not res:
        return None
    assert res["mode"] in MODES, res
    fields = {"claim_id": claim["claim_id"], "resident_claim_id": claim["claim_id"]}
    for k in cc.IDENTITY_FIELDS:
        fields[k] = claim[k]
    footprint = -(-int(res["prefix_tokens"]) // block_size)
    duration = int(res["duration_steps"]) if res["mode"] == "expiring" else None
    return Residency(fields, res["mode"], footprint, duration, request)


# --------------------------------------------------------------------------- the scheduler


class ResidencyScheduler(cc.ClaimScheduler):
    """claim_connector's scheduler with resident-claim protection, demotion and expiry."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._res_pending: list[Residency] = []
        self._res_claims: list[Residency] = []
        self._res_refused: set[str] = set()  # request ids refused, finished as errors
        self._res_to_error: set[str] = set()  # refused this step, finished in update_from_output
        pool = self.kv_cache_manager.block_pool
        self.res_usable_blocks = pool.num_gpu_blocks - 1  # minus the null block
        self.res_protected_budget = self.res_usable_blocks // 2

    # ---- helpers

    @property
    def _pool(self):
        return self.kv_cache_manager.block_pool

    def _cached_blocks(self, res: Residency) -> list:
        out = []
        for h in res.hashes():
            b = self._pool.cached_block_hash_to_block.get_one_block(make_block_hash_with_group_id(h, 0))
            if b is None:
                break
            out.append(b)
        return out

    def _intact(self, res: Residency) -> int:
        """How many of the claim's materialized blocks still hold its prefix: the block the
        claim materialized in is still mapped from its hash in the cached-hash map. (A copy
        loaded back from the host tier later is a new copy, not the claim's device copy.)"""
        cached = self._pool.cached_block_hash_to_block
        for i, (h, block_id) in enumerate(zip(res.hashes(), res.block_ids, strict=False)):
            if not cached.contain(make_block_hash_with_group_id(h, 0), block_id):
                res.evicted.add(i)  # once evicted, never intact again
        return len(res.block_ids) - len(res.evicted)

    def _host_blocks(self, res: Residency) -> int:
        """How many of the claim's blocks the host tier holds, ready (the manager's lookup)."""
        mgr = self.connector.scheduler.manager
        ctx = ReqContext(req_id=res.request.request_id)
        return sum(mgr.lookup(make_offload_key(h, 0), ctx) == LookupResult.HIT for h in res.hashes())

    def _pinned_total(self) -> int:
        return sum(len(r.blocks) for r in self._res_claims)

    def _emit(self, event: str, scope: str, res: Residency, fields_of=None, **fields) -> None:
        RECORDER.emit(event, scope, **fields, **(fields_of or res.fields))

    def _accept_fields(self, res: Residency) -> dict[str, Any]:
        f = {"accepted_mode": res.mode, "footprint_blocks": res.footprint, "accepted_at_step": res.accepted_at_step}
        if res.duration is not None:
            f["duration_steps"] = res.duration
        return f

    def _unpin(self, res: Residency) -> None:
        # vLLM's own order for freeing a request's blocks: tail first.
        if not FAKE_PIN:
            self._pool.free_blocks(list(reversed(res.blocks)))
        res.blocks = []

    # ---- vLLM entry points

    def add_request(self, request) -> None:
        super().add_request(request)
        res = residency_of(request, self.block_size)
        if res is not None:
            self._res_pending.append(res)

    def schedule(self, throttle_prefills: bool = False):
        RECORDER.step += 1
        step = RECORDER.step
        self._accept_pending(step)
        self._expire(step)
        self._resolve_pressure()
        held = []
        if SABOTAGE == "no_pin":
            # the sabotage keeps the refused request from being scheduled (a real pin would:
            # it cannot be allocated) until update_from_output finishes it
            held = [r for r in self.waiting if r.request_id in self._res_to_error]
            self.waiting.remove_requests(held)
        out = super().schedule(throttle_prefills)
        self.waiting.prepend_requests(held)
        self._check_loss()
        return out

    def update_from_output(self, scheduler_output, model_runner_output):
        # The scheduler's own error path: update_from_output finishes every id in
        # grammar_compile_error_reqs (one of its error sets; vLLM's other user is a grammar
        # that failed to compile) with finish_requests(FINISHED_ERROR) and reports
        # finish_reason "error" to the client, in this step.
        self.grammar_compile_error_reqs.update(self._res_to_error)
        self._res_to_error = set()
        outputs = super().update_from_output(scheduler_output, model_runner_output)
        self._materialize()
        self._check_loss()
        return outputs

    # ---- the claim lifecycle

    def _accept_pending(self, step: int) -> None:
        for res in self._res_pending:
            protected = sum(r.footprint for r in self._res_claims if r.accepted)
            if not CONTROLS.accept:
                pass  # the acceptance_missing controls: neither accepted nor refused, nothing recorded
            elif protected + res.footprint > self.res_protected_budget:
                self._emit("resident_claim_refused", "scheduler", res, accepted_mode=res.mode,
                           footprint_blocks=res.footprint, refusal_reason="footprint_exceeds_protected_budget",
                           protected_budget_blocks=self.res_protected_budget,
                           protected_blocks_in_use=protected, request_id=res.request.request_id)
            else:
                res.accepted, res.accepted_at_step = True, step
                if CONTROLS.inject == "accepted_after_pressure":
                    res.deferred.append("accepted")
                else:
                    self._emit("resident_claim_accepted", "scheduler", res, **self._accept_fields(res))
            # A refused claim is still watched (materialization, loss, release), never pinned.
            self._res_claims.append(res)
        self._res_pending = []

    def _materialize(self) -> None:
        for res in self._res_claims:
            if res.materialized:
                continue
            blocks = self._cached_blocks(res)
            whole = len(blocks) >= res.footprint
            if not whole:
                # materialize_on_prefill (a control): the request's prompt is computed, so whatever
                # part of the footprint is cached is taken for the claim
                req = res.request
                if not (CONTROLS.materialize_on_prefill and blocks
                        and req.num_computed_tokens >= req.num_prompt_tokens):
                    continue
            res.materialized = True
            res.block_ids = [b.block_id for b in blocks]
            self._emit("resident_claim_materialized", "scheduler", res, request_id=res.request.request_id,
                       predicate_materialized=whole, materialized_blocks=len(blocks))
            if res.accepted and CONTROLS.pin and not res.expired:
                # pin_blocks (a control): only the first N blocks are pinned
                pin = blocks if CONTROLS.pin_blocks is None else blocks[: CONTROLS.pin_blocks]
                if not FAKE_PIN:
                    self._pool.touch(pin)
                res.blocks = pin
                self._emit("resident_claim_protected", "scheduler", res, protected_blocks=len(pin),
                           pinned_block_ids=[b.block_id for b in pin])
                if SABOTAGE == "early_demotion" and res.mode == "demotable":
                    self._emit("scheduler_conflict_action", "scheduler", res, conflicting_request_id=None,
                               action="demote", blocking_claim_ids=[res.claim_id], footprint_blocks=res.footprint,
                               need_blocks=0, free_blocks=self._pool.get_num_free_blocks())
                    res.demoted = True
                    self._emit("resident_claim_demoted", "connector", res, from_tier="gpu", to_tier="cpu",
                               demoted_blocks=res.footprint, host_tier="host_offload_tier")
                    self._unpin(res)

    def _expire(self, step: int) -> None:
        for res in self._res_claims:
            if res.mode != "expiring" or not res.accepted or res.expired or not CONTROLS.expire:
                continue
            if step < res.accepted_at_step + res.duration:
                continue
            res.expired = True
            fields_of = other_claim(res.fields) if CONTROLS.inject == "boundary_other_claim" else None
            self._emit("resident_claim_expired", "scheduler", res, fields_of=fields_of,
                       accepted_at_step=res.accepted_at_step, duration_steps=res.duration,
                       expired_at_step=step, unpinned_blocks=len(res.blocks))
            if res.pinned:
                self._unpin(res)

    def _need_blocks(self, request) -> int:
        """Blocks the request's prompt needs beyond its local prefix-cache hit."""
        total = -(-request.num_tokens // self.block_size)
        hit = 0
        for h in request.block_hashes:
            if self._pool.cached_block_hash_to_block.get_one_block(make_block_hash_with_group_id(h, 0)) is None:
                break
            hit += 1
        return max(total - hit, 0)

    def _resolve_pressure(self) -> None:
        claim_requests = {r.request.request_id for r in self._res_claims}
        for request in list(self.waiting):
            rid = request.request_id
            if rid in self._res_refused or rid in claim_requests or request.num_computed_tokens:
                continue
            pinned = [r for r in self._res_claims if r.pinned]
            if not pinned:
                return
            need = self._need_blocks(request)
            free = self._pool.get_num_free_blocks()
            if FAKE_PIN:  # the sabotage counts its unpinned claim blocks as pinned
                free_ids = {b.block_id for b in self._pool.free_block_queue.get_all_free_blocks()}
                free -= sum(b.block_id in free_ids for r in pinned for b in r.blocks)
            # It fits without protected blocks, or not even with them: not this patch's conflict.
            if need <= free or need <= self.res_usable_blocks - self._pinned_total():
                continue
            if need > self.res_usable_blocks:
                continue
            refused = False
            for res in pinned:
                if res.mode == "demotable":
                    self._demote(res, rid, need, free)
                else:
                    if not CONTROLS.refuse:
                        continue
                    self._refuse(res, rid, need, free)
                    refused = True
            if refused:
                self._res_refused.add(rid)
                if SABOTAGE != "hide_loss":  # hide_loss: recorded as refused, but it runs
                    self._res_to_error.add(rid)

    def _refuse(self, res: Residency, rid: str, need: int, free: int) -> None:
        # The claim's device-cached blocks: those out of the free queue are excluded from the
        # victims, those in it are candidates (a claim pinned only in part has some).
        free_ids = {b.block_id for b in self._pool.free_block_queue.get_all_free_blocks()}
        cached = self._cached_blocks(res)
        in_candidates = sum(b.block_id in free_ids for b in cached)
        excluded = sum(b.block_id not in free_ids for b in cached)
        if FAKE_PIN:  # recorded as if the pin had taken them out of the free queue
            in_candidates, excluded = 0, len(cached)
        self._emit("allocator_victim_exclusion", "allocator", res, conflicting_request_id=rid, need_blocks=need,
                   free_blocks=free, excluded_blocks=excluded, claim_blocks_in_candidates=in_candidates)
        blocking = [res.claim_id]
        if CONTROLS.inject == "wrong_blocking_ids":
            blocking = [other_claim(res.fields)["claim_id"]]
        elif CONTROLS.inject == "no_blocking_ids":
            blocking = []
        self._emit("scheduler_conflict_action", "scheduler", res, conflicting_request_id=rid, action="refuse",
                   blocking_claim_ids=blocking, footprint_blocks=res.footprint, need_blocks=need, free_blocks=free,
                   finish_status="FINISHED_ERROR")
        self._flush_deferred(res, "accepted")

    def _demote(self, res: Residency, rid: str, need: int, free: int) -> None:
        if not CONTROLS.demote:
            self._unpin(res)  # protection dropped, nothing recorded (the demotion_missing control)
            return
        host = self._host_blocks(res)
        if host < res.footprint:
            # The host tier cannot take over: keep the claim protected and refuse instead.
            self._refuse(res, rid, need, free)
            self._res_refused.add(rid)
            self._res_to_error.add(rid)
            return
        self._emit("scheduler_conflict_action", "scheduler", res, conflicting_request_id=rid, action="demote",
                   blocking_claim_ids=[res.claim_id], footprint_blocks=res.footprint, need_blocks=need,
                   free_blocks=free)
        res.demoted = True
        demoted = {"from_tier": "gpu", "to_tier": "cpu", "demoted_blocks": host, "host_tier": "host_offload_tier"}
        if CONTROLS.inject == "demotion_after_loss":
            res.deferred.append(("demoted", demoted))
        else:
            fields_of = other_claim(res.fields) if CONTROLS.inject == "demotion_other_claim" else None
            self._emit("resident_claim_demoted", "connector", res, fields_of=fields_of, **demoted)
        self._unpin(res)

    def _flush_deferred(self, res: Residency, which: str) -> None:
        keep = []
        for item in res.deferred:
            if item == "accepted" and which == "accepted":
                # recorded now, so its step is now (accepted_at_step = engine_step, as always)
                self._emit("resident_claim_accepted", "scheduler", res,
                           **{**self._accept_fields(res), "accepted_at_step": RECORDER.step})
            elif isinstance(item, tuple) and item[0] == "demoted" and which == "demoted":
                self._emit("resident_claim_demoted", "connector", res, **item[1])
            else:
                keep.append(item)
        res.deferred = keep

    def _check_loss(self) -> None:
        for res in self._res_claims:
            if not res.materialized:
                continue
            intact = self._intact(res)  # after a loss too: it keeps track of every evicted block
            if res.lost or intact >= len(res.block_ids):  # the blocks it materialized in (the footprint)
                continue
            res.lost = True
            if SABOTAGE == "hide_loss":
                continue
            cause = ("evicted_after_demotion" if res.demoted else
                     "evicted_after_expiry" if res.expired else "evicted_unprotected")
            self._emit("resident_claim_device_copy_lost", "allocator", res, lost_blocks=len(res.block_ids) - intact,
                       loss_cause=cause, intact_blocks=intact)
            self._flush_deferred(res, "demoted")
            pinned = {b.block_id for b in res.blocks}
            # Cannot happen: a pinned block is never handed out (unless a sabotage never pinned it).
            if not FAKE_PIN and any(res.block_ids[i] in pinned for i in res.evicted):
                raise AssertionError(f"{res.claim_id}: pinned claim blocks lost")

    def release_all(self, reason: str = "run_end") -> None:
        """Unpins every claim and records its release (the run's end)."""
        for res in self._res_claims + self._res_pending:
            intact = self._intact(res)
            if SABOTAGE == "hide_loss":
                intact = len(res.block_ids)
            was_pinned = len(res.blocks)
            if res.pinned:
                self._unpin(res)
            if CONTROLS.inject != "no_release_record":
                self._emit("resident_claim_released", "scheduler", res, release_reason=reason, blocks_intact=intact,
                           unpinned_blocks=was_pinned)
        self._res_claims, self._res_pending = [], []
        self._res_refused, self._res_to_error = set(), set()


__all__ = ["CONTROLS", "HEADER", "INJECTIONS", "PATCH", "RECORDER", "ResidencyScheduler"]
