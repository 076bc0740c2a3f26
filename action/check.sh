#!/usr/bin/env bash
# The action's check step, run in $GITHUB_WORKSPACE with `kvlower` on PATH:
# 1. `kvlower check --format github`: `::error`/`::warning` annotations on stdout (the
#    runner turns them into annotations on the pull request), the human report on stderr;
#    its exit code is the step's.
# 2. `--format sarif` into INPUT_SARIF_FILE, for github/codeql-action/upload-sarif.
# 3. `--format markdown` appended to $GITHUB_STEP_SUMMARY.
# Outputs (to $GITHUB_OUTPUT): sarif-file and exit-code.
set -uo pipefail
: "${GITHUB_WORKSPACE:?}" "${GITHUB_OUTPUT:?}" "${GITHUB_STEP_SUMMARY:?}"
cd "$GITHUB_WORKSPACE" || exit 2

args=(--root "${INPUT_ROOT:-.}")
for input in "require-verified=${INPUT_REQUIRE_VERIFIED:-false}" "deny-warnings=${INPUT_DENY_WARNINGS:-false}"; do
  name="${input%%=*}" value="${input#*=}"
  case "$value" in
    true) args+=("--$name") ;;
    false | "") ;;
    *) echo "::error title=kvlower action::input $name must be true or false, not '$value'"; exit 2 ;;
  esac
done
sarif="${INPUT_SARIF_FILE:-kvlower.sarif}"

# kvlower names files relative to --root; GitHub resolves them against the workspace,
# so under another root each annotation's file= and each SARIF file location get the
# root's path in front.
root="${INPUT_ROOT:-.}"
root="${root%/}"
prefix=""
if [ "$root" != "." ]; then prefix="$root/"; fi

kvlower check "${args[@]}" --color never --format github |
  sed -e "s#^::\(error\|warning\|notice\) file=#::\1 file=${prefix//#/\\#}#"
code=${PIPESTATUS[0]}
# The SARIF log and the summary report the same findings; their own exit codes are not
# the verdict (--exit-zero keeps a finding from stopping them; 2 still says why).
kvlower check "${args[@]}" --format sarif --exit-zero > "$sarif" || true
if [ -n "$prefix" ] && [ -s "$sarif" ]; then
  python3 - "$sarif" "$prefix" <<'PY' || true
import json, sys
path, prefix = sys.argv[1], sys.argv[2]
with open(path, encoding="utf-8") as f:
    log = json.load(f)
def walk(node):
    if isinstance(node, dict):
        if node.get("uriBaseId") == "%SRCROOT%" and isinstance(node.get("uri"), str):
            node["uri"] = prefix + node["uri"]
        for value in node.values():
            walk(value)
    elif isinstance(node, list):
        for value in node:
            walk(value)
walk(log)
with open(path, "w", encoding="utf-8") as f:
    json.dump(log, f, indent=2)
PY
fi
kvlower check "${args[@]}" --format markdown --exit-zero >> "$GITHUB_STEP_SUMMARY" || true
{
  echo "sarif-file=$sarif"
  echo "exit-code=$code"
} >> "$GITHUB_OUTPUT"
exit "$code"
