"""The fixed scenario of the live KVCR capture: prompts, steps, claims, observation points.

Pure data and arithmetic (no vLLM import): the driver, the verify script and the README read
one definition.

Three tiers, all small on purpose:
  * the engine's own KV cache ("device", medium GPU even on the CPU backend):
    NUM_GPU_BLOCKS = 9 blocks of BLOCK_SIZE = 32 tokens, 8 usable (vLLM keeps a null block);
  * vLLM's CPU primary offload tier (medium CPU, no ownership): PRIMARY_CHUNKS = 6 chunks of
    one block each, LRU;
  * KVCR's local DRAM (medium CPU, ownership "kvcr"): KVCR_SLOTS = 12 slots, kvcr's default
    LRU policy.
Every prompt is 4 whole blocks and a 12-token tail (140 tokens), so vLLM's cap on a prefix
hit (prompt length - 1, whole blocks) is the 4 whole blocks: 128 tokens. S and Z are 2
whole blocks and a 6-token tail. Each request runs alone to completion (max_tokens=1), then the
driver steps the idle engine until every offload job has finished (`settle`), so each
tier's events for a request arrive before the next request.

The comments give the intended effect; the driver does not trust them: it asks each tier
after every step (see driver.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

BLOCK_SIZE = 32
NUM_GPU_BLOCKS = 9  # 8 usable + vLLM's null block
MAX_MODEL_LEN = 256
PRIMARY_CHUNKS = 6
KVCR_SLOTS = 12
TEXT_SEED = 11
TAIL = 12

# Prompt name -> whole blocks (each prompt also has a TAIL-token partial block, S half of it).
PROMPTS: dict[str, int] = {
    "A": 4,
    "N": 4,  # never sent
    "S": 2,
    "Z": 2,  # the tail marker: events after the last observation point
    **{f"F{i}": 4 for i in range(1, 4)},
}


@dataclass(frozen=True)
class Send:
    name: str
    prompt: str


@dataclass(frozen=True)
class Observe:
    name: str


@dataclass(frozen=True)
class Claim:
    claim_id: str
    obj: str
    k: int  # leading_prefix_at_least(k), tokens
    observe: str
    what: str


# fmt: off
# No reset_prefix_cache(): its AllBlocksCleared cannot say whether vLLM's primary tier was
# reset too (docs/join.md), so A leaves the device and the primary tier by pressure (F1, F2).
STEPS: list[Send | Observe] = [
    Send("send A", "A"),
    Send("send F1 (the device and the primary tier start evicting A)", "F1"),
    Send("send F2 (A leaves the device and the primary tier; KVCR holds A, F1, F2: 12 slots)", "F2"),
    Observe("o1"),
    Send("send A again (only KVCR holds it: KVCR restores it, num_cached_tokens 128)", "A"),
    Observe("o2"),
    Send("send S (a 2-block deposit: KVCR, full, evicts 2 slots: the first 2 of F1's deposit)", "S"),
    Observe("o3"),
    Send("send F3 (KVCR, full, evicts 4 more slots)", "F3"),
    Observe("o4"),
    Send("send F1 again (the probe: 0 cached tokens once KVCR evicted it; KVCR evicts 4 more)", "F1"),
    Observe("o5"),
    Send("send Z (tail marker: the stream reaches past the last observation point)", "Z"),
]

CLAIMS: list[Claim] = [
    Claim("a-at-o1", "A", 128, "o1", "evicted from the device and the primary tier; KVCR still holds it"),
    Claim("f1-at-o1", "F1", 128, "o1", "in KVCR (and partly in the primary tier)"),
    Claim("n-at-o1", "N", 128, "o1", "never sent"),
    Claim("a-at-o2", "A", 128, "o2", "restored by KVCR after the device and the primary tier evicted it"),
    Claim("f1-at-o2", "F1", 128, "o2", "only KVCR holds it"),
    Claim("f1-at-o3", "F1", 128, "o3", "KVCR evicted part of it itself"),
    Claim("f1-head-at-o3", "F1", 32, "o3", "its first block, after KVCR's partial eviction"),
    Claim("f1-first2-at-o3", "F1", 64, "o3", "its first 2 blocks, after KVCR's partial eviction"),
    Claim("f1-first3-at-o3", "F1", 96, "o3", "its first 3 blocks, after KVCR's partial eviction"),
    Claim("a-at-o3", "A", 128, "o3", "resident on every tier"),
    Claim("f1-at-o4", "F1", 128, "o4", "KVCR evicted all of it"),
    Claim("f2-at-o4", "F2", 128, "o4", "KVCR evicted part of it"),
    Claim("f1-at-o5", "F1", 128, "o5", "re-stored by the probe after KVCR lost it"),
    Claim("a-at-o5", "A", 128, "o5", "KVCR evicted part of it itself (after the device and the primary tier)"),
    Claim("n-at-o5", "N", 128, "o5", "never sent"),
]
# fmt: on

WORDS = (
    "kv cache block tenant agent prompt retention claim eviction pressure scheduler "
    "allocator prefix resident observation stream event hash parent token medium tier "
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi"
).split()


def prompt_tokens(tokenizer) -> dict[str, list[int]]:
    """Token ids per prompt name: its whole blocks then its tail (deterministic)."""
    rng = random.Random(TEXT_SEED)
    out: dict[str, list[int]] = {}
    for name, blocks in PROMPTS.items():
        text = " ".join(rng.choice(WORDS) for _ in range(400))
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        n = blocks * BLOCK_SIZE + (TAIL if blocks == 4 else TAIL // 2)
        if len(ids) < n:
            raise SystemExit(f"scenario: prompt {name} tokenizes to {len(ids)} < {n} tokens")
        out[name] = list(ids[:n])
    firsts = [tuple(v[:BLOCK_SIZE]) for v in out.values()]
    if len(set(firsts)) != len(firsts):
        raise SystemExit("scenario: two prompts share a first block; change TEXT_SEED")
    return out


def whole_blocks(tokens: list[int]) -> list[int]:
    """The tokens a claim names: the prompt's whole blocks (the tail is never cached)."""
    return tokens[: len(tokens) // BLOCK_SIZE * BLOCK_SIZE]


def required_blocks(k: int) -> int:
    return -(-k // BLOCK_SIZE)


def probe_cap(n_tokens: int) -> int:
    """vLLM's cap on a prefix hit: prompt length - 1, rounded down to whole blocks."""
    return (n_tokens - 1) // BLOCK_SIZE * BLOCK_SIZE


def held(resident: list[bool], k: int) -> bool:
    """The predicate on per-block residency (any tier): the first ceil(k/32) blocks all held."""
    need = required_blocks(k)
    return len(resident) >= need and all(resident[:need])


def expected_verdict(k: int, residency_until_obs: list[list[bool]]) -> str:
    """The verdict the engine's truth implies at the observation point (claims are registered
    before the first step): materialized / lost / not_materialized."""
    if residency_until_obs and held(residency_until_obs[-1], k):
        return "materialized"
    if any(held(r, k) for r in residency_until_obs):
        return "lost"
    return "not_materialized"
