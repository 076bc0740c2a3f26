//! `kvlower join` on fixtures generated from the runtimes' own event definitions
//! (`scripts/kvlower_scripts/runtime_fixtures/gen.py`; `docs/join.md`, "Runtime fixtures"): vLLM 0.32.0
//! (maps in a positional batch, `bytes` and `int` hashes), vLLM 0.23.0 (positional
//! arrays), SGLang 0.5.18 (arrays, salt as metadata), 0.5.20 and 0.5.23 (tagged maps,
//! `cache_salt`, `lora_name`). Each set is joined from its capture file and from its
//! JSON Lines twin, and the two must agree.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a broken fixture should panic"
)]

use std::path::PathBuf;

use kvlower_capture::file::{CaptureReader, Record, event_frame};
use kvlower_join::{EventFormat, EventRef, JoinReport, Reason, Tier, TierCoverage, Verdict};
use kvlower_tests::repo_root;
use serde_json::Value;

/// One generated fixture set and what its stream must decode to.
struct Set {
    dir: &'static str,
    format: EventFormat,
    /// Events in the stream (SGLang publishes one `BlockStored` per page).
    events: u64,
    stored: u64,
    /// Where prompt A's chain became whole (the `since` of `a-resident`).
    a_whole_at: u64,
    b_stored_at: u64,
    removals_at: u64,
    cleared_at: u64,
    lora_event: u64,
    /// The tiers holding A at the last event before the clear.
    a_tiers: &'static [&'static str],
    /// Whether the stream names the adapter of a LoRA store.
    names_adapter: bool,
    /// vLLM sets end with an eighth batch after the clear: a multimodal store (event 9)
    /// and a sliding-window group's store of A (group 1, event 10).
    tail: bool,
}

const SETS: &[Set] = &[
    Set {
        dir: "vllm-0.32.0",
        format: EventFormat::Vllm,
        events: 11,
        stored: 7,
        a_whole_at: 0,
        b_stored_at: 1,
        removals_at: 6,
        cleared_at: 8,
        lora_event: 4,
        a_tiers: &["GPU", "STORAGE"],
        names_adapter: true,
        tail: true,
    },
    Set {
        dir: "vllm-0.32.0-int",
        format: EventFormat::Vllm,
        events: 11,
        stored: 7,
        a_whole_at: 0,
        b_stored_at: 1,
        removals_at: 6,
        cleared_at: 8,
        lora_event: 4,
        a_tiers: &["GPU", "STORAGE"],
        names_adapter: true,
        tail: true,
    },
    Set {
        dir: "vllm-0.23.0",
        format: EventFormat::Vllm,
        events: 11,
        stored: 7,
        a_whole_at: 0,
        b_stored_at: 1,
        removals_at: 6,
        cleared_at: 8,
        lora_event: 4,
        a_tiers: &["GPU", "STORAGE"],
        names_adapter: true,
        tail: true,
    },
    Set {
        dir: "sglang-0.5.18",
        format: EventFormat::Sglang,
        events: 14,
        stored: 11,
        a_whole_at: 1,
        b_stored_at: 2,
        removals_at: 11,
        cleared_at: 13,
        lora_event: 6,
        a_tiers: &["DISK", "EXTERNAL", "GPU"],
        names_adapter: false,
        tail: false,
    },
    Set {
        dir: "sglang-0.5.20",
        format: EventFormat::Sglang,
        events: 14,
        stored: 11,
        a_whole_at: 1,
        b_stored_at: 2,
        removals_at: 11,
        cleared_at: 13,
        lora_event: 6,
        a_tiers: &["DISK", "EXTERNAL", "GPU"],
        names_adapter: false,
        tail: false,
    },
    Set {
        dir: "sglang-0.5.23",
        format: EventFormat::Sglang,
        events: 14,
        stored: 11,
        a_whole_at: 1,
        b_stored_at: 2,
        removals_at: 11,
        cleared_at: 13,
        lora_event: 6,
        a_tiers: &["DISK", "EXTERNAL", "GPU"],
        names_adapter: true,
        tail: false,
    },
];

/// The seven batches are seven frames / lines, one per line number (eight with the tail).
fn line_count(set: &Set) -> u64 {
    if set.tail { 8 } else { 7 }
}

