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

/// A crate's module graph: each `src/**/*.rs` but `lib.rs` is a module (`cmd/x.rs`
/// is `cmd::x`), with an edge for every `crate::m` (or `crate::m::n` when `m::n` is
/// a module) outside comments and outside the `#[cfg(test)]` tail of the file.
fn module_graph(src: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut paths = Vec::new();
    files(src, &mut paths);
    let module = |p: &Path| -> Option<String> {
        let rel = p.strip_prefix(src).ok()?.to_str()?.strip_suffix(".rs")?;
        let rel = rel.strip_suffix("/mod").unwrap_or(rel);
        (rel != "lib" && rel != "main").then(|| rel.replace('/', "::"))
    };
    let modules: Vec<(String, &PathBuf)> =
        paths.iter().filter_map(|p| Some((module(p)?, p))).collect();
    let known = |m: &str| modules.iter().any(|(n, _)| n == m);
    let mut graph = std::collections::BTreeMap::new();
    for (name, path) in &modules {
        let text = std::fs::read_to_string(path).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        let mut edges = Vec::new();
        for line in code.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (at, _) in line.match_indices("crate::") {
                let rest = &line[at + "crate::".len()..];
                let ident = |s: &str| -> String {
                    s.chars()
                        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                        .collect()
                };
                let first = ident(rest);
                let nested = rest
                    .strip_prefix(&format!("{first}::"))
                    .map(|r| format!("{first}::{}", ident(r)));
                let target = match nested {
                    Some(n) if known(&n) => n,
                    _ => first,
                };
                if known(&target) && target != *name && !edges.contains(&target) {
                    edges.push(target);
                }
            }
        }
        graph.insert(name.clone(), edges);
    }
    graph
}

/// Every cycle a depth-first walk finds, each as its modules in order.
fn cycles(graph: &std::collections::BTreeMap<String, Vec<String>>) -> Vec<Vec<String>> {
    fn walk(
        graph: &std::collections::BTreeMap<String, Vec<String>>,
        node: &str,
        stack: &mut Vec<String>,
        done: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(at) = stack.iter().position(|s| s == next) {
                let mut cycle = stack[at..].to_vec();
                cycle.push(next.clone());
                found.push(cycle);
            } else if !done.contains(next) {
                walk(graph, next, stack, done, found);
            }
        }
        stack.pop();
        done.push(node.to_string());
    }
    let (mut done, mut found) = (Vec::new(), Vec::new());
    for node in graph.keys() {
        if !done.contains(node) {
            walk(graph, node, &mut Vec::new(), &mut done, &mut found);
        }
    }
    found
}

/// No crate's modules depend on one another in a circle (issue 17: a reader can
/// then learn a crate leaf-first). A reintroduced `use crate::…` edge that closes a
/// cycle fails here with the cycle spelled out.
#[test]
fn no_crate_has_a_module_cycle() {
    let crates = repo_root().join("crates");
    let mut checked = 0;
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if !dir.join("src").is_dir() {
            continue;
        }
        let found = cycles(&module_graph(&dir.join("src")));
        assert!(found.is_empty(), "{name}: module cycles {found:?}");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} crates checked");
}

/// The cycle scan sees a planted cycle through a nested module.
#[test]
fn the_cycle_scan_finds_a_planted_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir(src.join("cmd")).unwrap();
    std::fs::write(src.join("lib.rs"), "pub mod cmd;\npub mod results;\n").unwrap();
    std::fs::write(src.join("cmd/mod.rs"), "pub mod matrix;\n").unwrap();
    std::fs::write(src.join("cmd/matrix.rs"), "use crate::results::generate;\n").unwrap();
    std::fs::write(
        src.join("results.rs"),
        "// crate::nothing in a comment\npub fn g() { crate::cmd::matrix::run() }\n#[cfg(test)]\nmod tests { use crate::cmd; }\n",
    )
    .unwrap();
    let graph = module_graph(src);
    assert_eq!(graph["results"], vec!["cmd::matrix".to_string()]);
    assert_eq!(
        cycles(&graph),
        vec![vec![
            "cmd::matrix".to_string(),
            "results".to_string(),
            "cmd::matrix".to_string()
        ]]
    );
}

/// Whether `path` is a `tests.rs` whose parent module (`x.rs` beside its folder
/// `x/`, or `mod.rs`, `lib.rs` or `main.rs` in the same folder) declares it only for
/// tests: a line that is exactly `#[cfg(test)]`, the next non-blank one exactly
/// `mod tests;` (a commented-out line is neither), so none of it is built into the
/// library.
fn is_test_module_file(path: &std::path::Path) -> bool {
    if path.file_name() != Some("tests.rs".as_ref()) {
        return false;
    }
    let Some(dir) = path.parent() else {
        return false;
    };
    let parents = [
        dir.with_extension("rs"),
        dir.join("mod.rs"),
        dir.join("lib.rs"),
        dir.join("main.rs"),
    ];
    parents.iter().any(|parent| {
        let text = std::fs::read_to_string(parent).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        lines
            .windows(2)
            .any(|pair| pair == ["#[cfg(test)]", "mod tests;"])
    })
}

