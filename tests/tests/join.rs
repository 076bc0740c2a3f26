//! `kvlower join` end to end: verdicts per format, every fail-closed ambiguity rule,
//! malformed input, pressure controls, and snapshots of the human and JSON output.
//!
//! All fixtures are synthetic (see `tests/fixtures/join/README.md`).

// A test binary: helpers outside `#[test]` functions may unwrap and panic too.
#![expect(clippy::panic, reason = "test code: a broken fixture should panic")]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use kvlower_join::pressure::{AtomKind, run_controls};
use kvlower_join::{
    Change, EventFormat, JoinReport, Reason, Registry, Tier, TierCoverage, Verdict, join_paths,
    join_reader,
};
use kvlower_tests::{kvlower, repo_root};

const FIX: &str = "tests/fixtures/join";

fn fx(rel: &str) -> PathBuf {
    repo_root().join(FIX).join(rel)
}

fn arg(rel: &str) -> String {
    fx(rel).display().to_string()
}

/// Output with the machine-specific repository prefix removed (for snapshots).
fn portable(s: &str) -> String {
    s.replace(&format!("{}/", repo_root().display()), "")
}

fn join(dir: &str, events: &str, format: EventFormat) -> JoinReport {
    join_paths(
        &fx(&format!("{dir}/registry.yaml")),
        &fx(&format!("{dir}/{events}")),
        format,
    )
    .unwrap_or_else(|e| panic!("{dir}: {e}"))
}

fn verdict<'a>(r: &'a JoinReport, claim: &str) -> &'a Verdict {
    &r.claim(claim)
        .unwrap_or_else(|| panic!("no claim {claim}"))
        .verdict
}

fn reasons<'a>(r: &'a JoinReport, claim: &str) -> &'a [Reason] {
    match verdict(r, claim) {
        Verdict::InsufficientEvidence { reasons } => reasons,
        other => panic!("{claim}: expected insufficient_evidence, got {other:?}"),
    }
}

fn reason_names(r: &JoinReport, claim: &str) -> Vec<String> {
    reasons(r, claim).iter().map(Reason::name).collect()
}

fn ev(index: u64, line: u64) -> kvlower_join::EventRef {
    kvlower_join::EventRef { index, line }
}

fn gpu(blocks: u64) -> TierCoverage {
    TierCoverage {
        tier: Tier::Medium("GPU".into()),
        blocks,
    }
}

// ------------------------------------------------------------------ verdicts

#[test]
fn vllm_verdicts_materialized_lost_partial() {
    let r = join("vllm", "events-array.jsonl", EventFormat::Vllm);
    assert_eq!(
        verdict(&r, "claim-a"),
        &Verdict::Materialized {
            since: ev(0, 1),
            tiers: vec![
                TierCoverage {
                    tier: Tier::Medium("CPU".into()),
                    blocks: 2
                },
                gpu(2)
            ],
        },
        "hash-only CPU store joins by hash onto the GPU chain"
    );
    assert_eq!(
        verdict(&r, "claim-b"),
        &Verdict::Lost {
            materialized_at: ev(1, 2),
            lost_at: ev(4, 4)
        }
    );
    // Same prompt, observed by timestamp 1.25: before the loss at ts 1.3.
    assert!(matches!(
        verdict(&r, "claim-b-early"),
        Verdict::Materialized { .. }
    ));
    assert_eq!(
        verdict(&r, "claim-c"),
        &Verdict::NotMaterialized {
            matched_prefix_tokens: 4,
            required_tokens: 8
        },
        "claim-c's tokens come from the token map; only its first block was stored"
    );
    assert_eq!(r.summary.insufficient_evidence, 0);
    assert!(r.preconditions.iter().all(|p| p.held));
    assert_eq!(r.depth, "telemetry_join");
}

#[test]
fn vllm_array_and_map_encodings_give_identical_results() {
    let array = join("vllm", "events-array.jsonl", EventFormat::Vllm);
    let map = join("vllm", "events-map.jsonl", EventFormat::Vllm);
    assert_eq!(array.claims, map.claims);
    assert_eq!(array.stream, map.stream);
    assert_eq!(array.summary, map.summary);
    assert_eq!(array.preconditions, map.preconditions);
    // Everything but the events path is the same document.
    let mut relabelled = map.clone();
    relabelled.events = array.events.clone();
    assert_eq!(array, relabelled);
}

