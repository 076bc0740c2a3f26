//! Verified evidence: a descriptor item anchored to a trace committed in the
//! repository, with the gate verdict it claims. `kvlower check` re-runs the
//! gate; a disagreement is a finding and the evidence does not count.
//!
//! The trace and the descriptor here are synthetic fixtures written for this
//! test (the committed descriptors keep the paper's anchors for real runs).

use std::fs;

use kvlower_core::descriptor::Descriptor;
use kvlower_core::{Depth, Label, Mode, judge};
use kvlower_load::FsEnvironment;
use kvlower_tests::{kvlower, repo_root};

const TRACE: &str = "traces/synthetic_connector_success.jsonl";

/// A synthetic descriptor whose best_effort evidence rests on one verdict.
fn descriptor(gate: &str, pass: bool) -> String {
    let anchor = format!(
        "{{kind: repo_file, path: {TRACE}, note: synthetic fixture trace (not a real run), preserves_order: true, preserves_claim_scope: true, verdict: {{claim_id: \"fixture:claim-a\", gate: {gate}, pass: {pass}}}}}"
    );
    let pre = "{kind: repo_file, path: traces/synthetic_connector_success.jsonl, note: synthetic fixture}";
    let mut s = String::from(
        "runtime: {name: synthetic, version: '0', source: simulator, note: a synthetic fixture}\nnon_claims: {default: \"synthetic fixture; claims nothing about a real runtime\"}\nadapters:\n  - depth: backend_patch\n    name: synthetic patch\n    preconditions:\n",
    );
    for p in [
        "patch_stack_identified",
        "patched_code_on_exercised_path",
        "adjacent_hooks_absent_or_disabled",
        "analyzer_checks_order_and_identity",
    ] {
        s.push_str(&format!("      {p}: {pre}\n"));
    }
    s.push_str("    evidence:\n");
    for o in [
        "claim_identity",
        "materialization_predicate",
        "claim_materialized_event",
        "claim_scoped_telemetry",
    ] {
        s.push_str(&format!("      - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {anchor}}}\n"));
    }
    s
}

fn scratch(descriptor_text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["modes", "capabilities", "traces"] {
        fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
    }
    fs::copy(
        repo_root().join("modes/modes.yaml"),
        dir.path().join("modes/modes.yaml"),
    )
    .expect("copy");
    fs::copy(
        repo_root().join("tests/fixtures/traces/scenarios/connector_success.jsonl"),
        dir.path().join(TRACE),
    )
    .expect("copy fixture");
    fs::write(
        dir.path().join("capabilities/synthetic.yaml"),
        descriptor_text,
    )
    .expect("write");
    dir
}

fn best_effort_label(dir: &tempfile::TempDir, text: &str) -> Label {
    let (repo, _) = kvlower_load::load_repository(dir.path()).expect("loads");
    let catalog = repo.catalog;
    let d: Descriptor = kvlower_load::yaml::from_str(text).expect("parses");
    let env = FsEnvironment {
        root: dir.path().to_path_buf(),
    };
    judge(&catalog, &d, Mode::BestEffort, Depth::BackendPatch, &env).label
}

#[test]
fn an_agreeing_verdict_counts_and_check_passes() {
    let text = descriptor("connector_observation", true);
    let dir = scratch(&text);
    let root = dir.path().display().to_string();
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 0);
    let run = kvlower(&["check", "--root", &root]);
    assert!(
        !run.stderr.contains("anchor-verdict-disagrees"),
        "{}",
        run.stderr
    );
    assert_eq!(best_effort_label(&dir, &text), Label::SoundWithAdapter);
}

#[test]
fn a_disagreeing_verdict_is_a_finding_and_does_not_count() {
    // The success trace does not pass the failure-outcome gate.
    let text = descriptor("connector_failure_outcome", true);
    let dir = scratch(&text);
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("capabilities/synthetic.yaml")
            && run.stderr.contains("error[anchor-verdict-disagrees]"),
        "{}",
        run.stderr
    );
    assert_eq!(best_effort_label(&dir, &text), Label::Unknown);
}

#[test]
fn a_tampered_trace_no_longer_supports_its_verdict() {
    let text = descriptor("connector_observation", true);
    let dir = scratch(&text);
    // Drop the CPU->GPU restore: the observation gate now fails.
    let path = dir.path().join(TRACE);
    let kept: Vec<String> = fs::read_to_string(&path)
        .expect("read")
        .lines()
        .filter(|l| !l.contains("\"resident_claim_restored\""))
        .map(str::to_string)
        .collect();
    fs::write(&path, kept.join("\n") + "\n").expect("write");
    assert_eq!(best_effort_label(&dir, &text), Label::Unknown);
}

#[test]
fn a_verdict_needs_a_repo_file_trace() {
    let text = descriptor("connector_observation", true).replacen(
        &format!("kind: repo_file, path: {TRACE}, note: synthetic fixture trace"),
        "kind: paper, section: \"§7\", note: synthetic fixture trace",
        1,
    );
    let dir = scratch(&text);
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("needs a `repo_file` trace anchor"),
        "{}",
        run.stderr
    );
}