fn dir(set: &Set) -> PathBuf {
    repo_root()
        .join("tests/fixtures/join/runtime")
        .join(set.dir)
}

fn join(set: &Set, registry: &str, events: &str) -> JoinReport {
    let d = dir(set);
    kvlower_join::join_paths(&d.join(registry), &d.join(events), set.format)
        .unwrap_or_else(|e| panic!("{} {registry} {events}: {e}", set.dir))
}

/// The line (frame number) of the batch holding event `index`.
fn line_of(set: &Set, index: u64) -> u64 {
    let d = dir(set);
    let text = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
    let mut seen = 0;
    for (i, l) in text.lines().enumerate() {
        let v: Value = serde_json::from_str(l).unwrap();
        seen += v["payload"][1].as_array().unwrap().len() as u64;
        if index < seen {
            return i as u64 + 1;
        }
    }
    panic!("{}: no event {index}", set.dir)
}

fn at(set: &Set, index: u64) -> EventRef {
    EventRef {
        index,
        line: line_of(set, index),
    }
}

fn tiers(names: &[&str], blocks: u64) -> Vec<TierCoverage> {
    names
        .iter()
        .map(|m| TierCoverage {
            tier: Tier::Medium((*m).to_string()),
            blocks,
        })
        .collect()
}

fn verdict<'a>(r: &'a JoinReport, claim: &str) -> &'a Verdict {
    &r.claim(claim)
        .unwrap_or_else(|| panic!("no claim {claim}"))
        .verdict
}

#[test]
fn every_runtime_fixture_decodes_to_the_same_verdicts_from_capture_and_json_lines() {
    for set in SETS {
        for events in ["events.kvcap", "events.jsonl"] {
            let r = join(set, "registry.yaml", events);
            let ctx = format!("{} {events}", set.dir);
            assert_eq!(r.stream.lines, line_count(set), "{ctx}");
            assert_eq!(r.stream.events, set.events, "{ctx}");
            assert_eq!(r.stream.stored, set.stored, "{ctx}");
            assert_eq!(r.stream.removed, 2, "{ctx}");
            assert_eq!(r.stream.cleared, 1, "{ctx}");
            assert!(r.stream.sequence_checked, "{ctx}: frames carry seq 0..");
            assert!(
                r.stream.ambiguities.is_empty(),
                "{ctx}: {:?}",
                r.stream.ambiguities
            );
            assert_eq!(
                verdict(&r, "a-resident"),
                &Verdict::Materialized {
                    since: at(set, set.a_whole_at),
                    tiers: tiers(set.a_tiers, 2),
                },
                "{ctx}: the CPU copy was removed, GPU and storage copies stay"
            );
            assert_eq!(
                verdict(&r, "b-evicted"),
                &Verdict::Lost {
                    materialized_at: at(set, set.b_stored_at),
                    lost_at: at(set, set.removals_at),
                },
                "{ctx}"
            );
            assert_eq!(
                verdict(&r, "a-after-clear"),
                &Verdict::Lost {
                    materialized_at: at(set, set.a_whole_at),
                    lost_at: at(set, set.cleared_at),
                },
                "{ctx}: AllBlocksCleared empties every tier"
            );
            assert_eq!(r.summary.materialized, 1, "{ctx}");
            if set.tail {
                assert_eq!(
                    verdict(&r, "a-other-group"),
                    &Verdict::Lost {
                        materialized_at: at(set, set.a_whole_at),
                        lost_at: at(set, set.cleared_at),
                    },
                    "{ctx}: group 1's store of the same hashes is another cache"
                );
                assert_eq!(
                    r.stream
                        .ignored_groups
                        .iter()
                        .map(|g| (g.group_idx, g.kind.as_deref(), g.events))
                        .collect::<Vec<_>>(),
                    [(1, Some("sliding_window"), 1)],
                    "{ctx}"
                );
                assert_eq!(
                    verdict(&r, "m-multimodal"),
                    &Verdict::InsufficientEvidence {
                        reasons: vec![Reason::UnverifiedExtraHashInputs { event: at(set, 9) }],
                    },
                    "{ctx}: vLLM's extra_keys hold the image's (identifier, offset)"
                );
                assert_eq!((r.summary.lost, r.summary.insufficient_evidence), (3, 1));
            } else {
                assert!(r.stream.ignored_groups.is_empty(), "{ctx}");
                assert_eq!((r.summary.lost, r.summary.insufficient_evidence), (2, 0));
            }
        }
    }
}