#[test]
fn sglang_verdicts() {
    let r = join("sglang", "events.jsonl", EventFormat::Sglang);
    assert_eq!(
        verdict(&r, "claim-a"),
        &Verdict::Materialized {
            since: ev(0, 1),
            tiers: vec![gpu(2)]
        }
    );
    assert_eq!(
        verdict(&r, "claim-b"),
        &Verdict::Lost {
            materialized_at: ev(2, 2),
            lost_at: ev(4, 4)
        }
    );
    assert_eq!(
        verdict(&r, "claim-c"),
        &Verdict::NotMaterialized {
            matched_prefix_tokens: 4,
            required_tokens: 5
        },
        "k=5 tokens needs two 4-token blocks"
    );
}

#[test]
fn trtllm_verdicts_with_cache_levels() {
    let r = join("trtllm", "events.jsonl", EventFormat::Trtllm);
    assert_eq!(
        verdict(&r, "claim-a"),
        &Verdict::Materialized {
            since: ev(1, 2),
            tiers: vec![
                TierCoverage {
                    tier: Tier::CacheLevel(0),
                    blocks: 1
                },
                TierCoverage {
                    tier: Tier::CacheLevel(1),
                    blocks: 1
                },
            ],
        },
        "a demotion (updated cache_level 0 -> 1) keeps the block resident"
    );
    assert_eq!(
        verdict(&r, "claim-b"),
        &Verdict::Lost {
            materialized_at: ev(2, 3),
            lost_at: ev(5, 5)
        }
    );
    assert!(matches!(
        verdict(&r, "claim-b-before-loss"),
        Verdict::Materialized { .. }
    ));
    assert!(matches!(
        verdict(&r, "claim-c"),
        Verdict::NotMaterialized { .. }
    ));
    let b = r.claim("claim-b").unwrap();
    assert_eq!(b.observed_priorities, vec![35]);
    assert_eq!(
        b.transitions.iter().map(|t| t.change).collect::<Vec<_>>(),
        vec![Change::Materialized, Change::Lost]
    );
    assert!(r.stream.sequence_checked);
}

// ------------------------------------------------------------------ ambiguity rules

/// (fixture, format, claim, reason that must be present). In most fixtures every block of
/// the claim is stored, so without its rule the claim would come out `materialized`; the
/// exceptions (mid_stream_start, block_size_mismatch, claim-y, req-5, claim-too-long)
/// would come out `not_materialized`, which is still a verdict the join must not give.
const AMBIGUITY: &[(&str, EventFormat, &str, &str)] = &[
    (
        "post_hoc",
        EventFormat::Vllm,
        "claim-late",
        "post_hoc_claim",
    ),
    (
        "duplicate_owner",
        EventFormat::Vllm,
        "claim-x",
        "duplicate_block_owner",
    ),
    (
        "duplicate_owner",
        EventFormat::Vllm,
        "claim-y",
        "duplicate_block_owner",
    ),
    (
        "conflicting_block",
        EventFormat::Vllm,
        "claim-ok",
        "conflicting_block_content",
    ),
    (
        "block_size_mismatch",
        EventFormat::Vllm,
        "claim-ok",
        "block_size_mismatch",
    ),
    (
        "hash_domain_mismatch",
        EventFormat::Vllm,
        "claim-ok",
        "hash_domain_mismatch",
    ),
    (
        "missing_cache_identity",
        EventFormat::Vllm,
        "claim-ok",
        "missing_cache_identity_field",
    ),
    (
        "missing_event_field",
        EventFormat::Vllm,
        "claim-ok",
        "missing_event_field",
    ),
    (
        "sequence_gap",
        EventFormat::Vllm,
        "claim-ok",
        "sequence_gap",
    ),
    (
        "mid_stream_start",
        EventFormat::Vllm,
        "claim-ok",
        "unknown_block_removed",
    ),
    (
        "mid_stream_start",
        EventFormat::Vllm,
        "claim-ok",
        "unjoinable_parent",
    ),
    (
        "observation_beyond_stream",
        EventFormat::Vllm,
        "claim-ok",
        "observation_point_beyond_stream",
    ),
    (
        "adapter_mismatch",
        EventFormat::Vllm,
        "claim-ok",
        "adapter_mismatch",
    ),
    (
        "unverified_extra_inputs",
        EventFormat::Sglang,
        "claim-ok",
        "unverified_extra_hash_inputs",
    ),
    (
        "event_id_gap",
        EventFormat::Trtllm,
        "claim-ok",
        "sequence_gap",
    ),
    (
        "update_unknown_block",
        EventFormat::Trtllm,
        "claim-ok",
        "unknown_block_updated",
    ),
    (
        "unknown_block_adapter",
        EventFormat::Trtllm,
        "claim-ok",
        "unknown_block_adapter",
    ),
    (
        "timestamp_on_trtllm",
        EventFormat::Trtllm,
        "claim-ok",
        "observation_point_unresolvable",
    ),
    (
        "runtime_mismatch",
        EventFormat::Sglang,
        "claim-ok",
        "runtime_mismatch",
    ),
    (
        "tokenizer_mismatch",
        EventFormat::Vllm,
        "claim-ok",
        "token_map_tokenizer_mismatch",
    ),
    (
        "registry_defects",
        EventFormat::Vllm,
        "claim-late",
        "registered_after_observation_point",
    ),
    (
        "registry_defects",
        EventFormat::Vllm,
        "claim-dup",
        "duplicate_claim_id",
    ),
    (
        "registry_defects",
        EventFormat::Vllm,
        "req-5",
        "claim_id_is_request_id",
    ),
    (
        "registry_defects",
        EventFormat::Vllm,
        "claim-too-long",
        "predicate_exceeds_claimed_blocks",
    ),
];

