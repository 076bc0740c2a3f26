//! One stream policy for every command (issue 50 item 2; docs/output.md, "Streams"):
//! every command's outcome is rendered in one place, so whatever the command, in every
//! format it takes,
//! - a stopped run's findings are on stderr and its one-line summary is the last line of
//!   stdout (human, github);
//! - a machine format is exactly one document on stdout and nothing on stderr (json,
//!   markdown, sarif);
//! - a document (a schema, a code, completions) is stdout alone.
//!
//! The attack: before the one renderer, `matrix`, `bad-lowering`, `new` and `schema`
//! put their stopped summary on stderr (or none at all), and `check` on stdout.

use kvlower_tests::{Run, kvlower};

/// A repository whose catalog does not parse, with one descriptor: every command that
/// reads the catalog stops on it before doing anything.
fn broken_catalog() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for sub in ["modes", "capabilities"] {
        std::fs::create_dir_all(root.join(sub)).expect("mkdir");
    }
    std::fs::write(root.join("modes/modes.yaml"), "modes: [unclosed\n").expect("write");
    std::fs::write(
        root.join("capabilities/x_1.yaml"),
        "runtime: {name: x, version: \"1\"}\n",
    )
    .expect("write");
    dir
}

/// The formats each command takes, by its name in the summary.
fn formats(command: &str) -> &'static [&'static str] {
    match command {
        "check" | "gate" => &["human", "json", "github", "markdown", "sarif"],
        "explain" | "catalog diff" => &["human", "json", "github", "markdown"],
        "schema" => &["human"],
        _ => &["human", "json"],
    }
}

/// Each command that reads the catalog, by its summary name, and its arguments.
fn stopping_commands(root: &str) -> Vec<(&'static str, Vec<String>)> {
    let owned = |args: &[&str]| args.iter().map(|a| (*a).to_string()).collect::<Vec<_>>();
    let descriptor = format!("{root}/capabilities/x_1.yaml");
    let campaign = format!("{root}/gate-campaign.json");
    vec![
        ("check", owned(&["check", "--root", root])),
        ("matrix", owned(&["matrix", "--root", root])),
        ("bad-lowering", owned(&["bad-lowering", "--root", root])),
        ("explain", owned(&["explain", &descriptor, "--root", root])),
        ("catalog diff", owned(&["catalog", "diff", "--root", root])),
        (
            "new",
            owned(&["new", "y", "--version", "1", "--root", root]),
        ),
        ("schema", owned(&["schema", "modes", "--root", root])),
        (
            "gate",
            owned(&["gate", "--campaign", &campaign, "--root", root]),
        ),
    ]
}

fn run(args: &[String], format: &str) -> Run {
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    // `human` is every command's default (and `schema` takes no `--format`).
    if format != "human" {
        args.extend(["--format", format]);
    }
    kvlower(&args)
}

fn assert_one_json_document(r: &Run, what: &str) -> serde_json::Value {
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: stdout is not one JSON document ({e}):\n{}",
            r.stdout
        )
    });
    assert_eq!(
        r.stderr, "",
        "{what}: stderr must be empty in a machine format"
    );
    doc
}

#[test]
fn a_stopped_run_has_one_stream_policy_in_every_command_and_format() {
    let dir = broken_catalog();
    let root = dir.path().to_str().expect("UTF-8 temp path");
    for (command, args) in stopping_commands(root) {
        for &format in formats(command) {
            let what = format!("kvlower {} --format {format}", args.join(" "));
            let r = run(&args, format);
            assert_ne!(r.code, 0, "{what}: a broken catalog stops it");
            match format {
                "human" | "github" => {
                    let last = r.stdout.lines().last().unwrap_or_default();
                    assert!(
                        last.starts_with(&format!("kvlower {command}: ")),
                        "{what}: the summary is the last line of stdout; stdout:\n{}\nstderr:\n{}",
                        r.stdout,
                        r.stderr
                    );
                    assert!(
                        r.stderr.contains("modes/modes.yaml"),
                        "{what}: the findings are on stderr:\n{}",
                        r.stderr
                    );
                    let others = r.stdout.lines().rev().skip(1);
                    for line in others {
                        assert!(
                            format == "github" && line.starts_with("::error"),
                            "{what}: nothing but the annotations before the summary: {line}"
                        );
                    }
                }
                "json" => {
                    let doc = assert_one_json_document(&r, &what);
                    assert_eq!(doc["command"], serde_json::json!(command), "{what}");
                    assert_eq!(doc["ok"], serde_json::json!(false), "{what}");
                    assert!(
                        doc["diagnostics"].as_array().is_some_and(|d| !d.is_empty()),
                        "{what}: the findings are in the envelope"
                    );
                }
                "sarif" => {
                    let doc = assert_one_json_document(&r, &what);
                    assert_eq!(doc["version"], serde_json::json!("2.1.0"), "{what}");
                }
                "markdown" => {
                    assert!(
                        r.stdout.starts_with(&format!("### kvlower {command}\n")),
                        "{what}: one Markdown document:\n{}",
                        r.stdout
                    );
                    assert_eq!(r.stderr, "", "{what}: stderr must be empty in Markdown");
                }
                other => panic!("no expectation for format {other}"),
            }
        }
    }
}

/// A usage error found by a command (not by clap) is `error: ...` on stderr and nothing
/// on stdout; under `--format json`, the envelope alone.
#[test]
fn a_usage_error_has_one_stream_policy_in_every_command() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("UTF-8 temp path");
    let missing = format!("{root}/missing");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("check", vec!["check", "--root", root]),
        ("matrix", vec!["matrix", "--root", root]),
        ("explain", vec!["explain", &missing, "--root", root]),
        ("explain-code", vec!["explain-code", "nope"]),
        ("gate", vec!["gate", root]),
        (
            "capture",
            vec!["capture", "--endpoint", "nope", "--out", &missing],
        ),
        (
            "join",
            vec!["join", "--registry", &missing, "--events", &missing],
        ),
    ];
    for (command, args) in cases {
        let what = format!("kvlower {}", args.join(" "));
        let human = kvlower(&args);
        assert_eq!(human.code, 2, "{what}");
        assert_eq!(human.stdout, "", "{what}: nothing on stdout");
        assert!(
            human.stderr.starts_with("error: "),
            "{what}: {}",
            human.stderr
        );
        let mut json_args = args.clone();
        json_args.extend(["--format", "json"]);
        let json = kvlower(&json_args);
        let doc = assert_one_json_document(&json, &what);
        assert_eq!(doc["command"], serde_json::json!(command), "{what}");
        assert_eq!(doc["exit_code"], serde_json::json!(2), "{what}");
    }
}

/// A document is stdout alone, in every format its command takes.
#[test]
fn a_document_is_stdout_alone() {
    for args in [
        vec!["schema", "descriptor"],
        vec!["completions", "bash"],
        vec!["codes"],
        vec!["codes", "--format", "markdown"],
        vec!["explain-code", "stale-result"],
        vec!["explain-code", "stale-result", "--format", "github"],
    ] {
        let r = kvlower(&args);
        assert_eq!(r.code, 0, "{args:?}");
        assert_eq!(r.stderr, "", "{args:?}: nothing on stderr");
        assert!(!r.stdout.is_empty(), "{args:?}: the document is on stdout");
    }
    let r = kvlower(&["codes", "--format", "json"]);
    assert_one_json_document(&r, "codes --format json");
}
