//! End-to-end tests of `kvlower gate`: output shapes, exit codes, and published examples.
//!
//! Paths are given relative to this crate's directory (cargo runs tests there), so the
//! output shows them as given and snapshots do not depend on the checkout location.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns"
)]

use kvlower_tests::{kvlower, repo_root};
use serde_json::Value;

const SCENARIOS: &str = "fixtures/traces/scenarios";
const MALFORMED: &str = "fixtures/traces/malformed";

fn json(args: &[&str]) -> (u8, Value) {
    let mut argv = vec!["gate", "--format", "json"];
    argv.extend_from_slice(args);
    let run = kvlower(&argv);
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run.code, doc)
}

/// The result row of `trace` (a fixture name) for `claim`.
fn row<'a>(doc: &'a Value, trace: &str, claim: Option<&str>) -> &'a Value {
    doc["payload"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["trace"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/{trace}.jsonl"))
                && r["claim_id"].as_str() == claim
        })
        .unwrap_or_else(|| panic!("no row for {trace} {claim:?}"))
}

fn pass(row: &Value, gate: &str) -> bool {
    row["gates"][gate]["pass"].as_bool().unwrap()
}

#[test]
fn campaign_over_the_scenario_fixtures_json() {
    let (code, doc) = json(&[SCENARIOS]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["command"], "gate");
    assert_eq!(doc["summary"], "16 runs, 7 passed, 9 failed");
    assert_eq!(doc["diagnostics"], serde_json::json!([]));

    let success = row(&doc, "connector_success", Some("fixture:claim-a"));
    assert_eq!(
        success["trace"],
        "fixtures/traces/scenarios/connector_success.jsonl"
    );
    assert_eq!(success["family"], "connector");
    assert!(pass(success, "connector_observation"));
    assert!(!pass(success, "connector_failure_outcome"));

    let failure = row(
        &doc,
        "connector_same_claim_failure",
        Some("fixture:claim-a"),
    );
    assert!(pass(failure, "connector_failure_outcome"));
    assert_eq!(
        failure["gates"]["connector_observation"]["missing"],
        serde_json::json!(["cpu_to_gpu_restore_success"])
    );

    for (trace, claim, control) in [
        (
            "connector_wrong_claim_failure",
            Some("fixture:claim-a"),
            "wrong_claim_failure",
        ),
        ("connector_unclaimed_failure", None, "unclaimed_failure"),
        (
            "connector_fallback_recompute",
            Some("fixture:claim-a"),
            "fallback_recompute",
        ),
        (
            "connector_generic_counters_only",
            None,
            "generic_counters_only",
        ),
        (
            "connector_ordinary_offload_without_claim",
            None,
            "ordinary_offload_without_claim",
        ),
    ] {
        let r = row(&doc, trace, claim);
        assert_eq!(
            r["controls_rejected"],
            serde_json::json!([control]),
            "{trace}"
        );
        assert!(!pass(r, "connector_failure_outcome"), "{trace}");
    }
    assert_eq!(
        row(&doc, "connector_unclaimed_failure", None)["claim_id"],
        Value::Null
    );

    let target = row(&doc, "connector_multi_claim", Some("fixture:claim-a"));
    assert!(pass(target, "multi_claim_attribution"));

    assert!(pass(
        row(&doc, "reference_positive", Some("fixture:reference-claim")),
        "reference_lifecycle"
    ));
    assert_eq!(
        row(&doc, "reference_post_hoc", Some("fixture:reference-claim"))["gates"]["reference_lifecycle"]
            ["missing"],
        serde_json::json!(["pre_registered_accepted_claim"])
    );

    let restored = row(
        &doc,
        "connector_failed_then_restored",
        Some("fixture:claim-a"),
    );
    assert!(pass(restored, "connector_observation"));
    assert!(!pass(restored, "connector_failure_outcome"));
    assert_eq!(
        restored["controls_rejected"],
        serde_json::json!(["fallback_recompute"])
    );

    let s = &doc["payload"]["campaign"];
    assert_eq!(s["runs"], 16);
    assert_eq!(s["valid_sequences"], 16);
    assert_eq!(s["connector_runs"], 9);
    assert_eq!(
        s["observation_passes"], 4,
        "success, the multi-claim non-target, and the two later restores after a failure"
    );
    assert_eq!(
        s["failure_outcome_passes"], 2,
        "same-claim failure and the multi-claim target"
    );
    assert_eq!(
        s["control_runs"], 7,
        "six connector controls and the reference generic substrate"
    );
    assert_eq!(s["control_passes"], 0);
    assert_eq!(s["multi_claim_runs"], 1);
    assert_eq!(s["multi_claim_attributions"], 1);
    assert_eq!(s["reference_runs"], 7);
    assert_eq!(s["reference_passes"], 2);

    insta::assert_snapshot!(
        "scenarios_json",
        kvlower(&["gate", "--format", "json", SCENARIOS]).stdout
    );
}

