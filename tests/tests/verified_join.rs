//! Verified join evidence: a descriptor item anchored to a committed
//! `kvlower join` evidence document (`*.join.json`). `kvlower check` re-runs the
//! join from the document's registry and event file; if the result differs,
//! the evidence does not count and check reports it.
//!
//! All inputs are the synthetic join fixtures of `tests/fixtures/join/vllm/`.

use std::fs;
use std::path::Path;

use kvlower_tests::{kvlower, repo_root, scratch_repo};

const DOC: &str = "evidence/run.join.json";

/// A synthetic fixture set: its directory under tests/fixtures/join, its files, its format.
struct Fixture {
    dir: &'static str,
    files: &'static [&'static str],
    events: &'static str,
    format: kvlower_join::EventFormat,
}

/// TensorRT-LLM events carry `event_id`, so a gap in the stream is detectable.
const SEQUENCED: Fixture = Fixture {
    dir: "trtllm",
    files: &["registry.yaml", "events.jsonl"],
    events: "events.jsonl",
    format: kvlower_join::EventFormat::Trtllm,
};

/// vLLM events without a `seq` envelope: a dropped batch cannot be detected.
const UNSEQUENCED: Fixture = Fixture {
    dir: "vllm",
    files: &["registry.yaml", "events-map.jsonl", "token-map.json"],
    events: "events-map.jsonl",
    format: kvlower_join::EventFormat::Vllm,
};

fn scratch(fx: &Fixture) -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities", "evidence"]);
    for f in fx.files {
        fs::copy(
            repo_root().join("tests/fixtures/join").join(fx.dir).join(f),
            dir.path().join("evidence").join(f),
        )
        .expect("copy");
    }
    // Evidence anchors only a descriptor of the runtime it records: give the synthetic
    // registry a version number the synthetic descriptor below names.
    let registry_path = dir.path().join("evidence/registry.yaml");
    let text = fs::read_to_string(&registry_path).expect("registry");
    fs::write(
        &registry_path,
        text.replace("synthetic fixture (no real run)", "0.0.0"),
    )
    .expect("write");
    let events_rel = format!("evidence/{}", fx.events);
    // The evidence document, with its paths relative to the repository root.
    let registry =
        kvlower_join::Registry::load(&dir.path().join("evidence/registry.yaml")).expect("registry");
    let events = fs::File::open(dir.path().join(&events_rel)).expect("events");
    let report = kvlower_join::join_reader(
        &registry,
        Path::new("evidence/registry.yaml"),
        std::io::BufReader::new(events),
        Path::new(&events_rel),
        fx.format,
    )
    .expect("join");
    fs::write(
        dir.path().join(DOC),
        serde_json::to_string_pretty(&report).expect("json"),
    )
    .expect("write");

    let pre = "{kind: paper, section: \"§5 Table 5\", note: synthetic fixture precondition}";
    let anchor = format!(
        "{{kind: repo_file, path: {DOC}, note: synthetic join evidence, preserves_order: true, preserves_claim_scope: true}}"
    );
    let mut d = format!(
        "runtime: {{name: synthetic {}, version: '0.0.0', source: simulator, reviewed: 2026-01-01, identity: [{{kind: {}, version: '0.0.0'}}]}}\nallow_cited_positives: synthetic fixture (paper-cited preconditions)\nnon_claims: {{default: synthetic fixture}}\nadapters:\n  - depth: telemetry_join\n    name: synthetic join\n    preconditions:\n",
        fx.format, fx.format
    );
    for p in kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS {
        d.push_str(&format!("      {p}: {pre}\n"));
    }
    d.push_str("    evidence:\n");
    for o in [
        "claim_identity",
        "materialization_predicate",
        "claim_materialized_event",
        "claim_scoped_telemetry",
    ] {
        d.push_str(&format!("      - {{obligation: {o}, status: supported, scope: litmus_trace, anchor: {anchor}, modes: all}}\n"));
    }
    fs::write(dir.path().join("capabilities/synthetic.yaml"), d).expect("write");
    dir
}

fn best_effort_label(dir: &tempfile::TempDir) -> String {
    let root = dir.path().display().to_string();
    let run = kvlower(&[
        "explain",
        &dir.path()
            .join("capabilities/synthetic.yaml")
            .display()
            .to_string(),
        "--root",
        &root,
        "--mode",
        "best_effort",
        "--depth",
        "telemetry_join",
        "-q",
    ]);
    run.stdout
}

/// A document that reproduces, but of JSON Lines events: they record no runtime identity
/// of their own (no capture header `meta.runtime`), so only the registry names the runtime
/// and the document anchors nothing (`anchor-other-runtime`). A capture-backed document
/// that counts: evidence_chain.rs, live_*_evidence.rs.
#[test]
fn a_reproducible_json_lines_join_document_anchors_nothing() {
    let dir = scratch(&SEQUENCED);
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--root", &root]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        !run.stderr.contains("anchor-verdict-disagrees"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("anchor-other-runtime") && run.stderr.contains("meta.runtime"),
        "{}",
        run.stderr
    );
    assert!(
        !best_effort_label(&dir).contains("sound_with_adapter"),
        "{}",
        best_effort_label(&dir)
    );
}

#[test]
fn a_join_document_the_events_no_longer_reproduce_does_not_count() {
    let dir = scratch(&SEQUENCED);
    let events = dir.path().join("evidence/events.jsonl");
    let text = fs::read_to_string(&events).expect("read");
    let kept: Vec<&str> = text
        .lines()
        .take(text.lines().count().saturating_sub(1))
        .collect();
    fs::write(&events, kept.join("\n") + "\n").expect("write");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("error[anchor-verdict-disagrees]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("does not reproduce it"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unsequenced_stream_cannot_anchor_evidence() {
    // The document reproduces, but a dropped batch would have gone unnoticed.
    let dir = scratch(&UNSEQUENCED);
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("the anchored join evidence does not hold"),
        "{}",
        run.stderr
    );
    // And the judgment itself does not count it.
    let mut diagnostics = Vec::new();
    let catalog = kvlower_load::load_catalog(dir.path(), &mut diagnostics).expect("catalog");
    let text = fs::read_to_string(dir.path().join("capabilities/synthetic.yaml")).expect("read");
    let d: kvlower_core::Descriptor = kvlower_load::yaml::from_str(&text).expect("parses");
    let env = kvlower_evidence::FsEnvironment::new(dir.path().to_path_buf());
    let j = kvlower_core::judge(
        &catalog,
        &d,
        kvlower_core::Mode::BestEffort,
        kvlower_core::Depth::TelemetryJoin,
        &env,
    );
    assert_eq!(j.label, kvlower_core::Label::Unknown);
}

#[test]
fn a_join_document_may_not_point_outside_the_repository() {
    let dir = scratch(&SEQUENCED);
    let doc = dir.path().join(DOC);
    let outside = dir
        .path()
        .join("evidence/registry.yaml")
        .display()
        .to_string();
    let text = fs::read_to_string(&doc)
        .expect("read")
        .replace("\"evidence/registry.yaml\"", &format!("{outside:?}"));
    fs::write(&doc, text).expect("write");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("does not reproduce it"),
        "{}",
        run.stderr
    );
}
