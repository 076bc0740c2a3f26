//! The bad-lowering suite (paper §9 Table 9 plus the generic-counters intro
//! counterexample): every case runs through the real checker or gate.
//!
//! The expected results are written HERE, independently of the `expected:`
//! fields of `bad_lowering/*.yaml`, and asserted hard: editing a data file's
//! expectation, or carelessly accepting a changed snapshot, cannot weaken the
//! suite. The insta snapshots record each case's explanation (why it got its
//! result), so a change in the reasons shows up for review.

use std::fs;

use kvlower_audit::bad_lowering::{self, CaseSource, Outcome};
use kvlower_cli::suites::read_cases;
use kvlower_evidence::load_repository;
use kvlower_tests::AssumeRepoFilesPresent;
use kvlower_tests::{copy_dir, kvlower, repo_root};

/// Paper Table 9 (and the §1 generic-counters case), in order: case id → result.
const EXPECTED: [(&str, Outcome); 11] = [
    ("priority_value_in_event", Outcome::Approximate),
    ("active_no_evict", Outcome::Rejected),
    ("duration_metadata", Outcome::Approximate),
    ("storage_tier", Outcome::Approximate),
    (
        "claim_joined_offload_generic_onboard_counters",
        Outcome::Approximate,
    ),
    ("same_prompt_block_tier_movement", Outcome::Approximate),
    ("kv_aware_routing", Outcome::Approximate),
    ("block_removed_claim_harm", Outcome::InvalidLoweringClaim),
    (
        "fallback_recompute_after_failed_load",
        Outcome::RejectedByConnectorGate,
    ),
    (
        "wrong_claim_or_unclaimed_load_failure",
        Outcome::RejectedByConnectorGate,
    ),
    (
        "generic_counters_restoration_failure",
        Outcome::RejectedByConnectorGate,
    ),
];

fn cases() -> Vec<CaseSource> {
    read_cases(&repo_root()).expect("bad_lowering/ exists")
}

fn run(cases: &[CaseSource]) -> bad_lowering::BadLowering {
    let (repo, diagnostics) =
        load_repository(kvlower_tests::committed_env()).expect("repository loads");
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    bad_lowering::run(&repo.catalog, cases, &AssumeRepoFilesPresent)
}

#[test]
fn every_counterexample_gets_its_table_9_result() {
    let suite = run(&cases());
    let ids: Vec<&str> = suite.cases.iter().map(|c| c.id.as_str()).collect();
    let expected_ids: Vec<&str> = EXPECTED.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, expected_ids, "exactly the eleven cases, in file order");
    for (case, (id, outcome)) in suite.cases.iter().zip(EXPECTED) {
        assert_eq!(case.id, id);
        // The hard guard: the real checker/gate result, against this file's table.
        assert_eq!(
            case.actual,
            outcome,
            "{id}: {}",
            case.explanation.join("\n")
        );
        // The data file agrees with this table (so its report is honest too).
        assert_eq!(case.expected, Some(outcome), "{id}: data file expectation");
        assert!(case.pass, "{id}");
        assert!(!case.why.trim().is_empty(), "{id}: says why");
        assert!(!case.naive_inference.trim().is_empty(), "{id}");
    }
    assert_eq!(suite.summary(), "11/11 counterexamples as expected");
    assert!(suite.failures().is_empty());
}

/// One snapshot per case file (`insta::glob!`), so one changed explanation does not
/// hide the others.
#[test]
fn each_explanation_is_snapshotted() {
    let suite = run(&cases());
    let mut seen = 0;
    insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => false }, {
        insta::glob!("../../bad_lowering", "*.yaml", |path| {
            let file = format!(
                "bad_lowering/{}",
                path.file_name().and_then(|n| n.to_str()).expect("UTF-8 name")
            );
            let case = suite
                .cases
                .iter()
                .find(|c| c.file == file)
                .expect("every case file is in the suite");
            insta::assert_snapshot!(
                "bad_lowering",
                format!(
                    "{} => {} (expected {})\n{}",
                    case.naive_inference,
                    case.actual,
                    case.expected.map_or("-".into(), |e| e.to_string()),
                    case.explanation.join("\n")
                )
            );
            seen += 1;
        });
    });
    assert_eq!(seen, suite.cases.len());
}

/// Asserted on the gate's typed report, not on the explanation's prose: every
/// trace of every gate case is well formed, no claim passes any of the case's gates,
/// and each trace's expected controls are among those the gate rejected.
#[test]
fn gate_cases_are_rejected_for_the_right_reason_by_well_formed_traces() {
    use kvlower_audit::bad_lowering::CaseFile;
    use kvlower_trace::TraceGate;
    let mut gate_cases = 0;
    let mut controls_seen: Vec<(String, String)> = Vec::new();
    for source in cases() {
        let case: CaseFile = kvlower_load::yaml::from_str(&source.contents).expect("case parses");
        let Some(gate) = case.check.connector_gate else {
            continue;
        };
        assert_eq!(
            case.expected,
            Outcome::RejectedByConnectorGate,
            "{}",
            case.id
        );
        gate_cases += 1;
        let gates: Vec<TraceGate> = gate
            .gates
            .iter()
            .map(|g| TraceGate::from_name(g).expect("a known gate"))
            .collect();
        assert!(!gates.is_empty() && !gate.traces.is_empty(), "{}", case.id);
        for t in &gate.traces {
            let report = kvlower_trace::evaluate_reader(&t.name, t.jsonl.as_bytes());
            assert!(
                report.diagnostics.is_empty(),
                "{}/{}: {:?}",
                case.id,
                t.name,
                report.diagnostics
            );
            for c in &report.claims {
                for g in &gates {
                    assert!(!c.passes(*g), "{}/{}: {g} passes", case.id, t.name);
                }
            }
            let rejected: Vec<&str> = report
                .claims
                .iter()
                .flat_map(|c| c.controls_rejected.iter().map(|c| c.name()))
                .collect();
            for want in &t.expect_controls {
                assert!(
                    rejected.contains(&want.as_str()),
                    "{}/{}: {want} not among {rejected:?}",
                    case.id,
                    t.name
                );
                controls_seen.push((case.id.clone(), want.clone()));
            }
        }
    }
    assert!(gate_cases > 0, "the suite has connector-gate cases");
    // The three controls the paper's counterexamples turn on are each exercised.
    for control in [
        "fallback_recompute",
        "wrong_claim_failure",
        "generic_counters_only",
    ] {
        assert!(
            controls_seen.iter().any(|(_, c)| c == control),
            "{control}: {controls_seen:?}"
        );
    }
}

