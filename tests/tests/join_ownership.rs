//! vLLM >= 0.32 secondary offload tiers on the KV event stream (issue 35): KVCR's stores
//! carry `medium: "CPU"` with `ownership: "kvcr"`, vLLM's own CPU primary tier the same
//! medium without one. Constructed streams only (never committed as evidence): each test
//! is an attack the join failed or could not express before it read `ownership`.

// A test binary: helpers outside `#[test]` functions may unwrap and panic too.
#![expect(clippy::panic, reason = "test code: a broken fixture should panic")]

use std::io::BufReader;
use std::path::Path;

use kvlower_join::{EventFormat, JoinReport, Reason, Registry, Tier, TierCoverage, Verdict};

/// A registry of one 4-block prompt (block size 2: tokens 1..=8), claimed as
/// leading_prefix_at_least(k) for each `(claim id, k, observe_at event index)`.
fn registry(claims: &[(&str, u32, u64)]) -> (tempfile::TempDir, Registry) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut y = String::from(
        "schema_version: 1\ncache_identity:\n  model: synthetic/m\n  tokenizer: synthetic/t\n  hash_domain: {name: synthetic, encoding: int}\n  runtime: {kind: vllm, version: \"0.32.0\"}\n  namespace: default\n  adapter: {kind: base_model}\n  block_size: 2\n  kv_cache_report_mode: incremental\nclaims:\n",
    );
    for (id, k, at) in claims {
        y.push_str(&format!(
            "  - claim_id: {id}\n    reusable_object_id: prompt-a\n    token_ids: [1, 2, 3, 4, 5, 6, 7, 8]\n    predicate: leading_prefix_at_least({k})\n    registered_before: {{event_index: 0}}\n    observe_at: {{event_index: {at}}}\n"
        ));
    }
    let path = dir.path().join("registry.yaml");
    std::fs::write(&path, y).expect("write");
    let reg = Registry::load(&path).expect("registry");
    (dir, reg)
}

/// One JSON line per batch, sequence-numbered from 0; events as vLLM 0.32 maps.
fn stream(batches: &[&[serde_json::Value]]) -> String {
    let mut s = String::new();
    for (i, b) in batches.iter().enumerate() {
        let line = serde_json::json!({"seq": i, "payload": {"ts": 1.0 + i as f64, "events": b, "data_parallel_rank": 0}});
        s.push_str(&line.to_string());
        s.push('\n');
    }
    s
}

fn tier(medium: &str, ownership: Option<&str>) -> serde_json::Map<String, serde_json::Value> {
    let mut m = serde_json::Map::new();
    m.insert("medium".into(), medium.into());
    if let Some(o) = ownership {
        m.insert("ownership".into(), o.into());
    }
    m
}

/// The prompt's 4 blocks (hashes 11..=14) stored on `medium`/`ownership`, one event per
/// block as the offload tiers publish them.
fn stored(medium: &str, ownership: Option<&str>) -> Vec<serde_json::Value> {
    (0..4u64)
        .map(|i| {
            let mut m = tier(medium, ownership);
            m.insert("type".into(), "BlockStored".into());
            m.insert("block_hashes".into(), serde_json::json!([11 + i]));
            m.insert(
                "parent_block_hash".into(),
                if i == 0 {
                    serde_json::Value::Null
                } else {
                    serde_json::json!(10 + i)
                },
            );
            m.insert(
                "token_ids".into(),
                serde_json::json!([2 * i + 1, 2 * i + 2]),
            );
            m.insert("block_size".into(), 2.into());
            m.insert("lora_id".into(), serde_json::Value::Null);
            m.insert("lora_name".into(), serde_json::Value::Null);
            serde_json::Value::Object(m)
        })
        .collect()
}

/// A removal of the prompt's blocks at `positions` (0-based), one event.
fn removed(medium: &str, ownership: Option<&str>, positions: &[u64]) -> serde_json::Value {
    let mut m = tier(medium, ownership);
    m.insert("type".into(), "BlockRemoved".into());
    m.insert(
        "block_hashes".into(),
        positions
            .iter()
            .map(|p| 11 + p)
            .collect::<Vec<u64>>()
            .into(),
    );
    serde_json::Value::Object(m)
}

