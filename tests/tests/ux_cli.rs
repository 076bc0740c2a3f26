//! Issue 25, items 4 and 8–13: warnings for inert evidence, `route`'s words and
//! hints, `capture --format json` and its help, `join`/`explain` usage messages,
//! SARIF details, `KVLOWER_OUTPUT_FORMAT`, `--exit-zero` and `-v`.

use std::fs;
use std::path::Path;

use kvlower_tests::{kvlower, repo_root, scratch_repo};

/// A scratch repository holding only tests/fixtures/inert_evidence.yaml, with
/// its results generated (so `check` has nothing but the warnings to say).
fn inert_repo(descriptor: &str) -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    fs::write(dir.path().join("capabilities/inert_1.yaml"), descriptor).expect("write");
    let m = kvlower(&["matrix", "--root", &root_of(dir.path())]);
    assert_eq!(m.code, 0, "{}", m.stderr);
    dir
}

fn root_of(p: &Path) -> String {
    p.display().to_string()
}

fn inert_fixture() -> String {
    fs::read_to_string(repo_root().join("tests/fixtures/inert_evidence.yaml")).expect("fixture")
}

/// (mode, depth, label) of every row of a generated lowering matrix.
fn labels(root: &Path) -> Vec<(String, String, String)> {
    let v: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(root.join("results/lowering-matrix.json")).expect("matrix"),
    )
    .expect("json");
    v["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r["mode"].as_str().unwrap().to_string(),
                r["depth"].as_str().unwrap().to_string(),
                r["label"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn inert_evidence_is_a_located_warning_that_does_not_fail_check() {
    let dir = inert_repo(&inert_fixture());
    let root = root_of(dir.path());
    let run = kvlower(&["check", "--root", &root, "--color", "never"]);
    assert_eq!(run.code, 0, "warnings do not fail check: {}", run.stderr);
    assert!(
        run.stdout
            .contains("0 finding(s); all results fresh; 4 warning(s)"),
        "{}",
        run.stdout
    );
    for (at, code) in [
        ("capabilities/inert_1.yaml:13:5", "inert-scope"),
        ("capabilities/inert_1.yaml:20:5", "inert-trace-scope"),
        ("capabilities/inert_1.yaml:22:3", "inert-adapter"),
        ("capabilities/inert_1.yaml:33:3", "signal-not-proposed"),
    ] {
        assert!(
            run.stderr.contains(&format!("{at}: warning[{code}]")),
            "{at} {code}: {}",
            run.stderr
        );
    }
    assert!(
        run.stderr.contains("1 of its 9 preconditions"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("error["), "{}", run.stderr);

    let deny = kvlower(&["check", "--root", &root, "--deny-warnings"]);
    assert_eq!(deny.code, 1, "{}", deny.stderr);

    let json = kvlower(&["check", "--root", &root, "--format", "json"]);
    assert_eq!(json.code, 0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let diags = v["diagnostics"].as_array().expect("diagnostics");
    assert_eq!(diags.len(), 4);
    assert!(
        diags.iter().all(|d| d["severity"] == "warning"),
        "{diags:#?}"
    );
    assert_eq!(v["ok"], true);

    let sarif = kvlower(&["check", "--root", &root, "--format", "sarif"]);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).expect("sarif");
    let results = log["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 4);
    assert!(results.iter().all(|r| r["level"] == "warning"));

    let github = kvlower(&["check", "--root", &root, "--format", "github"]);
    assert!(
        github
            .stdout
            .contains("::warning file=capabilities/inert_1.yaml,line=22"),
        "{}",
        github.stdout
    );
}

#[test]
fn inert_evidence_changes_no_label() {
    // Every inert item made `unknown`: the labels are exactly the same.
    let with = inert_repo(&inert_fixture());
    let without = inert_repo(&inert_fixture().replace("status: supported", "status: unknown"));
    assert_eq!(labels(with.path()), labels(without.path()));
    let run = kvlower(&["check", "--root", &root_of(without.path())]);
    assert!(
        run.stdout.contains("; 1 warning(s)"),
        "only the signal is left: {}",
        run.stdout
    );
}

#[test]
fn exit_zero_reports_findings_and_exits_0_but_usage_errors_stay_2() {
    let dir = scratch_repo(&["capabilities"]);
    fs::write(
        dir.path().join("capabilities/broken.yaml"),
        "runtime:\n  name: x\n  version: '1'\n  source: simulatr\nnon_claims: {default: y}\n",
    )
    .expect("write");
    let root = root_of(dir.path());
    let plain = kvlower(&["check", "--root", &root]);
    assert_eq!(plain.code, 1);
    let zero = kvlower(&["check", "--root", &root, "--exit-zero"]);
    assert_eq!(zero.code, 0, "{}", zero.stderr);
    assert!(
        zero.stderr.contains("error[unknown-name]"),
        "{}",
        zero.stderr
    );
    let empty = tempfile::tempdir().expect("tempdir");
    let usage = kvlower(&["check", "--root", &root_of(empty.path()), "--exit-zero"]);
    assert_eq!(usage.code, 2);
    assert_eq!(kvlower(&["check", "--exit-zero", "--no-such-flag"]).code, 2);
}

#[test]
fn verbose_check_says_which_root_and_files_it_read() {
    let dir = inert_repo(&inert_fixture());
    let root = root_of(dir.path());
    let run = kvlower(&["check", "--root", &root, "-v", "-q"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.contains(&format!("kvlower check: root {root}")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("read catalog modes/modes.yaml"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("read descriptor capabilities/inert_1.yaml"),
        "{}",
        run.stderr
    );
    let quiet = kvlower(&["check", "--root", &root, "-q"]);
    assert!(!quiet.stderr.contains("read descriptor"));
    // Even when nothing can be loaded, -v says where it looked.
    let empty = tempfile::tempdir().expect("tempdir");
    let empty = root_of(empty.path());
    let run = kvlower(&["check", "--root", &empty, "-v"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(&format!("kvlower check: root {empty}")),
        "{}",
        run.stderr
    );
}

/// `KVLOWER_OUTPUT_FORMAT` (given here without touching the process environment).
fn run_env(args: &[&str], format: &str) -> (u8, String) {
    let mut argv: Vec<std::ffi::OsString> = vec!["kvlower".into()];
    argv.extend(args.iter().map(Into::into));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = kvlower_cli::run_with_env_format(
        argv,
        Some(std::ffi::OsStr::new(format)),
        &mut out,
        &mut err,
    );
    (exit.as_u8(), String::from_utf8(out).expect("utf-8"))
}

#[test]
fn the_output_format_environment_variable_sets_format_and_the_flag_wins() {
    let (code, out) = run_env(&["codes"], "json");
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("an envelope");
    assert_eq!(v["command"], "codes");
    let (_, out) = run_env(&["codes", "--format", "human"], "json");
    assert!(out.starts_with("unreadable-file "), "{out}");
    let (_, out) = run_env(&["catalog", "diff"], "json");
    let v: serde_json::Value = serde_json::from_str(&out).expect("an envelope");
    assert_eq!(v["command"], "catalog diff");
    // A command without --format is unaffected.
    let (code, out) = run_env(&["completions", "bash"], "json");
    assert_eq!(code, 0);
    assert!(!out.starts_with('{'));
    assert_eq!(kvlower_cli::FORMAT_ENV, "KVLOWER_OUTPUT_FORMAT");
}

#[test]
fn route_prints_reasons_in_words_and_a_hint_per_refusal() {
    let fp = repo_root()
        .join("tests/fixtures/route/overlap-without-claim/trace.json")
        .display()
        .to_string();
    let run = kvlower(&["route", "--trace", &fp]);
    assert!(!run.stdout.contains("{\"reason\""), "{}", run.stdout);
    assert!(
        run.stdout.contains("no request carries the claim"),
        "{}",
        run.stdout
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.json");
    let run = kvlower(&["route", "--trace", &missing.display().to_string()]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("hint: check the path"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("FIFO"), "{}", run.stderr);
    let run = kvlower(&["route", "--trace", &dir.path().display().to_string()]);
    assert!(
        run.stderr.contains("not a directory, FIFO or device"),
        "{}",
        run.stderr
    );
}

#[test]
fn capture_has_json_output_and_says_how_to_turn_on_kv_events() {
    let help = kvlower(&["capture", "--help"]);
    assert!(
        help.stdout.contains("--kv-events-config"),
        "{}",
        help.stdout
    );
    assert!(
        help.stdout.contains("enable_kv_cache_events"),
        "{}",
        help.stdout
    );
    assert!(
        help.stdout.contains("docs/capture-format.md"),
        "{}",
        help.stdout
    );
    assert!(help.stdout.contains("--format"), "{}", help.stdout);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run.kvcap").display().to_string();
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let run = kvlower(&[
        "capture",
        "--endpoint",
        &endpoint,
        "--out",
        &out,
        "--duration",
        "1",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 2);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("an envelope");
    assert_eq!(v["command"], "capture");
    assert_eq!(v["exit_code"], 2);
    assert_eq!(v["diagnostics"][0]["code"], "capture-publisher-unreachable");
    let usage = kvlower(&[
        "capture",
        "--endpoint",
        "127.0.0.1:1",
        "--out",
        &out,
        "--format",
        "json",
    ]);
    assert_eq!(usage.code, 2);
    let v: serde_json::Value = serde_json::from_str(&usage.stdout).expect("an envelope");
    assert_eq!(v["exit_code"], 2);
}

#[test]
fn join_explain_usage_messages() {
    let reg = repo_root()
        .join("tests/fixtures/join/vllm")
        .display()
        .to_string();
    let run = kvlower(&["join", "--registry", &reg, "--events", &reg]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("vllm|sglang|trtllm"), "{}", run.stderr);
    let desc = repo_root()
        .join("capabilities/vllm_cpu_0.32.0.yaml")
        .display()
        .to_string();
    let run = kvlower(&["explain", &desc, "--mode", "best_efort"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("did you mean `best_effort`?"),
        "{}",
        run.stderr
    );
    let run = kvlower(&["explain", "missing.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no such descriptor"), "{}", run.stderr);
    let run = kvlower(&["explain", "missing.yaml", "--format", "json"]);
    assert_eq!(run.code, 2);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("an envelope");
    assert_eq!(v["exit_code"], 2);
}

#[test]
fn a_stale_matrix_names_the_descriptor_that_changed_it() {
    let dir = inert_repo(&inert_fixture());
    let root = root_of(dir.path());
    fs::write(
        dir.path().join("capabilities/inert_1.yaml"),
        inert_fixture().replace("nothing is claimed", "nothing at all is claimed"),
    )
    .expect("write");
    let run = kvlower(&["check", "--root", &root, "--format", "sarif"]);
    assert_eq!(run.code, 1);
    let log: serde_json::Value = serde_json::from_str(&run.stdout).expect("sarif");
    let stale: Vec<&serde_json::Value> = log["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["ruleId"] == "stale-result"
                && r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                    == "results/lowering-matrix.json"
        })
        .collect();
    assert_eq!(stale.len(), 1, "{log:#}");
    assert_eq!(
        stale[0]["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "capabilities/inert_1.yaml"
    );
    assert!(
        stale[0]["message"]["text"]
            .as_str()
            .unwrap()
            .contains("the rows of capabilities/inert_1.yaml changed")
    );
}
