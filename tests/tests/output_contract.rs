//! Issue 36, item 4: every command honours the output contract docs/output.md
//! gives: one JSON envelope (or the documented evidence document), an unreadable
//! input as a coded diagnostic, `-q` as the summary line, `KVLOWER_OUTPUT_FORMAT`
//! ignored by a command without that format; and `new` writes only what `check`
//! accepts.

use std::fs;

use kvlower_tests::{kvlower, repo_root};

fn run_env(args: &[&str], format: &str) -> (u8, String, String) {
    let mut argv: Vec<std::ffi::OsString> = vec!["kvlower".into()];
    argv.extend(args.iter().map(Into::into));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = kvlower_cli::run_with_env_format(
        argv,
        Some(std::ffi::OsStr::new(format)),
        &mut out,
        &mut err,
    );
    (
        exit.as_u8(),
        String::from_utf8(out).expect("utf-8"),
        String::from_utf8(err).expect("utf-8"),
    )
}

#[test]
fn an_output_format_a_command_does_not_have_is_ignored_not_fatal() {
    let root = repo_root().display().to_string();
    let descriptor = repo_root()
        .join("capabilities/vllm_cpu_0.32.0.yaml")
        .display()
        .to_string();
    for args in [
        vec!["codes"],
        vec!["explain-code", "inert-scope"],
        vec![
            "explain",
            descriptor.as_str(),
            "--root",
            root.as_str(),
            "--mode",
            "best_effort",
        ],
        vec!["schema", "modes", "--root", root.as_str()],
    ] {
        let (code, out, err) = run_env(&args, "sarif");
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!err.contains("invalid value"), "{args:?}: {err}");
        assert!(!out.is_empty(), "{args:?}");
    }
    // `check` has sarif: the variable still applies there.
    let (_, out, _) = run_env(&["check", "--root", &root], "sarif");
    assert!(out.contains("\"version\": \"2.1.0\""), "{out}");
}

#[test]
fn route_json_is_an_envelope_with_a_coded_diagnostic_when_the_trace_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.json").display().to_string();
    let run = kvlower(&["route", "--trace", &missing, "--format", "json"]);
    assert_eq!(run.code, 2);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("one envelope");
    assert_eq!(v["command"], "route");
    assert_eq!(v["exit_code"], 2);
    assert_eq!(v["diagnostics"][0]["code"], "route-trace-refused", "{v:#}");
    assert!(
        v["diagnostics"][0]["file"]
            .as_str()
            .unwrap()
            .ends_with("missing.json")
    );
}

#[test]
fn join_json_names_an_unreadable_input_as_a_coded_diagnostic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = dir.path().join("claims.yaml").display().to_string();
    let events = dir.path().join("events.jsonl");
    fs::write(&events, "").expect("write");
    let run = kvlower(&[
        "join",
        "--registry",
        &registry,
        "--events",
        &events.display().to_string(),
        "--events-format",
        "vllm",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("one envelope");
    let d = &v["diagnostics"][0];
    assert!(
        matches!(d["code"].as_str(), Some("unreadable-file")),
        "{v:#}"
    );
    assert!(
        d["file"].as_str().unwrap().ends_with("claims.yaml"),
        "{v:#}"
    );
}

#[test]
fn new_refuses_a_version_check_would_reject_and_takes_several_kinds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().display().to_string();
    assert_eq!(kvlower(&["init", &root]).code, 0);
    let bad = kvlower(&["new", "AIBrix", "--version", "0.3.9 rc", "--root", &root]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("not an exact version"),
        "{}",
        bad.stderr
    );
    assert_eq!(
        fs::read_dir(dir.path().join("capabilities"))
            .unwrap()
            .count(),
        0
    );
    let twice = kvlower(&[
        "new",
        "X",
        "--version",
        "1",
        "--kind",
        "vllm",
        "--kind",
        "vllm",
        "--root",
        &root,
    ]);
    assert_eq!(twice.code, 2, "{}", twice.stderr);

    let stack = kvlower(&[
        "new",
        "vLLM + LMCache",
        "--version",
        "0.32.0",
        "--kind",
        "vllm",
        "--kind",
        "lmcache=0.5.6",
        "--root",
        &root,
    ]);
    assert_eq!(stack.code, 0, "{}", stack.stderr);
    let text =
        fs::read_to_string(dir.path().join("capabilities/vllm___lmcache_0_32_0.yaml")).unwrap();
    assert!(
        text.contains("    - kind: vllm\n      version: \"0.32.0\"\n    - kind: lmcache\n      version: \"0.5.6\"\n"),
        "{text}"
    );
    // `check` finds no identity problem in what `new` wrote.
    let check = kvlower(&["check", "--root", &root, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&check.stdout).expect("json");
    assert!(
        !v["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == "invalid-runtime-identity"),
        "{v:#}"
    );
}

#[test]
fn new_help_names_the_file_it_writes() {
    let run = kvlower(&["new", "--help"]);
    assert!(
        run.stdout.contains("capabilities/<runtime>_<version>.yaml"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("capabilities/<runtime>.yaml"),
        "{}",
        run.stdout
    );
}