/// The stream joined, with a tail marker after it (a store of another prompt, on the
/// device) so that an observation point of [`END`] lies inside the stream: `END` is
/// replaced by the tail marker's event index.
fn join(claims: &[(&str, u32, u64)], batches: &[&[serde_json::Value]]) -> JoinReport {
    let end = batches.iter().map(|b| b.len() as u64).sum::<u64>();
    let claims: Vec<(&str, u32, u64)> = claims
        .iter()
        .map(|&(id, k, at)| (id, k, if at == END { end } else { at }))
        .collect();
    let (_dir, reg) = registry(&claims);
    let tail = [
        serde_json::json!({"type": "BlockStored", "block_hashes": [999], "parent_block_hash": null, "token_ids": [90, 91], "block_size": 2, "lora_id": null, "medium": "GPU", "lora_name": null}),
    ];
    let mut all: Vec<&[serde_json::Value]> = batches.to_vec();
    all.push(&tail);
    let text = stream(&all);
    kvlower_join::join_reader(
        &reg,
        Path::new("registry.yaml"),
        BufReader::new(text.as_bytes()),
        Path::new("events.jsonl"),
        EventFormat::Vllm,
    )
    .unwrap_or_else(|e| panic!("join: {e}"))
}

/// An observation point at the tail marker (see [`join`]).
const END: u64 = u64::MAX;

fn verdict<'a>(r: &'a JoinReport, id: &str) -> &'a Verdict {
    &r.claim(id)
        .unwrap_or_else(|| panic!("no claim {id}"))
        .verdict
}

fn kvcr_tier() -> Tier {
    Tier::OwnedMedium {
        medium: "CPU".into(),
        ownership: "kvcr".into(),
    }
}

#[test]
fn kvcrs_store_is_another_tier_than_vllms_cpu_primary_tier() {
    // GPU, then the primary tier, then KVCR hold the prompt; the device and the primary
    // tier drop it: only KVCR's copy remains, and the join says which tier holds it.
    let gpu = stored("GPU", None);
    let primary = stored("CPU", None);
    let kvcr = stored("CPU", Some("kvcr"));
    let drop_gpu = [removed("GPU", None, &[3, 2, 1, 0])];
    let drop_primary = [removed("CPU", None, &[0, 1, 2, 3])];
    let r = join(
        &[("a", 8, END)],
        &[&gpu, &primary, &kvcr, &drop_gpu, &drop_primary],
    );
    assert_eq!(
        verdict(&r, "a"),
        &Verdict::Materialized {
            since: kvlower_join::EventRef { index: 3, line: 1 },
            tiers: vec![TierCoverage {
                tier: kvcr_tier(),
                blocks: 4
            }],
        },
        "{r:#?}"
    );
    let json = serde_json::to_value(&r).expect("json");
    assert_eq!(
        json["claims"][0]["tiers"][0]["tier"],
        serde_json::json!({"owned_medium": {"medium": "CPU", "ownership": "kvcr"}})
    );
}

#[test]
fn a_kvcr_removal_never_removes_the_primary_tiers_copy() {
    // Only vLLM's primary tier stored the prompt; a removal that says it is KVCR's names
    // copies the stream never showed: the stream fails closed instead of dropping the
    // primary tier's copy (which a medium-only join did: one CPU copy, one CPU removal).
    let primary = stored("CPU", None);
    let bad = [removed("CPU", Some("kvcr"), &[0])];
    let r = join(&[("a", 8, END)], &[&primary, &bad]);
    let Verdict::InsufficientEvidence { reasons } = verdict(&r, "a") else {
        panic!("{r:#?}");
    };
    assert!(
        reasons
            .iter()
            .any(|x| matches!(x, Reason::UnknownBlockRemoved { .. })),
        "{reasons:?}"
    );
}

