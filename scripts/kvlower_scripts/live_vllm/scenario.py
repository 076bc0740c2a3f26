"""The fixed scenario the live capture runs: prompts, steps, claims and observation points.

Pure data and arithmetic (no vLLM import), so the script that drives the engine, the replica
that probes it and the README all read one definition.

The cache has NUM_GPU_BLOCKS = 25 blocks of BLOCK_SIZE = 32 tokens; vLLM keeps block 0 as its
null block, so 24 hold KV. Every request is sent alone and runs to completion (max_tokens=1),
so each request is one engine step. Freed blocks join the LRU queue tail-first, so pressure
evicts the oldest request's last block first. The comments give the intended effect; the
driver does not trust them: it asks the engine after every step (see driver.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

BLOCK_SIZE = 32
NUM_GPU_BLOCKS = 25  # 24 usable + vLLM's null block
MAX_MODEL_LEN = 512
TEXT_SEED = 7

# Prompt name -> length in tokens. Texts are drawn from the tokenizer's word list with a
# seeded RNG, tokenized, and cut to this length (so every claim is whole blocks).
PROMPTS: dict[str, int] = {
    "A": 4 * BLOCK_SIZE,
    "B": 4 * BLOCK_SIZE,
    "C": 6 * BLOCK_SIZE,  # claimed in full; only its first 3 blocks are ever sent (as C3X)
    "X": 3 * BLOCK_SIZE,  # the suffix sent after C's first 3 blocks
    "D": 4 * BLOCK_SIZE,  # sent twice: vLLM stores a second copy of its last block
    "N": 4 * BLOCK_SIZE,  # never sent
    "T": 1 * BLOCK_SIZE,  # stored right after the prefix-cache reset
    "Z": 1 * BLOCK_SIZE,  # the tail marker: a store after the last observation point
    **{f"F{i}": 4 * BLOCK_SIZE for i in range(1, 11)},  # fillers that make pressure
}


@dataclass(frozen=True)
class Send:
    """One request: the concatenation of `parts` (prompt names), optionally salted."""

    name: str
    parts: tuple[str, ...]
    cache_salt: str | None = None
    max_tokens: int = 1


@dataclass(frozen=True)
class Reset:
    """`LLM.reset_prefix_cache()` between two steps (no request is running)."""

    name: str = "reset"


@dataclass(frozen=True)
class Observe:
    """An observation point: the driver reads the engine's truth and stamps the time."""

    name: str


@dataclass(frozen=True)
class Claim:
    claim_id: str
    obj: str  # prompt name: the claimed tokens are PROMPTS[obj]'s tokens
    k: int  # leading_prefix_at_least(k), in tokens
    observe: str  # an Observe name
    what: str  # the scenario this claim stands for (README and truth file)


# fmt: off
STEPS: list[Send | Reset | Observe] = [
    Send("send A", ("A",)),
    Send("send B", ("B",)),
    Send("send C's first 3 blocks + X", ("C3", "X")),
    Send("send D", ("D",)),
    Send("send D again (a second copy of its last block)", ("D",)),
    Observe("o1"),
    Send("pressure F1", ("F1",)),
    Send("pressure F2 (evicts A's blocks 4,3,2)", ("F2",)),
    Send("pressure F3 (evicts A's block 1, B's blocks 4,3,2)", ("F3",)),
    Observe("o2"),
    Send("pressure F4 (evicts B's block 1 and X)", ("F4",)),
    Send("pressure F5 (evicts C's blocks and D's first copy of block 4)", ("F5",)),
    Observe("o3"),
    Send("send A again (re-stores A; evicts D)", ("A",)),
    Observe("o4"),
    Send("send A with cache_salt (a salted twin of A)", ("A",), cache_salt="tenant-b"),
    *[Send(f"pressure F{i}", (f"F{i}",)) for i in range(6, 11)],
    Observe("o5"),
    Reset(),
    Send("send T (its step's frame also carries AllBlocksCleared)", ("T",)),
    Observe("o6"),
    # Z decodes 3 more tokens after its prefill: 35 tokens never fill a second block, so its
    # decode-only steps must publish nothing.
    Send("send Z (tail marker after the last observation point; 4 tokens)", ("Z",), max_tokens=4),
]

