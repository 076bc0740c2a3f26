//! Issue 42, item 4: a GitHub annotation is one line whatever the names and messages it
//! carries. `gate --format github` escaped `%`, `,` and `:` in a trace's file name but not
//! a line feed, so a trace named `a<LF>b.jsonl` printed an annotation GitHub reads as two
//! lines. Every command that prints annotations shares one escaper, GitHub's own
//! (actions/toolkit `escapeData`: `%` `%25`, CR `%0D`, LF `%0A`; `escapeProperty`: those
//! and `:` `%3A`, `,` `%2C`; docs/output.md).

use std::fs;

use kvlower_tests::{kvlower, scratch_repo};

/// GitHub's own unescaping of a property (actions/toolkit, the runner's reader).
fn unescape_property(s: &str) -> String {
    s.replace("%0D", "\r")
        .replace("%0A", "\n")
        .replace("%3A", ":")
        .replace("%2C", ",")
        .replace("%25", "%")
}

fn file_property(line: &str) -> String {
    let props = line
        .strip_prefix("::error ")
        .or_else(|| line.strip_prefix("::warning "))
        .expect("a workflow command");
    let props = &props[..props.find("::").expect("the message separator")];
    let file = props
        .split(',')
        .find_map(|p| p.strip_prefix("file="))
        .expect("a file property");
    unescape_property(file)
}

#[test]
fn a_trace_name_with_a_line_feed_is_one_annotation() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["a\nb,c:d%0A.jsonl", "cr\r.jsonl"] {
        let path = dir.path().join(name);
        fs::write(&path, "{\"not\": \"a trace\"}\nnot json\n").expect("write");
        let shown = path.display().to_string();
        let run = kvlower(&["gate", "--format", "github", &shown]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(!run.stdout.is_empty(), "{}", run.stderr);
        for line in run.stdout.lines() {
            assert!(
                line.starts_with("::error "),
                "one line per annotation: {line:?}"
            );
            assert!(!line.contains('\r'), "{line:?}");
            assert_eq!(file_property(line), shown, "{line:?}");
        }
    }
}

#[test]
fn check_and_gate_escape_a_file_name_alike() {
    // A descriptor whose name holds `%`, `,` and `:` (a line feed is its own finding).
    let dir = scratch_repo(&["capabilities"]);
    let name = "capabilities/x%2C,y:z.yaml";
    fs::write(dir.path().join(name), "runtime: 1\n").expect("write");
    let run = kvlower(&[
        "check",
        "--root",
        &dir.path().display().to_string(),
        "--format",
        "github",
    ]);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("::error ") && l.contains("x%252C"))
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert_eq!(file_property(line), name, "{line}");
}
