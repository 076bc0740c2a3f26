//! Issue 36, item 5: the docs are tested.
//!
//! - Every ```` ```console ```` block of README.md and docs/*.md is run, and what it
//!   shows is compared with what kvlower prints. A block is a session: `$ ` starts a
//!   command, the lines after it (until the next `$ ` or the end of the block) are its
//!   output — stderr, then stdout — and a last line `? N` its exit code when not 0.
//!   In the expected output, a line `...` stands for any lines, and `[..]` for any text
//!   within a line. `$ kvlower ...` runs kvlower in-process; any other command runs
//!   with `sh -c` (and its output is not compared). A block whose info string says
//!   `console scratch` runs in a new, empty directory; any other runs at the root of
//!   this repository and must not write there.
//! - Every other command line in a code block (`kvlower ...`, `cargo run -q -- ...`)
//!   must parse with kvlower's own command line: an example with a flag that is gone
//!   fails here.
//! - (Links, anchors and whether each file renders as it reads: `docs_render.rs`, with a
//!   CommonMark parser.)
//!
//! Re-bless after an intended change of output (e.g. after merging):
//! `KVLOWER_BLESS_DOCS=1 cargo test -p kvlower-tests --test integration docs_examples::`
//! rewrites each block's output with what kvlower prints now (a line still matched by
//! a wildcard keeps its wildcard); review the diff and commit it.

use std::fs;
use std::path::{Path, PathBuf};

use kvlower_tests::{kvlower_in, repo_root};