#[test]
fn campaign_over_the_scenario_fixtures_human() {
    let run = kvlower(&["gate", SCENARIOS]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");
    insta::assert_snapshot!("scenarios_human", run.stdout);
}

#[test]
fn one_trace_prints_no_campaign_summary() {
    let run = kvlower(&["gate", &format!("{SCENARIOS}/connector_success.jsonl")]);
    assert_eq!(run.code, 0);
    assert_eq!(run.stdout.lines().count(), 2, "the verdict and the tally");
    assert_eq!(
        run.stdout.lines().last(),
        Some("1 runs, 1 passed, 0 failed")
    );
    // A success run injected no failure: the failure-outcome gate does not apply to
    // it (issue 25 item 7), instead of a FAIL listing every failure requirement.
    assert!(
        run.stdout
            .contains("connector_observation PASS; connector_failure_outcome n/a\n"),
        "{}",
        run.stdout
    );
    // The JSON keeps the verdict as it is.
    let json = kvlower(&[
        "gate",
        "--format",
        "json",
        &format!("{SCENARIOS}/connector_success.jsonl"),
    ]);
    assert!(
        json.stdout
            .contains("\"connector_failure_outcome\":{\"pass\":false,\"missing\":[\"controlled_cpu_to_gpu_load_failure\""),
        "{}",
        json.stdout
    );
}

#[test]
fn github_format_keeps_stdout_to_the_annotations() {
    let run = kvlower(&["gate", "--format", "github", SCENARIOS, MALFORMED]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stdout.is_empty());
    for line in run.stdout.lines() {
        assert!(
            line.starts_with("::error "),
            "stdout is one document: {line}"
        );
    }
    assert!(run.stderr.contains("runs, "), "{}", run.stderr);
    assert!(
        run.stderr.contains("connector_observation PASS"),
        "{}",
        run.stderr
    );
}

#[test]
fn gate_help_describes_what_gate_prints() {
    let run = kvlower(&["gate", "--help"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("GATE n/a"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("source line with a caret"),
        "{}",
        run.stdout
    );
}

#[test]
fn output_is_deterministic_and_paths_stay_as_given() {
    let a = kvlower(&["gate", "--format", "json", SCENARIOS, MALFORMED]);
    let b = kvlower(&["gate", "--format", "json", SCENARIOS, MALFORMED]);
    assert_eq!(a.stdout, b.stdout);
    assert!(!a.stdout.contains(&repo_root().display().to_string()));
    let dotted = kvlower(&[
        "gate",
        "--format",
        "json",
        "./fixtures/traces/scenarios/reference_positive.jsonl",
    ]);
    assert!(
        dotted
            .stdout
            .contains("\"trace\":\"./fixtures/traces/scenarios/reference_positive.jsonl\"")
    );
}

#[test]
fn malformed_traces_exit_1_with_file_and_line() {
    let run = kvlower(&["gate", MALFORMED]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let expected = [
        "fixtures/traces/malformed/claim_id_conflict.jsonl:2: error[malformed-trace]: claim_id `fixture:claim-m` differs from resident_claim_id `fixture:claim-n` on one event",
        "fixtures/traces/malformed/claim_id_conflict.jsonl:3: error[malformed-trace]: missing `event`",
        "fixtures/traces/malformed/not_json.jsonl:2:130: error[malformed-trace]: not JSON: EOF while parsing an object",
        "fixtures/traces/malformed/sequence_goes_back.jsonl:3: error[malformed-trace]: event_sequence 5 does not increase (previous 5)",
        "fixtures/traces/malformed/sequence_goes_back.jsonl:4: error[malformed-trace]: event_sequence 4 does not increase (previous 5)",
    ];
    for line in expected {
        assert!(
            run.stderr.contains(line),
            "missing `{line}` in:\n{}",
            run.stderr
        );
    }
    // No claim of a malformed trace passes anything.
    assert!(!run.stdout.contains("PASS"), "{}", run.stdout);
    insta::assert_snapshot!("malformed_human_stderr", run.stderr);

    let (code, doc) = json(&[MALFORMED]);
    assert_eq!(code, 1);
    let d = &doc["diagnostics"][0];
    assert_eq!(
        d["file"],
        "fixtures/traces/malformed/claim_id_conflict.jsonl"
    );
    assert_eq!(d["line"], 2);
    assert_eq!(d["code"], "malformed-trace");
    assert_eq!(doc["payload"]["campaign"]["valid_sequences"], 0);
    insta::assert_snapshot!(
        "malformed_json",
        kvlower(&["gate", "--format", "json", MALFORMED]).stdout
    );
}

#[test]
fn usage_errors_exit_2() {
    // A path that does not exist is an unreadable input: a coded diagnostic, exit 2.
    let missing = kvlower(&["gate", "fixtures/traces/does-not-exist"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .starts_with("fixtures/traces/does-not-exist: error[unreadable-file]:"),
        "{}",
        missing.stderr
    );
    let json = kvlower(&["gate", "--format", "json", "fixtures/traces/does-not-exist"]);
    assert_eq!(json.code, 2);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("one envelope");
    assert_eq!(doc["diagnostics"][0]["code"], "unreadable-file", "{doc:#}");

    let empty = tempfile::tempdir().unwrap();
    std::fs::write(empty.path().join("notes.txt"), "not a trace").unwrap();
    let run = kvlower(&["gate", empty.path().to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no *.jsonl trace below this directory"),
        "{}",
        run.stderr
    );

    assert_eq!(kvlower(&["gate"]).code, 2);
    assert_eq!(kvlower(&["gate", "--format", "yaml", SCENARIOS]).code, 2);
    assert_eq!(kvlower(&["gate", "--frobnicate", SCENARIOS]).code, 2);
}

#[test]
fn directories_are_searched_recursively_and_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("b/nested");
    std::fs::create_dir_all(&nested).unwrap();
    let src = repo_root().join("tests").join(SCENARIOS);
    std::fs::copy(src.join("connector_success.jsonl"), nested.join("z.jsonl")).unwrap();
    std::fs::copy(
        src.join("reference_positive.jsonl"),
        dir.path().join("a.jsonl"),
    )
    .unwrap();
    std::fs::write(dir.path().join("ignored.json"), "{}").unwrap();
    let (code, doc) = json(&[dir.path().to_str().unwrap()]);
    assert_eq!(code, 0);
    let traces: Vec<&str> = doc["payload"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["trace"].as_str().unwrap())
        .collect();
    assert_eq!(traces.len(), 2);
    assert!(
        traces[0].ends_with("/a.jsonl") && traces[1].ends_with("/b/nested/z.jsonl"),
        "{traces:?}"
    );
}

/// Real published traces, from the folder `KVLOWER_EXAMPLE_TRACES` names (skipped when
/// unset, e.g. in CI). The repository keeps no copy of them: its own tests use synthetic
/// traces.
#[test]
fn shared_examples_give_the_published_verdicts() {
    let Some(dir) = std::env::var_os("KVLOWER_EXAMPLE_TRACES").map(std::path::PathBuf::from) else {
        eprintln!("skipping: KVLOWER_EXAMPLE_TRACES is not set");
        return;
    };
    if !dir.is_dir() {
        eprintln!("skipping: {} not present", dir.display());
        return;
    }
    let (code, doc) = json(&[dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    let find = |name: &str| {
        doc["payload"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["trace"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    let success = find("connector_success_path.jsonl");
    assert!(pass(&success, "connector_observation"));
    assert!(!pass(&success, "connector_failure_outcome"));
    let failure = find("connector_claimed_load_failure.jsonl");
    assert_eq!(
        failure["gates"]["connector_observation"]["missing"],
        serde_json::json!(["cpu_to_gpu_restore_success"])
    );
    assert!(pass(&failure, "connector_failure_outcome"));
    assert!(pass(
        &find("reference_positive_bundle.jsonl"),
        "reference_lifecycle"
    ));
    assert_eq!(doc["diagnostics"], serde_json::json!([]));
}

/// Every way `gate --campaign` can refuse its document is a coded finding (issue 38:
/// every error kvlower prints has a code from the one table), in human and JSON output:
/// a document that is not a campaign, a malformed one, one that cannot be read, and one
/// outside the root.
#[test]
fn every_campaign_refusal_is_a_coded_finding() {
    // A scratch repository (the real catalog), so the test needs nothing of the checkout's
    // layout (a first build may put `target/` elsewhere).
    let repo = kvlower_tests::scratch_repo(&["evidence"]);
    let root = repo.path();
    let root_arg = root.display().to_string();
    std::fs::write(root.join("README.md"), "# not a campaign\n").unwrap();
    let malformed_doc = root.join("evidence/gate-campaign.json");
    std::fs::write(
        &malformed_doc,
        r#"{"schema":"kvlower-gate-campaign/2","schema":"kvlower-gate-campaign/2"}"#,
    )
    .unwrap();
    let outside = tempfile::tempdir().unwrap();
    let outside_doc = outside.path().join("gate-campaign.json");
    std::fs::write(&outside_doc, "{}\n").unwrap();
    let cases: [(String, &str, u8); 4] = [
        (
            root.join("README.md").display().to_string(),
            "campaign-document-invalid",
            1,
        ),
        (
            malformed_doc.display().to_string(),
            "campaign-document-invalid",
            1,
        ),
        (
            root.join("no-such-campaign.json").display().to_string(),
            "unreadable-file",
            2,
        ),
        (outside_doc.display().to_string(), "file-outside-root", 2),
    ];
    for (doc, code, exit) in &cases {
        let human = kvlower(&["gate", "--root", &root_arg, "--campaign", doc]);
        assert_eq!(human.code, *exit, "{doc}: {}", human.stderr);
        assert!(
            human.stderr.contains(&format!("error[{code}]")),
            "{doc}: {}",
            human.stderr
        );
        let run = kvlower(&[
            "gate",
            "--format",
            "json",
            "--root",
            &root_arg,
            "--campaign",
            doc,
        ]);
        assert_eq!(run.code, *exit, "{doc}");
        let envelope: Value = serde_json::from_str(&run.stdout).unwrap();
        assert_eq!(
            envelope["diagnostics"][0]["code"], *code,
            "{doc}: {envelope}"
        );
    }
}
