//! How a finding travels, held by the source itself (issue 38): commands do not reach
//! into one another, and only the CLI renders for a terminal or prints. Each rule is a
//! scan of the source with a planted violation that the scan must see.

use std::path::{Path, PathBuf};

use kvlower_tests::repo_root;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension() == Some("rs".as_ref()) {
            out.push(path);
        }
    }
}

/// The library part of a source file: what comes before its test tail (`#[cfg(test)]`
/// or `#[cfg(all(test, ..))]`), without comment lines.
fn library_lines(text: &str) -> Vec<(usize, &str)> {
    let tail = ["#[cfg(test)]", "#[cfg(all(test"]
        .iter()
        .filter_map(|m| text.find(m))
        .min()
        .unwrap_or(text.len());
    let code = &text[..tail];
    code.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l))
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .collect()
}

/// A leading identifier (`snake_case`) of `s`.
fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// Every edge `(from, to)` between two commands under `cmd/` (the directory of the CLI's
/// subcommands, one module per command, nested modules belonging to their command):
/// a `crate::cmd::x` path (or a `crate::cmd::{x, ..}` group) or a `super::` chain that
/// reaches `cmd` and names `x`, in the library part of a file of another command.
fn command_edges(cmd: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(cmd, &mut files);
    let mut edges = Vec::new();
    for path in files {
        let rel = path
            .strip_prefix(cmd)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let rel = rel.strip_suffix(".rs").unwrap_or(&rel);
        let rel = rel.strip_suffix("/mod").unwrap_or(rel);
        if rel == "mod" {
            continue;
        }
        // The module's path below `cmd`: `check`, `check::freshness`.
        let module: Vec<&str> = rel.split('/').collect();
        let own = module[0].to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut targets = Vec::new();
        for (_, line) in library_lines(&text) {
            for (at, _) in line.match_indices("crate::cmd::") {
                let rest = &line[at + "crate::cmd::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    let group = group.split('}').next().unwrap_or_default();
                    targets.extend(group.split(',').map(|t| ident(t.trim())));
                } else {
                    targets.push(ident(rest));
                }
            }
            for (at, _) in line.match_indices("super::") {
                // Only the start of a chain: `super::super::x` is one path.
                if line[..at].ends_with("super::") {
                    continue;
                }
                let mut rest = &line[at..];
                let mut ups = 0;
                while let Some(r) = rest.strip_prefix("super::") {
                    ups += 1;
                    rest = r;
                }
                // `super` from `cmd::a::b` (depth 2) reaches `cmd` after 2 steps.
                if ups == module.len() {
                    targets.push(ident(rest));
                }
            }
        }
        for to in targets {
            if !to.is_empty() && to != own && !edges.contains(&(own.clone(), to.clone())) {
                edges.push((own.clone(), to));
            }
        }
    }
    edges.sort();
    edges
}

/// No command module imports another (issue 38): what two commands share lives in a
/// module that is not a command (`crate::pin`, `crate::output`, ...), so a command can
/// be read, changed or removed alone.
#[test]
fn no_command_module_imports_another() {
    let cmd = repo_root().join("crates/kvlower-cli/src/cmd");
    let edges = command_edges(&cmd);
    assert!(
        edges.is_empty(),
        "command modules importing another command: {edges:?}"
    );
}

/// The attack on the scan: planted imports of another command, by `crate::cmd::x`, by
/// a group and by `super::`, are found; a command's own nested modules are not edges.
#[test]
fn the_command_scan_finds_planted_imports() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = dir.path();
    std::fs::create_dir_all(cmd.join("check")).unwrap();
    std::fs::create_dir_all(cmd.join("gate")).unwrap();
    std::fs::write(cmd.join("mod.rs"), "pub mod check;\npub mod gate;\n").unwrap();
    std::fs::write(
        cmd.join("check/mod.rs"),
        "mod rows;\nuse crate::cmd::matrix::GENERATED_DIRS;\nuse rows::x;\n",
    )
    .unwrap();
    std::fs::write(
        cmd.join("check/rows.rs"),
        "use super::super::catalog::PINNED;\nuse super::emit;\n// use crate::cmd::new;\n",
    )
    .unwrap();
    std::fs::write(
        cmd.join("gate/mod.rs"),
        "use crate::cmd::{gate::x, join};\nuse super::route::y;\n#[cfg(test)]\nmod tests { use crate::cmd::init; }\n",
    )
    .unwrap();
    std::fs::write(
        cmd.join("join.rs"),
        "use crate::output;\nuse crate::cmd::join::a;\n",
    )
    .unwrap();
    let edge = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        command_edges(cmd),
        vec![
            edge("check", "catalog"),
            edge("check", "matrix"),
            edge("gate", "join"),
            edge("gate", "route"),
        ]
    );
}

