//! The exit-code rule (docs/output.md, "Exit codes"), one pair per command: `1` for
//! content kvlower read and judged (findings), `2` for an input it could not read (and
//! for usage and internal errors), so CI can tell a failed check from a broken job.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a broken fixture should panic"
)]

use std::fs;
use std::path::Path;

use kvlower_tests::{Run, kvlower, repo_root, scratch_repo};

// An error outside the inputs (an unwritable results/) exits 2 too:
// cli_output::an_error_outside_the_inputs_is_an_envelope_too.

fn check(root: &Path, extra: &[&str]) -> Run {
    let root = root.display().to_string();
    let mut args = vec!["check", "--color", "never", "--root", &root];
    args.extend_from_slice(extra);
    kvlower(&args)
}

fn corpus(name: &str) -> String {
    fs::read_to_string(repo_root().join("tests/corpus").join(name)).unwrap()
}

#[test]
fn check_exits_1_for_an_invalid_descriptor_and_2_for_one_it_cannot_read() {
    let dir = scratch_repo(&["capabilities"]);
    let descriptor = dir.path().join("capabilities/x.yaml");
    fs::write(&descriptor, corpus("unknown_field_top_level.yaml")).unwrap();
    let run = check(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[unknown-field]"),
        "{}",
        run.stderr
    );
    // --exit-zero turns findings into 0 ...
    assert_eq!(check(dir.path(), &["--exit-zero"]).code, 0);

    // ... but a descriptor it cannot read (a directory where a file should be) is 2,
    // and stays 2 under --exit-zero.
    fs::remove_file(&descriptor).unwrap();
    fs::create_dir(&descriptor).unwrap();
    let run = check(dir.path(), &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[not-a-regular-file]"),
        "{}",
        run.stderr
    );
    assert_eq!(check(dir.path(), &["--exit-zero"]).code, 2);
    let json = check(dir.path(), &["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!((json.code, doc["exit_code"].as_u64()), (2, Some(2)));
}

#[test]
fn check_exits_2_when_the_catalog_cannot_be_read_and_1_when_it_is_invalid() {
    let dir = scratch_repo(&["capabilities"]);
    fs::write(
        dir.path().join("capabilities/x.yaml"),
        corpus("unknown_mode.yaml"),
    )
    .unwrap();
    let modes = dir.path().join("modes/modes.yaml");
    fs::write(&modes, "modes: [\n").unwrap();
    let run = check(dir.path(), &[]);
    assert_eq!(
        run.code, 1,
        "an invalid catalog is a finding: {}",
        run.stderr
    );
    fs::remove_file(&modes).unwrap();
    fs::create_dir(&modes).unwrap();
    let run = check(dir.path(), &[]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn check_exits_1_for_an_anchor_naming_a_missing_file() {
    // The anchor's file is missing, but the descriptor was read: a finding about it.
    let dir = scratch_repo(&["capabilities"]);
    fs::write(
        dir.path().join("capabilities/x.yaml"),
        corpus("anchor_repo_file_missing.yaml"),
    )
    .unwrap();
    let run = check(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[anchor-file-missing]"),
        "{}",
        run.stderr
    );
}

#[cfg(unix)]
#[test]
fn gate_exits_1_for_a_malformed_line_and_2_for_an_input_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("bad.jsonl");
    fs::write(&trace, "not json\n").unwrap();
    let run = kvlower(&["gate", &trace.display().to_string()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[malformed-trace]"),
        "{}",
        run.stderr
    );

    // A link to a device named *.jsonl below a directory is refused, never opened: 2,
    // and 2 wins over the malformed trace beside it.
    std::os::unix::fs::symlink("/dev/null", dir.path().join("null.jsonl")).unwrap();
    let run = kvlower(&["gate", &dir.path().display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[not-a-regular-file]"),
        "{}",
        run.stderr
    );

    // Over --max-bytes: refused, 2.
    let big = tempfile::tempdir().unwrap();
    let long = big.path().join("long.jsonl");
    fs::write(&long, "x".repeat(100)).unwrap();
    let run = kvlower(&["gate", "--max-bytes", "10", &long.display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

fn join(registry: &Path, events: &Path) -> Run {
    kvlower(&[
        "join",
        "--registry",
        &registry.display().to_string(),
        "--events",
        &events.display().to_string(),
        "--events-format",
        "vllm",
    ])
}

#[test]
fn join_exits_1_for_malformed_events_and_2_for_a_file_it_cannot_read() {
    let fixtures = repo_root().join("tests/fixtures/join");
    let registry = fixtures.join("vllm/registry.yaml");
    let run = join(&registry, &fixtures.join("malformed/not-json.jsonl"));
    assert_eq!(run.code, 1, "{}", run.stderr);

    let dir = tempfile::tempdir().unwrap();
    let run = join(&registry, &dir.path().join("missing.jsonl"));
    assert_eq!(run.code, 2, "a missing events file: {}", run.stderr);
    let run = join(&registry, dir.path());
    assert_eq!(run.code, 2, "a directory as events: {}", run.stderr);
    let run = join(
        &dir.path().join("missing.yaml"),
        &fixtures.join("vllm/events-array.jsonl"),
    );
    assert_eq!(run.code, 2, "a missing registry: {}", run.stderr);
}

#[test]
fn route_exits_1_for_a_malformed_trace_and_2_for_one_it_cannot_read() {
    let malformed = repo_root().join("tests/fixtures/route/malformed/syntax.json");
    let run = kvlower(&["route", "--trace", &malformed.display().to_string()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[route-trace-malformed]"),
        "{}",
        run.stderr
    );

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("trace.json");
    let run = kvlower(&["route", "--trace", &missing.display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[route-trace-refused]"),
        "{}",
        run.stderr
    );

    // A trace whose registry is missing: the registry cannot be read, 2; a malformed
    // registry is a finding, 1.
    let src = repo_root().join("tests/fixtures/route/pass/trace.json");
    fs::copy(&src, &missing).unwrap();
    let trace = missing.display().to_string();
    let run = kvlower(&["route", "--trace", &trace]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    fs::write(dir.path().join("registry.yaml"), "schema_version: [\n").unwrap();
    let run = kvlower(&["route", "--trace", &trace]);
    assert_eq!(run.code, 1, "{}", run.stderr);
}

#[test]
fn catalog_diff_matrix_and_explain_exit_2_when_the_catalog_cannot_be_read() {
    let dir = scratch_repo(&["capabilities"]);
    let descriptor = dir.path().join("capabilities/x.yaml");
    fs::write(&descriptor, corpus("unknown_field_top_level.yaml")).unwrap();
    let root = dir.path().display().to_string();
    let explain =
        |root: &str| kvlower(&["explain", &descriptor.display().to_string(), "--root", root]);
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 1);
    assert_eq!(explain(&root).code, 1);

    let modes = dir.path().join("modes/modes.yaml");
    fs::remove_file(&modes).unwrap();
    fs::create_dir(&modes).unwrap();
    assert_eq!(kvlower(&["catalog", "diff", "--root", &root]).code, 2);
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 2);
    assert_eq!(explain(&root).code, 2);
}
