#!/usr/bin/env bash
# Re-runs one live set-up into its committed evidence folder and requires the engine to say
# the same thing again (docs/conformance.md, "Reproduction"). Named by the folder's
# reproduce.json (`command`); .ci/run runs every folder's on every landing.
#
#   scripts/kvlower_scripts/reproduce_live.sh [--update] FOLDER RUN_SH [ARG...]
#
# 1. copies FOLDER (the committed evidence) to a scratch folder;
# 2. runs RUN_SH ARG... with KVLOWER_OUT=FOLDER (the set-up's own run.sh: its setup.sh
#    reuses a venv it already made and verified, builds the model, runs the engine live,
#    joins and checks every verdict against the engine's truth);
# 3. `kvlower reproduce-diff SCRATCH FOLDER`: every file byte for byte, a capture on its
#    normal form; the first difference is printed by file and line.
# On a failure the committed files are put back (with --update the fresh ones stay, for
# `git diff`). KVLOWER names the kvlower binary (default: target/debug/kvlower, built).
#
# Exit 0: reproduced; 1: the fresh evidence differs, or the run's own verifier disagreed;
# 2: usage, or the set-up or the run failed.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
if [ $# -lt 2 ]; then
  echo "usage: reproduce_live.sh [--update] FOLDER RUN_SH [ARG...]" >&2
  exit 2
fi
folder="$(cd "$repo" && realpath -m "$1")"; shift
run_sh="$1"; shift
case "$folder" in "$repo"/evidence/*) ;; *) echo "reproduce_live.sh: $folder is not under evidence/" >&2; exit 2 ;; esac
[ -d "$folder" ] || { echo "reproduce_live.sh: no folder $folder" >&2; exit 2; }
if [ -z "${KVLOWER:-}" ]; then
  cargo build --locked -q --manifest-path "$repo/Cargo.toml" --bin kvlower
  KVLOWER="$repo/target/debug/kvlower"
fi
export KVLOWER

scratch="$(mktemp -d)"
committed="$scratch/committed"
cp -a "$folder" "$committed"
restore() {
  rm -rf "$folder"
  cp -a "$committed" "$folder"
}
trap 'rm -rf "$scratch"' EXIT

name="${folder#"$repo"/}"
echo "reproduce_live.sh: $name: running $run_sh $* live" >&2
set +e
(cd "$repo" && KVLOWER_OUT="$folder" "$repo/$run_sh" "$@") >"$scratch/run.log" 2>&1
rc=$?
set -e
# The manifest is not an output of the run: the committed one stays.
cp -a "$committed/reproduce.json" "$folder/reproduce.json" 2>/dev/null || true
if [ $rc -ne 0 ]; then
  tail -n 40 "$scratch/run.log" >&2
  echo "reproduce_live.sh: $name: the live run exited $rc (log above)" >&2
  [ $update = 1 ] || restore
  [ $rc = 1 ] && exit 1
  exit 2
fi
if "$KVLOWER" reproduce-diff "$committed" "$folder"; then
  exit 0
fi
if [ $update = 1 ]; then
  echo "reproduce_live.sh: $name: the fresh evidence is left in place (--update): git diff $name" >&2
else
  restore
  echo "reproduce_live.sh: $name: NOT reproduced; the committed files are back in place" \
    "(re-run with --update to keep the fresh ones)" >&2
fi
exit 1
