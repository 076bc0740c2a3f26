//! Issue 36, items 1–3: a new user's first ten minutes. `kvlower init` makes an
//! empty directory a repository; a warning can be acknowledged (with a reason)
//! and `--deny-warnings` names what failed; a descriptor with many mistakes
//! reports every one of them in one pass, each located.

use std::fs;
use std::path::Path;

use kvlower_tests::{kvlower, kvlower_in, repo_root};

fn root_of(p: &Path) -> String {
    p.display().to_string()
}

// ------------------------------------------------------------------ 1: init

/// The done-when of the issue: `git init`, then only commands the README shows
/// (`init`, `new`, `check`, editing the file, `matrix`, `check`), ends green.
#[test]
fn a_scratch_repository_goes_from_git_init_to_a_checked_matrixed_descriptor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path().join("kv-offload");
    fs::create_dir_all(&repo).expect("mkdir");
    // `git init` when git is installed; kvlower itself never needs it.
    let _ = std::process::Command::new("git")
        .arg("init")
        .arg("-q")
        .current_dir(&repo)
        .status();
    // Before init, nothing works: the catalog is missing.
    let before = kvlower_in(&repo, &["new", "AIBrix KV offload", "--version", "0.3.9"]);
    assert_eq!(before.code, 2, "{}", before.stderr);
    assert!(
        before.stderr.contains("kvlower init"),
        "the error says how to start: {}",
        before.stderr
    );

    let init = kvlower_in(&repo, &["init"]);
    assert_eq!(init.code, 0, "{}{}", init.stdout, init.stderr);
    for file in [
        "kvlower.toml",
        "modes/modes.yaml",
        "schemas/descriptor.schema.json",
        "schemas/modes.schema.json",
    ] {
        assert!(repo.join(file).is_file(), "{file}: {}", init.stdout);
    }
    assert!(repo.join("capabilities").is_dir());
    for next in ["kvlower new", "kvlower check", "kvlower matrix"] {
        assert!(
            init.stdout.contains(next),
            "names `{next}`: {}",
            init.stdout
        );
    }

    let new = kvlower_in(
        &repo,
        &[
            "new",
            "AIBrix KV offload",
            "--version",
            "0.3.9",
            "--kind",
            "aibrix",
        ],
    );
    assert_eq!(new.code, 0, "{}", new.stderr);
    let path = repo.join("capabilities/aibrix_kv_offload_0_3_9.yaml");
    let text = fs::read_to_string(&path).expect("the scaffold");
    // The scaffold's `$schema` exists from the first scaffold on.
    assert!(text.starts_with("# yaml-language-server: $schema=../schemas/descriptor.schema.json"));
    assert!(
        path.parent()
            .unwrap()
            .join("../schemas/descriptor.schema.json")
            .is_file()
    );

    let todo = kvlower_in(&repo, &["check"]);
    assert_eq!(todo.code, 1, "{}{}", todo.stdout, todo.stderr);
    // As README step 2 says: the review date, and `native: []` with nothing anchored yet.
    let text = text.replace("reviewed: YYYY-MM-DD", "reviewed: 2026-01-01");
    let (head, rest) = text.split_once("native:\n").expect("a native list");
    let tail = &rest[rest.find("\n# adapters:").expect("the adapters comment")..];
    fs::write(&path, format!("{head}native: []\n{tail}")).expect("write");
    let stale = kvlower_in(&repo, &["check"]);
    assert_eq!(stale.code, 1, "results are not there yet: {}", stale.stdout);
    assert!(
        stale.stdout.contains("regenerate with `kvlower matrix"),
        "{}",
        stale.stdout
    );
    let matrix = kvlower_in(&repo, &["matrix"]);
    assert_eq!(matrix.code, 0, "{}{}", matrix.stdout, matrix.stderr);
    let check = kvlower_in(&repo, &["check", "--deny-warnings"]);
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    assert!(
        check
            .stdout
            .contains("1 descriptor(s), 0 invalid, 0 finding(s); all results fresh"),
        "{}",
        check.stdout
    );
    // The schemas init wrote are the ones matrix keeps: matrix did not rewrite them.
    assert!(
        !matrix.stdout.contains("wrote schemas/"),
        "{}",
        matrix.stdout
    );
}

