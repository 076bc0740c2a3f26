//! Issue 50, item 3: each problem `kvlower gate` finds in a trace is a `Finding`, with
//! the byte column of the offending byte when the parser knows it, written by the shared
//! renderers of findings (human, GitHub annotations, the JSON envelope, Markdown, SARIF);
//! the output module never sees the trace crate's `LocatedProblem` (held in
//! `architecture.rs` with the other source scans).

use std::fs;
use std::path::Path;

use kvlower_tests::kvlower;

/// A trace whose line 2 has two bytes of indentation, then an invalid UTF-8 byte 11
/// bytes into the object: column 2 + 11 + 1 = 14 of its line.
const BAD_BYTE_TRACE: &[u8] = b"{\"event\":\"a\",\"event_sequence\":1}\n  {\"event\":\"x\xffy\"}\n";

fn bad_byte_trace(dir: &Path) -> String {
    let path = dir.join("t.jsonl");
    fs::write(&path, BAD_BYTE_TRACE).expect("write");
    path.display().to_string()
}

#[test]
fn a_bad_byte_has_its_column_in_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = bad_byte_trace(dir.path());

    let human = kvlower(&["gate", "--color", "never", &trace]);
    assert_eq!(human.code, 1, "{}", human.stderr);
    let line = format!("{trace}:2:14: error[malformed-trace]: not JSON: invalid UTF-8 at byte 11");
    assert!(human.stderr.lines().any(|l| l == line), "{}", human.stderr);

    let json = kvlower(&["gate", "--format", "json", &trace]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    let d = &doc["diagnostics"][0];
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(14)),
        "{d}"
    );
    // A problem with no byte position has no column.
    let whole = &doc["diagnostics"][1];
    assert!(whole["column"].is_null(), "{whole}");

    let sarif = kvlower(&["gate", "--format", "sarif", &trace]);
    assert_eq!(sarif.code, 1, "{}", sarif.stderr);
    let log: serde_json::Value = serde_json::from_str(&sarif.stdout).expect("one SARIF log");
    let region = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 2, "{region}");
    assert_eq!(region["startColumn"], 14, "{region}");

    let github = kvlower(&["gate", "--format", "github", &trace]);
    assert!(
        github.stdout.contains(",line=2,col=14,"),
        "{}",
        github.stdout
    );
    let markdown = kvlower(&["gate", "--format", "markdown", &trace]);
    assert!(
        markdown.stdout.contains(" | 2:14 | `malformed-trace` | "),
        "{}",
        markdown.stdout
    );
}

/// The shared escaper: a trace named with a line feed and a `%` is one annotation per
/// problem, its name `%0A` and `%25` (a bare `%` would be read back as an escape).
#[test]
fn a_trace_name_with_a_line_feed_and_a_percent_is_escaped_by_the_shared_escaper() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("50%\nx.jsonl");
    fs::write(&path, BAD_BYTE_TRACE).expect("write");
    let run = kvlower(&["gate", "--format", "github", &path.display().to_string()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.stdout);
    for line in &lines {
        assert!(line.starts_with("::error file="), "{line:?}");
        assert!(line.contains("50%25%0Ax.jsonl,"), "{line:?}");
    }
    assert!(lines[0].contains(",line=2,col=14,"), "{}", lines[0]);
}
