"""`kvlower gate` against the arbiter project's Python reference analyzer, timed in one run.

Issue 26 asks for `kvlower gate` on a connector-family campaign to be at least 15 times as
fast as the reference analyzer it replaces, measured side by side. This benchmark runs both
on the same directory of traces, several rounds interleaved (so a change in the machine's
load hits both), checks that they agree on the counts, and prints the medians of each
one's wall time and CPU time (its process's user + system time, from `os.wait4`) and the
ratios (reference / gate).

The reference is not part of this repository: it is the module
`kv_vllm_arbiter.pydev_connector_failure` of a checkout of the public repository
gustavgauge/kv-residency-vllm-arbiter, named with `--reference-checkout` and imported
from its `src/` (`PYTHONPATH=CHECKOUT/src`). The child process that runs it does what a user
of that module does over a campaign: `evaluate_pydev_connector_events(load_jsonl(path))`
for every `*.jsonl` below the directory, sorted, in one process, counting the traces whose
`connector_observation_success` and `restoration_failure_outcome_success` hold; `kvlower gate
--format json DIR` reports the same counts as `observation_passes` and
`failure_outcome_passes`.

    cargo run --release -p kvlower-trace --example bench_gate -- --copies 300 \\
        --connector-only --dir /tmp/gbench
    cargo build --release
    PYTHONPATH=scripts python3 -m kvlower_scripts.bench_gate_reference \\
        --reference-checkout ../kv-residency-vllm-arbiter /tmp/gbench/connector-campaign

Exit status: 0 measured and the counts agree; 1 the counts differ (or a run failed);
2 usage (no checkout given, or the module is not found in it).

Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULE = "kv_vllm_arbiter.pydev_connector_failure"
MODULE_FILE = Path("src", "kv_vllm_arbiter", "pydev_connector_failure.py")

# Runs in the child with the checkout's src/ on PYTHONPATH; prints its counts as JSON.
REFERENCE_DRIVER = f"""
import json, sys
from pathlib import Path
from {MODULE} import evaluate_pydev_connector_events, load_jsonl
runs = observation = failure = 0
for path in sorted(Path(sys.argv[1]).rglob("*.jsonl")):
    result = evaluate_pydev_connector_events(load_jsonl(path))
    runs += 1
    observation += bool(result.connector_observation_success)
    failure += bool(result.restoration_failure_outcome_success)
print(json.dumps({{"runs": runs, "observation_passes": observation, "failure_outcome_passes": failure}}))
"""


def fail_usage(message: str) -> None:
    print(f"bench_gate_reference: {message}", file=sys.stderr)
    sys.exit(2)


def timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int, bytes]:
    """Runs `argv` to its end: wall seconds, CPU seconds (user + system), exit code, stdout.

    The output goes to a temporary file, read afterwards: through a pipe the timing would
    include this process reading `kvlower gate`'s megabyte of JSON while it runs."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, child.returncode, out.read()


def gate_counts(out: bytes) -> dict[str, int]:
    campaign = json.loads(out)["payload"]["campaign"]
    return {key: campaign[key] for key in ("runs", "observation_passes", "failure_outcome_passes")}


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python3 -m kvlower_scripts.bench_gate_reference",
        description="Times `kvlower gate` against the arbiter's Python reference analyzer on one campaign.",
    )
    parser.add_argument("campaign", type=Path, help="directory of *.jsonl traces (e.g. the connector campaign)")
    parser.add_argument(
        "--reference-checkout",
        type=Path,
        help="a checkout of gustavgauge/kv-residency-vllm-arbiter (its src/ is imported)",
    )
    parser.add_argument(
        "--kvlower",
        type=Path,
        default=REPO / "target" / "release" / "kvlower",
        help="the kvlower binary (default: target/release/kvlower)",
    )
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--jobs", type=int, help="`kvlower gate -j N` (default: gate's own, one per core)")
    args = parser.parse_args()

    if args.reference_checkout is None:
        fail_usage(
            "--reference-checkout PATH is required: a checkout of the public repository "
            f"gustavgauge/kv-residency-vllm-arbiter, whose {MODULE_FILE} is the reference "
            "(it is not part of this repository)"
        )
    checkout = args.reference_checkout.resolve()
    if not (checkout / MODULE_FILE).is_file():
        fail_usage(f"{checkout}: no {MODULE_FILE} here; is it a checkout of gustavgauge/kv-residency-vllm-arbiter?")
    if not args.campaign.is_dir():
        fail_usage(f"{args.campaign}: not a directory")
    if not os.access(args.kvlower, os.X_OK):
        fail_usage(f"{args.kvlower}: no kvlower binary here (cargo build --release, or --kvlower PATH)")
    if args.rounds < 1:
        fail_usage("--rounds must be at least 1")

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(checkout / "src"), *filter(None, [env.get("PYTHONPATH")])])
    reference_argv = [sys.executable, "-c", REFERENCE_DRIVER, str(args.campaign)]
    gate_argv = [str(args.kvlower), "gate", "--format", "json"]
    if args.jobs is not None:
        gate_argv += ["-j", str(args.jobs)]
    gate_argv.append(str(args.campaign))

    # One untimed run of each: the page cache holds the traces and the counts are compared.
    _, _, code, out = timed(reference_argv, env)
    if code != 0:
        print(f"the reference analyzer exited {code} (could {MODULE} be imported?)", file=sys.stderr)
        sys.exit(1)
    reference = json.loads(out)
    _, _, code, out = timed(gate_argv)
    gate = gate_counts(out)
    print(f"campaign: {args.campaign}")
    print(f"reference ({MODULE}, {checkout}): {reference}")
    print(f"kvlower gate ({' '.join(gate_argv[1:-1])}): {gate}")
    if reference != gate:
        print("the counts differ: no timing is reported", file=sys.stderr)
        sys.exit(1)

    times: dict[str, tuple[list[float], list[float]]] = {"reference": ([], []), "gate": ([], [])}
    for round_ in range(args.rounds):
        # Alternate which goes first, so neither always runs right after the other.
        order = [("reference", reference_argv, env), ("gate", gate_argv, None)]
        for name, argv, child_env in order if round_ % 2 == 0 else reversed(order):
            wall, cpu, code, out = timed(argv, child_env)
            counts = json.loads(out) if name == "reference" else gate_counts(out)
            if code != 0 or counts != reference:
                print(f"round {round_ + 1}: {name} exited {code} with {counts}", file=sys.stderr)
                sys.exit(1)
            times[name][0].append(wall)
            times[name][1].append(cpu)

    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    ref_wall, ref_cpu = (median_ms(v) for v in times["reference"])
    gate_wall, gate_cpu = (median_ms(v) for v in times["gate"])
    print(f"{args.rounds} interleaved rounds, medians (load average after: {load and f'{load[0]:.2f}'}):")
    print(f"  reference     wall {ref_wall:8.1f} ms   CPU {ref_cpu:8.1f} ms")
    print(f"  kvlower gate  wall {gate_wall:8.1f} ms   CPU {gate_cpu:8.1f} ms")
    print(f"  reference / gate: wall {ref_wall / gate_wall:.1f}x, CPU {ref_cpu / gate_cpu:.1f}x (target: 15x)")
    walls = [r / g for r, g in zip(*(times[n][0] for n in ("reference", "gate")), strict=True)]
    print(f"  per round, wall ratio: {', '.join(f'{w:.1f}' for w in walls)}")


if __name__ == "__main__":
    main()