#[test]
fn an_unknown_ownership_or_a_tier_scope_where_none_belongs_fails_closed() {
    let kvcr = stored("CPU", Some("kvcr"));
    for (what, batch) in [
        ("unknown owner", stored("CPU", Some("lmcache"))),
        ("empty owner", stored("CPU", Some(""))),
        ("an owner on the device", stored("GPU", Some("kvcr"))),
        (
            "an owner on a removal of the device",
            vec![removed("GPU", Some("kvcr"), &[0])],
        ),
        (
            "an owner on AllBlocksCleared",
            vec![serde_json::json!({"type": "AllBlocksCleared", "ownership": "kvcr"})],
        ),
        (
            "a medium on AllBlocksCleared",
            vec![serde_json::json!({"type": "AllBlocksCleared", "medium": "CPU"})],
        ),
    ] {
        let r = join(&[("a", 8, END)], &[&kvcr, &batch]);
        let Verdict::InsufficientEvidence { reasons } = verdict(&r, "a") else {
            panic!("{what}: {r:#?}");
        };
        assert!(
            reasons
                .iter()
                .any(|x| matches!(x, Reason::UnknownTier { .. })),
            "{what}: {reasons:?}"
        );
        assert!(
            r.stream
                .ambiguities
                .iter()
                .any(|x| x.name() == "unknown_tier"),
            "{what}"
        );
    }
}

#[test]
fn a_device_prefix_cache_reset_leaves_kvcrs_copies() {
    // vLLM's AllBlocksCleared comes from the device's block pool only
    // (reset_prefix_cache); KVCR keeps the prompt and later evicts it itself. A join
    // that emptied every tier lost KVCR's copy at the reset and then read KVCR's
    // eviction as the removal of a block it never saw (every claim insufficient).
    let gpu = stored("GPU", None);
    let kvcr = stored("CPU", Some("kvcr"));
    let clear = [serde_json::json!({"type": "AllBlocksCleared"})];
    let evict = [removed("CPU", Some("kvcr"), &[3, 2, 1, 0])];
    let r = join(
        // Observed at the clear (event 8: 4 device stores, 4 KVCR stores, the clear).
        &[("after-reset", 8, 8), ("after-eviction", 8, END)],
        &[&gpu, &kvcr, &clear, &evict],
    );
    assert_eq!(
        verdict(&r, "after-reset"),
        &Verdict::Materialized {
            since: kvlower_join::EventRef { index: 3, line: 1 },
            tiers: vec![TierCoverage {
                tier: kvcr_tier(),
                blocks: 4
            }],
        },
        "{r:#?}"
    );
    assert_eq!(
        verdict(&r, "after-eviction"),
        &Verdict::Lost {
            materialized_at: kvlower_join::EventRef { index: 3, line: 1 },
            lost_at: kvlower_join::EventRef { index: 9, line: 4 },
        }
    );
    assert!(
        r.stream.ambiguities.is_empty(),
        "{:?}",
        r.stream.ambiguities
    );
}

#[test]
fn kvcr_evicting_out_of_prefix_order_loses_the_leading_prefix_at_once() {
    // KVCR's eviction order within one deposit follows its deposit order, not the
    // prefix: evicting blocks 1 and 3 (MISS, HIT, MISS, HIT) loses every leading-prefix
    // claim at that event, the head included, although half the blocks are still held.
    let kvcr = stored("CPU", Some("kvcr"));
    let evict = [removed("CPU", Some("kvcr"), &[0, 2])];
    let r = join(
        &[("whole", 8, END), ("head", 2, END), ("tail3", 6, END)],
        &[&kvcr, &evict],
    );
    for id in ["whole", "head", "tail3"] {
        assert_eq!(
            verdict(&r, id),
            &Verdict::Lost {
                materialized_at: kvlower_join::EventRef {
                    index: if id == "head" {
                        0
                    } else {
                        if id == "whole" { 3 } else { 2 }
                    },
                    line: 1
                },
                lost_at: kvlower_join::EventRef { index: 4, line: 2 },
            },
            "{id}"
        );
    }
}