#[test]
fn a_salted_store_materializes_only_the_claim_with_that_salt() {
    for set in SETS {
        for events in ["events.kvcap", "events.jsonl"] {
            let r = join(set, "registry-salted.yaml", events);
            assert_eq!(
                verdict(&r, "c-salted"),
                &Verdict::Materialized {
                    // Batch 3 holds the salted store, then the LoRA store.
                    since: at(set, set.lora_event - 1),
                    tiers: tiers(&["GPU"], 1),
                },
                "{} {events}: the salted root (vLLM extra_keys, SGLang metadata or cache_salt) \
                 is the claim's; A's unsalted first block with the same tokens is not",
                set.dir
            );
        }
    }
}

#[test]
fn a_lora_claim_is_judged_only_where_the_stream_names_the_adapter() {
    for set in SETS {
        for events in ["events.kvcap", "events.jsonl"] {
            let r = join(set, "registry-lora.yaml", events);
            let want = if set.names_adapter {
                Verdict::Materialized {
                    since: at(set, set.lora_event),
                    tiers: tiers(&["GPU"], 1),
                }
            } else {
                // SGLang <= 0.5.20 publishes `lora_id=None` and no name: the block's
                // adapter cannot be told from the base model's.
                Verdict::InsufficientEvidence {
                    reasons: vec![
                        Reason::AdapterMismatch {
                            event: at(set, set.lora_event),
                        },
                        Reason::UnknownBlockAdapter {
                            event: at(set, set.lora_event),
                        },
                    ],
                }
            };
            assert_eq!(verdict(&r, "l-lora"), &want, "{} {events}", set.dir);
        }
    }
}

/// The JSON Lines twin is the capture's payloads decoded, frame by frame: the two forms
/// cannot drift apart, and the capture holds the runtime's bytes unchanged.
#[test]
fn json_lines_are_the_capture_payloads_decoded() {
    for set in SETS {
        let d = dir(set);
        let file = std::fs::File::open(d.join("events.kvcap")).unwrap();
        let mut cap = CaptureReader::new(std::io::BufReader::new(file)).unwrap();
        let text = std::fs::read_to_string(d.join("events.jsonl")).unwrap();
        let mut lines = text.lines();
        let mut frames = 0_u64;
        while let Some(rec) = cap.next_record().unwrap() {
            let Record::Frame { rank, parts, .. } = rec else {
                panic!("{}: a dropped-frame record", set.dir)
            };
            assert_eq!(rank, 0, "{}", set.dir);
            let f = event_frame(&parts).unwrap();
            assert_eq!(f.seq, frames, "{}: sequences from 0, no gap", set.dir);
            let line: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            assert_eq!(line["seq"], Value::from(f.seq), "{}", set.dir);
            assert_eq!(
                kvlower_join::msgpack::decode(f.payload).unwrap(),
                line["payload"],
                "{} frame {frames}",
                set.dir
            );
            frames += 1;
        }
        assert_eq!(frames, line_count(set), "{}", set.dir);
        assert!(lines.next().is_none(), "{}: extra JSON lines", set.dir);
    }
}

