//! Helpers shared by the end-to-end tests in `tests/tests/`.

use std::path::PathBuf;

/// How many cases a property test runs: `quick` by default, `deep` when the
/// environment sets `KVLOWER_DEEP_TESTS` (to anything but `0`), so the default
/// `cargo test` stays fast and a deep run keeps the full depth.
pub fn cases(quick: u32, deep: u32) -> u32 {
    let on = std::env::var_os("KVLOWER_DEEP_TESTS").is_some_and(|v| !v.is_empty() && v != "0");
    if on { deep } else { quick }
}

/// The repository root (this crate lives in `<root>/tests`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// What one in-process `kvlower` run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub code: u8,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `kvlower ARGS` in-process (no subprocess, no environment).
pub fn kvlower(args: &[&str]) -> Run {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv = std::iter::once("kvlower").chain(args.iter().copied());
    let code = kvlower_cli::run(argv, &mut out, &mut err).as_u8();
    Run {
        code,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    }
}

/// Runs `kvlower ARGS` in-process as if started in `start` (what a user does after
/// `cd start`): the root is found by walking up from it and relative paths on the
/// command line are relative to it ([`kvlower_cli::run_in`]).
pub fn kvlower_in(start: &std::path::Path, args: &[&str]) -> Run {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv = std::iter::once("kvlower").chain(args.iter().copied());
    let code = kvlower_cli::run_in(start, argv, &mut out, &mut err).as_u8();
    Run {
        code,
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
    }
}

/// A scratch repository: a temporary directory holding the real catalog
/// (`modes/modes.yaml`) and the given empty subdirectories.
pub fn scratch_repo(subdirs: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("modes")).expect("mkdir modes");
    std::fs::copy(
        repo_root().join("modes/modes.yaml"),
        dir.path().join("modes/modes.yaml"),
    )
    .expect("copy modes.yaml");
    for sub in subdirs {
        std::fs::create_dir_all(dir.path().join(sub)).expect("mkdir");
    }
    dir
}

/// The file-system environment over the committed repository, one per test binary:
/// what it re-ran (traces, campaigns, joins, routes) is cached, so the tests that judge
/// the committed repository share one re-run of its evidence, as one `check` does.
pub fn committed_env() -> &'static kvlower_evidence::FsEnvironment {
    static ENV: std::sync::OnceLock<kvlower_evidence::FsEnvironment> = std::sync::OnceLock::new();
    ENV.get_or_init(|| kvlower_evidence::FsEnvironment::new(repo_root()))
}

/// The committed repository, loaded once per test binary and shared by every test
/// that only reads it (loading re-reads every descriptor; tests used to do it dozens
/// of times). A test that needs to change it clones what it changes.
pub fn committed_repository() -> &'static kvlower_load::Repository {
    static REPO: std::sync::OnceLock<kvlower_load::Repository> = std::sync::OnceLock::new();
    REPO.get_or_init(|| {
        let (repo, diagnostics) =
            kvlower_evidence::load_repository(committed_env()).expect("the repository loads");
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        repo
    })
}

/// The audit suites of the committed repository, run once per test binary with the
/// real evidence re-runner (what `check` runs).
pub fn committed_audit() -> &'static kvlower_audit::Audit {
    static AUDIT: std::sync::OnceLock<kvlower_audit::Audit> = std::sync::OnceLock::new();
    AUDIT.get_or_init(|| {
        let repo = committed_repository();
        kvlower_cli::suites::run(repo, committed_env())
    })
}

/// A copy of the repository's inputs, committed evidence, results and config in a
/// temporary directory: what `check` reads, so a test can break one thing in it.
pub fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in [
        "modes",
        "capabilities",
        "results",
        "schemas",
        "bad_lowering",
        // committed evidence documents the descriptors anchor (re-run by check)
        "evidence",
        // the patch and recorder files a campaign's source digest covers
        "scripts",
    ] {
        copy_dir(&repo_root().join(sub), &dir.path().join(sub));
    }
    copy_config(dir.path());
    dir
}

/// Rewrites the JSON document at `path` (written compact) after `edit` changes it:
/// how an attack tampers with a committed evidence document in a scratch copy.
pub fn edit_json(path: &std::path::Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let text = std::fs::read_to_string(path).expect("read the JSON document");
    let mut doc: serde_json::Value = serde_json::from_str(&text).expect("a JSON document");
    edit(&mut doc);
    std::fs::write(path, doc.to_string()).expect("write the JSON document");
}

