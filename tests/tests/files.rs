//! Every file kvlower reads or writes (docs/files.md): reads are confined,
//! regular-file-only, capped and never block; the generated set is written
//! all together; stale results are compared with a bounded diff.
//!
//! The FIFOs, device links and symbolic links are made in temporary copies
//! of the repository. Runs that must not hang go through [`within`], which
//! fails the test instead of hanging the suite.

#![cfg(unix)]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use kvlower_tests::{Run, kvlower, repo_root, sandbox};

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// Runs kvlower in-process on a thread; a run that blocks fails the test
/// after 60 s (the property is "never blocks", not a speed target).
fn within(args: &[&str]) -> Run {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = tx.send(kvlower(&args));
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("kvlower blocked on a file")
}

fn check(dir: &tempfile::TempDir) -> Run {
    within(&["check", "--root", &dir.path().display().to_string()])
}

fn matrix(dir: &tempfile::TempDir) -> Run {
    within(&["matrix", "--root", &dir.path().display().to_string()])
}

// ---- #1: FIFOs never hang a run -------------------------------------------

#[test]
fn a_fifo_descriptor_is_refused_without_hanging() {
    let dir = sandbox();
    mkfifo(&dir.path().join("capabilities/x.yaml"));
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("capabilities/x.yaml: error[not-a-regular-file]"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("FIFO"), "{}", run.stderr);
}

#[test]
fn a_fifo_catalog_is_refused_without_hanging() {
    let dir = sandbox();
    fs::remove_file(dir.path().join("modes/modes.yaml")).expect("rm");
    mkfifo(&dir.path().join("modes/modes.yaml"));
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("modes/modes.yaml: error[not-a-regular-file]"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_fifo_result_is_refused_not_missing_and_never_read() {
    let dir = sandbox();
    let path = dir.path().join("results/lowering-matrix.md");
    fs::remove_file(&path).expect("rm");
    mkfifo(&path);
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("results/lowering-matrix.md: error[not-a-regular-file]"),
        "{}",
        run.stderr
    );
}

/// Every generated file `check` reads back — each result, each schema, and the
/// matrix whose catalog digest `check` compares — refused as a FIFO, never opened.
#[test]
fn no_generated_file_as_a_fifo_hangs_check() {
    let generated: Vec<String> = ["results", "schemas"]
        .iter()
        .flat_map(|d| {
            fs::read_dir(repo_root().join(d))
                .expect("read_dir")
                .flatten()
                .map(move |e| format!("{d}/{}", e.file_name().to_string_lossy()))
        })
        .collect();
    assert!(
        generated
            .iter()
            .any(|f| f == "results/lowering-matrix.json")
    );
    // Every generated file a FIFO at once, in one check: opening any one of them would
    // block the run (and time the test out), and each must be reported on its own.
    let dir = sandbox();
    for file in &generated {
        let path = dir.path().join(file);
        fs::remove_file(&path).expect("rm");
        mkfifo(&path);
    }
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    for file in &generated {
        assert!(
            run.stderr
                .contains(&format!("{file}: error[not-a-regular-file]")),
            "{file}: {}",
            run.stderr
        );
    }
}

#[test]
fn a_fifo_bad_lowering_case_is_a_failing_case_not_a_skip_or_a_hang() {
    let dir = sandbox();
    mkfifo(&dir.path().join("bad_lowering/99_fifo.yaml"));
    let run = check(&dir);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("audit-suite-failed"), "{}", run.stderr);
    assert!(run.stderr.contains("99_fifo"), "{}", run.stderr);
}

// ---- #2: devices are never read -------------------------------------------

#[test]
fn dev_zero_as_a_descriptor_or_catalog_is_refused() {
    let dir = sandbox();
    symlink("/dev/zero", dir.path().join("capabilities/zero.yaml")).expect("symlink");
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("capabilities/zero.yaml: error[file-outside-root]"),
        "{}",
        run.stderr
    );

    let dir = sandbox();
    fs::remove_file(dir.path().join("modes/modes.yaml")).expect("rm");
    symlink("/dev/zero", dir.path().join("modes/modes.yaml")).expect("symlink");
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("modes/modes.yaml: error[file-outside-root]"),
        "{}",
        run.stderr
    );
}

#[test]
fn dev_zero_named_on_the_command_line_is_refused() {
    let dir = sandbox();
    let run = within(&[
        "explain",
        "/dev/zero",
        "--root",
        &dir.path().display().to_string(),
    ]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        format!("{}{}", run.stdout, run.stderr).contains("not-a-regular-file"),
        "{}{}",
        run.stdout,
        run.stderr
    );
}

