"""The KVCR capture decoded, one line per frame (stream.txt). Needs msgspec (the driver's venv).

    PYTHONPATH=scripts python -m kvlower_scripts.live_kvcr.facts EVIDENCE_DIR

Each event prints as `N:Kind@tier[blocks]`, N its 0-based index in the stream (the join's event
index), tier `GPU` (the device), `CPU` (vLLM's primary tier) or `CPU/kvcr` (KVCR's store);
blocks of claimed prompts are named <prompt>.<position> (engine_block_hashes in truth.json).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kvlower_scripts.live_vllm.facts import read_capture


def stream_text(evidence: Path) -> str:
    import msgspec

    _, frames = read_capture(evidence / "capture.kvcap")
    truth = json.loads((evidence / "truth.json").read_text())
    pos = {int(h): f"{name}.{i + 1}" for name, hs in truth["engine_block_hashes"].items()
           for i, h in enumerate(hs)}
    dec = msgspec.msgpack.Decoder()
    lines = [
        "# The capture decoded (scripts/kvlower_scripts/live_kvcr/facts.py). One line per frame:",
        "# seq, then each event as N:Kind@tier[blocks] (N the stream's event index; tier GPU =",
        "# the device, CPU = vLLM's primary tier, CPU/kvcr = KVCR). A stored run shows <-parent.",
        "# Claimed prompts' blocks are <prompt>.<position>; other blocks (S) print as `?`.",
    ]
    n = 0
    for _rank, _ns, parts in frames:
        _topic, seq, payload = parts
        b = dec.decode(payload)
        out = []
        for e in b[1]:
            kind = e["type"].removeprefix("Block")
            tier = e.get("medium") or ""
            if e.get("ownership") is not None:
                tier += f"/{e['ownership']}"
            names = " ".join(pos.get(h, "?") for h in e.get("block_hashes", []))
            txt = f"{n}:{kind}" + (f"@{tier}[{names}]" if kind != "AllBlocksCleared" else "")
            if e["type"] == "BlockStored":
                par = e.get("parent_block_hash")
                txt += f"<-{pos.get(par, '?') if par is not None else 'none'}"
            out.append(txt)
            n += 1
        # No batch timestamp: the engine's clock differs on every run (docs/conformance.md).
        lines.append(f"{int.from_bytes(seq, 'big'):>3} {' '.join(out)}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ev = Path(sys.argv[1])
    (ev / "stream.txt").write_text(stream_text(ev))
