//! `kvlower gate` on awkward inputs and in CI: non-regular files are refused before they
//! are opened, a trace is read up to a byte budget, an unreadable subdirectory is reported
//! while the rest is judged, `--fail-on fail` / `--strict` fail the run, and the output
//! is byte-identical for every `-j`.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test helpers outside #[test] fns"
)]

use std::path::Path;

use kvlower_tests::{kvlower, repo_root};
use serde_json::Value;

const SCENARIOS: &str = "fixtures/traces/scenarios";

fn scenario(name: &str) -> String {
    format!("{SCENARIOS}/{name}.jsonl")
}

fn json(args: &[&str]) -> (u8, Value) {
    let mut argv = vec!["gate", "--format", "json"];
    argv.extend_from_slice(args);
    let run = kvlower(&argv);
    let doc: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run.code, doc)
}

/// The diagnostics of a JSON document as (file, message) pairs.
fn diagnostics(doc: &Value) -> Vec<(String, String)> {
    doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn copy_scenario(name: &str, to: &Path) {
    std::fs::copy(
        repo_root().join("tests").join(scenario(name)),
        to.join(format!("{name}.jsonl")),
    )
    .unwrap();
}

// --- 15 #3: --fail-on fail, --strict, the tally line --------------------------------

#[test]
fn a_failing_campaign_exits_0_by_default_and_1_with_fail_on_fail() {
    let default = kvlower(&["gate", SCENARIOS]);
    assert_eq!(default.code, 0, "{}", default.stderr);
    assert_eq!(
        default.stdout.lines().last(),
        Some("16 runs, 7 passed, 9 failed"),
        "the tally is the last line"
    );
    for flag in [&["--fail-on", "fail"][..], &["--strict"][..]] {
        let mut argv = vec!["gate"];
        argv.extend_from_slice(flag);
        argv.push(SCENARIOS);
        let run = kvlower(&argv);
        assert_eq!(run.code, 1, "{flag:?}: {}", run.stderr);
        assert_eq!(
            run.stdout.lines().last(),
            Some("16 runs, 7 passed, 9 failed")
        );
    }
    // Explicitly the default.
    assert_eq!(
        kvlower(&["gate", "--fail-on", "malformed", SCENARIOS]).code,
        0
    );
    // --strict and --fail-on together are a usage error.
    assert_eq!(
        kvlower(&["gate", "--strict", "--fail-on", "fail", SCENARIOS]).code,
        2
    );
}

#[test]
fn fail_on_fail_passes_when_every_run_passes() {
    let success = scenario("connector_success");
    let failure = scenario("connector_same_claim_failure");
    let reference = scenario("reference_positive");
    let run = kvlower(&["gate", "--strict", &success, &failure, &reference]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.lines().last(),
        Some("3 runs, 3 passed, 0 failed")
    );
    // A single trace also ends with the tally.
    let one = kvlower(&["gate", "--strict", &success]);
    assert_eq!(one.code, 0);
    assert_eq!(
        one.stdout.lines().last(),
        Some("1 runs, 1 passed, 0 failed")
    );
    // A trace with only a rejected control did not pass.
    let control = scenario("connector_generic_counters_only");
    let run = kvlower(&["gate", "--strict", &success, &control]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout.lines().last(),
        Some("2 runs, 1 passed, 1 failed")
    );
}

#[test]
fn json_and_markdown_carry_the_tally() {
    let (code, doc) = json(&["--strict", SCENARIOS]);
    assert_eq!(code, 1);
    assert_eq!(doc["payload"]["campaign"]["runs"], 16);
    assert_eq!(doc["payload"]["campaign"]["passed"], 7);
    assert_eq!(doc["payload"]["campaign"]["failed"], 9);
    let md = kvlower(&["gate", "--format", "markdown", SCENARIOS]);
    assert!(
        md.stdout.contains("| passed runs | 7/16 |"),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout.contains("| failed runs | 9/16 |"),
        "{}",
        md.stdout
    );
}

// --- 12 #8: non-regular files, the byte budget --------------------------------------

#[cfg(unix)]
#[test]
fn a_device_is_refused_without_reading_it() {
    let (code, doc) = json(&["/dev/zero"]);
    assert_eq!(code, 2);
    assert_eq!(
        diagnostics(&doc),
        [(
            "/dev/zero".to_owned(),
            "not a regular file (a character device); refused without reading it".to_owned()
        )]
    );
    assert_eq!(doc["payload"]["campaign"]["runs"], 1);
    assert_eq!(doc["payload"]["campaign"]["failed"], 1);
}

#[cfg(unix)]
#[test]
fn fifos_and_links_to_devices_below_a_directory_are_refused_the_rest_judged() {
    let dir = tempfile::tempdir().unwrap();
    copy_scenario("connector_success", dir.path());
    // A FIFO nobody writes to: opening it for reading would block forever.
    let fifo = dir.path().join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.jsonl")).unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, doc) = json(&[root]);
    assert_eq!(code, 2, "{doc}");
    let found = diagnostics(&doc);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].0.ends_with("fifo.jsonl") && found[0].1.contains("a FIFO"));
    assert!(found[1].0.ends_with("zero.jsonl") && found[1].1.contains("a character device"));
    // The regular trace beside them is judged.
    let results = doc["payload"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1);
    assert!(
        results[0]["trace"]
            .as_str()
            .unwrap()
            .ends_with("connector_success.jsonl")
    );
    assert_eq!(results[0]["gates"]["connector_observation"]["pass"], true);
    // The FIFO named directly is refused too.
    let (code, doc) = json(&[fifo.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(diagnostics(&doc)[0].1.contains("a FIFO"));
}

#[test]
fn a_trace_past_max_bytes_is_cut_and_cannot_pass() {
    let path = scenario("connector_same_claim_failure");
    let len = std::fs::metadata(repo_root().join("tests").join(&path))
        .unwrap()
        .len();
    let (code, doc) = json(&["--max-bytes", &len.to_string(), &path]);
    assert_eq!(code, 0, "{doc}");
    let (code, doc) = json(&["--max-bytes", &(len - 1).to_string(), &path]);
    assert_eq!(code, 2);
    let found = diagnostics(&doc);
    assert!(
        found
            .iter()
            .any(|(_, m)| m.starts_with(&format!("trace longer than {} bytes", len - 1))),
        "{found:?}"
    );
    for row in doc["payload"]["results"].as_array().unwrap() {
        for (gate, g) in row["gates"].as_object().unwrap() {
            assert_eq!(g["pass"], false, "{gate}");
        }
    }
}

// --- 12 (smaller): an unreadable subdirectory ----------------------------------------

/// A subdirectory whose path is longer than the system allows cannot be read, even by
/// root (permission bits do not stop root, so they cannot make this test fail).
#[cfg(unix)]
#[test]
fn an_unreadable_subdirectory_is_reported_and_the_rest_judged() {
    let dir = tempfile::tempdir().unwrap();
    copy_scenario("connector_success", dir.path());
    // 24 levels of 200-byte names: deeper than the 4096-byte path limit. `mkdir -p` with
    // a relative path shorter than the limit, run from a directory whose own path is
    // shorter than the limit, builds it.
    let half = vec!["d".repeat(200); 12].join("/");
    for cwd in [dir.path().to_path_buf(), dir.path().join(&half)] {
        let made = std::process::Command::new("mkdir")
            .args(["-p", &half])
            .current_dir(&cwd)
            .status()
            .unwrap();
        assert!(made.success());
    }
    let touched = std::process::Command::new("touch")
        .arg(format!("{half}/deep.jsonl"))
        .current_dir(dir.path().join(&half))
        .status()
        .unwrap();
    assert!(touched.success());
    let root = dir.path().to_str().unwrap();
    let (code, doc) = json(&[root]);
    assert_eq!(code, 2, "{doc}");
    let found = diagnostics(&doc);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].1.contains("cannot read directory"), "{found:?}");
    let results = doc["payload"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 1, "the readable trace is still judged");
    assert_eq!(results[0]["gates"]["connector_observation"]["pass"], true);
}