/// What rendering for a terminal or printing looks like in source.
const RENDERS_OR_PRINTS: [&str; 8] = [
    "fn render_human",
    "println!(",
    "eprintln!(",
    "print!(",
    "eprint!(",
    "dbg!(",
    "io::stdout()",
    "io::stderr()",
];

/// The lines of library code under `crates/` (every crate but the CLI, outside tests,
/// examples and benches) that render for a terminal or print.
fn renders_or_prints(crates: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if name == "kvlower-cli" || !dir.join("src").is_dir() {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&dir.join("src"), &mut files);
        for path in files {
            if path.file_name() == Some("tests.rs".as_ref()) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in library_lines(&text) {
                if RENDERS_OR_PRINTS.iter().any(|k| line.contains(k)) {
                    let rel = path.strip_prefix(crates).unwrap_or(&path);
                    found.push(format!("{}:{n}: {}", rel.display(), line.trim()));
                }
            }
        }
    }
    found
}

/// Library crates compute and return; only the CLI renders a document for a terminal
/// (`kvlower_cli::human`, the output module) and only it prints (issue 38: the join's
/// and the routing gate's `render_human` moved out of their crates).
#[test]
fn no_library_crate_but_the_cli_renders_or_prints() {
    let found = renders_or_prints(&repo_root().join("crates"));
    assert!(
        found.is_empty(),
        "library crates that render or print:\n{}",
        found.join("\n")
    );
}

/// The attack on the scan: a planted `render_human` and a planted `println!` in a
/// library crate are found; the same in the CLI, in a comment or in a test tail are not.
#[test]
fn the_render_scan_finds_a_planted_renderer() {
    let dir = tempfile::tempdir().unwrap();
    let crates = dir.path();
    for c in ["kvlower-join/src", "kvlower-cli/src", "kvlower-route/src"] {
        std::fs::create_dir_all(crates.join(c)).unwrap();
    }
    std::fs::write(
        crates.join("kvlower-join/src/document.rs"),
        "impl R {\n    pub fn render_human(&self) -> String { todo!() }\n}\n",
    )
    .unwrap();
    std::fs::write(
        crates.join("kvlower-route/src/lib.rs"),
        "// println!(\"no\");\npub fn f() { println!(\"x\"); }\n#[cfg(test)]\nmod tests { fn g() { eprintln!(\"ok\"); } }\n",
    )
    .unwrap();
    std::fs::write(
        crates.join("kvlower-cli/src/human.rs"),
        "pub fn render_human() {}\n",
    )
    .unwrap();
    assert_eq!(
        renders_or_prints(crates),
        vec![
            "kvlower-join/src/document.rs:2: pub fn render_human(&self) -> String { todo!() }"
                .to_string(),
            "kvlower-route/src/lib.rs:2: pub fn f() { println!(\"x\"); }".to_string(),
        ]
    );
}

/// Every `enum` declared in the library part of the CLI's sources whose name says it
/// is an output format (`...Format...`, or the names the old per-command ones had).
fn format_enums(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        for (_, line) in library_lines(&text) {
            let Some(at) = line.find("enum ") else {
                continue;
            };
            let name = ident(&line[at + "enum ".len()..]);
            if name.contains("Format") || ["OutputArg", "FormatFlag"].contains(&name.as_str()) {
                let rel = path.strip_prefix(src).unwrap_or(&path);
                found.push(format!("{}: {name}", rel.display()));
            }
        }
    }
    found
}

/// One `--format` enum (issue 38): `output::Format`, each command accepting its own
/// subset of it through `Format::parser`, instead of seven per-command enums.
#[test]
fn the_cli_has_one_format_enum() {
    let src = repo_root().join("crates/kvlower-cli/src");
    assert_eq!(
        format_enums(&src),
        vec!["output/mod.rs: Format".to_string()]
    );
    // The attack on the scan: a second one is seen.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("output.rs"), "pub enum Format { Human }\n").unwrap();
    std::fs::write(
        dir.path().join("route.rs"),
        "#[derive(Clone)]\npub enum RouteFormat { Human, Json }\nenum OutputArg { Json }\n",
    )
    .unwrap();
    assert_eq!(
        format_enums(dir.path()),
        vec![
            "output.rs: Format".to_string(),
            "route.rs: RouteFormat".to_string(),
            "route.rs: OutputArg".to_string(),
        ]
    );
}

