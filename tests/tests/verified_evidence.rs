//! Verified evidence: a descriptor item anchored to a trace committed in the
//! repository, with the gate verdict it claims. `kvlower check` re-runs the
//! gate; a disagreement is a finding and the evidence does not count.
//!
//! The trace and the descriptor here are synthetic fixtures written for this
//! test (the committed descriptors keep the paper's anchors for real runs).

use std::fs;

use kvlower_core::descriptor::Descriptor;
use kvlower_core::{Depth, Label, Mode, judge};
use kvlower_evidence::FsEnvironment;
use kvlower_tests::{kvlower, scratch_repo};

const TRACE: &str = "traces/synthetic_reference_positive.jsonl";

/// A synthetic descriptor whose best_effort evidence rests on one verdict.
fn descriptor(gate: &str, pass: bool) -> String {
    let anchor = format!(
        "{{kind: repo_file, path: {TRACE}, note: synthetic fixture trace (not a real run), preserves_order: true, preserves_claim_scope: true, verdict: {{claim_id: \"fixture:reference-claim\", gate: {gate}, pass: {pass}}}}}"
    );
    // Preconditions anchored to a repository trace are re-run too (issue: evidence chain).
    let pre = format!(
        "{{kind: repo_file, path: {TRACE}, note: synthetic fixture, verdict: {{claim_id: \"fixture:reference-claim\", gate: reference_lifecycle, pass: {pass}}}}}"
    );
    let mut s = String::from(
        "runtime: {name: synthetic, version: '0', source: simulator, note: a synthetic fixture, reviewed: 2026-01-01, identity: [{kind: vllm, version: 0.0.0-fixture}]}\nallow_cited_positives: synthetic fixture\nnon_claims: {default: \"synthetic fixture; claims nothing about a real runtime\"}\nadapters:\n  - depth: backend_patch\n    name: synthetic patch\n    preconditions:\n",
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
        s.push_str(&format!("      - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {anchor}, modes: all}}\n"));
    }
    s
}

fn scratch(descriptor_text: &str) -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities", "traces"]);
    kvlower_tests::copy_trace_with_header(
        "tests/fixtures/traces/scenarios/reference_positive.jsonl",
        &dir.path().join(TRACE),
    );
    fs::write(
        dir.path().join("capabilities/synthetic.yaml"),
        descriptor_text,
    )
    .expect("write");
    dir
}

fn best_effort_label(dir: &tempfile::TempDir, text: &str) -> Label {
    let env = FsEnvironment::new(dir.path().to_path_buf());
    let (repo, _) = kvlower_evidence::load_repository(&env).expect("loads");
    let catalog = repo.catalog;
    let d: Descriptor = kvlower_load::yaml::from_str(text).expect("parses");
    judge(&catalog, &d, Mode::BestEffort, Depth::BackendPatch, &env).label
}

#[test]
fn an_agreeing_verdict_counts_and_check_passes() {
    let text = descriptor("reference_lifecycle", true);
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
    // The reference trace gets no connector verdict at all.
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
    let text = descriptor("reference_lifecycle", true);
    let dir = scratch(&text);
    // Drop the restore from the offload tier: the lifecycle gate now fails.
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
    let text = descriptor("reference_lifecycle", true).replacen(
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

#[test]
fn a_failing_verdict_supports_nothing_even_when_it_reproduces() {
    // A verdict that reproduces, but as a failure: the post-hoc fixture fails the lifecycle gate.
    let text = descriptor("reference_lifecycle", false);
    let dir = scratch(&text);
    kvlower_tests::copy_trace_with_header(
        "tests/fixtures/traces/scenarios/reference_post_hoc.jsonl",
        &dir.path().join(TRACE),
    );
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        !run.stderr.contains("anchor-verdict-disagrees"),
        "the failing verdict is reproduced: {}",
        run.stderr
    );
    assert_eq!(best_effort_label(&dir, &text), Label::Unknown);
    let explain = kvlower(&[
        "explain",
        &dir.path()
            .join("capabilities/synthetic.yaml")
            .display()
            .to_string(),
        "--root",
        &dir.path().display().to_string(),
        "--mode",
        "best_effort",
    ]);
    assert!(
        explain
            .stdout
            .contains("the anchored gate verdict is a failure"),
        "{}",
        explain.stdout
    );
}

#[test]
fn a_gate_counts_only_for_the_obligations_it_witnesses() {
    // The lifecycle gate witnesses I, P, M, T; it does not witness victim exclusion.
    let text = descriptor("reference_lifecycle", true).replace(
        "{obligation: claim_identity,",
        "{obligation: victim_exclusion_before_violation, status: supported, scope: conformance_trace, modes: all, anchor: {kind: paper, section: x, note: y}}\n      - {obligation: claim_identity,",
    );
    let mut d: Descriptor = kvlower_load::yaml::from_str(&text).expect("parses");
    let dir = scratch(&text);
    let anchor = d.adapters[0].evidence[1].anchor.clone();
    d.adapters[0].evidence[0].anchor = anchor;
    let env = FsEnvironment::new(dir.path().to_path_buf());
    let (repo, _) = kvlower_evidence::load_repository(&env).expect("loads");
    let j = judge(
        &repo.catalog,
        &d,
        Mode::HardProtected,
        Depth::BackendPatch,
        &env,
    );
    let v = j
        .obligations
        .iter()
        .find(|f| f.obligation == kvlower_core::Obligation::VictimExclusionBeforeViolation)
        .expect("V is in the bundle");
    assert!(v.satisfied_by.is_none());
    assert!(v.rejected.iter().any(|(_, ds)| ds.iter().any(|d| matches!(
        d,
        kvlower_core::judgment::Defeat::Unanchored { defects }
            if defects.contains(&kvlower_core::anchor_form::AnchorDefect::GateDoesNotWitness {
                gate: kvlower_core::vocab::TraceGate::ReferenceLifecycle
            })
    ))));
}