CLAIMS: list[Claim] = [
    Claim("a-at-o1", "A", 128, "o1", "resident at the observation point"),
    Claim("b-at-o1", "B", 128, "o1", "resident at the observation point"),
    Claim("c-full-at-o1", "C", 192, "o1", "partially resident: only its first 3 of 6 blocks were sent"),
    Claim("c-head-at-o1", "C", 96, "o1", "partially resident prompt, predicate on the resident head"),
    Claim("d-at-o1", "D", 128, "o1", "resident, last block stored twice"),
    Claim("n-at-o1", "N", 128, "o1", "never sent"),
    Claim("a-at-o2", "A", 128, "o2", "evicted under pressure"),
    Claim("b-full-at-o2", "B", 128, "o2", "partially evicted under pressure (tail first)"),
    Claim("b-head-at-o2", "B", 32, "o2", "head block still resident after a partial eviction"),
    Claim("c-head-at-o3", "C", 96, "o3", "evicted under pressure"),
    Claim("d-at-o3", "D", 128, "o3", "one of two copies of its last block evicted, the other still cached"),
    Claim("a-at-o4", "A", 128, "o4", "evicted, then stored again"),
    Claim("d-at-o4", "D", 128, "o4", "evicted under pressure (both copies)"),
    Claim("a-at-o5", "A", 128, "o5", "evicted while a cache_salt twin of the same tokens stays resident"),
    Claim("f10-at-o6", "F10", 128, "o6", "cleared by a prefix-cache reset"),
    Claim("t-at-o6", "T", 32, "o6", "stored in the same frame as the reset's AllBlocksCleared"),
    Claim("n-at-o6", "N", 128, "o6", "never sent"),
]
# fmt: on

WORDS = (
    "kv cache block tenant agent prompt retention claim eviction pressure scheduler "
    "allocator prefix resident observation stream event hash parent token medium tier "
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi"
).split()


def prompt_texts() -> dict[str, str]:
    """One long text per prompt name (deterministic)."""
    rng = random.Random(TEXT_SEED)
    return {name: " ".join(rng.choice(WORDS) for _ in range(400)) for name in PROMPTS}


def prompt_tokens(tokenizer) -> dict[str, list[int]]:
    """Token ids per prompt name, each cut to its length; C3 is C's first 3 blocks."""
    out: dict[str, list[int]] = {}
    for name, text in prompt_texts().items():
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        n = PROMPTS[name]
        if len(ids) < n:
            raise SystemExit(f"scenario: prompt {name} tokenizes to {len(ids)} < {n} tokens")
        out[name] = list(ids[:n])
    out["C3"] = out["C"][: 3 * BLOCK_SIZE]
    firsts = [tuple(v[:BLOCK_SIZE]) for k, v in out.items() if k != "C3"]
    if len(set(firsts)) != len(firsts):
        raise SystemExit("scenario: two prompts share a first block; change TEXT_SEED")
    return out


def request_tokens(step: Send, tokens: dict[str, list[int]]) -> list[int]:
    ids: list[int] = []
    for p in step.parts:
        ids.extend(tokens[p])
    return ids


def required_tokens(k: int) -> int:
    """Whole blocks the predicate needs, in tokens (runtimes store whole blocks)."""
    return -(-k // BLOCK_SIZE) * BLOCK_SIZE


def probe_cap(n_tokens: int) -> int:
    """vLLM's cap on a prefix hit: prompt length - 1, rounded down to whole blocks."""
    return (n_tokens - 1) // BLOCK_SIZE * BLOCK_SIZE


@dataclass
class Timeline:
    """Per claim, the engine's longest cache hit (tokens) after every step."""

    hits: dict[str, list[int]] = field(default_factory=dict)


def expected_verdict(claim: Claim, hits_until_obs: list[int]) -> str:
    """The verdict the engine's own truth implies at the observation point.

    materialized: the predicate holds at the observation point; lost: it held after
    registration (all claims are registered before the first step) and no longer does;
    not_materialized: it never held.
    """
    need = required_tokens(claim.k)
    if hits_until_obs and hits_until_obs[-1] >= need:
        return "materialized"
    if any(h >= need for h in hits_until_obs):
        return "lost"
    return "not_materialized"