#[test]
fn the_positional_encoding_reads_ownership_at_its_field_position() {
    // vLLM's BlockStored fields after the tag: block_hashes, parent_block_hash, token_ids,
    // block_size, lora_id, medium, lora_name, extra_keys, group_idx, kv_cache_spec_kind,
    // kv_cache_spec_sliding_window, locality, ownership (13); BlockRemoved: block_hashes,
    // medium, group_idx, locality, ownership (5).
    let null = serde_json::Value::Null;
    let stored = |i: u64, owner: &str| {
        serde_json::json!([
            "BlockStored",
            [11 + i],
            if i == 0 {
                null.clone()
            } else {
                serde_json::json!(10 + i)
            },
            [2 * i + 1, 2 * i + 2],
            2,
            null,
            "CPU",
            null,
            null,
            0,
            "full_attention",
            null,
            null,
            owner
        ])
    };
    let kvcr: Vec<serde_json::Value> = (0..4).map(|i| stored(i, "kvcr")).collect();
    let r = join(&[("a", 8, END)], &[&kvcr]);
    assert_eq!(
        verdict(&r, "a"),
        &Verdict::Materialized {
            since: kvlower_join::EventRef { index: 3, line: 1 },
            tiers: vec![TierCoverage {
                tier: kvcr_tier(),
                blocks: 4
            }],
        }
    );
    let evict = [serde_json::json!([
        "BlockRemoved",
        [11],
        "CPU",
        0,
        null,
        "kvcr"
    ])];
    let r = join(&[("a", 8, END)], &[&kvcr, &evict]);
    assert!(matches!(verdict(&r, "a"), Verdict::Lost { .. }), "{r:#?}");
    let unknown = [serde_json::json!([
        "BlockRemoved",
        [11],
        "CPU",
        0,
        null,
        "lmcache"
    ])];
    let r = join(&[("a", 8, END)], &[&kvcr, &unknown]);
    assert!(
        r.stream
            .ambiguities
            .iter()
            .any(|x| x.name() == "unknown_tier"),
        "{:?}",
        r.stream.ambiguities
    );
}

#[test]
fn a_vllm_clear_loses_the_primary_tiers_copy() {
    // vLLM's primary tier (medium CPU, no ownership) alone holds the prompt, then
    // AllBlocksCleared. A connector reset (`reset_prefix_cache(reset_connector=True)`)
    // empties that tier with no event at all (vLLM 0.32.0
    // `vllm/v1/kv_offload/tiering/manager.py`, `reset_cache`), and the stream cannot say
    // whether it happened: the claim is lost at the clear, never materialized past it. A
    // join that cleared only the device kept the primary tier's copies (fail-open). The
    // same holds for a STORAGE copy without ownership and for the device.
    for (what, medium) in [
        ("primary CPU tier", "CPU"),
        ("STORAGE, no owner", "STORAGE"),
    ] {
        let offload = stored(medium, None);
        let gpu = stored("GPU", None);
        let clear = [serde_json::json!({"type": "AllBlocksCleared"})];
        let r = join(
            // Observed at the clear (event 8) and after it, at the tail marker.
            &[("at-clear", 8, 8), ("after-clear", 8, END)],
            &[&gpu, &offload, &clear],
        );
        for id in ["at-clear", "after-clear"] {
            assert_eq!(
                verdict(&r, id),
                &Verdict::Lost {
                    materialized_at: kvlower_join::EventRef { index: 3, line: 1 },
                    lost_at: kvlower_join::EventRef { index: 8, line: 3 },
                },
                "{what}, {id}: {r:#?}"
            );
        }
        assert!(r.stream.ambiguities.is_empty(), "{what}");
    }
}

