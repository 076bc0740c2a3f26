"""Write a kvlower capture file (docs/capture-format.md, version 1) and its JSON Lines twin.

Both are written from the *payload bytes* a runtime's own encoder produced: the capture
keeps them byte for byte in `[topic, 8-byte big-endian sequence, payload]` frames, as a
ZMQ subscriber would receive them; the JSON Lines form is the same payload decoded and
wrapped `{"seq": N, "payload": ...}` (msgpack `bin` → lowercase hex, as the join reads a
capture). Receive times are fixed so the files are reproducible byte for byte.
"""

import json
import struct

MAGIC = b"\x89KVLCAP\n"
# A fixed receive time (ns since the Unix epoch): fixtures must not depend on the clock.
T0 = 1_700_000_000_000_000_000


def write_capture(path, frames, meta, writer, rank=0, endpoint="tcp://127.0.0.1:5557"):
    """frames: list of (topic: bytes, seq: int, payload: bytes), all from one publisher."""
    header = {
        "capture_format": "kvlower-capture",
        "version": 1,
        "endpoints": [{"rank": rank, "endpoint": endpoint}],
        "meta": meta,
        "writer": writer,
        "subscribed_unix_ns": T0,
    }
    hb = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    out = bytearray(MAGIC)
    out += struct.pack(">HI", 1, len(hb)) + hb
    for i, (topic, seq, payload) in enumerate(frames):
        parts = [topic, seq.to_bytes(8, "big"), payload]
        out += struct.pack(">BHQB", 0x01, rank, T0 + (i + 1) * 1_000_000, len(parts))
        for p in parts:
            out += struct.pack(">I", len(p)) + p
    out += struct.pack(">BQQ", 0x03, len(frames), 0)
    with open(path, "wb") as f:
        f.write(out)


def to_json(v):
    """A decoded msgpack value as the join sees it (bytes become lowercase hex)."""
    if isinstance(v, (bytes, bytearray)):
        return v.hex()
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    return v


def write_jsonl(path, frames, decode):
    """decode: the msgpack decoder (msgspec.msgpack.decode) turning payload bytes back."""
    with open(path, "w") as f:
        for _topic, seq, payload in frames:
            line = {"seq": seq, "payload": to_json(decode(payload))}
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
