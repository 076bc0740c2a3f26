#!/usr/bin/env bash
# The action's install step: kvlower into its own virtual environment under
# $RUNNER_TEMP, whose bin/ goes on $GITHUB_PATH (so the next step finds `kvlower`).
# INPUT_WHEEL: a wheel to install (relative to $GITHUB_WORKSPACE), else this action's
# own checkout ($GITHUB_ACTION_PATH), built by pip through the root pyproject.toml.
set -euo pipefail
: "${RUNNER_TEMP:?}" "${GITHUB_PATH:?}" "${GITHUB_ACTION_PATH:?}" "${GITHUB_WORKSPACE:?}"
venv="$RUNNER_TEMP/kvlower-venv"
python3 -m venv "$venv"
if [ -n "${INPUT_WHEEL:-}" ]; then
  (cd "$GITHUB_WORKSPACE" && "$venv/bin/pip" install --disable-pip-version-check --no-index -q "$INPUT_WHEEL")
else
  "$venv/bin/pip" install --disable-pip-version-check -q "$GITHUB_ACTION_PATH"
fi
"$venv/bin/kvlower" --version
echo "$venv/bin" >> "$GITHUB_PATH"
