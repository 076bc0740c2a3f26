//! Property tests for `kvlower join`: arbitrary bytes and mutated fixture lines never
//! panic, every outcome is a located error or a well-formed report, and a lost or
//! reordered batch in a sequence-numbered stream always fails closed.

// A test binary: helpers outside `#[test]` functions may unwrap and panic too.
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a broken fixture should panic"
)]

use std::path::Path;

use kvlower_join::{
    Change, EventFormat, JoinError, JoinReport, Registry, StreamPoint, Verdict, join_reader,
};
use kvlower_tests::repo_root;
use proptest::prelude::*;

const FORMATS: [EventFormat; 3] = [EventFormat::Vllm, EventFormat::Sglang, EventFormat::Trtllm];

/// (registry, events, format) of the clean fixtures.
const STREAMS: [(&str, &str, EventFormat); 5] = [
    (
        "vllm/registry.yaml",
        "vllm/events-array.jsonl",
        EventFormat::Vllm,
    ),
    (
        "vllm/registry.yaml",
        "vllm/events-map.jsonl",
        EventFormat::Vllm,
    ),
    (
        "sglang/registry.yaml",
        "sglang/events.jsonl",
        EventFormat::Sglang,
    ),
    (
        "trtllm/registry.yaml",
        "trtllm/events.jsonl",
        EventFormat::Trtllm,
    ),
    (
        "pressure/registry.yaml",
        "pressure/original/trial-1.jsonl",
        EventFormat::Trtllm,
    ),
];

fn fixture(rel: &str) -> std::path::PathBuf {
    repo_root().join("tests/fixtures/join").join(rel)
}

fn registry(rel: &str) -> Registry {
    Registry::load(&fixture(rel)).unwrap()
}

