"""The logical clock of a live vLLM set-up: the engine's own event stream.

A driver reads `time.time()` at points of its scenario (before the first request, at each
observation point) because vLLM stamps every `KVEventBatch` with that clock. A committed
document must not carry those readings (two live runs would differ in every one of them:
docs/conformance.md, "Reproduction"), so after the run each reading is turned into a
position in the stream the engine published: the number of events in batches stamped at
or before it. A registry then names `{event_index: N}` stream points (docs/join.md), which
depend only on what the engine did and in which order, and mean the same thing the
timestamps meant (the scenario sleeps between a step and an observation point, so no batch
straddles one).
"""

from __future__ import annotations


def batches(frames_hex: list[list[str]]) -> list[tuple[float, int]]:
    """(batch timestamp, number of events) per captured frame `[topic, seq, payload]`, in
    order. Needs msgspec (the engine's venv)."""
    import msgspec

    out = []
    for parts in frames_hex:
        b = msgspec.msgpack.decode(bytes.fromhex(parts[2]))
        if not (isinstance(b, list) and len(b) >= 2 and isinstance(b[0], float) and isinstance(b[1], list)):
            raise SystemExit("logical_clock: a frame is not a positional [ts, [events], ...] batch")
        out.append((b[0], len(b[1])))
    for (t0, _), (t1, _) in zip(out, out[1:], strict=False):
        if t1 < t0:
            raise SystemExit("logical_clock: batch timestamps go backwards; no logical clock")
    return out


def events_until(stream: list[tuple[float, int]], t: float) -> int:
    """How many events the engine had published in batches stamped at or before `t`."""
    return sum(n for ts, n in stream if ts <= t)


def registered_before(stream: list[tuple[float, int]], t: float) -> int:
    """The stream point a claim registered at `t` was registered before: the index of the
    first event after `t`."""
    return events_until(stream, t)


def observe_at(stream: list[tuple[float, int]], t: float) -> int:
    """The stream point of an observation at `t`: the last event published before it."""
    n = events_until(stream, t)
    if n == 0:
        raise SystemExit("logical_clock: an observation point precedes every event")
    return n - 1


def registry_claim(claim_id: str, obj: str, k: int, registered_index: int, observe_index: int) -> list[str]:
    """One claim of a registry (its prompt named in token-map.json), at stream points."""
    return [
        f"  - claim_id: {claim_id}",
        f"    reusable_object_id: prompt-{obj}",
        "    token_map:",
        "      file: token-map.json",
        f"      key: {obj}",
        f"    predicate: leading_prefix_at_least({k})",
        "    registered_before:",
        f"      event_index: {registered_index}",
        "    observe_at:",
        f"      event_index: {observe_index}",
    ]
