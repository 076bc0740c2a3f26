"""kvlower's reference claim adapter for an engine that saves and restores named state.

llama.cpp's `llama-server` has no claims, no acceptance and no KV event stream; it has slots
whose state can be saved to a file, erased and restored (`POST /slots/N?action=...`). This
adapter sits in the client (depths `claim_registry` and `storage_restorability`, see
docs/conformance.md section 6): it holds the accepted-claim registry, saves a claim's slot
state to a file named by the claim once its predicate holds (the slot holds the claim's whole
token prefix), restores it before reuse, and turns a failed restore into a claim-scoped
outcome (restoration failed, the claim's reuse refused) before any fallback. It reports reuse
only when the engine confirmed it: the restore answered 200 and the reuse was served with at
least the claim's prefix from the cache (`timings.cache_n`).

Its trace is the reference family of docs/trace-format.md (one JSON object per line, the
`schema_version`/`timestamp_ns` envelope). `timestamp_ns` is a logical clock (the event's
sequence number), not wall time, so two runs write identical bytes. Tier names keep the
vocabulary: `gpu_kv_cache` is the engine's live KV cache (the slot; CPU memory here) and
`host_offload_tier` the slot-save file.

Judged code (in the campaign's source digest). It never reads the recorder: the engine is
reached through `post`, a function the driver hands it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

Post = Callable[[str, dict], tuple[int, dict]]
# Ids 0-258 (<unk>, <s>, </s> and the byte tokens) are banned in every request: a random
# model emitting a byte token makes the server answer 500 (docs/conformance.md section 6).
LOGIT_BIAS = [[i, False] for i in range(259)]


@dataclass
class Claim:
    claim_id: str
    prefix: str
    prefix_tokens: int
    generation: int = 0
    materialized: bool = False

    @property
    def file(self) -> str:
        return f"claim-{self.claim_id}.bin"


@dataclass
class ClaimAdapter:
    post: Post
    cache_identity: str
    slot: int = 0
    events: list[dict] = field(default_factory=list)
    claims: dict[str, Claim] = field(default_factory=dict)
    # Campaign switches (inputs the driver sets to produce controls; none is a misbehaviour
    # the adapter hides: each shows in the trace as what it is).
    restore_enabled: bool = True
    file_override: dict[str, str] = field(default_factory=dict)

    def _emit(self, event: str, claim: Claim | None, **fields) -> None:
        seq = len(self.events) + 1
        line = {"event": event, "event_sequence": seq, "schema_version": 1, "timestamp_ns": seq}
        if claim is not None:
            line.update(
                claim_id=claim.claim_id,
                predicate_id=f"leading_prefix_at_least:{claim.prefix_tokens}",
                materialization_predicate=f"leading_prefix_at_least({claim.prefix_tokens})",
                reusable_object_id=f"slot-file:{claim.file}",
                cache_identity=self.cache_identity,
                request_token_map_id=f"llama-tokenize:{claim.claim_id}",
            )
        line.update(fields)
        self.events.append(line)

    def trace_lines(self) -> list[str]:
        return [json.dumps(e, sort_keys=True, separators=(",", ":")) for e in self.events]

    def complete(self, prompt: str, slot: int | None = None) -> tuple[int, dict]:
        return self.post(
            "/completion",
            {"prompt": prompt, "n_predict": 4, "cache_prompt": True,
             "id_slot": self.slot if slot is None else slot, "temperature": 0, "seed": 1,
             "logit_bias": LOGIT_BIAS, "n_probs": 3},
        )

    def accept(self, claim_id: str, prefix: str, prefix_tokens: int) -> Claim:
        """Registers the claim before anything of its lifecycle happens."""
        claim = Claim(claim_id, prefix, prefix_tokens)
        self.claims[claim_id] = claim
        self._emit("resident_claim_accepted", claim, claim_registration="pre_registered")
        return claim

    def materialize(self, claim_id: str, suffix: str) -> bool:
        """Runs the claim's first request; the predicate holds when the engine processed the
        whole prefix into the slot (prompt tokens evaluated, from the cache or computed)."""
        claim = self.claims[claim_id]
        status, body = self.complete(claim.prefix + suffix)
        t = body.get("timings", {}) if status == 200 else {}
        held = t.get("cache_n", 0) + t.get("prompt_n", 0) >= claim.prefix_tokens
        if held and not claim.materialized:
            claim.materialized = True
            self._emit("resident_claim_materialized", claim, predicate_materialized=True)
        return held

    def offload(self, claim_id: str) -> bool:
        """Saves the slot to the claim's file, then erases the slot (the device copy is gone:
        the next reuse needs the restore)."""
        claim = self.claims[claim_id]
        status, body = self.post(f"/slots/{self.slot}?action=save", {"filename": claim.file})
        if status != 200 or body.get("n_saved", 0) < claim.prefix_tokens:
            return False
        claim.generation += 1
        self._emit("resident_claim_offloaded", claim, offload_generation=claim.generation,
                   cache_tier_from="gpu_kv_cache", cache_tier_to="host_offload_tier",
                   n_saved=body["n_saved"])
        self.post(f"/slots/{self.slot}?action=erase", {})
        return True

    def reuse(self, claim_id: str, suffix: str) -> bool:
        """Restores the claim's state before its reuse. A failed restore becomes the claim's
        outcome (restoration failed, reuse refused) and no request is sent: never a silent
        recompute counted as reuse."""
        claim = self.claims[claim_id]
        gen = claim.generation
        self._emit("resident_claim_restore_required", claim, offload_generation=gen,
                   reuse_requires_restoration=True)
        if self.restore_enabled:
            file = self.file_override.get(claim_id, claim.file)
            status, body = self.post(f"/slots/{self.slot}?action=restore", {"filename": file})
            if status != 200 or body.get("n_restored", 0) < claim.prefix_tokens:
                self._emit("resident_claim_restoration_failed", claim, offload_generation=gen,
                           outcome_claim_id=claim_id, controlled_restoration_unavailable=True,
                           claim_scoped_outcome_type="refusal", engine_status=status)
                self._emit("active_request_refused", claim, offload_generation=gen,
                           outcome_claim_id=claim_id, blocking_claim_ids=[claim_id])
                return False
            self._emit("resident_claim_restored", claim, offload_generation=gen,
                       restored_from_offload_tier=True, restoration_source="offload_tier",
                       cache_tier_from="host_offload_tier", cache_tier_to="gpu_kv_cache",
                       n_restored=body["n_restored"])
        status, body = self.complete(claim.prefix + suffix)
        cached = body.get("timings", {}).get("cache_n", 0) if status == 200 else 0
        served = cached >= claim.prefix_tokens
        if self.restore_enabled:
            self._emit("resident_claim_reuse_after_restore", claim, offload_generation=gen,
                       predicate_satisfied=served, cache_n=cached)
        return served

    def reuse_live(self, claim_id: str, suffix: str) -> bool:
        """A reuse with nothing saved: the adapter cannot protect the slot (llama.cpp has no
        pin), so a displaced prefix is reported as the claim's harm."""
        claim = self.claims[claim_id]
        status, body = self.complete(claim.prefix + suffix)
        cached = body.get("timings", {}).get("cache_n", 0) if status == 200 else 0
        if cached < claim.prefix_tokens:
            self._emit("resident_claim_harmed", claim, outcome_claim_id=claim_id,
                       harm="slot_displaced", cache_n=cached)
            return False
        return True
