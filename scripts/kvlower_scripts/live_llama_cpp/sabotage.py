"""Live sabotage of the llama.cpp slot campaign (issue 44 item 5; SABOTAGE.md has the table).

For each sabotage: a scratch copy of the committed tree, one source edit, the campaign re-run
live there; then (1) the CI step's comparison of the fresh documents with the committed ones,
and (2) `kvlower check` with the forged documents committed in the scratch copy.

    python sabotage.py KVLOWER VENV MODEL.gguf

Prints one line per sabotage: whether the CI re-run failed and whether check refused the
campaign (a finding on the anchor: every obligation it anchored drops). Exit 0 when it ran.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HERE = "scripts/kvlower_scripts/live_llama_cpp"
EVIDENCE = "evidence/llama-cpp-b10434-claim-slots"

# name -> [(file, old, new)]: each `old` must occur exactly once.
LIE_400 = [
    # Restore a file that is not there at the first generation (the engine answers 400),
    # report it restored and the reuse satisfied.
    ("adapter.py", "file = self.file_override.get(claim_id, claim.file)",
     'file = self.file_override.get(claim_id, claim.file if gen != 1 else "claim-nowhere.bin")'),
    ("adapter.py", 'if status != 200 or body.get("n_restored", 0) < claim.prefix_tokens:',
     "if gen == 1 or status != 200 or body.get(\"n_restored\", 0) < claim.prefix_tokens:\n"
     "                if gen == 1:\n"
     "                    body = {\"n_restored\": claim.prefix_tokens}\n"
     "            if gen != 1 and (status != 200 or body.get(\"n_restored\", 0) < claim.prefix_tokens):"),
    ("adapter.py", "predicate_satisfied=served,", "predicate_satisfied=True,")]

# name -> [(file, old, new)]: each `old` must occur exactly once.
SABOTAGES = {
    "adapter reports a restore success the engine answered 400": LIE_400,
    "adapter reports a restoration failure while the engine served the cached prefix": [
        ("adapter.py", '        self.post(f"/slots/{self.slot}?action=erase", {})\n        return True',
         '        if claim.generation < 2:\n            self.post(f"/slots/{self.slot}?action=erase", {})\n'
         '        return True'),
        ("adapter.py", "        if self.restore_enabled:\n            file =",
         "        if self.restore_enabled and gen >= 2:\n"
         "            self._emit('resident_claim_restoration_failed', claim, offload_generation=gen,\n"
         "                       outcome_claim_id=claim_id, controlled_restoration_unavailable=True,\n"
         "                       claim_scoped_outcome_type='refusal', engine_status=400)\n"
         "            self._emit('active_request_refused', claim, offload_generation=gen,\n"
         "                       outcome_claim_id=claim_id, blocking_claim_ids=[claim_id])\n"
         "            self.complete(claim.prefix + suffix)\n"
         "            return False\n"
         "        if self.restore_enabled:\n            file =")],
    "adapter restores another claim's file": [
        ("adapter.py", "file = self.file_override.get(claim_id, claim.file)",
         'file = self.file_override.get(claim_id, "claim-success-01-a.bin" '
         'if gen == 1 and claim_id != "success-01-a" else claim.file)'),
        ("adapter.py", "predicate_satisfied=served,", "predicate_satisfied=True,")],
    "recorder writes the adapter's story as truth (with the 400 lie)": LIE_400 + [
        # The forged recorder writes what the adapter says of the first restore of each run:
        # answered 200, the last saved state back, the reuse after it served from the cache
        # with the reference equal to it.
        ("recorder.py", '            calls.append({"call": "restore", "slot": slot, "status": status,',
         '            if not self.run.get("forged"):\n'
         '                self.run["forged"] = True\n'
         '                last = [c for c in calls if c["call"] == "save"][-1]\n'
         '                status, after = 200, {"tokens": last["file_tokens"], "sha256": last["state_sha256"]}\n'
         '                before = {"exists": True, "sha256": last["state_sha256"]}\n'
         '            calls.append({"call": "restore", "slot": slot, "status": status,'),
        ("recorder.py", '"cache_n": after[0] - before[0],',
         '"cache_n": max(after[0] - before[0], 10 ** 6 if self.reference_due else 0),'),
        ("recorder.py", 'call["reference"] = self._output(ref_resp)',
         'call["reference"] = self._output(resp)')],
}


def scratch_copy(dst: Path) -> None:
    tar = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD"], check=True,
                         capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dst)], input=tar, check=True)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    kvlower, venv, model = (str(Path(a).resolve()) for a in argv)
    for name, edits in SABOTAGES.items():
        with tempfile.TemporaryDirectory(prefix="kvlower-sabotage-") as tmp:
            root = Path(tmp) / "repo"
            root.mkdir()
            scratch_copy(root)
            for file, old, new in edits:
                p = root / HERE / file
                text = p.read_text()
                assert text.count(old) == 1, (name, file, old)
                p.write_text(text.replace(old, new))
            fresh = Path(tmp) / "fresh"
            run = subprocess.run([f"{venv}/bin/python", str(root / HERE / "campaign.py"),
                                  "--venv", venv, "--model", model, "--write-to", str(fresh)],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{name}: the sabotaged campaign failed to run: {run.stderr[-400:]}")
                continue
            ci = subprocess.run([sys.executable, str(root / HERE / "verify.py"), kvlower,
                                 str(root / EVIDENCE), "--fresh", str(fresh)],
                                capture_output=True, text=True)
            ci_why = (ci.stderr.strip().splitlines() or [""])[-1]
            shutil.rmtree(root / EVIDENCE)
            shutil.copytree(fresh, root / EVIDENCE)
            shutil.copy(REPO / EVIDENCE / "reproduce.json", root / EVIDENCE / "reproduce.json")
            check = subprocess.run([kvlower, "check", "--root", str(root), "--color", "never"],
                                   capture_output=True, text=True)
            refused = "llama_cpp_b10434.yaml" in check.stderr and check.returncode != 0
            why = next((line for line in check.stderr.splitlines()
                        if "llama_cpp_b10434.yaml" in line and "error[" in line), "")
            print(f"{name}:\n  CI re-run fails: {ci.returncode != 0} ({ci_why})\n"
                  f"  check refuses the forged campaign: {refused} ({why[:300]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
