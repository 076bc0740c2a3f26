//! The live llama.cpp slot campaign (evidence/llama-cpp-b10434-claim-slots/, made by
//! scripts/kvlower_scripts/live_llama_cpp/run.sh and re-run live by CI) is re-run whole by
//! `check` against its slot truth (docs/conformance.md section 6). The six obligations it
//! anchors at claim_registry and storage_restorability stay satisfied only while every
//! trace, the truth and the judged files are the ones that ran: one byte edited anywhere
//! drops them. `materialization_predicate` is never satisfied: the depths may not supply it.

use std::fs;
use std::path::Path;

use kvlower_tests::{copy_dir, kvlower, repo_root, scratch_repo};

const EVIDENCE: &str = "evidence/llama-cpp-b10434-claim-slots";
const DESCRIPTOR: &str = "capabilities/llama_cpp_b10434.yaml";

fn scratch() -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    copy_dir(&repo_root().join(EVIDENCE), &dir.path().join(EVIDENCE));
    fs::copy(repo_root().join(DESCRIPTOR), dir.path().join(DESCRIPTOR)).expect("copy");
    kvlower_tests::upgrade_campaign(dir.path(), EVIDENCE);
    dir
}

/// The satisfied obligations of `offloadable @ storage_restorability`, from `explain`.
fn satisfied(dir: &Path) -> Vec<String> {
    let run = kvlower(&[
        "explain",
        &dir.join(DESCRIPTOR).display().to_string(),
        "--root",
        &dir.display().to_string(),
        "--mode",
        "offloadable",
        "--depth",
        "storage_restorability",
    ]);
    run.stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("[x] "))
        .map(|l| l.split(' ').next().unwrap_or_default().to_string())
        .collect()
}

const SIX: [&str; 6] = [
    "claim_identity",
    "explicit_acceptance",
    "offload_restorability",
    "restoration_failure_outcome",
    "ordered_lifecycle_events",
    "claim_harm_attribution",
];

/// Rewrites the truth and records its new SHA-256 in the campaign, as a forger would.
fn forge_truth(dir: &Path, edit: impl Fn(&mut serde_json::Value)) {
    let truth_path = dir.join(EVIDENCE).join("truth.json");
    let mut truth: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&truth_path).expect("truth")).expect("json");
    edit(&mut truth);
    let text = serde_json::to_string_pretty(&truth).expect("json");
    fs::write(&truth_path, &text).expect("write");
    let camp_path = dir.join(EVIDENCE).join("gate-campaign.json");
    let mut camp: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&camp_path).expect("campaign")).expect("json");
    camp["truth"]["sha256"] = serde_json::json!(kvlower_core::catalog::sha256_hex(text.as_bytes()));
    fs::write(
        &camp_path,
        serde_json::to_string_pretty(&camp).expect("json"),
    )
    .expect("write");
}

#[test]
fn the_committed_campaign_supplies_six_obligations_and_not_the_predicate() {
    let dir = scratch();
    assert_eq!(satisfied(dir.path()), SIX);
    let check = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(!check.stderr.contains("error[anchor"), "{}", check.stderr);
}

#[test]
fn one_byte_of_the_truth_trace_or_adapter_drops_every_obligation() {
    for file in [
        "evidence/llama-cpp-b10434-claim-slots/truth.json",
        "evidence/llama-cpp-b10434-claim-slots/traces/success-07.jsonl",
        "scripts/kvlower_scripts/live_llama_cpp/adapter.py",
    ] {
        let dir = scratch();
        let path = dir.path().join(file);
        let mut bytes = fs::read(&path).expect("read");
        let at = bytes.len() / 2;
        bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
        fs::write(&path, bytes).expect("write");
        assert_eq!(satisfied(dir.path()), Vec::<String>::new(), "{file}");
    }
}

/// A forged truth (its digest updated) saying a positive run's restore was refused by the
/// engine: the trace's success now disagrees with the engine, and the campaign anchors
/// nothing.
#[test]
fn a_restore_the_engine_refused_disagrees_with_a_trace_that_reports_it_restored() {
    let dir = scratch();
    forge_truth(dir.path(), |t| {
        let calls = t["runs"][0]["calls"].as_array_mut().expect("calls");
        let restore = calls
            .iter_mut()
            .find(|c| c["call"] == "restore")
            .expect("a restore");
        restore["status"] = serde_json::json!(400);
        restore["slot_after"]["tokens"] = serde_json::json!(0);
    });
    assert_eq!(satisfied(dir.path()), Vec::<String>::new());
    let check = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        check
            .stderr
            .contains("the engine's truth says it should not"),
        "{}",
        check.stderr
    );
}

/// A forged truth whose restored slot state is not the stored one (garbage restored).
#[test]
fn a_restored_state_unequal_to_the_stored_one_disagrees() {
    let dir = scratch();
    forge_truth(dir.path(), |t| {
        let calls = t["runs"][0]["calls"].as_array_mut().expect("calls");
        let restore = calls
            .iter_mut()
            .find(|c| c["call"] == "restore")
            .expect("a restore");
        restore["slot_after"]["state_sha256"] = serde_json::json!("0".repeat(64));
    });
    assert_eq!(satisfied(dir.path()), Vec::<String>::new());
}