/// A block salted otherwise than the registry declares heads another cache namespace:
/// the claim's requests would never hit it, so it neither materializes the claim nor
/// makes it ambiguous (docs/join.md "Extra hash inputs").
#[test]
fn a_block_with_another_salt_is_another_namespace_not_the_claim() {
    let r = join("ambiguity/other_salt", "events.jsonl", EventFormat::Sglang);
    let c = r.claim("claim-ok").unwrap();
    assert!(
        matches!(c.verdict, Verdict::NotMaterialized { .. }),
        "{:?}",
        c.verdict
    );
    assert_eq!(c.transitions, vec![]);
}

#[test]
fn every_ambiguity_fails_closed_with_its_reason() {
    for &(case, format, claim, reason) in AMBIGUITY {
        let r = join(&format!("ambiguity/{case}"), "events.jsonl", format);
        let names = reason_names(&r, claim);
        assert!(
            names.iter().any(|n| n == reason),
            "{case}/{claim}: expected {reason}, got {names:?}"
        );
        assert_eq!(
            r.claim(claim).unwrap().transitions,
            vec![],
            "{case}: an insufficient claim leaks no partial conclusion"
        );
    }
}

#[test]
fn ambiguity_fixtures_would_otherwise_be_materialized() {
    // The control: the same blocks under a clean registry and stream are materialized, so
    // each ambiguity case above is decided by its rule, not by missing blocks.
    let r = join("ambiguity/post_hoc", "events.jsonl", EventFormat::Vllm);
    assert!(matches!(
        verdict(&r, "claim-ok"),
        Verdict::Materialized { .. }
    ));
    assert_eq!(
        reasons(&r, "claim-late"),
        &[Reason::PostHocClaim { event: ev(1, 2) }],
        "post-hoc naming is per claim: the pre-registered claim stays judged"
    );
}

#[test]
fn stream_ambiguities_are_reported_at_stream_level() {
    let r = join("ambiguity/sequence_gap", "events.jsonl", EventFormat::Vllm);
    assert_eq!(
        r.stream.ambiguities,
        vec![Reason::SequenceGap {
            event: ev(2, 3),
            expected: 2,
            found: 3
        }]
    );
    assert!(r.stream.sequence_checked);
    let r = join(
        "ambiguity/mid_stream_start",
        "events.jsonl",
        EventFormat::Vllm,
    );
    assert_eq!(
        reasons(&r, "claim-ok"),
        &[
            Reason::UnknownBlockRemoved { event: ev(0, 1) },
            Reason::UnjoinableParent { event: ev(1, 2) },
        ]
    );
}

#[test]
fn precondition_tally_names_the_unmet_precondition() {
    let r = join("ambiguity/post_hoc", "events.jsonl", EventFormat::Vllm);
    let registry = r
        .preconditions
        .iter()
        .find(|p| p.precondition == kvlower_join::Precondition::ExternalAcceptedClaimRegistry)
        .unwrap();
    assert_eq!(registry.claims, "1/2");
    assert!(!registry.held);
}

// ------------------------------------------------------------------ CLI, errors, paths