/// The wire shape each runtime version uses, as its own classes encoded it.
#[test]
fn each_set_carries_its_runtime_versions_wire_shape() {
    for set in SETS {
        let text = std::fs::read_to_string(dir(set).join("events.jsonl")).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let batch = first["payload"].as_array().expect("batch is positional");
        assert_eq!(batch.len(), 3, "{}: [ts, events, rank]", set.dir);
        let ev = &batch[1][0];
        let positional = matches!(set.dir, "vllm-0.23.0" | "sglang-0.5.18");
        assert_eq!(ev.is_array(), positional, "{}: {ev}", set.dir);
        if !positional {
            assert_eq!(ev["type"], "BlockStored", "{}", set.dir);
        }
        let hash = if positional {
            &ev[1][0]
        } else {
            &ev["block_hashes"][0]
        };
        match set.dir {
            // vLLM's default `bytes` hash: a msgpack bin, read as lowercase hex.
            "vllm-0.32.0" => assert_eq!(hash.as_str().map(str::len), Some(64), "{hash}"),
            _ => assert!(hash.is_i64() || hash.is_u64(), "{}: {hash}", set.dir),
        }
        if set.dir == "vllm-0.32.0" {
            assert_eq!(ev["session_id"], "session-1", "0.32 adds session_id");
        }
        if set.dir.starts_with("sglang") && set.dir != "sglang-0.5.18" {
            assert!(text.contains(r#""cache_salt":"tenant-x""#), "{}", set.dir);
        }
        if set.dir == "sglang-0.5.18" {
            assert!(
                text.contains(r#"{"cache_salt":"tenant-x"}"#),
                "metadata at index 7"
            );
        }
        // SGLang hashes are signed 64-bit: at least one is negative here.
        if set.format == EventFormat::Sglang {
            assert!(text.contains("[-"), "{}: a negative hash", set.dir);
        }
    }
}

/// Every set records what it follows: runtime, version, repository, path and a sha256
/// of the definitions file actually loaded.
#[test]
fn every_set_records_its_source() {
    for set in SETS {
        let src: Value =
            serde_json::from_str(&std::fs::read_to_string(dir(set).join("SOURCE.json")).unwrap())
                .unwrap();
        for key in [
            "runtime",
            "version",
            "repository",
            "path",
            "distribution",
            "msgspec",
        ] {
            assert!(
                src[key].as_str().is_some_and(|s| !s.is_empty()),
                "{}: SOURCE.json has no {key}",
                set.dir
            );
        }
        let sha = src["path_sha256"].as_str().unwrap_or_default();
        assert!(
            sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()),
            "{}: path_sha256 {sha:?}",
            set.dir
        );
        assert!(
            set.dir.starts_with(src["runtime"].as_str().unwrap()),
            "{}",
            set.dir
        );
        assert!(
            set.dir.contains(src["version"].as_str().unwrap()),
            "{}",
            set.dir
        );
    }
}

/// TensorRT-LLM's polled JSON, produced by its own `KVCacheEventSerializer`
/// (NVIDIA/TensorRT-LLM commit ed53795b, `tensorrt_llm/_utils.py`) over stand-ins for
/// the binding objects. That serializer leaves `lora_id` out, so the blocks name no
/// adapter: judgeable only when the registry says the engine ran without LoRA.
#[test]
fn trtllm_polled_json_from_its_own_serializer() {
    let d = repo_root().join("tests/fixtures/join/runtime/trtllm-ed53795b");
    let events = d.join("events.jsonl");
    let r =
        kvlower_join::join_paths(&d.join("registry.yaml"), &events, EventFormat::Trtllm).unwrap();
    assert_eq!(
        (
            r.stream.lines,
            r.stream.events,
            r.stream.created,
            r.stream.stored
        ),
        (3, 6, 1, 2)
    );
    assert_eq!((r.stream.updated, r.stream.removed), (2, 1));
    assert!(r.stream.sequence_checked && r.stream.ambiguities.is_empty());
    assert_eq!(
        verdict(&r, "a-resident"),
        &Verdict::Materialized {
            since: EventRef { index: 1, line: 1 },
            tiers: vec![TierCoverage {
                tier: Tier::CacheLevel(1),
                blocks: 2,
            }],
        },
        "both blocks moved from cache level 0 to 1 (updated.cache_level)"
    );
    assert_eq!(
        verdict(&r, "b-evicted"),
        &Verdict::Lost {
            materialized_at: EventRef { index: 2, line: 1 },
            lost_at: EventRef { index: 5, line: 3 },
        }
    );

    let r = kvlower_join::join_paths(
        &d.join("registry-lora-unknown.yaml"),
        &events,
        EventFormat::Trtllm,
    )
    .unwrap();
    for (claim, index) in [("a-resident", 1), ("b-evicted", 2)] {
        assert_eq!(
            verdict(&r, claim),
            &Verdict::InsufficientEvidence {
                reasons: vec![Reason::UnknownBlockAdapter {
                    event: EventRef { index, line: 1 },
                }],
            },
            "{claim}: without `lora_enabled: false` a block naming no adapter cannot count"
        );
    }
    let src: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("SOURCE.json")).unwrap()).unwrap();
    assert_eq!(src["commit"], "ed53795b33fc139493f762a1c6c53f691cf52d38");
    assert_eq!(src["repository"], "https://github.com/NVIDIA/TensorRT-LLM");
}

