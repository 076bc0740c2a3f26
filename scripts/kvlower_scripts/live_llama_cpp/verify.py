"""Judges the llama.cpp slot campaign: a second implementation of the slot-truth rule
(docs/conformance.md section 6), kvlower's own gate on the campaign, and (with --fresh) the
byte-for-byte comparison of a fresh live run with the committed documents.

    python verify.py KVLOWER [EVIDENCE_DIR] [--fresh FRESH_DIR]

Exit 0: kvlower's campaign holds and witnesses reference_lifecycle, this file's verdict from
the truth agrees with every trace's scenario, and (with --fresh) the fresh documents equal
the committed ones; 1: any of these fails (the first differing run is named). Stdlib only;
never imports the adapter or the recorder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DEFAULT = REPO / "evidence/llama-cpp-b10434-claim-slots"


def claim_passes(run: dict, claim: dict) -> bool:
    """The slot rule, written apart from crates/kvlower-trace/src/truth_slot.rs."""
    c, k, calls = claim["claim_id"], claim["prefix_tokens"], run["calls"]
    saved_all = {x["state_sha256"] for x in calls if x["call"] == "save" and x["status"] == 200}
    reuse_at = None
    for i, x in enumerate(calls):
        if x["call"] != "restore" or x["status"] != 200 or x["slot_after"]["tokens"] < k:
            continue
        own = {y["state_sha256"] for y in calls[:i] if y["call"] == "save" and y["status"] == 200
               and y["file_prefix_claim"] == c and y["file_tokens"] >= k}
        if x["slot_after"]["state_sha256"] not in own:
            continue
        nxt = next(((j, y) for j, y in enumerate(calls) if j > i and y["call"] == "completion"
                    and y["claim_id"] == c), None)
        if nxt is None:
            continue
        j, y = nxt
        ref = y["reference"]
        if (y["status"] == 200 and y["cache_n"] >= k and ref is not None and y["token_ids"]
                and ref["token_ids"] == y["token_ids"] and ref["logprobs"] == y["logprobs"]):
            reuse_at = j
            break
    if reuse_at is None:
        return False
    for i, x in enumerate(calls):
        if i <= reuse_at or x["call"] != "restore" or x["status"] == 200:
            continue
        f = x["file_at_restore"]
        damaged = not f["exists"] or f["sha256"] not in saved_all
        later = any(y["call"] == "completion" and y["claim_id"] == c and y["status"] == 200
                    and y["cache_n"] >= k for y in calls[i + 1:])
        if damaged and x["slot_after"]["tokens"] == 0 and not later:
            return True
    return False


def first_difference(committed: Path, fresh: Path) -> str | None:
    """The first difference, naming a run when it can: the truth's runs first, then the
    traces, then the other documents (reproduce.json is not a run output)."""
    names = sorted({p.relative_to(committed).as_posix() for p in committed.rglob("*") if p.is_file()}
                   | {p.relative_to(fresh).as_posix() for p in fresh.rglob("*") if p.is_file()})
    names = sorted((n for n in names if n != "reproduce.json"),
                   key=lambda n: (n != "truth.json", not n.startswith("traces/"), n))
    for name in names:
        a, b = committed / name, fresh / name
        if not a.is_file() or not b.is_file():
            return f"{name}: only in {'the fresh run' if b.is_file() else 'the committed folder'}"
        if a.read_bytes() == b.read_bytes():
            continue
        if name == "truth.json":
            ra = {r["run"]: r for r in json.loads(a.read_text())["runs"]}
            rb = {r["run"]: r for r in json.loads(b.read_text())["runs"]}
            for run in sorted(set(ra) | set(rb)):
                if ra.get(run) != rb.get(run):
                    return f"run {run} (truth.json)"
            continue  # only the document's own fields differ: name the trace or file below
        if name.startswith("traces/"):
            return f"run {Path(name).stem} ({name})"
        return f"{name}"
    return None


def main(argv: list[str]) -> int:
    args = [a for a in argv if not a.startswith("--")]
    if "--help" in argv or "-h" in argv or not args:
        print(__doc__)
        return 0 if args or "--help" in argv or "-h" in argv else 2
    fresh = None
    if "--fresh" in argv:
        fresh = Path(argv[argv.index("--fresh") + 1])
        args = [a for a in args if a != str(fresh)]
    kvlower, evidence = args[0], Path(args[1]) if len(args) > 1 else DEFAULT
    problems = []
    truth = json.loads((evidence / "truth.json").read_text())
    campaign = json.loads((evidence / "gate-campaign.json").read_text())
    expect = {t: s["expect"]["reference_lifecycle"] for s in campaign["scenarios"] for t in s["traces"]}
    for run in truth["runs"]:
        passed = all(claim_passes(run, c) for c in run["claims"])
        want = expect.get(run["trace"]) == "every_run"
        if passed != want:
            problems.append(f"{run['run']}: the truth says reference_lifecycle {passed}, the scenario expects {want}")
    gate = subprocess.run([kvlower, "gate", "--campaign",
                           str((evidence / "gate-campaign.json").relative_to(REPO))],
                          cwd=REPO, capture_output=True, text=True)
    if gate.returncode != 0 or "reference_lifecycle: witnessed" not in gate.stdout:
        problems.append(f"kvlower gate --campaign: exit {gate.returncode}: {gate.stdout.strip()} {gate.stderr.strip()}")
    if fresh is not None:
        diff = first_difference(evidence, fresh)
        if diff:
            problems.append(f"the fresh live run differs from the committed documents: {diff}")
    for p in problems:
        print(f"verify: {p}", file=sys.stderr)
    if not problems:
        print(f"verify: {len(truth['runs'])} runs agree with the engine truth"
              + ("; the fresh live run equals the committed documents byte for byte" if fresh else ""))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