fn lines(rel: &str) -> Vec<String> {
    std::fs::read_to_string(fixture(rel))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn run(reg: &Registry, bytes: &[u8], format: EventFormat) -> Result<JoinReport, JoinError> {
    join_reader(
        reg,
        Path::new("registry.yaml"),
        bytes,
        Path::new("events.jsonl"),
        format,
    )
}

/// What every outcome must satisfy, whatever the input.
fn check_outcome(reg: &Registry, out: &Result<JoinReport, JoinError>) {
    match out {
        Err(JoinError::Event { line, path, .. }) => {
            assert!(*line >= 1);
            assert_eq!(path, Path::new("events.jsonl"));
        }
        Err(JoinError::Capture { path, .. }) => assert_eq!(path, Path::new("events.jsonl")),
        Err(other) => panic!("only event errors are possible from a reader: {other}"),
        Ok(r) => {
            assert_eq!(r.claims.len(), reg.claims.len());
            let s = &r.summary;
            assert_eq!(
                (s.materialized + s.not_materialized + s.lost + s.insufficient_evidence) as usize,
                r.claims.len()
            );
            for c in &r.claims {
                match &c.verdict {
                    Verdict::InsufficientEvidence { reasons } => {
                        assert!(!reasons.is_empty(), "{}: no reasons", c.claim_id);
                        assert!(c.transitions.is_empty());
                    }
                    Verdict::Materialized { tiers, .. } => {
                        assert!(!tiers.is_empty(), "{}: materialized nowhere", c.claim_id);
                        assert_eq!(
                            c.transitions.last().map(|t| t.change),
                            Some(Change::Materialized)
                        );
                    }
                    Verdict::Lost { .. } => {
                        assert_eq!(c.transitions.last().map(|t| t.change), Some(Change::Lost));
                    }
                    Verdict::NotMaterialized { .. } => assert!(c.transitions.is_empty()),
                }
                // Transitions alternate, starting with a materialization.
                for (i, t) in c.transitions.iter().enumerate() {
                    let want = if i % 2 == 0 {
                        Change::Materialized
                    } else {
                        Change::Lost
                    };
                    assert_eq!(t.change, want, "{}: {:?}", c.claim_id, c.transitions);
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Mutation {
    SetByte(prop::sample::Index, u8),
    Delete(prop::sample::Index, usize),
    Insert(prop::sample::Index, String),
    DropLine(prop::sample::Index),
    DuplicateLine(prop::sample::Index),
    SwapLines(prop::sample::Index, prop::sample::Index),
    Truncate(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::SetByte(i, b)),
        (any::<prop::sample::Index>(), 1usize..12).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (
            any::<prop::sample::Index>(),
            prop_oneof![
                Just("null".to_string()),
                Just("[]".to_string()),
                Just("{}".to_string()),
                Just(",".to_string()),
                Just("-1".to_string()),
                Just("1e309".to_string()),
                Just("18446744073709551616".to_string()),
                Just("\"BlockRemoved\"".to_string()),
                "[ -~]{0,8}",
            ]
        )
            .prop_map(|(i, s)| Mutation::Insert(i, s)),
        any::<prop::sample::Index>().prop_map(Mutation::DropLine),
        any::<prop::sample::Index>().prop_map(Mutation::DuplicateLine),
        (any::<prop::sample::Index>(), any::<prop::sample::Index>())
            .prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
    ]
}

fn apply(lines: &mut Vec<Vec<u8>>, m: &Mutation) {
    if lines.is_empty() {
        return;
    }
    match m {
        Mutation::SetByte(i, b) => {
            let l = i.get(lines).len();
            let li = i.index(lines.len());
            if l > 0 {
                let pos = i.index(l);
                lines[li][pos] = *b;
            }
        }
        Mutation::Delete(i, n) => {
            let li = i.index(lines.len());
            let l = lines[li].len();
            if l > 0 {
                let pos = i.index(l);
                let end = (pos + n).min(l);
                lines[li].drain(pos..end);
            }
        }
        Mutation::Insert(i, s) => {
            let li = i.index(lines.len());
            let pos = i.index(lines[li].len() + 1);
            let tail = lines[li].split_off(pos);
            lines[li].extend_from_slice(s.as_bytes());
            lines[li].extend(tail);
        }
        Mutation::DropLine(i) => {
            let li = i.index(lines.len());
            lines.remove(li);
        }
        Mutation::DuplicateLine(i) => {
            let li = i.index(lines.len());
            let l = lines[li].clone();
            lines.insert(li, l);
        }
        Mutation::SwapLines(a, b) => {
            let (x, y) = (a.index(lines.len()), b.index(lines.len()));
            lines.swap(x, y);
        }
        Mutation::Truncate(i) => {
            let li = i.index(lines.len());
            let pos = i.index(lines[li].len() + 1);
            lines[li].truncate(pos);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(kvlower_tests::cases(256, 1024)))]

    /// Arbitrary bytes in any format: a located error or a well-formed report, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..512),
        f in 0usize..3,
    ) {
        let reg = registry("vllm/registry.yaml");
        let out = run(&reg, &bytes, FORMATS[f]);
        check_outcome(&reg, &out);
    }

    /// JSON-ish noise built from the schema's own tokens reaches deeper into the decoders.
    #[test]
    fn json_shaped_noise_never_panics(
        parts in prop::collection::vec(prop_oneof![
            Just("["), Just("]"), Just("{"), Just("}"), Just(","), Just("null"), Just("0"),
            Just("4"), Just("1.5"), Just("\"BlockStored\""), Just("\"BlockRemoved\""),
            Just("\"AllBlocksCleared\""), Just("\"type\":"), Just("\"events\":"), Just("\"ts\":"),
            Just("\"event_id\":"), Just("\"data\":"), Just("\"stored\""), Just("\"removed\""),
            Just("\"updated\""), Just("\"blocks\":"), Just("\"block_hash\":"), Just("\n"),
        ], 0..80),
        f in 0usize..3,
    ) {
        let reg = registry("trtllm/registry.yaml");
        let text: String = parts.concat();
        let out = run(&reg, text.as_bytes(), FORMATS[f]);
        check_outcome(&reg, &out);
    }

    /// Fixture streams with mutated, dropped, duplicated or swapped lines.
    #[test]
    fn mutated_fixture_lines_never_panic(
        s in 0usize..STREAMS.len(),
        muts in prop::collection::vec(mutation(), 1..6),
    ) {
        let (reg_path, events, format) = STREAMS[s];
        let reg = registry(reg_path);
        let mut ls: Vec<Vec<u8>> = lines(events).into_iter().map(String::into_bytes).collect();
        for m in &muts {
            apply(&mut ls, m);
        }
        let mut bytes = Vec::new();
        for l in ls {
            bytes.extend(l);
            bytes.push(b'\n');
        }
        let out = run(&reg, &bytes, format);
        check_outcome(&reg, &out);
    }

    /// In a sequence-numbered stream, losing or reordering a batch before a claim's
    /// observation point makes that claim insufficient_evidence, whatever it was before.
    #[test]
    fn lost_or_reordered_batch_fails_closed(drop in any::<bool>(), at in 1usize..4) {
        let reg = registry("vllm/registry.yaml");
        let mut ls: Vec<String> = lines("vllm/events-array.jsonl")
            .into_iter()
            .enumerate()
            .map(|(i, l)| format!("{{\"seq\":{},\"payload\":{l}}}", i))
            .collect();
        let clean = run(&reg, ls.join("\n").as_bytes(), EventFormat::Vllm).unwrap();
        prop_assert_eq!(clean.summary.insufficient_evidence, 0);
        if drop { ls.remove(at); } else { ls.swap(at, at + 1); }
        let r = run(&reg, ls.join("\n").as_bytes(), EventFormat::Vllm).unwrap();
        let mut late = 0;
        for c in &r.claims {
            let observed_late = matches!(c.observation_point, Some(StreamPoint::EventIndex(5)));
            if observed_late {
                late += 1;
                prop_assert!(
                    matches!(c.verdict, Verdict::InsufficientEvidence { .. }),
                    "{} after a {} batch: {:?}", c.claim_id, if drop { "lost" } else { "swapped" }, c.verdict
                );
            }
        }
        // Not vacuous: the fixture has claims observed after every disturbed batch.
        prop_assert!(late > 0, "no claim is observed after the disturbed batch");
    }
}
