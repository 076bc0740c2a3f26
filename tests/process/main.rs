//! Tests that need the real `kvlower` binary as a child process: what it
//! does when the reader of its output has gone away (issue: exit codes must
//! never lie). The in-process tests live in the kvlower-tests crate.

use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the binary with its stdout connected to a socket whose other end is
/// already closed, so its very first write fails with EPIPE (deterministic,
/// unlike `| head` which races the writer). Returns the exit code and stderr.
fn run_with_closed_stdout(args: &[&str], cwd: &Path) -> (Option<i32>, String) {
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    drop(ours);
    let output = Command::new(env!("CARGO_BIN_EXE_kvlower"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stderr(Stdio::piped())
        .output()
        .expect("run kvlower");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A scratch repository with the real catalog and one invalid descriptor.
fn invalid_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("modes")).expect("mkdir");
    std::fs::create_dir_all(dir.path().join("capabilities")).expect("mkdir");
    std::fs::copy(
        root().join("modes/modes.yaml"),
        dir.path().join("modes/modes.yaml"),
    )
    .expect("copy modes.yaml");
    std::fs::write(
        dir.path().join("capabilities/broken.yaml"),
        "runtime: {name: x, version: \"1\", source: source_tree, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}\nnative: [{obligation: claim_identiy}]\n",
    )
    .expect("write descriptor");
    dir
}

#[test]
fn a_closed_pipe_keeps_the_findings_exit_code_of_check() {
    let repo = invalid_repo();
    for format in ["human", "json", "github", "markdown", "sarif"] {
        let (code, stderr) = run_with_closed_stdout(&["check", "--format", format], repo.path());
        assert_eq!(
            code,
            Some(1),
            "check --format {format} on an invalid repository must exit 1 even when stdout \
             is closed; stderr:\n{stderr}"
        );
    }
}

#[test]
fn a_closed_pipe_keeps_the_exit_code_of_every_command() {
    let repo = invalid_repo();
    let cases: &[(&[&str], i32)] = &[
        (&["check"], 1),
        (&["explain", "capabilities/broken.yaml"], 1),
        (&["matrix"], 1),
        (&["new", "bad\u{1b}name", "--version", "1", "--stdout"], 2),
        (&["explain-code", "no-such-code"], 2),
        (&["codes"], 0),
        (&["schema"], 0),
        (&["new", "fresh", "--version", "1", "--stdout"], 0),
    ];
    for (args, want) in cases {
        let (code, stderr) = run_with_closed_stdout(args, repo.path());
        assert_eq!(
            code,
            Some(*want),
            "kvlower {args:?} with stdout closed: stderr:\n{stderr}"
        );
    }
}

/// Exit 2 (an input kvlower could not read) survives a closed pipe as 1 does.
#[test]
fn a_closed_pipe_keeps_the_exit_code_of_an_unreadable_input() {
    let repo = invalid_repo();
    std::fs::create_dir(repo.path().join("capabilities/a_directory.yaml")).expect("mkdir");
    std::fs::write(repo.path().join("malformed.jsonl"), "not json\n").expect("write");
    std::os::unix::fs::symlink("/dev/null", repo.path().join("null.jsonl")).expect("symlink");
    let cases: &[(&[&str], i32)] = &[
        (&["check"], 2),
        (&["check", "--format", "json"], 2),
        (&["check", "--format", "sarif", "--exit-zero"], 2),
        (&["matrix"], 2),
        (&["gate", "malformed.jsonl"], 1),
        (&["gate", "null.jsonl"], 2),
        (
            &["gate", "--format", "json", "malformed.jsonl", "null.jsonl"],
            2,
        ),
    ];
    for (args, want) in cases {
        let (code, stderr) = run_with_closed_stdout(args, repo.path());
        assert_eq!(
            code,
            Some(*want),
            "kvlower {args:?} with stdout closed: stderr:\n{stderr}"
        );
    }
}

#[test]
fn completions_into_a_closed_pipe_do_not_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    for shell in ["bash", "zsh", "fish"] {
        let (code, stderr) = run_with_closed_stdout(&["completions", shell], dir.path());
        assert_eq!(code, Some(0), "completions {shell}: stderr:\n{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn the_real_binary_with_an_open_pipe_prints_and_exits_as_documented() {
    let repo = invalid_repo();
    let output = Command::new(env!("CARGO_BIN_EXE_kvlower"))
        .args(["check", "--format", "json"])
        .current_dir(repo.path())
        .output()
        .expect("run kvlower");
    assert_eq!(output.status.code(), Some(1));
    let doc: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON document on stdout");
    assert_eq!(doc["command"], "check");
}

/// Root discovery as a user hits it: the real binary, started in a subfolder,
/// finds the root (this repository's `kvlower.toml`) and checks the whole set.
#[test]
fn check_from_a_subfolder_finds_the_root() {
    let output = Command::new(env!("CARGO_BIN_EXE_kvlower"))
        .args(["check", "-q"])
        .current_dir(root().join("capabilities"))
        .output()
        .expect("run kvlower");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("all results fresh"), "{stdout}");
}