#[test]
fn init_writes_the_baseline_catalog_with_no_difference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_of(dir.path());
    assert_eq!(kvlower(&["init", &root]).code, 0);
    let diff = kvlower(&["catalog", "diff", "--root", &root, "--format", "json"]);
    assert_eq!(diff.code, 0, "{}{}", diff.stdout, diff.stderr);
    let v: serde_json::Value = serde_json::from_str(&diff.stdout).expect("json");
    assert_eq!(v["payload"]["changes"], serde_json::json!([]), "{v:#}");
    // kvlower.toml parses, with every key.
    let toml = fs::read_to_string(dir.path().join("kvlower.toml")).expect("toml");
    assert!(kvlower_cli::config::parse(&toml).is_ok());
    assert_eq!(kvlower_cli::cmd::init::CONFIG_TEXT, toml);
    // The schemas are what `kvlower schema` prints for this root.
    let schema = kvlower(&["schema", "descriptor", "--root", &root]);
    let written =
        fs::read_to_string(dir.path().join("schemas/descriptor.schema.json")).expect("schema");
    assert_eq!(schema.stdout, written);
}

#[test]
fn init_never_overwrites_and_leaves_nothing_half_written() {
    // An existing repository: refused, untouched.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_of(dir.path());
    fs::write(dir.path().join("kvlower.toml"), "# mine\n").expect("write");
    let run = kvlower(&["init", &root, "--format", "json"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("one envelope");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("already a kvlower repository"),
        "{v:#}"
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("kvlower.toml")).unwrap(),
        "# mine\n"
    );
    assert!(!dir.path().join("modes").exists());

    // A file in the way of a later one: nothing written stays.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_of(dir.path());
    fs::create_dir_all(dir.path().join("schemas")).expect("mkdir");
    fs::write(dir.path().join("schemas/modes.schema.json"), "{}").expect("write");
    let run = kvlower(&["init", &root]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("nothing written"), "{}", run.stderr);
    assert!(!dir.path().join("kvlower.toml").exists());
    assert!(!dir.path().join("modes/modes.yaml").exists());
    assert!(!dir.path().join("schemas/descriptor.schema.json").exists());
    assert_eq!(
        fs::read_to_string(dir.path().join("schemas/modes.schema.json")).unwrap(),
        "{}"
    );
}

// ------------------------------------------------------------------ 2: acknowledged warnings

/// A repository holding tests/fixtures/inert_evidence.yaml (four warnings, one of
/// them `signal-not-proposed` at `signals[0]`) with `extra` appended, results generated.
fn inert_repo(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_of(dir.path());
    assert_eq!(kvlower(&["init", &root]).code, 0);
    let fixture = fs::read_to_string(repo_root().join("tests/fixtures/inert_evidence.yaml"))
        .expect("fixture");
    fs::write(
        dir.path().join("capabilities/inert_1.yaml"),
        format!("{fixture}{extra}"),
    )
    .expect("write");
    let m = kvlower(&["matrix", "--root", &root]);
    assert_eq!(m.code, 0, "{}{}", m.stdout, m.stderr);
    dir
}