#[test]
fn only_kvcrs_copy_survives_a_vllm_clear() {
    // The device, the primary tier and KVCR (local DRAM, and its STORAGE tier) hold the
    // prompt; after AllBlocksCleared only KVCR's copies count: its owner is a secondary
    // tier, which vLLM 0.32.0's connector reset "intentionally" does not reset
    // (`TieringOffloadingManager.reset_cache`).
    let gpu = stored("GPU", None);
    let primary = stored("CPU", None);
    let kvcr = stored("CPU", Some("kvcr"));
    let kvcr_disk = stored("STORAGE", Some("kvcr"));
    let clear = [serde_json::json!({"type": "AllBlocksCleared"})];
    let r = join(
        // Observed right after the clear (event 16).
        &[("after-clear", 8, 16)],
        &[&gpu, &primary, &kvcr, &kvcr_disk, &clear],
    );
    assert_eq!(
        verdict(&r, "after-clear"),
        &Verdict::Materialized {
            since: kvlower_join::EventRef { index: 3, line: 1 },
            tiers: vec![
                TierCoverage {
                    tier: kvcr_tier(),
                    blocks: 4
                },
                TierCoverage {
                    tier: Tier::OwnedMedium {
                        medium: "STORAGE".into(),
                        ownership: "kvcr".into(),
                    },
                    blocks: 4
                },
            ],
        },
        "{r:#?}"
    );
    assert!(
        r.stream.ambiguities.is_empty(),
        "{:?}",
        r.stream.ambiguities
    );
}

#[test]
fn a_primary_tier_removal_after_a_vllm_clear_fails_closed() {
    // Without a connector reset the primary tier keeps its copies and later evicts them
    // (seen live: it removes blocks right after the clear). The join dropped those copies
    // at the clear, so the removal names a copy it no longer holds: `unknown_block_removed`,
    // a stream-wide ambiguity (every claim not yet judged is insufficient_evidence), never
    // a count of the primary tier's copies as still present.
    let primary = stored("CPU", None);
    let kvcr = stored("CPU", Some("kvcr"));
    let clear = [serde_json::json!({"type": "AllBlocksCleared"})];
    let evict = [removed("CPU", None, &[0, 1])];
    let r = join(&[("a", 8, END)], &[&primary, &kvcr, &clear, &evict]);
    let Verdict::InsufficientEvidence { reasons } = verdict(&r, "a") else {
        panic!("{r:#?}");
    };
    assert!(
        reasons
            .iter()
            .any(|x| matches!(x, Reason::UnknownBlockRemoved { .. })),
        "{reasons:?}"
    );
}

/// `reasons` names `unknown_tier`, and the stream records it (red-team holes H3, H4).
fn assert_unknown_tier(r: &JoinReport, what: &str) {
    let Verdict::InsufficientEvidence { reasons } = verdict(r, "a") else {
        panic!("{what}: {r:#?}");
    };
    assert!(
        reasons
            .iter()
            .any(|x| matches!(x, Reason::UnknownTier { .. })),
        "{what}: {reasons:?}"
    );
}

#[test]
fn a_scoped_clear_in_either_encoding_fails_closed() {
    // H3: the array form of AllBlocksCleared carrying a medium or an ownership was read as
    // a plain clear (KVCR's copies kept, the claim materialized); the map form gave
    // unknown_tier only for `medium` and `ownership`, not for `locality` or any other key.
    let kvcr = stored("CPU", Some("kvcr"));
    for (what, clear) in [
        (
            "positional medium",
            serde_json::json!(["AllBlocksCleared", "CPU"]),
        ),
        (
            "positional medium and ownership",
            serde_json::json!(["AllBlocksCleared", "CPU", null, null, null, "kvcr"]),
        ),
        (
            "map locality",
            serde_json::json!({"type": "AllBlocksCleared", "locality": "REMOTE"}),
        ),
        (
            "map unknown key",
            serde_json::json!({"type": "AllBlocksCleared", "scope": "kvcr"}),
        ),
    ] {
        let r = join(&[("a", 8, END)], &[&kvcr, &[clear]]);
        assert_unknown_tier(&r, what);
    }
    // A bare clear in either encoding is still a plain clear (KVCR's copies kept).
    for clear in [
        serde_json::json!(["AllBlocksCleared"]),
        serde_json::json!({"type": "AllBlocksCleared"}),
    ] {
        let r = join(&[("a", 8, END)], &[&kvcr, &[clear]]);
        assert!(
            matches!(verdict(&r, "a"), Verdict::Materialized { .. }),
            "{r:#?}"
        );
    }
}

