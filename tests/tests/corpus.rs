//! The bad-input corpus (`tests/corpus/`): every case gives its documented
//! exit code and a coded diagnostic naming the file; never a panic.

use std::fs;
use std::path::Path;

use kvlower_tests::{Run, kvlower, scratch_repo};

/// A scratch repository with the real catalog and one descriptor named `name.yaml`.
fn scratch(name: &str, write: impl FnOnce(&Path)) -> (tempfile::TempDir, Run) {
    let dir = scratch_repo(&["capabilities"]);
    write(&dir.path().join(format!("capabilities/{name}.yaml")));
    let run = kvlower(&[
        "check",
        "--color",
        "never",
        "--root",
        &dir.path().display().to_string(),
    ]);
    (dir, run)
}

fn assert_finding(name: &str, run: &Run, expect_location: bool) {
    assert_reported(name, run, 1, expect_location);
}

/// A descriptor kvlower could not read (refused, missing): reported like a finding,
/// but exit 2 (docs/output.md, "Exit codes").
fn assert_unread(name: &str, run: &Run) {
    assert_reported(name, run, 2, false);
}

fn assert_reported(name: &str, run: &Run, code: u8, expect_location: bool) {
    assert_eq!(
        run.code, code,
        "{name}: exit {} with {}",
        run.code, run.stderr
    );
    let file = format!("capabilities/{name}.yaml");
    assert!(
        run.stderr.contains(&file),
        "{name}: the file is not named: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains(": error["),
        "{name}: no coded diagnostic: {}",
        run.stderr
    );
    if expect_location {
        assert!(
            run.stderr.contains(&format!("{file}:")),
            "{name}: no line:column: {}",
            run.stderr
        );
    }
}

/// Cases without a meaningful location (the whole file is the problem).
const NO_LOCATION: &[&str] = &[
    "empty_file",
    "comments_only",
    "anchor_repo_file_missing",
    "duplicate_adapter_depth",
];

/// One snapshot per corpus file (`insta::glob!`): a failing case does not hide
/// the others, and a new file gets its own snapshot.
#[test]
fn committed_corpus_cases() {
    let mut seen = 0;
    insta::with_settings!({ omit_expression => true, prepend_module_to_snapshot => false }, {
        insta::glob!("../corpus", "*.yaml", |path| {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("a UTF-8 corpus file name");
            let bytes = fs::read(path).expect("read");
            let (_dir, run) = scratch(name, |p| fs::write(p, &bytes).expect("write"));
            assert_finding(name, &run, !NO_LOCATION.contains(&name));
            insta::assert_snapshot!("corpus", format!("exit {}\n{}", run.code, run.stderr));
            seen += 1;
        });
    });
    assert!(seen >= 30, "the corpus has {seen} cases");
}

#[test]
fn a_ten_megabyte_line() {
    let (_dir, run) = scratch("long_line", |p| {
        let mut text = String::from("runtime:\n  name: \"");
        text.push_str(&"x".repeat(10 * 1024 * 1024));
        text.push_str("\"\n  version: 1\n  source: simulatr\n");
        fs::write(p, text).expect("write");
    });
    // Over the 1 MiB descriptor cap (docs/files.md): refused before parsing.
    assert_unread("long_line", &run);
    assert!(
        run.stderr.contains("error[file-too-large]"),
        "{}",
        run.stderr
    );
}

#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_unreadable() {
    let (_dir, run) = scratch("dangling", |p| {
        std::os::unix::fs::symlink("/nonexistent/kvlower-corpus", p).expect("symlink");
    });
    assert_unread("dangling", &run);
    assert!(
        run.stderr.contains("error[unreadable-file]"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_directory_named_like_a_descriptor_is_unreadable() {
    let (_dir, run) = scratch("a_directory", |p| fs::create_dir_all(p).expect("mkdir"));
    assert_unread("a_directory", &run);
    assert!(
        run.stderr.contains("error[not-a-regular-file]"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_root_with_no_descriptors_is_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    fs::create_dir_all(dir.path().join("capabilities")).expect("mkdir");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no descriptors found"));
}