/// The crates under `crates/` (other than the CLI itself) whose `Cargo.toml` depends on
/// `kvlower-cli` in any table, dev-dependencies included.
fn cli_dependents(crates: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(crates)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let Ok(manifest) = std::fs::read_to_string(dir.join("Cargo.toml")) else {
            continue;
        };
        if name == "kvlower-cli" {
            continue;
        }
        let depends = manifest.lines().any(|l| {
            let l = l.trim_start();
            !l.starts_with('#')
                && (l.starts_with("kvlower-cli ")
                    || l.starts_with("kvlower-cli=")
                    || l.starts_with("kvlower-cli.")
                    || l.contains("dependencies.kvlower-cli]"))
        });
        if depends {
            found.push(name);
        }
    }
    found
}

/// Library crates do not depend on the CLI, not even for their tests: the tests that
/// need its rendering (the join engine's snapshots) live in the tests crate
/// (`tests/tests/join_engine.rs`), so the graph has no cycle through a dev-dependency.
#[test]
fn no_library_crate_depends_on_the_cli() {
    assert_eq!(
        cli_dependents(&repo_root().join("crates")),
        Vec::<String>::new()
    );
    // The attack on the scan: the dev-dependency kvlower-join had, and a dotted table,
    // are seen; the CLI's own manifest and a comment are not.
    let dir = tempfile::tempdir().unwrap();
    let plant = |name: &str, text: &str| {
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        std::fs::write(dir.path().join(name).join("Cargo.toml"), text).unwrap();
    };
    plant(
        "kvlower-join",
        "[dev-dependencies]\nkvlower-cli = { path = \"../kvlower-cli\" }\n",
    );
    plant(
        "kvlower-route",
        "[dev-dependencies.kvlower-cli]\npath = \"../kvlower-cli\"\n",
    );
    plant("kvlower-trace", "# kvlower-cli = no\n[dependencies]\n");
    plant(
        "kvlower-cli",
        "[package]\nname = \"kvlower-cli\"\nkvlower-cli = 1\n",
    );
    assert_eq!(
        cli_dependents(dir.path()),
        vec!["kvlower-join".to_string(), "kvlower-route".to_string()]
    );
}

/// The lines under `cmd` that load a repository themselves instead of through
/// `opening::load_or_stop` (a call of `load_repository`, or a match on
/// `LoadFailure::NoDescriptors`), as `FILE:LINE`.
fn own_openings(cmd: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(cmd, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (n, line) in library_lines(&text) {
            let code = line.split("//").next().unwrap_or_default();
            if code.contains("load_repository(") || code.contains("LoadFailure::NoDescriptors") {
                let rel = file
                    .strip_prefix(cmd)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                found.push(format!("{rel}:{n}"));
            }
        }
    }
    found
}

/// One `load_or_stop` (issue 38): no command writes out "load the repository; none →
/// usage; invalid → findings" itself.
#[test]
fn no_command_loads_the_repository_itself() {
    let cmd = repo_root().join("crates/kvlower-cli/src/cmd");
    assert_eq!(own_openings(&cmd), Vec::<String>::new());
    // The attack on the scan: the openings matrix and check had are seen; a comment
    // and a test tail are not.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("matrix.rs"),
        "fn run() {\n    let r = match load_repository(&root) {\n        Err(LoadFailure::NoDescriptors { dir }) => todo!(),\n    };\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("explain.rs"),
        "// load_repository(&root) is opening's\nfn f() {}\n#[cfg(test)]\nmod tests { fn g() { load_repository(&root); } }\n",
    )
    .unwrap();
    assert_eq!(
        own_openings(dir.path()),
        vec!["matrix.rs:2".to_string(), "matrix.rs:3".to_string()]
    );
}

/// The lines of library code (before a test tail, comments left out) under `output` that
/// name the trace crate's `LocatedProblem` (issue 50 item 3): the output module renders
/// findings only, so a gate problem reaches it as a `Finding`.
fn located_problem_uses(output: &Path) -> Vec<String> {
    library_lines_matching(output, |line| line.contains("LocatedProblem"))
}

/// `rel:line: text` of every library line (before a test tail, comments left out) of
/// the `.rs` files under `dir` that `matches`.
fn library_lines_matching(dir: &Path, matches: impl Fn(&str) -> bool) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(dir, &mut files);
    let mut found = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read");
        for (n, line) in library_lines(&text) {
            if matches(line) {
                let rel = path.strip_prefix(dir).unwrap_or(&path);
                found.push(format!("{}:{n}: {}", rel.display(), line.trim_start()));
            }
        }
    }
    found
}