#[test]
fn a_non_null_locality_in_either_encoding_fails_closed() {
    // H4: `locality` was not read, so a REMOTE KVCR copy counted as KVCR's local DRAM.
    // vLLM 0.32.0's KVCR manager never sets it: a non-null one is unknown_tier.
    let remote: Vec<serde_json::Value> = stored("CPU", Some("kvcr"))
        .into_iter()
        .map(|mut e| {
            e["locality"] = "REMOTE".into();
            e
        })
        .collect();
    let r = join(&[("a", 8, END)], &[&remote]);
    assert_unknown_tier(&r, "map store");
    let null = serde_json::Value::Null;
    let positional: Vec<serde_json::Value> = (0..4u64)
        .map(|i| {
            serde_json::json!([
                "BlockStored",
                [11 + i],
                if i == 0 {
                    null.clone()
                } else {
                    serde_json::json!(10 + i)
                },
                [2 * i + 1, 2 * i + 2],
                2,
                null,
                "CPU",
                null,
                null,
                0,
                "full_attention",
                null,
                "REMOTE",
                "kvcr"
            ])
        })
        .collect();
    let r = join(&[("a", 8, END)], &[&positional]);
    assert_unknown_tier(&r, "positional store");
    // A removal: a REMOTE copy leaving says nothing the join can apply to the local one.
    let kvcr = stored("CPU", Some("kvcr"));
    let mut rm = removed("CPU", Some("kvcr"), &[3]);
    rm["locality"] = "REMOTE".into();
    let r = join(&[("a", 6, END)], &[&kvcr, &[rm]]);
    assert_unknown_tier(&r, "map removal");
    let rm = serde_json::json!(["BlockRemoved", [14], "CPU", 0, "REMOTE", "kvcr"]);
    let r = join(&[("a", 6, END)], &[&kvcr, &[rm]]);
    assert_unknown_tier(&r, "positional removal");
}

#[test]
fn a_repeated_key_in_a_json_lines_event_is_refused() {
    // H5: serde_json keeps the last of two equal keys, so `"ownership":"lmcache",
    // "ownership":"kvcr"` read as KVCR. A repeated key at any depth makes the line
    // malformed (malformed_trace), as msgpack captures already are.
    let (_dir, reg) = registry(&[("a", 8, 3)]);
    let line = r#"{"seq":0,"payload":{"ts":1.0,"data_parallel_rank":0,"events":[{"type":"BlockStored","block_hashes":[11],"parent_block_hash":null,"token_ids":[1,2],"block_size":2,"lora_id":null,"lora_name":null,"medium":"CPU","ownership":"lmcache","ownership":"kvcr"}]}}"#;
    let e = kvlower_join::join_reader(
        &reg,
        Path::new("registry.yaml"),
        BufReader::new(format!("{line}\n").as_bytes()),
        Path::new("events.jsonl"),
        EventFormat::Vllm,
    )
    .expect_err("a repeated key must be refused");
    assert!(e.to_string().contains("repeated"), "{e}");
    assert_eq!(e.code().name(), "malformed-trace", "{e}");
}

#[test]
fn a_stream_naming_more_than_64_tiers_fails_closed() {
    // H2: every medium string was a tier of its own, without bound (and every clear cost
    // records × tiers). Beyond 64 distinct tiers a stream is unknown_tier.
    let kvcr = stored("CPU", Some("kvcr"));
    let many: Vec<serde_json::Value> = (0..64u64)
        .map(|i| {
            serde_json::json!({"type": "BlockStored", "block_hashes": [5000 + i], "parent_block_hash": null, "token_ids": [200 + 2 * i, 201 + 2 * i], "block_size": 2, "lora_id": null, "medium": format!("M{i}"), "lora_name": null})
        })
        .collect();
    // KVCR's tier, the tail marker's GPU and 64 media: 66 > 64.
    let r = join(&[("a", 8, END)], &[&kvcr, &many]);
    assert_unknown_tier(&r, "66 tiers");
    // 62 media: 64 tiers in all, still within the cap.
    let r = join(&[("a", 8, END)], &[&kvcr, &many[..62]]);
    assert!(
        matches!(verdict(&r, "a"), Verdict::Materialized { .. }),
        "{r:#?}"
    );
}
