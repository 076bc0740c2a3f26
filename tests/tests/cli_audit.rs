//! Auditing by hand and in CI: explain, codes, output formats, scaffold,
//! completions.

use std::fs;

use kvlower_tests::{kvlower, repo_root, scratch_repo};

fn root() -> String {
    repo_root().display().to_string()
}

fn rc14() -> String {
    repo_root()
        .join("capabilities/tensorrt_llm_1_3_0rc14_container.yaml")
        .display()
        .to_string()
}

#[test]
fn explain_tells_why_each_of_the_fourteen_rc14_rows_got_its_label() {
    let run = kvlower(&["explain", &rc14(), "--root", &root(), "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["command"], "explain");
    let rows = doc["payload"]["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 14);
    for row in rows {
        assert!(!row["reason_text"].as_str().unwrap_or_default().is_empty());
        assert!(!row["non_claim"].as_str().unwrap_or_default().is_empty());
        for f in row["obligations"].as_array().expect("obligations") {
            // every obligation either names its evidence or says why each candidate failed
            assert!(
                !f["satisfied_by"].is_null() || f["rejected"].is_array(),
                "{f}"
            );
        }
    }
    let human = kvlower(&["explain", &rc14(), "--root", &root()]);
    assert_eq!(human.code, 0);
    let text = human
        .stdout
        .replace(&repo_root().display().to_string(), "<root>");
    assert!(text.contains("hard_protected @ none: rejected"));
    assert!(text.contains("forbidden lowering"));
    assert!(text.contains(
        "soft_priority @ telemetry_join: sound_with_adapter (adapter_policy_controlled_pressure, cited)"
    ));
    insta::assert_snapshot!("explain_rc14", text);
}

#[test]
fn explain_filters_by_mode_and_depth() {
    let run = kvlower(&[
        "explain",
        &rc14(),
        "--root",
        &root(),
        "--mode",
        "expiring",
        "--depth",
        "telemetry_join",
        "-q",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "expiring @ telemetry_join: approximate\n");
    let bad = kvlower(&["explain", &rc14(), "--mode", "expirin"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("unknown mode `expirin`"),
        "{}",
        bad.stderr
    );
    let none = kvlower(&[
        "explain",
        &rc14(),
        "--root",
        &root(),
        "--depth",
        "backend_patch",
    ]);
    assert_eq!(none.code, 2, "{}", none.stderr);
}

#[test]
fn explain_of_a_broken_descriptor_is_a_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("broken.yaml");
    fs::write(&path, "runtime: {name: x\n").expect("write");
    let run = kvlower(&["explain", &path.display().to_string(), "--root", &root()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("broken.yaml:2:1: error[yaml-syntax]"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_code_list_is_pinned() {
    let run = kvlower(&["codes"]);
    assert_eq!(run.code, 0);
    insta::assert_snapshot!("codes", run.stdout);
    let one = kvlower(&["explain-code", "anchor-incomplete"]);
    assert_eq!(one.code, 0);
    assert!(one.stdout.starts_with("anchor-incomplete: "));
    let near = kvlower(&["explain-code", "anchor-incomplet"]);
    assert_eq!(near.code, 2);
    assert!(
        near.stderr.contains("did you mean `anchor-incomplete`?"),
        "{}",
        near.stderr
    );
}

/// A scratch repository with the real catalog and one broken descriptor.
fn broken_repo() -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    fs::write(
        dir.path().join("capabilities/broken.yaml"),
        "runtime:\n  name: x\n  version: '1'\n  source: simulatr\nnon_claims: {default: y}\n",
    )
    .expect("write");
    dir
}

#[test]
fn github_format_prints_an_annotation_with_file_and_line() {
    let dir = broken_repo();
    let run = kvlower(&[
        "check",
        "--root",
        &dir.path().display().to_string(),
        "--format",
        "github",
    ]);
    assert_eq!(run.code, 1);
    // Every finding is annotated; the misspelt source is one of them.
    let annotation = run
        .stdout
        .lines()
        .find(|l| l.contains("unknown-name"))
        .expect("annotation");
    assert!(
        annotation.starts_with(
            "::error file=capabilities/broken.yaml,line=4,col=11,title=kvlower unknown-name::"
        ),
        "{annotation}"
    );
    assert!(
        run.stderr
            .contains("capabilities/broken.yaml:4:11: error[unknown-name]"),
        "the human report follows"
    );
}

#[test]
fn json_format_carries_a_schema_version_and_every_finding() {
    let dir = broken_repo();
    let run = kvlower(&[
        "check",
        "--root",
        &dir.path().display().to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["exit_code"], 1);
    let f = doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .find(|d| d["code"] == "unknown-name")
        .expect("the misspelt source");
    assert_eq!(f["file"], "capabilities/broken.yaml");
    assert_eq!(f["line"], 4);
    assert_eq!(f["code"], "unknown-name");
    assert_eq!(f["yaml_path"], "runtime.source");
    assert!(
        f["hint"].as_str().is_some_and(|h| h.contains("simulator")),
        "{f}"
    );
}

#[test]
fn markdown_and_quiet_formats() {
    let dir = broken_repo();
    let root = dir.path().display().to_string();
    let md = kvlower(&["check", "--root", &root, "--format", "markdown"]);
    assert_eq!(md.code, 1);
    assert!(md.stdout.starts_with("### kvlower check"));
    assert!(
        md.stdout
            .contains("| `capabilities/broken.yaml` | 4:11 | `unknown-name` |"),
        "{}",
        md.stdout
    );
    let quiet = kvlower(&["check", "--root", &root, "-q"]);
    assert_eq!(quiet.code, 1);
    assert_eq!(quiet.stderr, "");
    assert_eq!(quiet.stdout.lines().count(), 1);
    let colour = kvlower(&["check", "--root", &root, "--color", "always"]);
    assert!(colour.stderr.contains("\x1b[1;31merror"));
    let plain = kvlower(&["check", "--root", &root, "--color", "never"]);
    assert!(!plain.stderr.contains('\x1b'));
}

#[test]
fn a_fresh_scaffold_is_a_to_do_list_that_anchors_nothing() {
    let dir = scratch_repo(&[]);
    let root = dir.path().display().to_string();
    let new = kvlower(&["new", "Acme Serve", "--version", "2.1", "--root", &root]);
    assert_eq!(new.code, 0, "{}", new.stderr);
    let path = dir.path().join("capabilities/acme_serve_2_1.yaml");
    assert!(path.is_file());
    assert_eq!(
        kvlower(&["new", "Acme Serve", "--version", "2.1", "--root", &root]).code,
        2,
        "never overwrites"
    );
    // Every placeholder is a finding until it is replaced by real evidence.
    let check = kvlower(&["check", "--root", &root]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert!(
        check.stderr.contains("anchor-placeholder"),
        "{}",
        check.stderr
    );
    // One finding per placeholder: that it points at the descriptor itself is
    // part of the placeholder, not a second `anchor-self-reference`.
    assert!(
        !check.stderr.contains("anchor-self-reference"),
        "{}",
        check.stderr
    );
}

#[test]
fn completions_and_schema_print() {
    for shell in ["bash", "zsh", "fish"] {
        let run = kvlower(&["completions", shell]);
        assert_eq!(run.code, 0);
        assert!(run.stdout.contains("explain"), "{shell}");
    }
    let schema = kvlower(&["schema", "descriptor"]);
    assert_eq!(
        schema.stdout,
        fs::read_to_string(repo_root().join("schemas/descriptor.schema.json")).expect("committed")
    );
}

/// Issue 25 item 12: every code has what / why / example / fix, `explain-code`
/// prints all four, and docs/diagnostic-codes.md (named by SARIF's rule help) is current.
#[test]
fn every_code_has_what_why_example_and_fix() {
    for code in kvlower_codes::Code::ALL {
        let doc = code.doc();
        for (part, text) in [
            ("what", doc.what),
            ("why", doc.why),
            ("example", doc.example),
            ("fix", doc.fix),
        ] {
            assert!(
                text.trim().len() > 10,
                "{}: `{part}` is empty or too short",
                code.name()
            );
        }
        assert_eq!(doc.what, code.explanation());
        let run = kvlower(&["explain-code", code.name()]);
        assert_eq!(run.code, 0);
        for text in [doc.why, doc.example, doc.fix] {
            assert!(run.stdout.contains(text), "{}: {}", code.name(), run.stdout);
        }
        let json = kvlower(&["explain-code", code.name(), "--format", "json"]);
        let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
        assert_eq!(v["payload"]["fix"], doc.fix);
        assert_eq!(v["payload"]["severity"], code.severity().name());
    }
    insta::assert_snapshot!(
        "explain_code_inert_adapter",
        kvlower(&["explain-code", "inert-adapter"]).stdout
    );
    let path = repo_root().join("docs/diagnostic-codes.md");
    if std::env::var_os("KVLOWER_BLESS_DOCS").is_some() {
        fs::write(&path, kvlower_cli::cmd::codes::codes_markdown()).expect("write");
    }
    let committed = fs::read_to_string(&path).expect("docs/diagnostic-codes.md");
    assert_eq!(
        committed,
        kvlower_cli::cmd::codes::codes_markdown(),
        "docs/diagnostic-codes.md is generated from the codes: run this test with KVLOWER_BLESS_DOCS=1"
    );
}
