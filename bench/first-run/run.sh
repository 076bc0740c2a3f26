#!/usr/bin/env bash
# What a newcomer pays on a fresh clone: the README's two commands, timed, build and run
# apart. Clones the committed HEAD of this repository into a temporary directory, builds it
# with an empty target directory, and prints one line per step and the two totals against
# their targets (first `check` <= 60 s; clone to green tests <= 180 s).
#
#   bench/first-run/run.sh [REV]        (default REV: HEAD)
#
# Crates are fetched first (`cargo fetch --locked`, timed apart): on a machine whose cargo
# cache already holds them that step takes a second, on a new machine it is the network's.
# The timings are wall-clock seconds on this machine as it is: run it on a quiet machine, or
# read the CPU seconds (user+sys) printed beside each step, which load changes less.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
rev="${1:-HEAD}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

git clone -q --no-local "$repo" "$work/kvlower"
git -C "$work/kvlower" checkout -q "$rev"
cd "$work/kvlower"
export CARGO_TARGET_DIR="$work/target"
unset RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_INCREMENTAL

# step NAME COMMAND...: runs COMMAND, prints "NAME  wall  cpu", sets $last to the wall time.
step() {
  local name="$1"; shift
  local t="$work/time"
  local TIMEFORMAT='%R %U %S' rc=0
  { time "$@" >"$work/out" 2>&1 || rc=$?; } 2>"$t"
  if [ "$rc" -ne 0 ]; then
    echo "first-run: '$*' failed; its last lines:" >&2
    tail -n 20 "$work/out" >&2
    exit 1
  fi
  read -r wall user sys <"$t"
  last="$wall"
  printf '%-34s %8.1f s wall %8.1f s cpu\n' "$name" "$wall" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')"
}

echo "kvlower first run at $(git rev-parse --short HEAD), $(nproc) cores, $(cargo --version)"
step "cargo fetch --locked" cargo fetch --locked
step "build (cargo build --locked)" cargo build --locked
b1="$last"
step "run (cargo run --locked -- check)" cargo run --locked -q -- check
r1="$last"
step "build (cargo test --no-run)" cargo test --workspace --locked --no-run
b2="$last"
step "run (cargo test --workspace)" cargo test --workspace --locked
r2="$last"
first=$(awk -v a="$b1" -v b="$r1" 'BEGIN { print a + b }')
total=$(awk -v a="$b1" -v b="$r1" -v c="$b2" -v d="$r2" 'BEGIN { print a + b + c + d }')
printf 'first check (build + run):          %6.1f s   target <= 60 s\n' "$first"
printf 'clone to green tests (both commands): %6.1f s   target <= 180 s\n' "$total"