/// Copies the repository's `kvlower.toml` into `to`: a copy of the repository's
/// results keeps what the repository keeps (every audit suite; docs/config.md).
pub fn copy_config(to: &std::path::Path) {
    std::fs::copy(repo_root().join("kvlower.toml"), to.join("kvlower.toml"))
        .expect("copy kvlower.toml");
}

/// Copies the directory tree `from` into `to` (directories and regular files: the
/// repository's inputs hold no links). Panics, failing the test, on any I/O error.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read_dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// An environment in which every repository file exists, every claimed verdict
/// is confirmed and every trace records the descriptor's own runtime. For pure
/// tests of the judgment only: it is fail-open by design, so it lives here, in
/// the tests, and no command can use it (they use `kvlower_evidence::FsEnvironment`).
pub struct AssumeRepoFilesPresent;

impl kvlower_core::Environment for AssumeRepoFilesPresent {
    fn repo_file(&self, _path: &str) -> kvlower_core::RepoFile {
        kvlower_core::RepoFile::Plain
    }

    fn trace_verdict(
        &self,
        _path: &str,
        _verdict: &kvlower_core::descriptor::ClaimedVerdict,
    ) -> kvlower_core::environment::TraceVerdictFacts {
        kvlower_core::environment::TraceVerdictFacts::default()
    }

    fn today(&self) -> (i32, u32, u32) {
        (2026, 11, 26)
    }

    fn repo_file_sha256(&self, _path: &str) -> Result<String, String> {
        // Every file is plain here: no join document asks for a patch file.
        Err("no file is read in this environment".to_owned())
    }
}

/// The runtime identity of the synthetic trace fixtures, as a descriptor writes it.
pub const FIXTURE_IDENTITY: &str = "[{kind: vllm, version: 0.0.0-fixture}]";

/// The header line that gives a synthetic fixture trace [`FIXTURE_IDENTITY`]
/// (docs/trace-format.md, "The header"): without it a trace anchors nothing.
pub const FIXTURE_TRACE_HEADER: &str = "{\"kvlower_trace_header\": 1, \"runtime\": [{\"kind\": \"vllm\", \"version\": \"0.0.0-fixture\"}]}\n";

/// Copies the fixture trace `from` (relative to the repository root) to `to`,
/// with [`FIXTURE_TRACE_HEADER`] as its first line.
pub fn copy_trace_with_header(from: &str, to: &std::path::Path) {
    let body = std::fs::read_to_string(repo_root().join(from)).expect("read fixture trace");
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(to, format!("{FIXTURE_TRACE_HEADER}{body}")).expect("write trace");
}

/// The source files the reference campaigns name (docs/conformance.md, "The source
/// digest"), by evidence directory: used only to upgrade a committed version-1 campaign
/// in a scratch copy.
pub fn campaign_source_files(evidence: &str) -> Vec<&'static str> {
    // The lists the descriptors' campaign anchors name (`source_files`).
    // The judged files and their import closure; the recorder (judging code) is not one.
    if evidence.ends_with("claim-residency") {
        vec![
            "scripts/kvlower_scripts/__init__.py",
            "scripts/kvlower_scripts/common.py",
            "scripts/kvlower_scripts/live_vllm_connector/__init__.py",
            "scripts/kvlower_scripts/live_vllm_connector/claim_connector.py",
            "scripts/kvlower_scripts/live_vllm_connector/claim_residency.py",
            "scripts/kvlower_scripts/live_vllm_connector/engine.py",
            "scripts/kvlower_scripts/live_vllm_connector/residency_campaign.py",
            "scripts/kvlower_scripts/vllm_engine.py",
        ]
    } else {
        vec![
            "scripts/kvlower_scripts/__init__.py",
            "scripts/kvlower_scripts/common.py",
            "scripts/kvlower_scripts/live_vllm_connector/__init__.py",
            "scripts/kvlower_scripts/live_vllm_connector/campaign.py",
            "scripts/kvlower_scripts/live_vllm_connector/claim_connector.py",
            "scripts/kvlower_scripts/live_vllm_connector/engine.py",
            "scripts/kvlower_scripts/vllm_engine.py",
        ]
    }
}

