#!/usr/bin/env bash
# The llama.cpp slot campaign, live: set up the venv (PyPI), build the tiny model, start
# llama-server on 127.0.0.1, run the 60-run campaign, stop the server, and judge it.
#
#   scripts/kvlower_scripts/live_llama_cpp/run.sh            re-run and require the fresh
#                                                             documents to equal the committed
#                                                             ones byte for byte (what CI does)
#   scripts/kvlower_scripts/live_llama_cpp/run.sh --update   re-run and write the evidence folder
#
# KVLOWER             a kvlower binary (default target/debug/kvlower, built with cargo)
# KVLOWER_LLAMA_VENV  the venv setup.sh fills (default ~/.cache/kvlower/llama-cpp-b10434)
#
# Exit 0: the campaign holds, agrees with its truth and (without --update) equals the committed
# documents; 1: it does not (the first differing run is named), or this machine cannot run it
# under CI=true (no AVX-512-BF16, no PyPI: the reason is printed); outside CI such a machine
# skips with the reason and exit 0.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
evidence="$repo/evidence/llama-cpp-b10434-claim-slots"
model_sha=25ba34b9c47e2c10b2bc758fba1423a2509868126a5c1d204f6068b0f0b43c10
update=0
[ "${1:-}" = "--update" ] && update=1

set +e
venv="$("$here/setup.sh" | tail -n 1)"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" != 0 ]; then
  why="the llama.cpp live campaign cannot run on this machine (setup.sh exit $rc, reason above)"
  if [ "${CI:-}" = "true" ]; then echo "error: $why" >&2; exit 1; fi
  echo "skipped: $why" >&2
  exit 0
fi
kvlower="${KVLOWER:-$repo/target/debug/kvlower}"
[ -x "$kvlower" ] || (cd "$repo" && cargo build --locked -q --bin kvlower)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$venv/bin/python" "$here/build_model.py" "$tmp/model.gguf" >/dev/null
got="$(sha256sum "$tmp/model.gguf" | cut -d' ' -f1)"
if [ "$got" != "$model_sha" ]; then
  echo "error: the model builder wrote SHA-256 $got, the campaign expects $model_sha" >&2
  exit 1
fi
if [ "$update" = 1 ]; then
  "$venv/bin/python" "$here/campaign.py" --venv "$venv" --model "$tmp/model.gguf"
  exec python3 "$here/verify.py" "$kvlower" "$evidence"
fi
"$venv/bin/python" "$here/campaign.py" --venv "$venv" --model "$tmp/model.gguf" --write-to "$tmp/fresh"
exec python3 "$here/verify.py" "$kvlower" "$evidence" --fresh "$tmp/fresh"