/// TensorRT-LLM's msgpack streaming path, as Dynamo's TensorRT-LLM publisher
/// (ai-dynamo/dynamo ecd29799, `components/src/dynamo/trtllm/publisher.py`) turns the
/// polled events into frames: vLLM-style batches, `block_mm_infos` per block, `lora_id`
/// always null (the JSON it reads has none). Before the decoder fixes the JSON Lines
/// form failed (`event has no event_id`), the multimodal block materialized its claim,
/// and a null adapter counted as the base model.
#[test]
fn trtllm_streaming_frames_from_dynamos_publisher() {
    let d = repo_root().join("tests/fixtures/join/runtime/trtllm-streaming-dynamo-ecd29799");
    for events in ["events.kvcap", "events.jsonl"] {
        let ev = d.join(events);
        let r = kvlower_join::join_paths(&d.join("registry.yaml"), &ev, EventFormat::Trtllm)
            .unwrap_or_else(|e| panic!("{events}: {e}"));
        // `created` is not forwarded and `updated` (the demotion) is dropped.
        assert_eq!(
            (
                r.stream.lines,
                r.stream.events,
                r.stream.stored,
                r.stream.removed
            ),
            (4, 4, 3, 1),
            "{events}"
        );
        assert!(r.stream.sequence_checked && r.stream.ambiguities.is_empty());
        assert_eq!(
            verdict(&r, "a-resident"),
            &Verdict::Materialized {
                since: EventRef { index: 0, line: 1 },
                tiers: tiers(&["GPU"], 2),
            },
            "{events}: no medium in these frames reads as GPU"
        );
        assert_eq!(
            verdict(&r, "b-evicted"),
            &Verdict::Lost {
                materialized_at: EventRef { index: 1, line: 2 },
                lost_at: EventRef { index: 3, line: 4 },
            },
            "{events}"
        );
        assert_eq!(
            verdict(&r, "m-multimodal"),
            &Verdict::InsufficientEvidence {
                reasons: vec![Reason::UnverifiedExtraHashInputs {
                    event: EventRef { index: 2, line: 3 },
                }],
            },
            "{events}: the block's hash folds in an image the registry cannot name"
        );

        let r = kvlower_join::join_paths(
            &d.join("registry-lora-unknown.yaml"),
            &ev,
            EventFormat::Trtllm,
        )
        .unwrap();
        assert_eq!(
            verdict(&r, "a-resident"),
            &Verdict::InsufficientEvidence {
                reasons: vec![Reason::UnknownBlockAdapter {
                    event: EventRef { index: 0, line: 1 },
                }],
            },
            "{events}: `lora_id: null` from this path does not mean the base model"
        );
    }
}

/// SGLang publishes `lora_id=None` for every block, so a base-model claim counts only
/// when the registry says the engine ran without LoRA (`lora_enabled: false`, which the
/// generated registries carry): without it, the block's adapter is unknown.
#[test]
fn an_sglang_base_model_claim_needs_lora_disabled() {
    for set in SETS.iter().filter(|s| s.format == EventFormat::Sglang) {
        let d = dir(set);
        let text = std::fs::read_to_string(d.join("registry.yaml")).unwrap();
        assert!(text.contains("  lora_enabled: false\n"), "{}", set.dir);
        let tmp = tempfile::tempdir().unwrap();
        let reg = tmp.path().join("registry.yaml");
        std::fs::write(&reg, text.replace("  lora_enabled: false\n", "")).unwrap();
        let r = kvlower_join::join_paths(&reg, &d.join("events.kvcap"), set.format).unwrap();
        assert_eq!(
            verdict(&r, "b-evicted"),
            &Verdict::InsufficientEvidence {
                reasons: vec![Reason::UnknownBlockAdapter {
                    event: at(set, set.b_stored_at),
                }],
            },
            "{}",
            set.dir
        );
    }
}