/// Makes the campaign under `dir/evidence` a version-2 campaign (docs/conformance.md) when
/// it is still version 1: its truth in the `kvlower-engine-truth/1` schema, the source
/// digest in the campaign, the truth and every trace header. A test fixture built from
/// the committed evidence, in a scratch copy only; a version-2 campaign is left alone.
pub fn upgrade_campaign(dir: &std::path::Path, evidence: &str) {
    use serde_json::{Value, json};
    let campaign_path = dir.join(evidence).join("gate-campaign.json");
    let mut campaign: Value =
        serde_json::from_str(&std::fs::read_to_string(&campaign_path).expect("campaign"))
            .expect("campaign JSON");
    if campaign["schema_version"] == json!(2) {
        // Already version 2: the scratch copy needs the source files it names.
        for f in campaign["source"]["files"]
            .as_array()
            .expect("source files")
        {
            let f = f.as_str().expect("a path");
            let to = dir.join(f);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::copy(repo_root().join(f), &to).expect("copy source file");
        }
        // ...and the judging code its truth names (docs/conformance.md, "Judging code").
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(evidence).join("truth.json")).expect("truth"),
        )
        .expect("truth JSON");
        for f in truth["recorder"]["files"].as_array().into_iter().flatten() {
            let f = f.as_str().expect("a path");
            let to = dir.join(f);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::copy(repo_root().join(f), &to).expect("copy recorder file");
        }
        return;
    }
    let files = campaign_source_files(evidence);
    let mut bytes = Vec::new();
    for f in &files {
        let to = dir.join(f);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        if repo_root().join(f).is_file() {
            std::fs::copy(repo_root().join(f), &to).expect("copy source file");
        } else {
            // A file the live side adds (the recorder): a stand-in in the scratch copy.
            std::fs::write(&to, "# test stand-in for a recorder module\n").expect("stand-in");
        }
        bytes.push((*f, std::fs::read(&to).expect("read source")));
    }
    let digest =
        kvlower_trace::campaign_doc::source_digest(bytes.iter().map(|(p, b)| (*p, b.as_slice())));
    let residency = evidence.ends_with("claim-residency");
    let truth_path = dir.join(evidence).join("truth.json");
    let mut truth: Value =
        serde_json::from_str(&std::fs::read_to_string(&truth_path).expect("truth"))
            .expect("truth JSON");
    truth["schema"] = json!("kvlower-engine-truth/1");
    truth["family"] = json!(if residency { "residency" } else { "connector" });
    truth["runtime"] = campaign["runtime"].clone();
    truth["source_digest"] = json!(digest);
    for run in truth["runs"].as_array_mut().expect("runs") {
        let rel = run["trace"].as_str().expect("trace").to_owned();
        run["trace"] = json!(format!("{evidence}/{rel}"));
        if residency {
            let steps: Vec<Value> = run["claim_blocks"]["per_step"]
                .as_array()
                .expect("per_step")
                .iter()
                .map(|s| {
                    json!({"step": s[0], "device_cached": s[1], "evictable": s[2], "host_tier": s[3]})
                })
                .collect();
            run["claim_blocks"]["per_step"] = json!(steps);
        }
    }
    let truth_text = serde_json::to_string_pretty(&truth).expect("truth text");
    std::fs::write(&truth_path, &truth_text).expect("write truth");
    for scenario in campaign["scenarios"].as_array().expect("scenarios") {
        for t in scenario["traces"].as_array().expect("traces") {
            add_source_digest(&dir.join(t.as_str().expect("trace path")), &digest);
        }
    }
    campaign["schema_version"] = json!(2);
    campaign["truth"] = json!({
        "path": format!("{evidence}/truth.json"),
        "sha256": kvlower_core::catalog::sha256_hex(truth_text.as_bytes()),
    });
    campaign["source"] = json!({"files": files, "sha256": digest});
    std::fs::write(
        &campaign_path,
        serde_json::to_string_pretty(&campaign).expect("text"),
    )
    .expect("write campaign");
}

/// Writes `digest` into the header line (the first line) of the trace at `path`.
pub fn add_source_digest(path: &std::path::Path, digest: &str) {
    let text = std::fs::read_to_string(path).expect("trace");
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    let mut header: serde_json::Value = serde_json::from_str(first).expect("header");
    header["source_digest"] = serde_json::json!(digest);
    std::fs::write(path, format!("{header}\n{rest}")).expect("write trace");
}