/// The attack on the exemption: a `tests.rs` whose parent only seems to declare it for
/// tests (the attribute commented out, another attribute between, no parent at all, or
/// the right lines in another file) is library code, and the rule reads it.
#[test]
fn a_tests_rs_is_exempt_only_when_declared_for_tests() {
    let dir = tempfile::tempdir().unwrap();
    let module = dir.path().join("scan");
    std::fs::create_dir(&module).unwrap();
    let file = module.join("tests.rs");
    std::fs::write(&file, "").unwrap();
    let parent = dir.path().join("scan.rs");
    assert!(!is_test_module_file(&file), "no parent");
    for (text, exempt) in [
        ("fn f() {}\n\n#[cfg(test)]\n\nmod tests;\n", true),
        ("    #[cfg(test)]\n    mod tests;\n", true),
        ("// #[cfg(test)]\nmod tests;\n", false),
        (
            "#[cfg(test)]\n#[path = \"scan/tests.rs\"]\nmod tests;\n",
            false,
        ),
        ("#[cfg(test)]\nmod other;\nmod tests;\n", false),
        ("mod tests;\n", false),
    ] {
        std::fs::write(&parent, text).unwrap();
        assert_eq!(is_test_module_file(&file), exempt, "{text:?}");
    }
    // The right parent, but the file is not named tests.rs.
    let other = module.join("helpers.rs");
    std::fs::write(&other, "").unwrap();
    std::fs::write(&parent, "#[cfg(test)]\nmod tests;\n").unwrap();
    assert!(!is_test_module_file(&other));
}

/// What touches the file system: opening, reading whole, creating, writing, renaming,
/// removing, walking, inspecting (metadata, links, existence) and temporary files.
/// Built from pieces so that this file does not name them itself.
fn file_system_calls() -> Vec<String> {
    [
        ["File", "::open("],
        ["File", "::create("],
        ["Open", "Options"],
        ["fs::", "read_to_string("],
        ["fs::", "read("],
        ["fs::", "write("],
        ["fs::", "rename("],
        ["fs::", "copy("],
        ["fs::", "hard_link("],
        ["fs::", "metadata("],
        ["read_", "dir("],
        ["remove_", "file("],
        ["remove_", "dir"],
        ["create_", "dir"],
        ["symlink_", "metadata("],
        ["canon", "icalize("],
        ["read_", "link("],
        ["set_", "permissions("],
        [".exists", "()"],
        ["try_", "exists("],
        ["temp", "file::"],
        ["persist", "("],
        ["persist_", "noclobber("],
    ]
    .iter()
    .map(|pieces| pieces.concat())
    .collect()
}

/// `line` without its paths through kvlower-fs (`kvlower_fs::write::remove_file`):
/// those calls are the door itself.
fn without_kvlower_fs_paths(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("kvlower_fs::") {
        out.push_str(&rest[..at]);
        rest = rest[at..]
            .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':');
    }
    out.push_str(rest);
    out
}

/// `path:line: text` for every file-system call in the library and binary sources under
/// `root` (`crates/*/src`, `src/`) outside `crates/kvlower-fs/`, test code exempt.
fn file_system_calls_outside_fs(root: &Path) -> Vec<String> {
    let mut sources = Vec::new();
    for dir in ["crates", "src"] {
        if root.join(dir).is_dir() {
            files(&root.join(dir), &mut sources);
        }
    }
    sources.sort();
    let needles = file_system_calls();
    let mut found = Vec::new();
    for path in sources {
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let rel_s = rel.to_string_lossy();
        let in_src = rel_s.contains("/src/") || rel_s.starts_with("src/");
        if !in_src
            || rel_s.starts_with("crates/kvlower-fs/")
            || path.extension() != Some("rs".as_ref())
            || is_test_module_file(&path)
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let code = text.split("#[cfg(test)]").next().unwrap_or("");
        for (n, line) in code.lines().enumerate() {
            let trimmed = line.trim();
            if trimmed.starts_with("//") {
                continue;
            }
            let outside = without_kvlower_fs_paths(line);
            if needles.iter().any(|k| outside.contains(k.as_str())) {
                found.push(format!("{rel_s}:{}: {trimmed}", n + 1));
            }
        }
    }
    found
}

/// One door to the file system: `kvlower-fs` (reads confined to the root, regular
/// files only, never blocking, one cap per kind; writes staged and renamed; the one
/// directory walker; docs/files.md). No library or binary source outside it opens,
/// reads whole, creates, writes, renames, removes, walks or inspects a file with
/// `std::fs` (or `tempfile`). Test code (a `#[cfg(test)]` module, everything after it in
/// the file, or a `tests.rs` file that its parent declares as `#[cfg(test)] mod tests;`,
/// see [`is_test_module_file`]) is exempt, and so are comments.
#[test]
fn only_kvlower_fs_touches_the_file_system() {
    let found = file_system_calls_outside_fs(&repo_root());
    assert!(
        found.is_empty(),
        "the file system touched outside kvlower-fs:\n{}",
        found.join("\n")
    );
}