// --- issue 34, item 4: a symlinked subdirectory ---------------------------------------

/// The distinct traces of a gate JSON document's verdicts (one verdict per claim).
fn traces_of(doc: &Value) -> std::collections::BTreeSet<String> {
    doc["payload"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["trace"].as_str().unwrap().to_owned())
        .collect()
}

/// A link to a directory outside the walked one was left out of the walk without a
/// word: "1 run" where three traces were reachable, exit 0. Now it is a refused input
/// (exit 2) naming the link, the rest still judged; a link to a directory inside the
/// walked one (a cycle included) adds nothing, each trace counted once by its real
/// path; a broken link (perhaps a directory) is refused too.
#[cfg(unix)]
#[test]
fn a_linked_subdirectory_is_walked_once_or_refused_never_dropped() {
    let outside = tempfile::tempdir().unwrap();
    copy_scenario("connector_multi_claim", outside.path());
    copy_scenario("connector_same_claim_failure", outside.path());
    let dir = tempfile::tempdir().unwrap();
    copy_scenario("connector_success", dir.path());
    std::os::unix::fs::symlink(outside.path(), dir.path().join("more")).unwrap();
    let root = dir.path().to_str().unwrap();
    let (code, doc) = json(&[root]);
    assert_eq!(code, 2, "{doc}");
    let found = diagnostics(&doc);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].0.ends_with("more"), "{found:?}");
    assert!(
        found[0].1.contains("outside the walked directory"),
        "{found:?}"
    );
    assert_eq!(traces_of(&doc).len(), 1);
    // Named as a PATH of its own, the target's traces are judged.
    let (code, doc) = json(&[root, outside.path().to_str().unwrap()]);
    assert_eq!(code, 2, "the link is still reported: {doc}");
    assert_eq!(traces_of(&doc).len(), 3);

    // Inside: a link to a sibling and a link to the walked directory itself (a cycle).
    let inside = tempfile::tempdir().unwrap();
    std::fs::create_dir(inside.path().join("real")).unwrap();
    copy_scenario("connector_success", &inside.path().join("real"));
    copy_scenario("connector_multi_claim", inside.path());
    std::os::unix::fs::symlink("real", inside.path().join("alias")).unwrap();
    std::os::unix::fs::symlink("..", inside.path().join("real/up")).unwrap();
    let (code, doc) = json(&[inside.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
    let traces = traces_of(&doc);
    assert_eq!(traces.len(), 2, "{traces:?}");
    assert!(
        traces
            .iter()
            .all(|t| !t.contains("alias") && !t.contains("up/")),
        "{traces:?}"
    );

    // A broken link is refused: it may have been a directory of traces.
    std::os::unix::fs::symlink("gone", inside.path().join("lost")).unwrap();
    let (code, doc) = json(&[inside.path().to_str().unwrap()]);
    assert_eq!(code, 2, "{doc}");
    let found = diagnostics(&doc);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].0.ends_with("lost") && found[0].1.contains("cannot be reached"),
        "{found:?}"
    );
}