#[test]
fn cli_exit_codes() {
    let ok = kvlower(&[
        "join",
        "--registry",
        &arg("trtllm/registry.yaml"),
        "--events",
        &arg("trtllm/events.jsonl"),
        "--events-format",
        "trtllm",
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    // A claim that is not materialized (or insufficient) is a verdict, not an error.
    let amb = kvlower(&[
        "join",
        "--registry",
        &arg("ambiguity/sequence_gap/registry.yaml"),
        "--events",
        &arg("ambiguity/sequence_gap/events.jsonl"),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(amb.code, 0, "{}", amb.stderr);
    let usage = kvlower(&["join", "--registry", &arg("vllm/registry.yaml")]);
    assert_eq!(usage.code, 2);
    let conflict = kvlower(&[
        "join",
        "--pressure-controls",
        &arg("pressure/controls.yaml"),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(conflict.code, 2);
    let bad_format = kvlower(&["join", "--events-format", "tgi"]);
    assert_eq!(bad_format.code, 2);
    let bad_output = kvlower(&["join", "--format", "yaml"]);
    assert_eq!(bad_output.code, 2);
}

#[test]
fn malformed_events_name_file_line_and_json_path() {
    let cases = [
        (
            "malformed/not-json.jsonl",
            "vllm",
            "not-json.jsonl:3: not JSON",
        ),
        (
            "malformed/bad-token.jsonl",
            "vllm",
            "bad-token.jsonl:2: $[1][0][3][2]: token id must be a u32",
        ),
        (
            "malformed/trt-missing-event-id.jsonl",
            "trtllm",
            "trt-missing-event-id.jsonl:2: $: event has no event_id",
        ),
    ];
    for (events, format, expected) in cases {
        let registry = if format == "trtllm" {
            arg("trtllm/registry.yaml")
        } else {
            arg("vllm/registry.yaml")
        };
        let run = kvlower(&[
            "join",
            "--registry",
            &registry,
            "--events",
            &arg(events),
            "--events-format",
            format,
        ]);
        assert_eq!(run.code, 1, "{events}");
        assert!(run.stderr.contains(expected), "{events}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn malformed_registry_names_file_line_and_yaml_path() {
    let run = kvlower(&[
        "join",
        "--registry",
        &arg("malformed/bad-predicate.yaml"),
        "--events",
        &arg("vllm/events-map.jsonl"),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(
            "bad-predicate.yaml:17:5: claims[0].predicate: unsupported predicate `exact_prefix(8)`"
        ),
        "{}",
        run.stderr
    );
    let missing = kvlower(&[
        "join",
        "--registry",
        &arg("no-such-registry.yaml"),
        "--events",
        &arg("vllm/events-map.jsonl"),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(missing.code, 2);
    assert!(
        missing
            .stderr
            .contains("no-such-registry.yaml: cannot read")
    );
}

#[test]
fn paths_are_recorded_as_given_and_json_round_trips() {
    // cargo runs tests from the package root (`tests/`), so this path is relative.
    let registry = Path::new("fixtures/join/vllm/registry.yaml");
    let events = Path::new("fixtures/join/vllm/events-array.jsonl");
    assert!(registry.exists(), "tests run from the tests/ package root");
    let report = join_paths(registry, events, EventFormat::Vllm).unwrap();
    assert_eq!(report.registry, "fixtures/join/vllm/registry.yaml");
    assert_eq!(report.events, "fixtures/join/vllm/events-array.jsonl");
    let run = kvlower(&[
        "join",
        "--registry",
        "fixtures/join/vllm/registry.yaml",
        "--events",
        "fixtures/join/vllm/events-array.jsonl",
        "--events-format",
        "vllm",
        "--format",
        "json",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let parsed: JoinReport = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        parsed, report,
        "a committed evidence document compares with =="
    );
}

#[test]
fn output_is_deterministic() {
    let a = serde_json::to_string(&join("trtllm", "events.jsonl", EventFormat::Trtllm)).unwrap();
    let b = serde_json::to_string(&join("trtllm", "events.jsonl", EventFormat::Trtllm)).unwrap();
    assert_eq!(a, b);
}

// ------------------------------------------------------------------ streaming

/// Yields `n` synthetic vLLM batches lazily: store a 1-block chain, then remove it.
struct Churn {
    next: u64,
    n: u64,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for Churn {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.next >= self.n {
                return Ok(0);
            }
            let i = self.next;
            let h = 1000 + i;
            let line = if i.is_multiple_of(2) {
                format!("[{i}.0,[[\"BlockStored\",[{h}],null,[90,91,92,{i}],4,null]]]\n")
            } else {
                format!("[{i}.0,[[\"BlockRemoved\",[{}]]]]\n", h - 1)
            };
            self.buf = line.into_bytes();
            self.pos = 0;
            self.next += 1;
        }
        let k = out.len().min(self.buf.len() - self.pos);
        out[..k].copy_from_slice(&self.buf[self.pos..self.pos + k]);
        self.pos += k;
        Ok(k)
    }
}

#[test]
fn memory_follows_live_blocks_not_stream_length() {
    let registry = Registry::load(&fx("vllm/registry.yaml")).unwrap();
    let n = 200_000;
    let reader: Box<dyn BufRead> = Box::new(BufReader::new(Churn {
        next: 0,
        n,
        buf: Vec::new(),
        pos: 0,
    }));
    let r = join_reader(
        &registry,
        Path::new("registry.yaml"),
        reader,
        Path::new("<generated>"),
        EventFormat::Vllm,
    )
    .unwrap();
    assert_eq!(r.stream.events, n);
    assert!(
        r.stream.peak_tracked_blocks <= 2,
        "peak {} block records for {n} events",
        r.stream.peak_tracked_blocks
    );
}

// ------------------------------------------------------------------ pressure controls

#[test]
fn pressure_controls_yield_anchored_atoms() {
    let r = run_controls(&fx("pressure/controls.yaml")).unwrap();
    assert!(r.design_problems.is_empty(), "{:?}", r.design_problems);
    let atom = |k| r.atom(k).unwrap();
    let observed = atom(AtomKind::PressureControlsObserved);
    assert!(observed.observed);
    assert_eq!(observed.count, "13/13");
    let per: Vec<(String, String)> = observed
        .per_run
        .iter()
        .map(|(k, v)| {
            (
                serde_json::to_value(k)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string(),
                v.clone(),
            )
        })
        .collect();
    assert_eq!(
        per,
        vec![
            ("original".to_string(), "5/5".to_string()),
            ("swapped".to_string(), "5/5".to_string()),
            ("equal_priority".to_string(), "3/3".to_string()),
        ]
    );
    assert_eq!(
        atom(AtomKind::BothClaimsJoinableBeforePressure).count,
        "13/13"
    );
    assert_eq!(atom(AtomKind::NoPrePressureClaimLoss).count, "13/13");
    assert_eq!(
        atom(AtomKind::MaterializationChangesReconstructable).count,
        "16/16"
    );
    assert_eq!(observed.anchors.len(), 13);
    assert!(observed.anchors.iter().all(|a| a.ends_with(".jsonl")));
    // Equal priority: both tracked claims go in the same first-loss event.
    for run in &r.runs {
        for t in &run.trials {
            assert!(t.followed_priority, "{}", t.events);
            assert_eq!(t.first_lost, run.expected_first_lost);
        }
    }
}

#[test]
fn violated_pressure_control_is_not_observed() {
    let r = run_controls(&fx("pressure/controls-violated.yaml")).unwrap();
    let observed = r.atom(AtomKind::PressureControlsObserved).unwrap();
    assert!(!observed.observed);
    assert_eq!(observed.count, "12/13");
    let original = r
        .runs
        .iter()
        .find(|x| x.run == kvlower_join::pressure::RunKind::Original)
        .unwrap();
    assert_eq!(original.followed, "4/5");
    let bad = original
        .trials
        .iter()
        .find(|t| t.events.contains("violated"))
        .unwrap();
    assert_eq!(
        bad.reasons,
        vec![kvlower_join::pressure::TrialReason::UnexpectedFirstLoss {
            lost: vec![kvlower_join::ClaimId("claim-a".into())]
        }]
    );
}

// ------------------------------------------------------------------ snapshots

fn run_join(dir: &str, events: &str, format: &str, output: &str) -> String {
    let run = kvlower(&[
        "join",
        "--registry",
        &arg(&format!("{dir}/registry.yaml")),
        "--events",
        &arg(&format!("{dir}/{events}")),
        "--events-format",
        format,
        "--format",
        output,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    portable(&run.stdout)
}

#[test]
fn snapshot_vllm_human() {
    insta::assert_snapshot!(run_join("vllm", "events-array.jsonl", "vllm", "human"));
}

#[test]
fn snapshot_trtllm_json() {
    insta::assert_snapshot!(run_join("trtllm", "events.jsonl", "trtllm", "json"));
}

#[test]
fn snapshot_mid_stream_start_human() {
    insta::assert_snapshot!(run_join(
        "ambiguity/mid_stream_start",
        "events.jsonl",
        "vllm",
        "human"
    ));
}

#[test]
fn snapshot_registry_defects_json() {
    insta::assert_snapshot!(run_join(
        "ambiguity/registry_defects",
        "events.jsonl",
        "vllm",
        "json"
    ));
}

#[test]
fn snapshot_pressure_controls_human() {
    let run = kvlower(&[
        "join",
        "--pressure-controls",
        &arg("pressure/controls.yaml"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(portable(&run.stdout));
}

#[test]
fn snapshot_malformed_error() {
    let run = kvlower(&[
        "join",
        "--registry",
        &arg("vllm/registry.yaml"),
        "--events",
        &arg("malformed/bad-token.jsonl"),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(portable(&run.stderr));
}

#[test]
fn join_format_is_the_output_format_and_the_old_spelling_still_works() {
    let reg = arg("vllm/registry.yaml");
    let ev = arg("vllm/events-array.jsonl");
    let new = kvlower(&[
        "join",
        "--registry",
        &reg,
        "--events",
        &ev,
        "--events-format",
        "vllm",
        "--format",
        "json",
    ]);
    assert_eq!(new.code, 0, "{}", new.stderr);
    assert!(new.stderr.is_empty(), "{}", new.stderr);
    serde_json::from_str::<serde_json::Value>(&new.stdout).expect("--format json prints JSON");
    // The old spelling (`--format vllm --output json`) gives the same document and says
    // what to write instead.
    let old = kvlower(&[
        "join",
        "--registry",
        &reg,
        "--events",
        &ev,
        "--format",
        "vllm",
        "--output",
        "json",
    ]);
    assert_eq!(old.code, 0, "{}", old.stderr);
    assert_eq!(old.stdout, new.stdout);
    assert!(
        old.stderr.contains("--events-format vllm"),
        "{}",
        old.stderr
    );
    // Contradicting spellings are a usage error.
    let both = kvlower(&[
        "join",
        "--registry",
        &reg,
        "--events",
        &ev,
        "--format",
        "sglang",
        "--events-format",
        "vllm",
    ]);
    assert_eq!(both.code, 2);
}

#[test]
fn materialized_without_sequence_numbers_says_it_cannot_anchor() {
    // A dropped batch without sequence numbers can hide an eviction: the CLI verdict
    // itself says the materialized reading anchors nothing, not only the header.
    let run = kvlower(&[
        "join",
        "--registry",
        &arg("vllm/registry.yaml"),
        "--events",
        &arg("vllm/events-array.jsonl"),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let materialized: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains("  materialized") && l.contains("— "))
        .collect();
    assert!(!materialized.is_empty(), "{}", run.stdout);
    for l in materialized {
        assert!(l.contains("unanchorable: no sequence numbers"), "{l}");
    }
    assert!(
        run.stdout
            .contains("no materialized verdict here can anchor")
    );
}

/// Issue 38: every join error has a code from the one table, and its exit follows from
/// that code alone. A registry that is not YAML of its shape is `join-registry-invalid`
/// (exit 1: read and found malformed), printed `error[code]:` and, under `--format
/// json`, a diagnostic in the envelope (before, it had no code and the envelope no
/// diagnostic); a registry that is not there is `unreadable-file` (exit 2).
#[test]
fn join_errors_carry_a_code_and_exit_by_it() {
    let dir = tempfile::tempdir().unwrap();
    let registry = dir.path().join("registry.yaml");
    std::fs::write(&registry, "schema_version: [\n").unwrap();
    let reg = registry.display().to_string();
    let ev = arg("vllm/events-array.jsonl");
    let args = |format: &'static str| {
        vec![
            "join".to_string(),
            "--registry".into(),
            reg.clone(),
            "--events".into(),
            ev.clone(),
            "--events-format".into(),
            "vllm".into(),
            "--format".into(),
            format.into(),
        ]
    };
    let human: Vec<String> = args("human");
    let run = kvlower(&human.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("error[join-registry-invalid]: "),
        "{}",
        run.stderr
    );
    let json: Vec<String> = args("json");
    let run = kvlower(&json.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 1, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["diagnostics"][0]["code"], "join-registry-invalid");
    assert!(v["diagnostics"][0]["line"].is_u64(), "{}", run.stdout);

    std::fs::remove_file(&registry).unwrap();
    let run = kvlower(&json.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 2, "{}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["diagnostics"][0]["code"], "unreadable-file");
    let run = kvlower(&human.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with("error[unreadable-file]: "),
        "{}",
        run.stderr
    );
}