/// Rewrites the campaign's truth document with `edit` and records its new SHA-256 in the
/// campaign (what an attacker who edits the truth would do).
pub fn edit_truth(
    dir: &std::path::Path,
    evidence: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) {
    let truth_path = dir.join(evidence).join("truth.json");
    edit_json(&truth_path, edit);
    let sha = kvlower_core::catalog::sha256_hex(&std::fs::read(&truth_path).expect("truth"));
    edit_json(&dir.join(evidence).join("gate-campaign.json"), |c| {
        c["truth"]["sha256"] = serde_json::json!(sha);
    });
}

/// Re-runs the join of a committed live evidence folder (`dir`, repository-relative: its
/// `registry.yaml` and `capture.kvcap`), as `kvlower check` does.
pub fn rejoin_committed(dir: &str) -> kvlower_join::JoinReport {
    let root = repo_root();
    let registry =
        kvlower_join::Registry::load(&root.join(dir).join("registry.yaml")).expect("registry");
    let capture = std::fs::File::open(root.join(dir).join("capture.kvcap")).expect("capture");
    kvlower_join::join_reader(
        &registry,
        std::path::Path::new(&format!("{dir}/registry.yaml")),
        std::io::BufReader::new(capture),
        std::path::Path::new(&format!("{dir}/capture.kvcap")),
        kvlower_join::EventFormat::Vllm,
    )
    .expect("join")
}

/// A scratch repository holding a copy of the committed campaign `evidence`, upgraded to the
/// version-2 documents ([`upgrade_campaign`]): what every campaign attack edits.
pub fn campaign_scratch(evidence: &str) -> tempfile::TempDir {
    let dir = scratch_repo(&["capabilities"]);
    copy_dir(&repo_root().join(evidence), &dir.path().join(evidence));
    upgrade_campaign(dir.path(), evidence);
    dir
}

/// `kvlower gate --campaign` on a scratch copy's campaign `evidence`, as its JSON envelope.
pub fn campaign_report(dir: &std::path::Path, evidence: &str) -> (u8, serde_json::Value) {
    let run = kvlower(&[
        "gate",
        "--format",
        "json",
        "--root",
        &dir.display().to_string(),
        "--campaign",
        &dir.join(evidence)
            .join("gate-campaign.json")
            .display()
            .to_string(),
    ]);
    let doc = serde_json::from_str(&run.stdout).expect("one JSON envelope");
    (run.code, doc)
}

/// A copy of what the capture-evidence tests judge: the catalog, the descriptors, the
/// committed evidence and the KVCR patch's files (`check` recomputes their sha256;
/// red-team H1), so a test can edit a capture header or a registry and ask again.
pub fn capture_sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in [
        "modes",
        "capabilities",
        "evidence",
        "scripts/kvlower_scripts/live_kvcr",
    ] {
        copy_dir(&repo_root().join(sub), &dir.path().join(sub));
    }
    dir
}

/// What `kvlower explain DESCRIPTOR --mode best_effort --depth telemetry_join` says of
/// the row a capture's join document anchors (stdout, then stderr), under `root`.
pub fn telemetry_join_row(root: &std::path::Path, descriptor: &str) -> String {
    let run = kvlower(&[
        "explain",
        &root.join(descriptor).display().to_string(),
        "--root",
        &root.display().to_string(),
        "--mode",
        "best_effort",
        "--depth",
        "telemetry_join",
    ]);
    format!("{}{}", run.stdout, run.stderr)
}

/// Rewrites a capture's JSON header in place: `edit` gets the header's text, the
/// header length (a big-endian u32 at byte offset 10) is set to the new text's length,
/// the records after it are kept byte for byte (docs/capture-format.md).
pub fn rewrite_capture_header(capture: &std::path::Path, edit: impl FnOnce(&str) -> String) {
    const LEN_AT: usize = 10;
    let bytes = std::fs::read(capture).expect("read capture");
    let field = bytes[LEN_AT..LEN_AT + 4].try_into().expect("4 bytes");
    let n = u32::from_be_bytes(field) as usize;
    let start = LEN_AT + 4;
    let header = std::str::from_utf8(&bytes[start..start + n]).expect("utf-8 header");
    let edited = edit(header);
    let mut out = bytes[..LEN_AT].to_vec();
    out.extend(u32::try_from(edited.len()).expect("fits").to_be_bytes());
    out.extend(edited.as_bytes());
    out.extend(&bytes[start + n..]);
    std::fs::write(capture, out).expect("write capture");
}