#[test]
fn an_oversized_descriptor_is_refused_not_parsed() {
    let dir = sandbox();
    let mut big = String::from("runtime:\n  name: big\n");
    while big.len() <= 1024 * 1024 {
        big.push_str("# padding padding padding padding padding padding padding\n");
    }
    fs::write(dir.path().join("capabilities/big.yaml"), big).expect("write");
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("capabilities/big.yaml: error[file-too-large]"),
        "{}",
        run.stderr
    );
}

// ---- #5: no file is echoed into a log -------------------------------------

#[test]
fn a_descriptor_linked_out_of_the_root_is_refused_unread() {
    let outside = tempfile::tempdir().expect("tempdir");
    let secret = outside.path().join("passwd");
    fs::write(
        &secret,
        "root:x:0:0:root:/root:/bin/bash\nsecret-line-two\n",
    )
    .expect("write");
    let dir = sandbox();
    symlink(&secret, dir.path().join("capabilities/passwd.yaml")).expect("symlink");
    let run = check(&dir);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("capabilities/passwd.yaml: error[file-outside-root]"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("root:x:0:0"), "{}", run.stderr);
}

#[test]
fn a_wrong_type_message_quotes_a_short_excerpt_only() {
    let dir = sandbox();
    let line = format!("root:x:0:0:root:/root:/bin/bash {}", "SECRET".repeat(200));
    fs::write(dir.path().join("capabilities/scalar.yaml"), &line).expect("write");
    let run = check(&dir);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let finding = run
        .stderr
        .lines()
        .find(|l| l.starts_with("capabilities/scalar.yaml"))
        .unwrap_or_else(|| panic!("no finding for the file: {}", run.stderr));
    assert!(finding.contains("error[wrong-type]"), "{finding}");
    assert!(
        finding.contains("root:x:0:0"),
        "an excerpt is kept: {finding}"
    );
    assert!(finding.contains('…'), "{finding}");
    assert!(
        !run.stderr.contains(&"SECRET".repeat(10)),
        "the value is echoed: {}",
        run.stderr
    );
}

// ---- #6: a file name kvlower cannot print is reported ---------------------

#[test]
fn a_descriptor_with_a_non_utf8_name_is_reported_not_skipped() {
    let dir = sandbox();
    let name = OsStr::from_bytes(b"bad\xff.yaml");
    fs::write(
        dir.path().join("capabilities").join(name),
        "not: [a, valid, descriptor\n",
    )
    .expect("write");
    let run = check(&dir);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error[invalid-file-name]"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("capabilities/bad"), "{}", run.stderr);
}

#[test]
fn a_descriptor_name_with_a_newline_is_reported_not_printed_raw() {
    let dir = sandbox();
    fs::write(
        dir.path().join("capabilities/evil\nerror.yaml"),
        "runtime: x\n",
    )
    .expect("write");
    let run = check(&dir);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("capabilities/evil\\nerror.yaml: error[invalid-file-name]"),
        "{}",
        run.stderr
    );
}

