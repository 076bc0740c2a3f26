//! `kvlower check` and `kvlower matrix` end to end, in-process, on copies of
//! the repository in temporary directories.

use std::fs;

use kvlower_tests::{copy_dir, kvlower, repo_root, sandbox};

fn root_arg(dir: &tempfile::TempDir) -> String {
    dir.path().display().to_string()
}

#[test]
fn check_passes_on_the_repository() {
    let run = kvlower(&["check", "--root", &repo_root().display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("0 finding(s); all results fresh"),
        "{}",
        run.stdout
    );
}

#[test]
fn matrix_is_byte_identical_when_regenerated() {
    let dir = sandbox();
    let root = root_arg(&dir);
    let before = fs::read(dir.path().join("results/lowering-matrix.json")).expect("read");
    let run = kvlower(&["matrix", "--root", &root]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("0 file(s) written"),
        "committed results are fresh: {}",
        run.stdout
    );
    fs::remove_dir_all(dir.path().join("results")).expect("rm");
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 0);
    let first = fs::read(dir.path().join("results/lowering-matrix.json")).expect("read");
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 0);
    let second = fs::read(dir.path().join("results/lowering-matrix.json")).expect("read");
    assert_eq!(first, second);
    assert_eq!(first, before);
    let text = String::from_utf8(first).expect("utf8");
    assert!(!text.contains(&root), "no absolute paths in results");
}

#[test]
fn stale_results_fail_check_with_a_diff_and_the_fix() {
    let dir = sandbox();
    let root = root_arg(&dir);
    let path = dir.path().join("capabilities/dynamo_router_docs.yaml");
    let src = fs::read_to_string(&path).expect("read");
    let edited = src.replace("default: Docs-backed", "default: Edited, docs-backed");
    assert_ne!(edited, src);
    fs::write(&path, edited).expect("write");
    let run = kvlower(&["check", "--root", &root]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("error[stale-result]"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--- a/results/lowering-matrix.json (committed)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("kvlower matrix"), "{}", run.stderr);
    // check never writes
    let after = fs::read_to_string(dir.path().join("results/lowering-matrix.json")).expect("read");
    assert_eq!(
        after,
        fs::read_to_string(repo_root().join("results/lowering-matrix.json")).expect("read")
    );
}

#[test]
fn missing_results_are_a_finding() {
    let dir = sandbox();
    fs::remove_file(dir.path().join("results/central-result-table.md")).expect("rm");
    let run = kvlower(&["check", "--root", &root_arg(&dir)]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("results/central-result-table.md: error[missing-result]"),
        "{}",
        run.stderr
    );
}

#[test]
fn no_descriptors_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = kvlower(&["check", "--root", &root_arg(&dir)]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no descriptors found"));
    assert_eq!(kvlower(&["matrix", "--root", &root_arg(&dir)]).code, 2);
}

#[test]
fn bad_flags_are_usage_errors() {
    assert_eq!(kvlower(&["check", "--frobnicate"]).code, 2);
    assert_eq!(kvlower(&["no-such-command"]).code, 2);
    assert_eq!(kvlower(&["--help"]).code, 0);
}

#[test]
fn matrix_writes_nothing_when_an_input_is_invalid() {
    let dir = sandbox();
    fs::remove_dir_all(dir.path().join("results")).expect("rm");
    fs::write(dir.path().join("capabilities/broken.yaml"), "runtime: [\n").expect("write");
    let run = kvlower(&["matrix", "--root", &root_arg(&dir)]);
    assert_eq!(run.code, 1);
    // The findings on stderr, the stopped summary on stdout (docs/output.md, "Streams").
    assert!(
        run.stderr.contains("capabilities/broken.yaml"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.starts_with("kvlower matrix: ")
            && run.stdout.ends_with(" finding(s); nothing written\n")
            && run.stdout.lines().count() == 1,
        "{}",
        run.stdout
    );
    assert!(!dir.path().join("results").exists(), "no partial results");
}

/// A minimal valid descriptor the malformed cases are derived from.
const VALID: &str = "\
runtime:
  name: fixture
  version: '1'
  source: simulator
  reviewed: 2026-01-01
  identity:
    - kind: other
      version: '1'
non_claims:
  default: a synthetic fixture
native:
  - obligation: claim_identity
    status: missing
    scope: docs_only
    anchor:
      kind: paper
      section: \"§3\"
      note: fixture
";

/// Writes `contents` as the only descriptor and runs check.
fn check_one(contents: &[u8]) -> kvlower_tests::Run {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo_root().join("modes"), &dir.path().join("modes"));
    fs::create_dir_all(dir.path().join("capabilities")).expect("mkdir");
    fs::write(dir.path().join("capabilities/case.yaml"), contents).expect("write");
    kvlower(&["check", "--root", &root_arg(&dir)])
}

#[test]
fn the_valid_fixture_is_valid() {
    let run = check_one(VALID.as_bytes());
    // Valid input; only the results are missing.
    assert!(
        !run.stderr.contains("capabilities/case.yaml"),
        "{}",
        run.stderr
    );
}

// Malformed descriptors (syntax, duplicate keys, unknown fields and names, wrong
// types, empty anchors, empty files, invalid UTF-8) are the corpus's job:
// tests/corpus/*.yaml, one snapshot each (tests/tests/corpus.rs), pinning the code, the
// YAML path and the line:column of every finding.

#[test]
fn near_miss_names_get_a_suggestion() {
    let run = check_one(VALID.replace("claim_identity", "claim_identiy").as_bytes());
    assert!(
        run.stderr.contains("did you mean `claim_identity`?"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("active_refusal_or_defer"),
        "the alias is never printed"
    );
}

#[test]
fn a_repo_file_anchor_must_name_a_file() {
    let src = VALID.replace(
        "      kind: paper\n      section: \"§3\"\n",
        "      kind: repo_file\n      path: traces/not-here.jsonl\n",
    );
    let run = check_one(src.as_bytes());
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("error[anchor-file-missing]"),
        "{}",
        run.stderr
    );
}

#[test]
fn every_finding_is_reported_not_just_the_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_dir(&repo_root().join("modes"), &dir.path().join("modes"));
    fs::create_dir_all(dir.path().join("capabilities")).expect("mkdir");
    fs::write(dir.path().join("capabilities/a.yaml"), "runtime: [\n").expect("write");
    fs::write(dir.path().join("capabilities/b.yaml"), "").expect("write");
    let run = kvlower(&["check", "--root", &root_arg(&dir)]);
    assert_eq!(run.code, 1);
    let a = run.stderr.find("capabilities/a.yaml").expect("a reported");
    let b = run.stderr.find("capabilities/b.yaml").expect("b reported");
    assert!(a < b, "sorted by file");
}

