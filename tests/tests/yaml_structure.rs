//! The structural pre-pass of `kvlower-yaml`, end to end: YAML nested deeper
//! than 32 levels is refused before serde_yaml (whose scanner is quadratic in
//! flow depth: 100,000 `[` took 17.6 s) sees the text, for descriptors and for
//! the claim registry of `kvlower join`.

use kvlower_tests::{kvlower, scratch_repo};

fn deep(n: usize) -> String {
    format!("runtime: {}{}\n", "[".repeat(n), "]".repeat(n))
}

#[test]
fn deep_flow_nesting_in_a_descriptor_is_refused() {
    let dir = scratch_repo(&["capabilities"]);
    std::fs::write(dir.path().join("capabilities/deep.yaml"), deep(100_000)).expect("write");
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--color", "never", "--root", &root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("capabilities/deep.yaml:1:")
            && run
                .stderr
                .contains("error[yaml-syntax]: nesting deeper than 32 levels"),
        "{}",
        run.stderr
    );
}

#[test]
fn deep_flow_nesting_in_a_join_registry_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = dir.path().join("registry.yaml");
    let events = dir.path().join("events.jsonl");
    std::fs::write(&registry, deep(100_000)).expect("write");
    std::fs::write(&events, "").expect("write");
    let run = kvlower(&[
        "join",
        "--registry",
        &registry.display().to_string(),
        "--events",
        &events.display().to_string(),
        "--format",
        "vllm",
    ]);
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("nesting deeper than 32 levels"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_catalog_is_held_to_the_same_structure() {
    // A duplicate key in modes.yaml is located at the duplicate.
    let dir = scratch_repo(&["capabilities"]);
    let modes = dir.path().join("modes/modes.yaml");
    let text = std::fs::read_to_string(&modes).expect("read");
    let text = text.replacen(
        "  soft_priority:\n",
        "  best_effort:\n    obligations: [claim_identity]\n    accepted_evidence: x\n    rejected_false_positive: y\n  soft_priority:\n",
        1,
    );
    std::fs::write(&modes, text).expect("write");
    std::fs::write(
        dir.path().join("capabilities/x.yaml"),
        "runtime: {name: x, version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}\nnon_claims: {default: none}\n",
    )
    .expect("write");
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--color", "never", "--root", &root]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("modes/modes.yaml:")
            && run
                .stderr
                .contains("error[duplicate-key]: duplicate key `best_effort`"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_aliased_anchor_defect_is_one_finding_at_its_definition() {
    let dir = scratch_repo(&["capabilities"]);
    let case = kvlower_tests::repo_root().join("tests/corpus/anchor_reused_through_aliases.yaml");
    std::fs::copy(case, dir.path().join("capabilities/case.yaml")).expect("copy");
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--color", "never", "--root", &root]);
    let findings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("error[anchor-incomplete]"))
        .collect();
    assert_eq!(findings.len(), 1, "{}", run.stderr);
    assert!(
        findings[0].starts_with("capabilities/case.yaml:8:5:")
            && findings[0].contains("native[1].anchor, native[2].anchor, native[3].anchor")
            && findings[0].ends_with("(at `native[0].anchor`)"),
        "{}",
        findings[0]
    );
}