/// The attack of issue 42's leftover: the loader used to store the refused name already
/// escaped for a terminal (`evil\\nerror.yaml`), so `--format github` showed a backslash-n
/// where the runner expects `%0A`, and JSON carried a name that is not the file's. The
/// finding keeps the real name; each renderer escapes it its own way.
#[test]
fn a_newline_in_a_refused_name_is_escaped_by_each_renderer_not_by_the_loader() {
    let dir = sandbox();
    fs::write(
        dir.path().join("capabilities/evil\nerror.yaml"),
        "runtime: x\n",
    )
    .expect("write");
    let root = dir.path().display().to_string();
    let github = within(&["check", "--root", &root, "--format", "github"]);
    assert_eq!(github.code, 1, "{}", github.stderr);
    assert!(
        github.stdout.contains(
            "::error file=capabilities/evil%0Aerror.yaml,title=kvlower invalid-file-name::"
        ),
        "{}",
        github.stdout
    );
    assert!(
        github.stdout.lines().all(|l| !l.starts_with("error.yaml")),
        "{}",
        github.stdout
    );
    let json = within(&["check", "--root", &root, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("one JSON document");
    let names: Vec<&str> = doc["diagnostics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["code"] == "invalid-file-name")
        .filter_map(|d| d["file"].as_str())
        .collect();
    assert_eq!(names, ["capabilities/evil\nerror.yaml"], "{}", json.stdout);
}

// ---- #9, #10: the generated set --------------------------------------------

#[test]
fn leftover_temporary_files_are_stray_for_check_and_removed_by_matrix() {
    let dir = sandbox();
    fs::write(dir.path().join("results/.tmpAbC123"), "half a matrix").expect("write");
    fs::write(dir.path().join("schemas/notes.txt"), "hand-added").expect("write");
    let run = check(&dir);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("results/.tmpAbC123: error[stray-file]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("schemas/notes.txt: error[stray-file]"),
        "{}",
        run.stderr
    );
    let run = matrix(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!dir.path().join("results/.tmpAbC123").exists());
    // A hand-added file is the user's: reported, never deleted.
    assert!(dir.path().join("schemas/notes.txt").exists());
    fs::remove_file(dir.path().join("schemas/notes.txt")).expect("rm");
    assert_eq!(check(&dir).code, 0);
}

/// Stale inputs so that `matrix` has results to write.
fn sandbox_with_stale_results() -> tempfile::TempDir {
    let dir = sandbox();
    for f in [
        "results/lowering-matrix.json",
        "results/lowering-matrix.md",
        "results/central-result-table.md",
    ] {
        fs::write(dir.path().join(f), "old\n").expect("write");
    }
    dir
}

#[test]
fn matrix_writes_nothing_when_one_target_is_not_writable() {
    // As root, permission bits stop nothing; `schemas` being a file (not a
    // directory) stops the write for any user.
    let dir = sandbox_with_stale_results();
    fs::remove_dir_all(dir.path().join("schemas")).expect("rm");
    fs::write(dir.path().join("schemas"), "not a directory").expect("write");
    let run = matrix(&dir);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    for f in [
        "results/lowering-matrix.json",
        "results/lowering-matrix.md",
        "results/central-result-table.md",
    ] {
        assert_eq!(
            fs::read_to_string(dir.path().join(f)).expect("read"),
            "old\n",
            "{f} was written although the set could not be"
        );
    }
}

#[test]
fn matrix_writes_nothing_when_a_schema_target_is_a_directory() {
    let dir = sandbox_with_stale_results();
    let schema = dir.path().join("schemas/modes.schema.json");
    fs::remove_file(&schema).expect("rm");
    fs::create_dir(&schema).expect("mkdir");
    let run = matrix(&dir);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        fs::read_to_string(dir.path().join("results/lowering-matrix.json")).expect("read"),
        "old\n"
    );
    let litter: Vec<_> = fs::read_dir(dir.path().join("results"))
        .expect("read_dir")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| e.file_name())
        .collect();
    assert!(litter.is_empty(), "{litter:?}");
}

#[test]
fn matrix_never_writes_through_a_symlinked_results_directory() {
    let dir = sandbox();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    fs::remove_dir_all(dir.path().join("results")).expect("rm");
    symlink(elsewhere.path(), dir.path().join("results")).expect("symlink");
    let run = matrix(&dir);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(fs::read_dir(elsewhere.path()).expect("read_dir").count(), 0);
}

// ---- #11: comparing stays cheap -------------------------------------------

fn garbage_result(dir: &tempfile::TempDir) {
    let garbage: String = (0..300_000)
        .map(|i| format!("garbage line {i}\n"))
        .collect();
    fs::write(dir.path().join("results/lowering-matrix.md"), garbage).expect("write");
}

#[test]
fn a_huge_stale_result_gets_a_summary_not_a_diff() {
    let dir = sandbox();
    garbage_result(&dir);
    let run = check(&dir);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("results/lowering-matrix.md: error[stale-result]"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("diff not shown"), "{}", run.stderr);
    assert!(!run.stderr.contains("-garbage line"), "a diff was printed");
}

#[test]
fn quiet_and_json_checks_compute_no_diff() {
    let dir = sandbox();
    let path = dir.path().join("results/central-result-table.md");
    let mut text = fs::read_to_string(&path).expect("read");
    text.push_str("an extra line\n");
    fs::write(&path, text).expect("write");
    let root = dir.path().display().to_string();
    for args in [
        vec!["check", "-q", "--root", &root],
        vec!["check", "--format", "json", "--root", &root],
    ] {
        let run = within(&args);
        assert_eq!(run.code, 1, "{args:?}");
        let all = format!("{}{}", run.stdout, run.stderr);
        assert!(!all.contains("-an extra line"), "{args:?}: {all}");
        assert!(!all.contains("@@"), "{args:?}: {all}");
    }
    // The human report still shows it.
    let run = check(&dir);
    assert!(run.stderr.contains("-an extra line"), "{}", run.stderr);
}

#[test]
fn a_long_diff_is_cut_after_a_few_hundred_lines() {
    let dir = sandbox();
    let path = dir.path().join("results/lowering-matrix.json");
    let text = fs::read_to_string(&path).expect("read");
    // Change every other line: a diff much longer than the print cap.
    let edited: String = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i % 2 == 0 {
                format!("{l} \n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    fs::write(&path, edited).expect("write");
    let run = check(&dir);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("more diff line(s) not shown"),
        "{}",
        &run.stderr[..2000.min(run.stderr.len())]
    );
    assert!(run.stderr.lines().count() < 1_000);
}
