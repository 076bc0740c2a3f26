#!/usr/bin/env bash
# Runs the action's two steps as GitHub would (the variables a runner sets, a scratch
# workspace, no network): install.sh from WHEEL, then check.sh on a passing and on a
# failing repository, and checks exit codes, annotations, the SARIF log, the step
# summary and the outputs. Usage: bash action/test.sh WHEEL (CI: .ci/run).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
wheel="$(realpath "$1")"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

export GITHUB_ACTIONS=true CI=true RUNNER_TEMP="$tmp/runner-temp" GITHUB_ACTION_PATH="$here"
export GITHUB_PATH="$tmp/github-path" GITHUB_WORKSPACE="$tmp/workspace"
mkdir -p "$RUNNER_TEMP" "$GITHUB_WORKSPACE"
: > "$GITHUB_PATH"
cp "$wheel" "$GITHUB_WORKSPACE/"
INPUT_WHEEL="$(basename "$wheel")" bash "$here/action/install.sh"
# The runner prepends each $GITHUB_PATH line to PATH for the later steps.
PATH="$(tac "$GITHUB_PATH" | paste -sd:):$PATH"
test "$(command -v kvlower)" = "$RUNNER_TEMP/kvlower-venv/bin/kvlower"

fail() { echo "action test: $*" >&2; exit 1; }
# run_check NAME: check.sh in the workspace, with fresh output files; sets $code.
run_check() {
  export GITHUB_OUTPUT="$tmp/$1.output" GITHUB_STEP_SUMMARY="$tmp/$1.summary"
  : > "$GITHUB_OUTPUT"; : > "$GITHUB_STEP_SUMMARY"
  set +e
  bash "$here/action/check.sh" > "$tmp/$1.stdout" 2> "$tmp/$1.stderr"
  code=$?
  set -e
}

# A passing repository: init, a scaffold with nothing anchored yet, its matrix.
repo="$GITHUB_WORKSPACE/descriptors"
mkdir -p "$repo" && cd "$repo"
kvlower init > /dev/null
kvlower new "AIBrix KV offload" --version 0.3.9 --kind aibrix > /dev/null
sed -i -e 's/reviewed: YYYY-MM-DD/reviewed: 2026-01-01/' -e '/^native:$/,/^$/c native: []' \
  capabilities/aibrix_kv_offload_0_3_9.yaml
kvlower matrix > /dev/null
cd "$GITHUB_WORKSPACE"
export INPUT_ROOT=descriptors INPUT_REQUIRE_VERIFIED=false INPUT_DENY_WARNINGS=true INPUT_SARIF_FILE=kvlower.sarif
run_check pass
[ "$code" = 0 ] || fail "a passing repository exits $code: $(cat "$tmp/pass.stderr")"
grep -q '^::error' "$tmp/pass.stdout" && fail "annotations for a passing repository"
grep -qx 'exit-code=0' "$GITHUB_OUTPUT" || fail "exit-code output: $(cat "$GITHUB_OUTPUT")"
grep -qx 'sarif-file=kvlower.sarif' "$GITHUB_OUTPUT" || fail "sarif-file output"
grep -q '0 finding(s)' "$GITHUB_STEP_SUMMARY" || fail "summary: $(cat "$GITHUB_STEP_SUMMARY")"
python3 - "$GITHUB_WORKSPACE/kvlower.sarif" 0 <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
assert log["version"] == "2.1.0", log["version"]
results = log["runs"][0]["results"]
assert len(results) == int(sys.argv[2]), results
PY

# A failing one: a misspelt source.
sed -i 's/source: source_tree/source: sorce_tree/' descriptors/capabilities/aibrix_kv_offload_0_3_9.yaml
run_check fail
[ "$code" = 1 ] || fail "a failing repository exits $code"
grep -q '^::error file=descriptors/capabilities/aibrix_kv_offload_0_3_9.yaml,line=' "$tmp/fail.stdout" ||
  fail "no annotation at the descriptor: $(cat "$tmp/fail.stdout")"
grep -q 'unknown-name' "$tmp/fail.stderr" || fail "the human report on stderr"
grep -qx 'exit-code=1' "$GITHUB_OUTPUT" || fail "exit-code output"
grep -q 'unknown-name' "$GITHUB_STEP_SUMMARY" || fail "the finding in the summary"
python3 - "$GITHUB_WORKSPACE/kvlower.sarif" 1 <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
results = log["runs"][0]["results"]
assert len(results) == int(sys.argv[2]), results
assert results[0]["ruleId"] == "unknown-name", results[0]
uri = results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
assert uri == "descriptors/capabilities/aibrix_kv_offload_0_3_9.yaml", uri
PY

# A wrong input value is refused (exit 2), not read as false.
INPUT_DENY_WARNINGS=yes run_check bad-input
[ "$code" = 2 ] || fail "deny-warnings=yes exits $code"
echo "action test: install, a passing and a failing check, a refused input: ok"
