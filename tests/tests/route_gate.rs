//! The routing gate (`kvlower route`, docs/routing-trace.md): one hand-written fixture
//! per requirement under tests/fixtures/route/. Each failing fixture is the passing one
//! with one thing changed (its WHY file says what), and its claim fails with that
//! requirement's reason *only*, so without the rule it would pass.

use std::path::Path;

use kvlower_route::RouteReport;
use kvlower_tests::{kvlower, repo_root};

fn evaluate(fixture: &str) -> RouteReport {
    let rel = format!("tests/fixtures/route/{fixture}/trace.json");
    let root = repo_root();
    kvlower_route::evaluate_with(&root.join(&rel), &rel, &|name| Some(root.join(name)))
        .unwrap_or_else(|e| panic!("{fixture}: {e}"))
}

fn reason_tags(report: &RouteReport, claim: &str) -> Vec<String> {
    let c = report
        .claims
        .iter()
        .find(|c| c.claim_id == claim)
        .unwrap_or_else(|| panic!("no claim {claim}"));
    c.reasons
        .iter()
        .map(|r| {
            serde_json::to_value(r).unwrap()["reason"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn the_passing_fixture_witnesses_every_routing_obligation() {
    let r = evaluate("pass");
    assert!(r.pass);
    assert_eq!(
        serde_json::to_value(&r.witnesses).unwrap(),
        serde_json::json!([
            "route_cost_attribution",
            "placement_attribution",
            "reuse_routing_attribution"
        ])
    );
    assert!(r.preconditions.iter().all(|p| p.held));
    insta::assert_json_snapshot!("route_pass_report", r);
}

/// (fixture, the one reason its claim `a` fails with)
const REQUIREMENTS: &[(&str, &str)] = &[
    ("overlap-without-claim", "no_claimed_request"),
    ("unknown-claim", "unknown_claim"),
    (
        "registered-after-decision",
        "not_registered_before_decision",
    ),
    ("tokens-not-carried", "claim_tokens_not_carried"),
    ("ambiguous-claim-prefix", "ambiguous_claim_prefix"),
    ("unknown-worker", "unknown_worker"),
    ("ambiguous-worker-namespace", "ambiguous_worker_namespace"),
    ("served-elsewhere", "served_elsewhere"),
    ("no-reuse", "no_reuse_request"),
    ("placement-already-cached", "placement_already_cached"),
    ("earlier-unattributed-prefix", "earlier_unattributed_prefix"),
    (
        "interleaved-unattributed-prefix",
        "interleaved_unattributed_prefix",
    ),
    ("route-cost-missing", "route_cost_missing"),
    ("route-cost-not-covering", "route_cost_does_not_cover_claim"),
    ("reuse-other-namespace", "reuse_on_other_namespace"),
    ("reuse-missed", "reuse_missed"),
];

#[test]
fn every_requirement_has_a_fixture_that_fails_by_it_alone() {
    let dirs: Vec<String> = std::fs::read_dir(repo_root().join("tests/fixtures/route"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "pass" && n != "malformed")
        .collect();
    assert_eq!(
        dirs.len(),
        REQUIREMENTS.len(),
        "a fixture without a row: {dirs:?}"
    );
    for (fixture, reason) in REQUIREMENTS {
        assert!(
            repo_root()
                .join(format!("tests/fixtures/route/{fixture}/WHY"))
                .is_file(),
            "{fixture} says why"
        );
        let r = evaluate(fixture);
        assert!(!r.pass, "{fixture} must fail");
        let tags = reason_tags(&r, "a");
        assert!(!tags.is_empty(), "{fixture}: claim a has no reason");
        assert!(
            tags.iter().all(|t| t == reason),
            "{fixture}: expected only {reason}, got {tags:?}"
        );
        let a = r.claims.iter().find(|c| c.claim_id == "a").unwrap();
        assert!(!a.pass, "{fixture}");
        // A failing claim never lets the document witness anything.
        assert!(r.witnesses.is_empty(), "{fixture}: {:?}", r.witnesses);
    }
}

#[test]
fn overlap_scores_and_worker_choice_without_a_claim_are_not_routed_reuse() {
    // The paper's rejected false positive (§3 Table 1, routed_reuse): the router found
    // the prefix (overlap 2 of 2 blocks on the worker it chose) and the engine hit it,
    // but no request carried the accepted claim.
    let r = evaluate("overlap-without-claim");
    assert!(!r.pass);
    assert!(r.witnesses.is_empty());
    let hit = r
        .unattributed_requests
        .iter()
        .find(|u| u.request_id == "reuse-a")
        .unwrap();
    assert_eq!(hit.device_overlap_blocks, Some(2));
    assert_eq!(hit.num_cached_tokens, 8);
    let sees = r
        .preconditions
        .iter()
        .find(|p| p.name.name() == "route_decision_sees_accepted_claim")
        .unwrap();
    assert!(!sees.held);
    insta::assert_snapshot!("route_false_positive_human", r.render_human());
}

#[test]
fn the_cli_exits_by_outcome() {
    let root = repo_root();
    let path = |f: &str| {
        root.join("tests/fixtures/route")
            .join(f)
            .display()
            .to_string()
    };
    let pass = path("pass/trace.json");
    let fp = path("overlap-without-claim/trace.json");
    assert_eq!(kvlower(&["route", "--trace", &pass]).code, 0);
    assert_eq!(
        kvlower(&["route", "--trace", &pass, "--fail-on", "fail"]).code,
        0
    );
    // A failing claim is a verdict: exit 0, unless asked to fail on it.
    assert_eq!(kvlower(&["route", "--trace", &fp]).code, 0);
    let run = kvlower(&[
        "route",
        "--trace",
        &fp,
        "--fail-on",
        "fail",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["kind"], "kvlower-routing-gate");
    assert_eq!(doc["pass"], false);
    // Missing file: refused, exit 1, coded.
    let run = kvlower(&["route", "--trace", &path("nope/trace.json")]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("error[route-trace-refused]"),
        "{}",
        run.stderr
    );
    // A directory is not a trace.
    let run = kvlower(&["route", "--trace", &path("pass")]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("error[route-trace-refused]"),
        "{}",
        run.stderr
    );
}

/// (file under malformed/, code, location and message fragments)
const MALFORMED: &[(&str, &str, &[&str])] = &[
    (
        "syntax.json",
        "route-trace-malformed",
        &["syntax.json:7:2:", "expected `,` or `}`"],
    ),
    (
        "unknown-field.json",
        "route-trace-malformed",
        &[
            "unknown-field.json:106:12:",
            "$.requests[1].served.cached",
            "unknown field `cached`",
        ],
    ),
    (
        "out-of-order.json",
        "route-trace-invalid",
        &["$.requests[2].decided_at", "decision order"],
    ),
    (
        "registry-escape.json",
        "route-trace-invalid",
        &["$.registry", "leaves the trace's folder"],
    ),
    (
        "schema-version.json",
        "route-trace-invalid",
        &["$.schema_version", "unsupported schema_version 2"],
    ),
    (
        "prompt-tokens.json",
        "route-trace-invalid",
        &["$.requests[0].served.prompt_tokens"],
    ),
    (
        "duplicate-request.json",
        "route-trace-invalid",
        &["$.requests[2].request_id", "appears twice"],
    ),
];

#[test]
fn malformed_traces_are_coded_diagnostics_with_a_location_and_a_hint() {
    for (file, code, fragments) in MALFORMED {
        let p = repo_root()
            .join("tests/fixtures/route/malformed")
            .join(file);
        let run = kvlower(&["route", "--trace", &p.display().to_string()]);
        assert_eq!(run.code, 1, "{file}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{file}");
        assert!(
            run.stderr.contains(&format!("error[{code}]")),
            "{file}: {}",
            run.stderr
        );
        for f in *fragments {
            assert!(run.stderr.contains(f), "{file}: no {f:?} in {}", run.stderr);
        }
        assert!(run.stderr.contains("  expected: "), "{file}");
        assert!(run.stderr.contains("  hint: "), "{file}");
    }
}

#[test]
fn a_registry_that_cannot_be_read_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let src = repo_root().join("tests/fixtures/route/pass/trace.json");
    std::fs::copy(&src, dir.path().join("trace.json")).unwrap();
    std::fs::write(dir.path().join("registry.yaml"), "schema_version: [\n").unwrap();
    let run = kvlower(&[
        "route",
        "--trace",
        &dir.path().join("trace.json").display().to_string(),
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("error[route-registry-unreadable]"),
        "{}",
        run.stderr
    );
    assert!(Path::new(&src).is_file());
}
