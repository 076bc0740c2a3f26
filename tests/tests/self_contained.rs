//! The repository stands alone: no comment, doc, README or YAML comment cites a
//! file that is not in it. The model is cited as `docs/model.md` (and the paper by
//! section), the trace format as `docs/trace-format.md`, the join as `docs/join.md`.

use std::path::{Path, PathBuf};

use kvlower_tests::repo_root;

/// Citations of material a reader of this repository does not have. Built from
/// pieces so that this file does not cite them itself.
fn forbidden() -> Vec<String> {
    vec![
        ["SPEC", " §"].concat(),
        ["SCHEMA", ".md"].concat(),
        ["runtime", "-facts.md"].concat(),
        ["../", "shared"].concat(),
        ["/work/", "shared"].concat(),
    ]
}

/// Directories that hold no source: build output and version control.
const SKIPPED_DIRS: [&str; 2] = ["target", ".git"];

/// Every file under `dir`, skipping [`SKIPPED_DIRS`] at any level.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap();
        let path = entry.path();
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            let name = entry.file_name();
            if !SKIPPED_DIRS.iter().any(|s| name == *s) {
                files(&path, out);
            }
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// `(path:line, pattern)` for every forbidden citation in the text files under `root`.
fn citations(root: &Path) -> Vec<(String, String)> {
    let mut all = Vec::new();
    files(root, &mut all);
    all.sort();
    let patterns = forbidden();
    let mut found = Vec::new();
    for path in all {
        // Binary files (not UTF-8) cannot cite anything a reader would follow.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for (n, line) in text.lines().enumerate() {
            for p in &patterns {
                if line.contains(p.as_str()) {
                    found.push((format!("{rel}:{}", n + 1), p.clone()));
                }
            }
        }
    }
    found
}

#[test]
fn no_file_cites_material_outside_the_repository() {
    let found = citations(&repo_root());
    assert!(
        found.is_empty(),
        "these lines cite files that are not in the repository; cite docs/model.md, \
         docs/trace-format.md, docs/join.md or the paper by section instead:\n{}",
        found
            .iter()
            .map(|(at, p)| format!("  {at}: `{p}`"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The scan itself works: a file with a forbidden citation is found, in a nested
/// directory, and one under `target/` is not.
#[test]
fn the_scan_finds_a_planted_citation() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("crates/x/src");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::create_dir_all(dir.path().join("target")).unwrap();
    let cite = |p: &str| format!("// see {p} for the details\n");
    for p in forbidden() {
        std::fs::write(nested.join("lib.rs"), cite(&p)).unwrap();
        std::fs::write(dir.path().join("target/out.txt"), cite(&p)).unwrap();
        let found = citations(dir.path());
        assert_eq!(
            found,
            vec![("crates/x/src/lib.rs:1".to_string(), p.clone())],
            "{p}"
        );
    }
    std::fs::write(nested.join("lib.rs"), "// see docs/model.md\n").unwrap();
    assert!(citations(dir.path()).is_empty());
}