/// The Markdown files whose examples and links are checked.
fn doc_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn bless() -> bool {
    std::env::var_os("KVLOWER_BLESS_DOCS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// One ```` ```console ```` block: its line range (the lines between the fences)
/// and whether it runs in a scratch directory.
struct Block {
    /// Index of the first line after the opening fence.
    start: usize,
    /// Index of the closing fence.
    end: usize,
    scratch: bool,
}

fn console_blocks(lines: &[&str]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let info = lines[i].trim_start().strip_prefix("```");
        let Some(info) = info else {
            i += 1;
            continue;
        };
        let close = (i + 1..lines.len())
            .find(|&j| lines[j].trim_start().starts_with("```"))
            .unwrap_or(lines.len());
        let mut words = info.split_whitespace();
        if words.next() == Some("console") {
            blocks.push(Block {
                start: i + 1,
                end: close,
                scratch: words.any(|w| w == "scratch"),
            });
        }
        i = close + 1;
    }
    blocks
}

/// Splits a command line like a POSIX shell would for simple words: spaces
/// separate, single and double quotes group (no escapes, no expansion).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Whether `actual` matches `expected` line by line (`...` any lines, `[..]` any text).
fn matches(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((first, rest)) if first == "..." => {
            (0..=actual.len()).any(|skip| matches(rest, &actual[skip..]))
        }
        Some((first, rest)) => actual
            .split_first()
            .is_some_and(|(a, more)| line_matches(first, a) && matches(rest, more)),
    }
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let parts: Vec<&str> = expected.split("[..]").collect();
    if parts.len() == 1 {
        return expected == actual;
    }
    let Some(rest) = actual.strip_prefix(parts[0]) else {
        return false;
    };
    let mut rest = rest;
    for (i, part) in parts.iter().enumerate().skip(1) {
        if i == parts.len() - 1 {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The output a reader sees for one run: stderr, then stdout, then `? N`.
fn shown(code: u8, stdout: &str, stderr: &str) -> Vec<String> {
    let mut lines: Vec<String> = stderr
        .lines()
        .chain(stdout.lines())
        .map(|l| l.trim_end().to_string())
        .collect();
    if code != 0 {
        lines.push(format!("? {code}"));
    }
    lines
}

/// Runs every console block of `file`; returns the failures and, when blessing,
/// the file's new text.
fn run_file(file: &Path) -> (Vec<String>, Option<String>) {
    let text = fs::read_to_string(file).expect("read");
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    let mut out: Vec<String> = Vec::new();
    let mut copied = 0;
    for block in console_blocks(&lines) {
        out.extend(lines[copied..block.start].iter().map(|l| l.to_string()));
        let scratch = tempfile::tempdir().expect("tempdir");
        let dir = if block.scratch {
            scratch.path().to_path_buf()
        } else {
            repo_root()
        };
        let body = &lines[block.start..block.end];
        let mut i = 0;
        while i < body.len() {
            let Some(command) = body[i].strip_prefix("$ ") else {
                failures.push(format!(
                    "{}:{}: a console block starts with `$ `",
                    file.display(),
                    block.start + i + 1
                ));
                out.push(body[i].to_string());
                i += 1;
                continue;
            };
            out.push(body[i].to_string());
            let next = (i + 1..body.len())
                .find(|&j| body[j].starts_with("$ "))
                .unwrap_or(body.len());
            let expected: Vec<String> = body[i + 1..next].iter().map(|l| l.to_string()).collect();
            let words = shell_words(command);
            let actual = if words.first().map(String::as_str) == Some("kvlower") {
                let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
                let run = kvlower_in(&dir, &args);
                let actual = shown(run.code, &run.stdout, &run.stderr);
                // In-process, the root is named by its absolute path; a person who ran
                // the command in that directory sees `.` (and the repository's root
                // as `[ROOT]`).
                let root = dir.display().to_string();
                let shown_root = if block.scratch { "." } else { "[ROOT]" };
                actual
                    .into_iter()
                    .map(|l| {
                        l.replace(&format!("{root}/."), shown_root)
                            .replace(&root, shown_root)
                    })
                    .collect()
            } else {
                let status = std::process::Command::new("sh")
                    .arg("-c")
                    .arg(command)
                    .current_dir(&dir)
                    .output()
                    .expect("sh");
                if !status.status.success() && !command.starts_with("git ") {
                    failures.push(format!(
                        "{}:{}: `{command}` failed: {}",
                        file.display(),
                        block.start + i + 1,
                        String::from_utf8_lossy(&status.stderr)
                    ));
                }
                expected.clone()
            };
            if matches(&expected, &actual) {
                out.extend(expected);
            } else {
                failures.push(format!(
                    "{}:{}: `{command}` printed\n{}\n--- the docs show\n{}",
                    file.display(),
                    block.start + i + 1,
                    actual.join("\n"),
                    expected.join("\n")
                ));
                out.extend(blessed(&expected, &actual));
            }
            i = next;
        }
        copied = block.end;
    }
    out.extend(lines[copied..].iter().map(|l| l.to_string()));
    let mut new_text = out.join("\n");
    if text.ends_with('\n') {
        new_text.push('\n');
    }
    (failures, (new_text != text).then_some(new_text))
}

/// The new expected output: the actual lines, keeping an old line that still
/// matches its actual line (so a `[..]` stays where it still fits).
fn blessed(expected: &[String], actual: &[String]) -> Vec<String> {
    actual
        .iter()
        .enumerate()
        .map(|(i, a)| match expected.get(i) {
            Some(e) if e != "..." && line_matches(e, a) => e.clone(),
            _ => a.clone(),
        })
        .collect()
}

#[test]
fn the_console_examples_in_the_docs_print_what_they_show() {
    let mut failures = Vec::new();
    let mut blocks = 0;
    for file in doc_files() {
        let text = fs::read_to_string(&file).expect("read");
        blocks += console_blocks(&text.lines().collect::<Vec<_>>()).len();
        let (found, new_text) = run_file(&file);
        if bless() {
            if let Some(new_text) = new_text {
                fs::write(&file, new_text).expect("bless");
            }
        } else {
            failures.extend(found);
        }
    }
    assert!(blocks >= 2, "the docs have console examples ({blocks})");
    assert!(
        failures.is_empty(),
        "{}\n\nre-bless with KVLOWER_BLESS_DOCS=1 cargo test -p kvlower-tests --test integration docs_examples:: (and review the diff)",
        failures.join("\n\n")
    );
}

/// Every `kvlower ...` or `cargo run -q -- ...` line in a code block (indented or
/// fenced, outside the console blocks) parses with kvlower's command line. Lines
/// with `[`, `|` or `...` are synopses (optional parts, alternatives), not commands.
#[test]
fn every_command_line_in_the_docs_parses() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in doc_files() {
        let text = fs::read_to_string(&file).expect("read");
        let mut fenced = false;
        let mut console = false;
        for (n, line) in text.lines().enumerate() {
            if let Some(info) = line.trim_start().strip_prefix("```") {
                fenced = !fenced;
                console = fenced && info.starts_with("console");
                continue;
            }
            // In a console block only `$ ` lines are commands (the rest is output).
            if console && !line.starts_with("$ ") {
                continue;
            }
            let code = if fenced {
                line.trim_start()
            } else if let Some(code) = line.strip_prefix("    ") {
                code.trim_start()
            } else {
                continue;
            };
            let code = code.strip_prefix("$ ").unwrap_or(code);
            let code = code.split(" #").next().unwrap_or(code).trim();
            let rest = if let Some(rest) = code.strip_prefix("kvlower ") {
                rest
            } else if let Some(rest) = code
                .strip_prefix("cargo run -q -- ")
                .or_else(|| code.strip_prefix("cargo run --locked -q -- "))
                .or_else(|| code.strip_prefix("cargo run --locked -- "))
            {
                rest
            } else {
                continue;
            };
            if rest.contains('[')
                || rest.contains('|')
                || rest.contains("...")
                || rest.contains('<')
            {
                continue;
            }
            let words = shell_words(rest);
            let argv = std::iter::once("kvlower".to_string()).chain(words);
            checked += 1;
            if let Err(e) = kvlower_cli::command().try_get_matches_from(argv) {
                let kind = e.kind();
                if !matches!(
                    kind,
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                ) {
                    failures.push(format!(
                        "{}:{}: `{code}`: {}",
                        file.display(),
                        n + 1,
                        e.render()
                    ));
                }
            }
        }
    }
    assert!(checked >= 4, "found {checked} command lines");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The checker of this file works: a wildcard matches, a changed line does not.
#[test]
fn the_docs_checker_catches_drift() {
    let e = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&e(&["a", "...", "z"]), &e(&["a", "b", "c", "z"])));
    assert!(matches(
        &e(&["wrote [..].yaml"]),
        &e(&["wrote capabilities/x.yaml"])
    ));
    assert!(!matches(&e(&["0 finding(s)"]), &e(&["1 finding(s)"])));
    assert!(!matches(&e(&["a"]), &e(&["a", "? 1"])));
    assert_eq!(
        shell_words("new \"My Runtime\" --version 1.2.0"),
        ["new", "My Runtime", "--version", "1.2.0"]
    );
}

/// The README table's markers, as docs/config.md gives them, are the ones
/// `kvlower matrix` looks for.
#[test]
fn the_readme_table_markers_are_documented_as_they_are() {
    let config = fs::read_to_string(repo_root().join("docs/config.md")).expect("read");
    for marker in [kvlower_cli::readme::BEGIN, kvlower_cli::readme::END] {
        assert!(
            config.contains(&format!("    {marker}\n")),
            "docs/config.md shows {marker}"
        );
    }
}

/// docs/overview.md's contract of results/lowering-matrix.json names every key a
/// row of the generated file has (the generated file is the source of truth).
#[test]
fn the_matrix_contract_names_every_key_of_a_row() {
    let overview = fs::read_to_string(repo_root().join("docs/overview.md")).expect("read");
    let contract = overview
        .split("## The JSON contract of `results/lowering-matrix.json`")
        .nth(1)
        .expect("the contract section");
    let contract = contract.split("\n## ").next().unwrap_or(contract);
    let matrix: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(repo_root().join("results/lowering-matrix.json")).expect("read"),
    )
    .expect("json");
    let mut keys: Vec<String> = matrix.as_object().unwrap().keys().cloned().collect();
    keys.extend(
        matrix["rows"][0]
            .as_object()
            .expect("a row")
            .keys()
            .cloned(),
    );
    for key in keys {
        assert!(
            (contract.contains(&format!("`{key}`")) || contract.contains(&format!("\"{key}\""))),
            "the contract names `{key}`"
        );
    }
}