#[test]
fn an_invalid_catalog_is_a_finding_with_its_path() {
    let dir = sandbox();
    let path = dir.path().join("modes/modes.yaml");
    let src = fs::read_to_string(&path).expect("read");
    let bad = src.replace(
        "supplies: [claim_identity, materialization_predicate, claim_materialized_event, claim_scoped_telemetry, priority_influence]",
        "supplies: [claim_identity, materialization_predicate, claim_materialized_event, claim_scoped_telemetry, priority_influence, blocking_claim_ids]",
    );
    assert_ne!(bad, src);
    fs::write(&path, bad).expect("write");
    let run = kvlower(&["check", "--root", &root_arg(&dir)]);
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("modes/modes.yaml"), "{}", run.stderr);
    assert!(
        run.stderr.contains("error[invalid-catalog]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("depths.telemetry_join.supplies"),
        "{}",
        run.stderr
    );
}

/// `check` compares a fresh result as it streams it (crates/kvlower-cli/src/compare.rs):
/// a committed file that is a prefix of the regenerated one, one byte longer, or
/// different only in its last byte must still be stale, for the streamed JSON and
/// Markdown results alike, with the usual diff or summary.
///
/// One test per result file, so the harness runs them side by side (each is four full
/// `check`s).
#[test]
fn a_matrix_json_that_differs_only_at_its_end_is_stale() {
    differs_only_at_its_end_is_stale("results/lowering-matrix.json");
}

#[test]
fn a_matrix_markdown_that_differs_only_at_its_end_is_stale() {
    differs_only_at_its_end_is_stale("results/lowering-matrix.md");
}

#[test]
fn mutation_controls_json_that_differ_only_at_their_end_are_stale() {
    differs_only_at_its_end_is_stale("results/descriptor-evidence-mutation-controls.json");
}

#[test]
fn mutation_controls_markdown_that_differ_only_at_their_end_are_stale() {
    differs_only_at_its_end_is_stale("results/descriptor-evidence-mutation-controls.md");
}

#[test]
fn a_provenance_json_that_differs_only_at_its_end_is_stale() {
    differs_only_at_its_end_is_stale("results/descriptor-provenance.json");
}

fn differs_only_at_its_end_is_stale(rel: &str) {
    let dir = sandbox();
    let root = root_arg(&dir);
    let path = dir.path().join(rel);
    let fresh = fs::read(&path).expect("read");
    let mut last_byte = fresh.clone();
    if let Some(b) = last_byte.last_mut() {
        *b ^= 1;
    }
    let mut longer = fresh.clone();
    longer.push(b'\n');
    let edits = [
        ("a prefix", fresh[..fresh.len() - 1].to_vec()),
        ("one byte longer", longer),
        ("the last byte changed", last_byte),
        ("empty", Vec::new()),
    ];
    for (what, committed) in edits {
        fs::write(&path, &committed).expect("write");
        let run = kvlower(&["check", "--root", &root]);
        assert_eq!(run.code, 1, "{rel}, {what}: {}", run.stdout);
        assert!(
            run.stderr.contains(&format!("{rel}: error[stale-result]")),
            "{rel}, {what}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains(&format!("--- a/{rel} (committed)")),
            "{rel}, {what}: {}",
            run.stderr
        );
    }
    fs::write(&path, &fresh).expect("restore");
    let run = kvlower(&["check", "--root", &root]);
    assert_eq!(run.code, 0, "restored: {}", run.stderr);
}