/// Replaces `from` by `to` in the named case's source; panics if nothing changed.
fn edited(id_prefix: &str, from: &str, to: &str) -> Vec<CaseSource> {
    let mut cases = cases();
    let case = cases
        .iter_mut()
        .find(|c| c.path.contains(id_prefix))
        .expect("case file");
    let new = case.contents.replace(from, to);
    assert_ne!(new, case.contents, "the edit must change the case");
    case.contents = new;
    cases
}

#[test]
fn the_suite_is_sensitive_a_wrong_case_fails() {
    // The wrong-claim trace is one attribution away from a passing same-claim
    // failure trace: naming the claim itself makes the real gate accept it, and
    // the case then fails (the suite does not just echo its expectations).
    let suite = run(&edited(
        "10_wrong_claim",
        "bl:claim:unrelated",
        "bl:claim:resident",
    ));
    let case = suite
        .cases
        .iter()
        .find(|c| c.id == "wrong_claim_or_unclaimed_load_failure")
        .expect("case");
    assert_eq!(case.actual, Outcome::AcceptedByConnectorGate);
    assert!(!case.pass);
    assert_eq!(suite.failures().len(), 1);

    // Without its forbidden proposal (offered for another mode instead), active
    // no-evict is merely approximate for hard_protected.
    let suite = run(&edited(
        "02_active_no_evict",
        "          mode: hard_protected\n",
        "          mode: demotable\n",
    ));
    let case = suite
        .cases
        .iter()
        .find(|c| c.id == "active_no_evict")
        .expect("case");
    assert_eq!(case.actual, Outcome::Approximate);
    assert!(!case.pass);

    // A case file that does not parse is a failing case, never a skipped one.
    let suite = run(&edited("03_duration", "check:", "chekc:"));
    assert!(
        suite
            .cases
            .iter()
            .any(|c| c.actual == Outcome::CaseError && !c.pass)
    );
}

#[test]
fn signals_never_satisfy_the_obligation_they_are_proposed_as() {
    // Turning the block_removed signal into real (supported, anchored, native)
    // evidence for H is what would make the claim valid: the case's outcome
    // depends on the evidence, not on the signal.
    let suite = run(&edited(
        "08_block_removed",
        "      signals:\n",
        "      native:\n        - obligation: claim_harm_attribution\n          status: supported\n          scope: litmus_trace\n          modes: all\n          anchor: *removed\n      signals:\n",
    ));
    let case = suite
        .cases
        .iter()
        .find(|c| c.id == "block_removed_claim_harm")
        .expect("case");
    assert_eq!(case.actual, Outcome::ValidLoweringClaim);
    assert!(!case.pass);
}

#[test]
fn bad_lowering_command_writes_the_results_and_check_fails_on_a_wrong_case() {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in [
        "modes",
        "capabilities",
        "bad_lowering",
        "results",
        "schemas",
        // committed evidence documents the descriptors anchor (re-run by check)
        "evidence",
        "scripts", // the source files a campaign's digest covers
    ] {
        copy_dir(&repo_root().join(sub), &dir.path().join(sub));
    }
    kvlower_tests::copy_config(dir.path());
    let root = dir.path().display().to_string();
    let run = kvlower(&["bad-lowering", "--root", &root]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("11/11 counterexamples as expected"));
    let json: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(dir.path().join("results/bad-lowering-counterexamples.json"))
            .expect("json"),
    )
    .expect("parses");
    assert_eq!(json["schema_version"], 1);
    let cases = json["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 11);
    for c in cases {
        for key in ["id", "naive_inference", "expected", "actual", "pass", "why"] {
            assert!(c.get(key).is_some(), "{key} in {c}");
        }
        assert_eq!(c["pass"], true);
    }
    assert!(
        !fs::read_to_string(dir.path().join("results/bad-lowering-counterexamples.md"))
            .expect("md")
            .contains(&root)
    );

    // Flip one expectation in the data: the suite fails, and so does check.
    let path = dir.path().join("bad_lowering/04_storage_tier.yaml");
    let src = fs::read_to_string(&path).expect("read");
    fs::write(
        &path,
        src.replace("expected: approximate", "expected: sound_with_adapter"),
    )
    .expect("write");
    let run = kvlower(&["bad-lowering", "--root", &root]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("FAIL storage_tier"));
    let check = kvlower(&["check", "--root", &root]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert!(
        check.stderr.contains("storage_tier"),
        "check names the failing case: {}",
        check.stderr
    );
}