/// The attack on the scan: each kind of file-system call, planted in a library source
/// outside kvlower-fs, is found (also when a `use` renamed its module); the same line
/// in kvlower-fs, in a comment or in a `#[cfg(test)]` tail is not, nor a call through
/// kvlower-fs.
#[test]
fn the_file_system_scan_finds_every_planted_call() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for d in ["crates/x/src", "crates/kvlower-fs/src", "src"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    for needle in file_system_calls() {
        let line = format!("    let _ = std::{needle}a, b);");
        for file in ["crates/x/src/lib.rs", "src/main.rs"] {
            std::fs::write(root.join(file), format!("fn f() {{\n{line}\n}}\n")).unwrap();
            std::fs::write(root.join("crates/kvlower-fs/src/lib.rs"), &line).unwrap();
            let found = file_system_calls_outside_fs(root);
            assert_eq!(
                found,
                vec![format!("{file}:2: {}", line.trim())],
                "{needle}"
            );
            let quiet = format!("// {line}\n#[cfg(test)]\nmod tests {{\n{line}\n}}\n");
            std::fs::write(root.join(file), quiet).unwrap();
            assert!(file_system_calls_outside_fs(root).is_empty(), "{needle}");
        }
    }
    let through = "fn f(p: &Path) {\n    kvlower_fs::write::remove_file(p);\n    kvlower_fs::inspect::entry_exists(p);\n}\n";
    std::fs::write(root.join("src/main.rs"), through).unwrap();
    assert!(file_system_calls_outside_fs(root).is_empty());
    let renamed = "use std::fs as door;\nfn f(p: &Path) {\n    door::remove_file(p);\n}\n";
    std::fs::write(root.join("src/main.rs"), renamed).unwrap();
    assert_eq!(
        file_system_calls_outside_fs(root),
        vec!["src/main.rs:3: door::remove_file(p);".to_string()]
    );
}

/// The most lines of code a library or binary source file may hold before its
/// `#[cfg(test)]` tail (issue 38): a file past it does more than one job. Comment lines
/// (`//`, `///`, `//!`) and blank lines do not count (issue 50): a file near the cap must
/// be split by job, never made to fit by trimming the reasons written beside its code.
const MAX_SOURCE_LINES: usize = 700;

/// Whether a source line counts against [`MAX_SOURCE_LINES`]: not blank, not only a
/// comment.
fn counts(line: &str) -> bool {
    let t = line.trim_start();
    !t.is_empty() && !t.starts_with("//")
}

/// `path: lines` for every library or binary source under `root` (`crates/*/src`,
/// `src/`; `tests.rs` modules exempt) with more than [`MAX_SOURCE_LINES`] lines of code
/// before its `#[cfg(test)]`.
fn oversized_sources(root: &Path) -> Vec<String> {
    let mut sources = Vec::new();
    for dir in ["crates", "src"] {
        if root.join(dir).is_dir() {
            files(&root.join(dir), &mut sources);
        }
    }
    sources.sort();
    let mut found = Vec::new();
    for path in sources {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let in_src = rel.contains("/src/") || rel.starts_with("src/");
        if !in_src || path.extension() != Some("rs".as_ref()) || is_test_module_file(&path) {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let lines = text
            .split("#[cfg(test)]")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| counts(l))
            .count();
        if lines > MAX_SOURCE_LINES {
            found.push(format!("{rel}: {lines}"));
        }
    }
    found
}

#[test]
fn no_library_source_is_over_700_lines_of_code_before_its_tests() {
    let found = oversized_sources(&repo_root());
    assert!(
        found.is_empty(),
        "library sources over {MAX_SOURCE_LINES} lines of code before their tests (split them by job):\n{}",
        found.join("\n")
    );
}

/// The attack on the size scan: a file one line of code over is found; one at the limit,
/// one whose extra lines are its tests and one whose extra lines are comments or blank
/// are not.
#[test]
fn the_size_scan_finds_a_planted_long_file() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("crates/x/src");
    std::fs::create_dir_all(&src).unwrap();
    let body = |n: usize| "fn f() {}\n".repeat(n);
    std::fs::write(src.join("at.rs"), body(MAX_SOURCE_LINES)).unwrap();
    std::fs::write(
        src.join("tested.rs"),
        format!("{}#[cfg(test)]\n{}", body(MAX_SOURCE_LINES), body(50)),
    )
    .unwrap();
    std::fs::write(
        src.join("reasoned.rs"),
        format!(
            "//! why\n{}\n    /// why\n    // why\n",
            body(MAX_SOURCE_LINES)
        ),
    )
    .unwrap();
    assert!(oversized_sources(dir.path()).is_empty());
    std::fs::write(src.join("over.rs"), body(MAX_SOURCE_LINES + 1)).unwrap();
    assert_eq!(
        oversized_sources(dir.path()),
        vec![format!("crates/x/src/over.rs: {}", MAX_SOURCE_LINES + 1)]
    );
}