// --- issue 34, item 6: strict JSON ---------------------------------------------------

/// RFC 8259 forbids a raw control character inside a string (key or value) and allows
/// only space, tab, line feed and carriage return around a value; Python's `json`
/// refuses all of these lines. The gate took a form feed around the object as
/// whitespace (exit 0, no diagnostic). Each line is now malformed (exit 1, a diagnostic
/// at its line), on one thread and on the pool alike.
#[test]
fn raw_control_characters_and_form_feeds_are_not_json() {
    let text = std::fs::read_to_string(
        repo_root()
            .join("tests")
            .join(scenario("connector_success")),
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let second = lines[1];
    assert!(second.contains("\"prefix_id\":\"prefix:fixture:claim-a\""));
    assert!(second.contains("\"hook_scope\":\"fixture_scope\""));
    let attacks: Vec<(&str, String)> = vec![
        (
            "raw TAB in a declared string value",
            second.replace("\"prefix:fixture", "\"prefix:\tfixture"),
        ),
        (
            "raw CR in a declared string value",
            second.replace("\"prefix:fixture", "\"prefix:\rfixture"),
        ),
        (
            "raw TAB in another string value",
            second.replace("fixture_scope", "fixture\tscope"),
        ),
        (
            "raw TAB in a declared key",
            second.replace("\"prefix_id\"", "\"prefix_id\t\""),
        ),
        (
            "raw U+0001 in an unknown key",
            second.replacen('{', "{\"x\u{1}y\":1,", 1),
        ),
        (
            "raw U+001F in an unknown string value",
            second.replacen('{', "{\"x\":\"a\u{1f}\",", 1),
        ),
        ("form feed before the object", format!("\u{c}{second}")),
        ("form feed after the object", format!("{second}\u{c}")),
        ("vertical tab after the object", format!("{second}\u{b}")),
        ("a line of only a form feed", format!("\u{c}\n{second}")),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, attack) in attacks {
        let mut body = vec![lines[0].to_string(), attack];
        body.extend(lines[2..].iter().map(|l| (*l).to_string()));
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, body.join("\n") + "\n").unwrap();
        for jobs in ["1", "2"] {
            let (code, doc) = json(&["-j", jobs, path.to_str().unwrap()]);
            assert_eq!(code, 1, "{what} (-j {jobs}): {doc}");
            let found = doc["diagnostics"].as_array().unwrap();
            assert!(
                found.iter().any(|d| d["line"] == 2),
                "{what} (-j {jobs}): {doc}"
            );
        }
    }
    // The control: JSON whitespace (space, tab, CR) around and inside the object, and an
    // escaped tab in a kept string, pass.
    let spaced = second
        .replacen(':', " :\t", 1)
        .replace("\"prefix:fixture:claim-a\"", "\"prefix:fixture:claim-a\" ");
    let escaped = spaced.replace("\"0-fixture\"", "\"0-fix\\tture\"").replace(
        "\"prefix:fixture:claim-a\"",
        "\"prefix:fixture:claim\\u002da\"",
    );
    assert_ne!(escaped, spaced);
    let mut body = vec![lines[0].to_string(), format!(" \t{escaped}\t \r")];
    body.extend(lines[2..].iter().map(|l| (*l).to_string()));
    let path = dir.path().join("t.jsonl");
    std::fs::write(&path, body.join("\n") + "\n").unwrap();
    let (code, doc) = json(&[path.to_str().unwrap()]);
    assert_eq!(code, 0, "{doc}");
}

