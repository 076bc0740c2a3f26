//! Issue 42, item 3: kvlower never writes through a symbolic link (docs/files.md). With
//! `DIR/schemas` or `DIR/modes` a link to a directory elsewhere, `kvlower init` exited 0
//! and wrote into the outside directory. Every component a writing command creates or
//! writes into (`kvlower.toml`, `modes/`, `capabilities/`, `schemas/`, `results/`) that
//! is a link is refused: exit 2, `write-through-link`, nothing written anywhere.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use kvlower_tests::{kvlower, sandbox};

/// Every entry under `dir`, recursively (relative paths, sorted).
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).expect("under").display().to_string());
            if e.file_type().expect("type").is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn init_never_writes_through_a_link() {
    for component in ["schemas", "modes", "capabilities", "results"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        symlink(elsewhere.path(), dir.path().join(component)).expect("symlink");
        let root = dir.path().display().to_string();
        for format in ["human", "json"] {
            let run = kvlower(&["init", &root, "--format", format]);
            assert_eq!(run.code, 2, "{component}: {}{}", run.stdout, run.stderr);
            let said = format!("{}{}", run.stdout, run.stderr);
            assert!(said.contains("write-through-link"), "{component}: {said}");
            assert!(
                tree(elsewhere.path()).is_empty(),
                "{component}: wrote outside"
            );
            // Nothing written beside the link either.
            assert_eq!(tree(dir.path()), vec![component.to_string()], "{component}");
        }
    }
    // A file link: `kvlower.toml` (dangling) and `modes/modes.yaml` are refused too (by
    // the existing-repository rule: init never overwrites).
    let dir = tempfile::tempdir().expect("tempdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    symlink(
        elsewhere.path().join("x.toml"),
        dir.path().join("kvlower.toml"),
    )
    .expect("ln");
    let run = kvlower(&["init", &dir.path().display().to_string()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(tree(elsewhere.path()).is_empty());
    // The control: a plain directory is made a repository.
    let dir = tempfile::tempdir().expect("tempdir");
    let run = kvlower(&["init", &dir.path().display().to_string()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn new_never_writes_through_a_linked_capabilities_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().display().to_string();
    assert_eq!(kvlower(&["init", &root]).code, 0);
    fs::remove_dir(dir.path().join("capabilities")).expect("rmdir");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    symlink(elsewhere.path(), dir.path().join("capabilities")).expect("symlink");
    let run = kvlower(&[
        "new",
        "X",
        "--version",
        "1.0.0",
        "--kind",
        "other",
        "--root",
        &root,
    ]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("write-through-link"), "{}", run.stderr);
    assert!(tree(elsewhere.path()).is_empty(), "wrote outside");
}

#[test]
fn matrix_refuses_a_linked_generated_directory_with_a_code() {
    for component in ["results", "schemas"] {
        let dir = sandbox();
        let elsewhere = tempfile::tempdir().expect("tempdir");
        fs::remove_dir_all(dir.path().join(component)).expect("rm");
        symlink(elsewhere.path(), dir.path().join(component)).expect("symlink");
        let root = dir.path().display().to_string();
        let run = kvlower(&["matrix", "--root", &root]);
        assert_eq!(run.code, 2, "{component}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("write-through-link"),
            "{component}: {}",
            run.stderr
        );
        assert!(tree(elsewhere.path()).is_empty(), "{component}");
    }
}

/// The refusal says what the link is: a hint to "replace the link with a real directory"
/// for a link to a file sent the user to make a directory where a file belongs.
#[test]
fn init_says_what_the_refused_link_is() {
    // (component, link to a directory / file / nothing, what the finding must say)
    let cases = [
        (
            "schemas",
            Some(true),
            "symbolic link to a directory",
            "real directory",
        ),
        (
            "kvlower.toml",
            Some(false),
            "symbolic link to a file",
            "real file",
        ),
        (
            "kvlower.toml",
            None,
            "symbolic link to nothing",
            "remove the link",
        ),
    ];
    for (component, target, says, hint) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let to = elsewhere.path().join("x");
        match target {
            Some(true) => fs::create_dir(&to).expect("mkdir"),
            Some(false) => fs::write(&to, "outside\n").expect("write"),
            None => {}
        }
        symlink(&to, dir.path().join(component)).expect("symlink");
        let run = kvlower(&["init", &dir.path().display().to_string()]);
        assert_eq!(run.code, 2, "{component}: {}", run.stderr);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(said.contains("write-through-link"), "{component}: {said}");
        assert!(said.contains(says), "{component}: {said}");
        let hint_line = said
            .lines()
            .find(|l| l.trim_start().starts_with("hint:"))
            .unwrap_or_else(|| panic!("{component}: no hint: {said}"));
        assert!(hint_line.contains(hint), "{component}: {hint_line}");
        if target == Some(false) {
            assert!(!hint_line.contains("directory"), "{component}: {hint_line}");
        }
    }
}

/// A link where `matrix` stages a file before its rename (`results/.kvlower-stage.NAME`),
/// at the journal or at the journal's own staging file stopped it with an uncoded
/// "creating …: File exists" (or a refusal of the journal without a code). Each is the
/// coded `write-through-link` now, with a hint, exit 2, nothing written anywhere.
#[test]
fn matrix_refuses_a_link_at_a_staging_file_with_a_code() {
    let cases = [
        ("results/.kvlower-stage.lowering-matrix.md", false),
        ("results/.kvlower-stage.lowering-matrix.md", true),
        ("results/.kvlower-stage..kvlower-journal", true),
        ("results/.kvlower-journal", true),
    ];
    for (stage, dangling) in cases {
        let dir = sandbox();
        let root = dir.path().display().to_string();
        // A result to regenerate, so that the run stages a file.
        fs::remove_file(dir.path().join("results/lowering-matrix.md")).expect("rm");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        let to = elsewhere.path().join("x");
        if !dangling {
            fs::write(&to, "outside\n").expect("write");
        }
        symlink(&to, dir.path().join(stage)).expect("symlink");
        let run = kvlower(&["matrix", "--root", &root]);
        assert_eq!(run.code, 2, "{stage}: {}{}", run.stdout, run.stderr);
        assert!(
            run.stderr
                .contains(&format!("{stage}: error[write-through-link]")),
            "{stage}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("hint:"), "{stage}: {}", run.stderr);
        assert!(
            !dir.path().join("results/lowering-matrix.md").exists(),
            "{stage}: wrote a result"
        );
        let outside = tree(elsewhere.path());
        assert_eq!(
            outside.len(),
            usize::from(!dangling),
            "{stage}: {outside:?}"
        );
        if !dangling {
            assert_eq!(fs::read_to_string(&to).expect("read"), "outside\n");
        }
    }
}