#[test]
fn the_output_module_sees_gate_problems_only_as_findings() {
    let output = repo_root().join("crates/kvlower-cli/src/output");
    let found = located_problem_uses(&output);
    assert!(
        found.is_empty(),
        "LocatedProblem under output/ (convert it with LocatedProblem::finding in cmd/gate):\n{}",
        found.join("\n")
    );
}

/// The attack on the scan: a planted use of `LocatedProblem` in a renderer is found;
/// the same in a comment or in a test tail is not.
#[test]
fn the_located_problem_scan_finds_a_planted_use() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = dir.path();
    std::fs::create_dir_all(output.join("gate")).expect("mkdir");
    std::fs::write(
        output.join("gate/human.rs"),
        "// a LocatedProblem is rendered elsewhere\nuse kvlower_trace::LocatedProblem;\nfn f(d: &LocatedProblem) {}\n#[cfg(test)]\nmod tests { use kvlower_trace::LocatedProblem; }\n",
    )
    .expect("write");
    std::fs::write(output.join("github.rs"), "pub fn g(d: &Finding) {}\n").expect("write");
    assert_eq!(
        located_problem_uses(output),
        vec![
            "gate/human.rs:2: use kvlower_trace::LocatedProblem;".to_string(),
            "gate/human.rs:3: fn f(d: &LocatedProblem) {}".to_string(),
        ]
    );
}

/// What writes to a stream (issue 50 item 1): a writer parameter or value, the process's
/// streams, a print macro. Writing a file (`std::io::Write::write_all` on a temp file) or
/// a `String` (`std::fmt::Write`) is not a stream; naming the trait is allowed, taking
/// or making a writer is not.
const WRITES_TO_A_STREAM: &[&str] = &[
    "dyn Write",
    "dyn std::io::Write",
    "dyn io::Write",
    "impl Write",
    "impl std::io::Write",
    "impl io::Write",
    "stdout()",
    "stderr()",
    "print!(",
    "println!(",
    "eprint!(",
    "eprintln!(",
    "BufWriter",
    "LineWriter",
];

/// The lines of library code under `cmd` (before a test tail, comments left out) that
/// write to a stream.
fn stream_writes(cmd: &Path) -> Vec<String> {
    library_lines_matching(cmd, |line| {
        WRITES_TO_A_STREAM.iter().any(|k| line.contains(k))
    })
}

/// Commands return, the binary renders: no file under `cmd/` writes to a stream. Every
/// command returns an `Outcome` that `lib.rs` renders once (`output::render`), and
/// `gate`, the one command that streams, hands an `output::Screen` (whose streams only
/// `output/` can reach) to its emitter.
#[test]
fn no_command_writes_to_a_stream() {
    let cmd = repo_root().join("crates/kvlower-cli/src/cmd");
    let found = stream_writes(&cmd);
    assert!(
        found.is_empty(),
        "files under cmd/ that write to a stream (return an Outcome; lib.rs renders it):\n{}",
        found.join("\n")
    );
}

/// The attack on the scan: a planted writer parameter, `writeln!` to it and a
/// `println!` are found; the same in a comment or a test tail, and a write into a
/// `String` or a file, are not.
#[test]
fn the_stream_scan_finds_a_planted_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cmd = dir.path();
    std::fs::create_dir_all(cmd.join("gate")).expect("mkdir");
    std::fs::write(
        cmd.join("gate/mod.rs"),
        "// fn old(out: &mut dyn Write)\npub fn run(out: &mut dyn Write) { let _ = writeln!(out, \"x\"); }\nfn p() { println!(\"x\"); }\n#[cfg(test)]\nmod tests { fn t() { eprintln!(\"ok\"); } }\n",
    )
    .expect("write");
    std::fs::write(
        cmd.join("new.rs"),
        "use std::fmt::Write as _;\nfn f(s: &mut String, tmp: &mut std::fs::File) { let _ = writeln!(s, \"x\"); std::io::Write::write_all(tmp, b\"y\").ok(); }\n",
    )
    .expect("write");
    assert_eq!(
        stream_writes(cmd),
        vec![
            "gate/mod.rs:2: pub fn run(out: &mut dyn Write) { let _ = writeln!(out, \"x\"); }"
                .to_string(),
            "gate/mod.rs:3: fn p() { println!(\"x\"); }".to_string(),
        ]
    );
}