const ACK_ALL: &str = "acknowledge:
  - {code: inert-scope, path: 'native[0].scope', reason: the docs reading is kept as context}
  - {code: inert-trace-scope, path: 'native[1].anchor', reason: the paper's run is kept as context}
  - {code: inert-adapter, path: 'adapters[0]', reason: the join is being anchored}
  - {code: signal-not-proposed, path: 'signals[0]', reason: nobody offers the pin as hard_protected}
";

#[test]
fn deny_warnings_names_the_warnings_that_failed_it() {
    let dir = inert_repo("");
    let root = root_of(dir.path());
    let run = kvlower(&["check", "--root", &root, "--deny-warnings"]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("failed by --deny-warnings: 4 warning(s) not acknowledged (inert-scope at capabilities/inert_1.yaml:13:5"),
        "{}",
        run.stdout
    );
    let json = kvlower(&[
        "check",
        "--root",
        &root,
        "--deny-warnings",
        "--format",
        "json",
    ]);
    assert_eq!(json.code, 1);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let error = v["error"].as_str().expect("error names what failed");
    assert!(
        error.contains("signal-not-proposed at capabilities/inert_1.yaml:33:3"),
        "{error}"
    );
    // Without --deny-warnings the same run passes, and says nothing failed.
    let plain = kvlower(&["check", "--root", &root, "--format", "json"]);
    assert_eq!(plain.code, 0);
    let v: serde_json::Value = serde_json::from_str(&plain.stdout).expect("json");
    assert_eq!(v["error"], serde_json::Value::Null);
}

#[test]
fn an_acknowledged_warning_no_longer_fails_deny_warnings() {
    let dir = inert_repo(ACK_ALL);
    let root = root_of(dir.path());
    let run = kvlower(&["check", "--root", &root, "--deny-warnings", "-v"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout
            .contains("0 finding(s); all results fresh; 4 warning(s) acknowledged"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("acknowledged warning[signal-not-proposed] capabilities/inert_1.yaml:33:3 (acknowledged: nobody offers the pin as hard_protected)"),
        "-v lists them with their reason: {}",
        run.stderr
    );
}

#[test]
fn an_acknowledgement_that_matches_nothing_is_a_warning_and_hides_nothing() {
    // The path is off by one: the real warning stays, and the entry is unused.
    let dir = inert_repo(
        "acknowledge:\n  - {code: signal-not-proposed, path: 'signals[1]', reason: stale entry}\n",
    );
    let root = root_of(dir.path());
    let run = kvlower(&["check", "--root", &root, "--color", "never"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("warning[unused-acknowledgement]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("inert_1.yaml:33:3: warning[signal-not-proposed]"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.contains("5 warning(s)"), "{}", run.stdout);
    assert_eq!(
        kvlower(&["check", "--root", &root, "--deny-warnings"]).code,
        1
    );
}

#[test]
fn an_error_or_a_reasonless_entry_is_never_acknowledged() {
    // An error's code: an invalid entry (an error), which acknowledges nothing.
    let dir = inert_repo("");
    let root = root_of(dir.path());
    let path = dir.path().join("capabilities/inert_1.yaml");
    let text = fs::read_to_string(&path).unwrap();
    for (entry, at) in [
        (
            "{code: cited-positive, path: 'native[0]', reason: please}",
            "acknowledge[0].code",
        ),
        (
            "{code: no-such-code, path: 'native[0]', reason: please}",
            "acknowledge[0].code",
        ),
        (
            "{code: inert-scope, path: 'native[0]', reason: '  '}",
            "acknowledge[0].reason",
        ),
    ] {
        fs::write(&path, format!("{text}acknowledge:\n  - {entry}\n")).unwrap();
        let run = kvlower(&["check", "--root", &root, "--format", "json"]);
        assert_eq!(run.code, 1, "{entry}: {}", run.stdout);
        let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
        let diags = v["diagnostics"].as_array().unwrap();
        assert!(
            diags.iter().any(|d| d["code"] == "invalid-acknowledgement"
                && d["yaml_path"] == at
                && d["line"].is_u64()),
            "{entry}: {diags:#?}"
        );
        // The four warnings all still stand.
        assert_eq!(
            diags.iter().filter(|d| d["severity"] == "warning").count(),
            4,
            "{entry}"
        );
    }
}

/// kvlower's own repository passes `check --deny-warnings`: its one warning
/// (sglang_hicache_bbe9c7e.yaml) is acknowledged with a reason.
#[test]
fn this_repository_passes_check_deny_warnings() {
    let root = root_of(&repo_root());
    let run = kvlower(&["check", "--root", &root, "--deny-warnings"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let text =
        fs::read_to_string(repo_root().join("capabilities/sglang_hicache_bbe9c7e.yaml")).unwrap();
    assert!(
        text.contains("acknowledge:"),
        "the acknowledgement is in the descriptor"
    );
}

// ------------------------------------------------------------------ 3: every finding in one pass

/// The example: a scaffold whose `source` is misspelt reported 1
/// finding where there are 20. Now: the unknown name and every placeholder.
#[test]
fn a_misspelt_source_hides_no_other_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_of(dir.path());
    assert_eq!(kvlower(&["init", &root]).code, 0);
    assert_eq!(
        kvlower(&["new", "Demo", "--version", "1.0.0", "--root", &root]).code,
        0
    );
    let path = dir.path().join("capabilities/demo_1_0_0.yaml");
    let text = fs::read_to_string(&path).unwrap();
    let placeholders = text.matches("note: placeholder").count();
    assert!(placeholders >= 18, "{placeholders}");
    fs::write(
        &path,
        text.replacen("source: source_tree", "source: sorce_tree", 1),
    )
    .unwrap();
    let run = kvlower(&["check", "--root", &root, "--format", "json"]);
    assert_eq!(run.code, 1);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let diags = v["diagnostics"].as_array().unwrap();
    let count = |code: &str| diags.iter().filter(|d| d["code"] == code).count();
    assert_eq!(count("unknown-name"), 1, "{diags:#?}");
    assert_eq!(count("anchor-placeholder"), placeholders, "{diags:#?}");
    assert_eq!(count("invalid-review-date"), 1, "{diags:#?}");
    assert!(
        diags.iter().all(|d| d["line"].is_u64()),
        "every finding located: {diags:#?}"
    );
    let unknown = diags.iter().find(|d| d["code"] == "unknown-name").unwrap();
    assert_eq!(unknown["yaml_path"], "runtime.source");
    let line = text
        .lines()
        .position(|l| l.contains("source: source_tree"))
        .unwrap()
        + 1;
    assert_eq!(unknown["line"], line, "{unknown:#}");
}

/// Several unknown names, wrong types, unknown keys and missing fields, in
/// different items: every one reported, each at its own item and line, and
/// the file still gives no rows (a repaired descriptor is never judged).
#[test]
fn every_schema_error_is_reported_in_one_pass_each_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = root_of(dir.path());
    assert_eq!(kvlower(&["init", &root]).code, 0);
    let text = "\
runtime:
  name: many
  version: '1'
  source: source_tree
  reviewed: 2026-01-01
  identity: [{kind: other, version: '1'}]
native:
  - obligation: claim_identiti
    status: unknown
    scope: docs_only
    anchor: {kind: docs_page, url: 'https://example.org/a', retrieved: 2026-01-01, note: a}
  - obligation: claim_identity
    status: supportd
    scope: docs_only
    anchor: {kind: docs_page, url: 'https://example.org/b', retrieved: 2026-01-01, note: b}
  - obligation: claim_identity
    status: unknown
    scope: docs_only
    colour: blue
    anchor: {kind: docs_page, url: 'https://example.org/c', retrieved: 2026-01-01, note: c}
  - obligation: claim_identity
    status: unknown
    anchor: {kind: docs_page, url: 'https://example.org/d', retrieved: 2026-01-01, note: d}
  - obligation: claim_identity
    status: unknown
    scope: docs_only
    anchor: {kind: docs_page, url: 'https://example.org/e', retrieved: 2026-01-01, note: ''}
signals: {signal: priority_field}
proposals:
  - {primitive: active_no_evict, mode: hard_protectd}
non_claims:
  default: nothing
";
    fs::write(dir.path().join("capabilities/many.yaml"), text).unwrap();
    let run = kvlower(&["check", "--root", &root, "--format", "json"]);
    assert_eq!(run.code, 1);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let diags = v["diagnostics"].as_array().unwrap();
    let found: Vec<(String, String, u64)> = diags
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_string(),
                d["yaml_path"].as_str().unwrap().to_string(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    for (code, path, line) in [
        ("unknown-name", "native[0].obligation", 8),
        ("unknown-name", "native[1].status", 13),
        ("unknown-field", "native[2].colour", 19),
        ("missing-field", "native[3]", 21),
        ("wrong-type", "signals", 28),
        ("unknown-name", "proposals[0].mode", 30),
    ] {
        assert!(
            found
                .iter()
                .any(|(c, p, l)| c == code && p == path && *l == line),
            "{code} at {path}:{line} in {found:#?}"
        );
    }
    // native[4] comes after a removed item (native[3]): its own finding keeps its
    // own path and line.
    assert!(
        found
            .iter()
            .any(|(c, p, l)| c == "anchor-incomplete" && p == "native[4].anchor" && *l == 27),
        "the blank note of native[4]: {found:#?}"
    );
    // A repaired value says nothing of its own: `status: supportd` read as a
    // known status must not add a finding about native[1] (e.g. `modes-not-stated`).
    assert_eq!(
        found
            .iter()
            .filter(|(_, p, _)| p.starts_with("native[1]"))
            .count(),
        1,
        "{found:#?}"
    );
    assert_eq!(found.len(), 7, "{found:#?}");
    let matrix = kvlower(&["matrix", "--root", &root]);
    assert_eq!(matrix.code, 1, "nothing is judged from a repaired file");
}