// --- 16: -j 1 and the default give the same bytes -----------------------------------

#[test]
fn output_is_byte_identical_for_every_jobs_count() {
    // Enough files for several batches on the pool, in nested directories.
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = std::fs::read_dir(repo_root().join("tests").join(SCENARIOS))
        .unwrap()
        .map(|e| {
            e.unwrap()
                .path()
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    for copy in 0..20 {
        let sub = dir.path().join(format!("copy-{copy:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        for name in &names {
            copy_scenario(name, &sub);
        }
    }
    std::fs::write(dir.path().join("copy-07/broken.jsonl"), "{not json\n").unwrap();
    let root = dir.path().to_str().unwrap();
    for format in ["human", "json", "markdown", "github"] {
        let one = kvlower(&["gate", "--format", format, "-j", "1", root]);
        let default = kvlower(&["gate", "--format", format, root]);
        let three = kvlower(&["gate", "--format", format, "-j", "3", root]);
        assert_eq!(one.code, 1);
        // `github` prints the human report on stderr (stdout: the annotations only).
        assert!(
            one.stdout.len() + one.stderr.len() > 40_000,
            "{format}: {} bytes",
            one.stdout.len() + one.stderr.len()
        );
        assert!(
            one.stdout == default.stdout,
            "{format}: -j 1 and default differ"
        );
        assert!(one.stdout == three.stdout, "{format}: -j 1 and -j 3 differ");
        assert_eq!(one.stderr, default.stderr, "{format}");
        assert_eq!((one.code, default.code), (three.code, three.code));
    }
    assert_eq!(kvlower(&["gate", "-j", "0", root]).code, 2);
}

#[test]
fn a_large_trace_parsed_on_the_pool_is_judged_as_on_one_thread() {
    // Over the 16 MiB of a "small" file, so it streams alone, its lines parsed on the pool
    // unless `-j 1`: the same verdicts and diagnostics, in the same order.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.jsonl");
    let events: Vec<serde_json::Map<String, Value>> = std::fs::read_to_string(
        repo_root()
            .join("tests")
            .join(scenario("connector_same_claim_failure")),
    )
    .unwrap()
    .lines()
    .filter_map(|l| serde_json::from_str(l).ok())
    .collect();
    let pad = "p".repeat(1500);
    let mut text = String::from("\n");
    let mut seq = 0u64;
    let mut copy = 0u64;
    while text.len() <= (16 << 20) + (1 << 20) {
        let claim = format!("claim-{copy}");
        for e in &events {
            let mut e = e.clone();
            seq += 1;
            e.insert("event_sequence".into(), seq.into());
            e.insert("pad".into(), pad.clone().into());
            for key in ["claim_id", "resident_claim_id"] {
                if e.contains_key(key) {
                    e.insert(key.into(), claim.clone().into());
                }
            }
            text.push_str(&serde_json::to_string(&e).unwrap());
            text.push('\n');
        }
        if copy % 97 == 5 {
            text.push_str("{not json\r\n\n");
        }
        copy += 1;
    }
    std::fs::write(&path, &text).unwrap();
    let path = path.to_str().unwrap();
    let one = kvlower(&["gate", "--format", "json", "-j", "1", path]);
    let two = kvlower(&["gate", "--format", "json", "-j", "2", path]);
    assert_eq!(one.code, 1);
    assert!(one.stdout.len() > 100_000, "{} bytes", one.stdout.len());
    assert!(one.stdout == two.stdout, "-j 1 and -j 2 differ");
    assert_eq!((one.code, one.stderr), (two.code, two.stderr));
}
