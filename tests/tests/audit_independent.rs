//! The independent audit: `kvlower_audit::oracle` (a second derivation written
//! apart from the judgment) against `kvlower_core::judge`, on every row of every
//! committed descriptor and on proptest-generated descriptors.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use kvlower_audit::oracle;
use kvlower_core::anchor_form::AnchorDefect;
use kvlower_core::anchoring::{JoinDocumentFacts, RepoFile, TraceVerdictFacts};
use kvlower_core::descriptor::{
    Adapter, Anchor, AnchorKind, AtomEvidence, ClaimedVerdict, EvidenceItem, NonClaims, Proposal,
    RuntimeIdentity, SignalEvidence, SourceKind,
};
use kvlower_core::vocab::{Ambiguity, TraceGate};
use kvlower_core::{
    Atom, Catalog, Depth, Descriptor, Environment, Label, Mode, Obligation, Precondition, Scope,
    Signal, Status, judge,
};
use kvlower_evidence::FsEnvironment;
use proptest::prelude::*;
use proptest::sample::{select, subsequence};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

fn catalog_and_audit() -> (
    &'static kvlower_load::Repository,
    &'static kvlower_audit::Audit,
) {
    (
        kvlower_tests::committed_repository(),
        kvlower_tests::committed_audit(),
    )
}

#[test]
fn tensorrt_rc14_agrees_fourteen_of_fourteen() {
    let (_, audit) = catalog_and_audit();
    let ind = &audit.independent;
    assert_eq!(ind.trt_agreement(), (14, 14));
    let rows: Vec<_> = ind.trt_rows().collect();
    let labels: BTreeMap<(String, String), String> = rows
        .iter()
        .map(|r| {
            (
                (r.mode.to_string(), r.depth.to_string()),
                r.oracle_label.to_string(),
            )
        })
        .collect();
    // The rows the paper names, as the oracle derives them (paper §8.1; docs/model.md).
    for (mode, depth, label) in [
        ("best_effort", "telemetry_join", "sound_with_adapter"),
        ("soft_priority", "telemetry_join", "sound_with_adapter"),
        ("hard_protected", "none", "rejected"),
        ("hard_protected", "telemetry_join", "rejected"),
        ("expiring", "none", "approximate"),
        ("offloadable", "telemetry_join", "approximate"),
    ] {
        assert_eq!(
            labels
                .get(&(mode.to_string(), depth.to_string()))
                .map(String::as_str),
            Some(label),
            "{mode}@{depth}"
        );
    }
    let json: serde_json::Value = serde_json::from_str(&ind.json()).expect("json");
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(14));
    for r in json["rows"].as_array().expect("rows") {
        for key in ["mode", "depth", "oracle_label", "checker_label", "agree"] {
            assert!(r.get(key).is_some(), "{key}");
        }
        assert_eq!(r["agree"], true);
    }
    assert!(ind.summary().starts_with("14/14 TensorRT rc14 rows agree"));
}

/// The published file's subject is found by the runtime its descriptor describes,
/// and its row count follows from the catalog's modes and the descriptor's row
/// depths: a renamed descriptor file is still the subject, with all its rows.
#[test]
fn the_published_subject_is_found_by_its_runtime_not_its_file_name() {
    let (repo, _) = catalog_and_audit();
    let env = FsEnvironment::new(repo.root.clone());
    let renamed = "capabilities/renamed_rc14.yaml";
    let descriptors: Vec<(&str, &Descriptor)> = repo
        .descriptors
        .iter()
        .map(|d| {
            let path = if d.path.ends_with("tensorrt_llm_1_3_0rc14_container.yaml") {
                renamed
            } else {
                d.path.as_str()
            };
            (path, &d.descriptor)
        })
        .collect();
    let ind = kvlower_audit::independent::run(&repo.catalog, &descriptors, &env);
    assert_eq!(ind.subject.as_deref(), Some(renamed));
    assert_eq!(ind.trt_agreement(), (14, 14));
    assert!(ind.problems.is_empty(), "{:?}", ind.problems);
    // Two descriptors of the published runtime: the suite says so.
    let subject = descriptors
        .iter()
        .find(|(p, _)| *p == renamed)
        .map(|(_, d)| *d)
        .expect("subject");
    let mut twice = descriptors.clone();
    twice.push(("capabilities/zz_copy.yaml", subject));
    let ind = kvlower_audit::independent::run(&repo.catalog, &twice, &env);
    assert_eq!(ind.subject.as_deref(), Some(renamed));
    assert!(
        ind.problems
            .iter()
            .any(|p| p.starts_with("2 descriptors describe")),
        "{:?}",
        ind.problems
    );
}

#[test]
fn the_oracle_agrees_on_every_row_of_every_committed_descriptor() {
    let (repo, audit) = catalog_and_audit();
    let ind = &audit.independent;
    let (agree, total) = ind.all_agreement();
    let expected_rows: usize = repo
        .descriptors
        .iter()
        .map(|d| Mode::ALL.len() * kvlower_core::row_depths(&d.descriptor).len())
        .sum();
    assert_eq!(total, expected_rows);
    assert_eq!(agree, total, "{:#?}", ind.failures());
    assert!(ind.failures().is_empty());
    // Also at every depth of the ladder, not only the represented ones.
    let env = FsEnvironment::new(repo.root.clone());
    for d in &repo.descriptors {
        for &mode in Mode::ALL {
            for &depth in Depth::ALL {
                assert_agree(&repo.catalog, &d.descriptor, mode, depth, &env)
                    .unwrap_or_else(|e| panic!("{}: {e}", d.path));
            }
        }
    }
}

/// Compares the oracle and the checker on one row.
fn assert_agree(
    catalog: &Catalog,
    d: &Descriptor,
    mode: Mode,
    depth: Depth,
    env: &dyn Environment,
) -> Result<(Label, Option<kvlower_core::Subtype>), String> {
    let o = oracle::derive(catalog.doc(), d, mode, depth, env);
    let j = judge(catalog, d, mode, depth, env);
    let js: BTreeSet<Obligation> = j.satisfied().collect();
    if o.label != j.label || o.subtype != j.subtype || o.satisfied != js {
        return Err(format!(
            "{mode}@{depth}: oracle {:?}/{:?}/{:?} vs checker {:?}/{:?}/{:?}",
            o.label, o.subtype, o.satisfied, j.label, j.subtype, js
        ));
    }
    Ok((j.label, j.subtype))
}

// ---- generated descriptors ----------------------------------------------------------

/// Repository files whose path contains "missing" do not exist, "outside" are
/// refused, "join" are join documents (their facts named in the path); a
/// claimed verdict re-runs as `pass: true` only.
struct TestEnv;

impl Environment for TestEnv {
    fn repo_file(&self, path: &str) -> RepoFile {
        if path.contains("missing") {
            RepoFile::Missing
        } else if path.contains("outside") {
            RepoFile::Refused { why: "test".into() }
        } else if path.contains("join") {
            RepoFile::JoinDocument(JoinDocumentFacts {
                reproduces: !path.contains("stale"),
                depth: Some(if path.contains("deep") {
                    Depth::AllocatorHook
                } else {
                    Depth::TelemetryJoin
                }),
                held: if path.contains("unheld") {
                    Vec::new()
                } else {
                    kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS.to_vec()
                },
                stream_sound: !path.contains("unsound"),
                // Generated descriptors are vllm version 0; a "foreign" document
                // was recorded on another runtime.
                runtime: Some(recorded(path)),
                // The generated runtimes are unpatched.
                patch_digests: None,
                // A "headerless" document's events record no runtime of their own.
                events_runtime: (!path.contains("headerless")).then(|| "vllm 0".to_owned()),
            })
        } else {
            RepoFile::Plain
        }
    }

    fn today(&self) -> (i32, u32, u32) {
        (2026, 6, 1)
    }

    fn repo_file_sha256(&self, _path: &str) -> Result<String, String> {
        Err("no file is read in this environment".to_owned())
    }

    fn trace_verdict(&self, path: &str, verdict: &ClaimedVerdict) -> TraceVerdictFacts {
        TraceVerdictFacts {
            defect: (!verdict.pass).then_some(AnchorDefect::TraceVerdictDisagrees),
            // A "headerless" trace records no runtime; a "foreign" one another runtime.
            runtime: (!path.contains("headerless")).then(|| recorded(path)),
        }
    }
}

/// The runtime a generated evidence file records: the generated descriptors'
/// own (vllm 0), or, for a "foreign" path, another version.
fn recorded(path: &str) -> kvlower_core::identity::RecordedRuntime {
    let version = if path.contains("foreign") {
        "0.32.0"
    } else {
        "0"
    };
    kvlower_core::identity::RecordedRuntime {
        components: vec![kvlower_core::identity::RecordedComponent {
            kind: "vllm".into(),
            version: version.into(),
            patch: None,
        }],
    }
}

fn paper() -> Anchor {
    Anchor {
        kind: Some(AnchorKind::Paper),
        section: Some("§6".into()),
        note: "generated".into(),
        preserves_order: true,
        preserves_claim_scope: true,
        ..Anchor::default()
    }
}

fn repo_file(path: &str, verdict: Option<bool>) -> Anchor {
    Anchor {
        kind: Some(AnchorKind::RepoFile),
        path: Some(path.into()),
        section: None,
        verdict: verdict.map(|pass| ClaimedVerdict {
            claim_id: Some("c".into()),
            gate: TraceGate::ConnectorFailureOutcome,
            pass,
        }),
        ..paper()
    }
}

fn public_source(commit: &str) -> Anchor {
    Anchor {
        kind: Some(AnchorKind::PublicSource),
        repository: Some("org/repo".into()),
        commit: Some(commit.into()),
        path: Some("src/x.rs".into()),
        section: None,
        ..paper()
    }
}

/// Mostly complete anchors, and every way one can be incomplete.
fn anchor() -> impl Strategy<Value = Anchor> {
    prop_oneof![
        12 => Just(paper()),
        1 => Just(Anchor::default()),
        1 => Just(Anchor { note: " ".into(), ..paper() }),
        1 => Just(Anchor { section: Some(" ".into()), ..paper() }),
        1 => Just(Anchor { preserves_order: false, ..paper() }),
        1 => Just(Anchor { preserves_claim_scope: false, ..paper() }),
        1 => Just(Anchor { path: Some("/abs/file".into()), ..paper() }),
        1 => Just(Anchor { path: Some("a/../../b".into()), ..paper() }),
        1 => Just(public_source("0123abcd")),
        1 => select(vec!["abcdef", "0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef012345678"])
            .prop_map(public_source),
        1 => Just(public_source("not-a-commit")),
        1 => Just(Anchor { section: Some("§6".into()), ..public_source("0123abcd") }),
        1 => select(vec!["https://github.com/org/repo", "org", "org/repo/extra", "org/\u{200b}"])
            .prop_map(|r| Anchor { repository: Some(r.into()), ..public_source("0123abcd") }),
        1 => select(vec!["placeholder, replace me", "\u{200b}", "TODO", "\u{feff}\u{2060}"])
            .prop_map(|note| Anchor { note: note.into(), ..paper() }),
        1 => Just(Anchor { section: Some("\u{200b}".into()), ..paper() }),
        1 => Just(Anchor { path: Some("a\nb".into()), ..paper() }),
        1 => Just(Anchor {
            kind: Some(AnchorKind::DocsPage),
            url: Some("https://example.org/doc".into()),
            retrieved: Some("2026-05-01".into()),
            ..paper()
        }),
        1 => Just(Anchor {
            kind: Some(AnchorKind::DocsPage),
            url: Some("https://example.org/doc".into()),
            ..paper()
        }),
        1 => select(vec!["example.org/doc", "https://", "ftp://example.org"])
            .prop_map(|url| Anchor {
                kind: Some(AnchorKind::DocsPage),
                url: Some(url.into()),
                retrieved: Some("2026-05-01".into()),
                ..paper()
            }),
        1 => select(vec!["2027-01-01", "yesterday", "2026-02-30"])
            .prop_map(|date| Anchor {
                kind: Some(AnchorKind::DocsPage),
                url: Some("https://example.org/doc".into()),
                retrieved: Some(date.into()),
                ..paper()
            }),
        1 => Just(repo_file("traces/present.jsonl", None)),
        1 => Just(repo_file("traces/missing.jsonl", None)),
        1 => Just(repo_file("traces/present.jsonl", Some(true))),
        1 => Just(repo_file("traces/present.jsonl", Some(false))),
        1 => Just(repo_file("traces/missing.jsonl", Some(true))),
        1 => Just(repo_file("traces/outside.jsonl", Some(true))),
        1 => select(vec!["traces/present-foreign.jsonl", "traces/present-headerless.jsonl"])
            .prop_map(|p| repo_file(p, Some(true))),
        1 => select(vec!["src/connector.py", "artifacts/results.json", "runs/trace.JSONL", "docs/design.md"])
            .prop_map(|p| Anchor { path: Some(p.into()), ..public_source("0123abcd") }),
        1 => select(vec!["capabilities/self.yaml", "./modes/modes.yaml", "results/lowering-matrix.json"])
            .prop_map(|p| repo_file(p, Some(true))),
        2 => select(vec![
            "evidence/run.join.json",
            "evidence/run-stale.join.json",
            "evidence/run-unheld.Join.json",
            "evidence/run-unsound.json",
            "evidence/run-deep.join.json",
            "evidence/run-foreign.join.json",
            "evidence/run-headerless.join.json",
        ])
        .prop_map(|p| repo_file(p, None)),
        1 => Just(repo_file("evidence/run.join.json", Some(true))),
        1 => Just(Anchor {
            verdict: repo_file("x", Some(true)).verdict,
            ..paper()
        }),
    ]
}

fn status() -> impl Strategy<Value = Status> {
    prop_oneof![6 => Just(Status::Supported), 1 => select(Status::ALL)]
}

fn scope() -> impl Strategy<Value = Scope> {
    prop_oneof![
        4 => select(&[Scope::LitmusTrace, Scope::ConformanceTrace, Scope::ControlledPressure][..]),
        1 => select(Scope::ALL),
    ]
}

/// Mostly every mode (`modes: all`); sometimes one or two modes only, sometimes
/// none stated (a supported item then supports no mode).
fn modes() -> impl Strategy<Value = Vec<kvlower_core::Mode>> {
    prop_oneof![
        3 => Just(kvlower_core::Mode::ALL.to_vec()),
        1 => subsequence(kvlower_core::Mode::ALL, 1..3),
        1 => Just(Vec::new()),
    ]
}

fn item(obligation: impl Strategy<Value = Obligation>) -> impl Strategy<Value = EvidenceItem> {
    (obligation, status(), scope(), anchor(), modes()).prop_map(
        |(obligation, status, scope, anchor, modes)| EvidenceItem {
            obligation,
            status,
            scope,
            anchor,
            modes,
            note: String::new(),
            carried_by: Vec::new(),
        },
    )
}

/// Random items, or one item per obligation of a random mode's bundle (clean,
/// or with random status, scope and anchor per item).
fn evidence(bundles: Vec<Vec<Obligation>>) -> impl Strategy<Value = Vec<EvidenceItem>> {
    let clean = select(bundles.clone()).prop_map(|bundle| {
        bundle
            .into_iter()
            .map(|obligation| EvidenceItem {
                obligation,
                status: Status::Supported,
                scope: Scope::LitmusTrace,
                anchor: paper(),
                modes: kvlower_core::Mode::ALL.to_vec(),
                note: String::new(),
                carried_by: Vec::new(),
            })
            .collect::<Vec<_>>()
    });
    prop_oneof![
        1 => prop::collection::vec(item(select(Obligation::ALL)), 0..5),
        2 => clean,
        1 => (
            select(bundles),
            prop::collection::vec((status(), scope(), anchor(), modes()), 9)
        )
            .prop_map(|(bundle, facts)| {
                bundle
                    .into_iter()
                    .zip(facts)
                    .map(|(obligation, (status, scope, anchor, modes))| EvidenceItem {
                        obligation,
                        status,
                        scope,
                        anchor,
                        modes,
                        note: String::new(),
                        carried_by: Vec::new(),
                    })
                    .collect()
            }),
    ]
}

fn adapter(
    bundles: Vec<Vec<Obligation>>,
    preconditions: BTreeMap<Depth, Vec<Precondition>>,
) -> impl Strategy<Value = Adapter> {
    select(Depth::ALL).prop_flat_map(move |depth| {
        let required = preconditions.get(&depth).cloned().unwrap_or_default();
        let all_good: BTreeMap<Precondition, Anchor> =
            required.iter().map(|p| (*p, paper())).collect();
        let pre = prop_oneof![
            3 => Just(all_good),
            1 => subsequence(Precondition::ALL, 0..Precondition::ALL.len())
                .prop_flat_map(|ps| prop::collection::vec(anchor(), ps.len())
                    .prop_map(move |anchors| ps.iter().copied().zip(anchors).collect())),
            1 => (subsequence(required.clone(), 0..=required.len()), anchor())
                .prop_map(|(ps, a)| ps.into_iter().map(|p| (p, a.clone())).collect()),
        ];
        let ambiguities = prop_oneof![
            5 => Just(Vec::new()),
            1 => prop::collection::vec(select(Ambiguity::ALL), 1..3),
        ];
        (pre, ambiguities, evidence(bundles.clone())).prop_map(
            move |(preconditions, ambiguities, evidence)| Adapter {
                depth,
                name: "generated".into(),
                preconditions,
                ambiguities,
                evidence,
            },
        )
    })
}

fn atoms() -> impl Strategy<Value = Vec<AtomEvidence>> {
    let one =
        (select(Atom::ALL), scope(), anchor()).prop_map(|(atom, scope, anchor)| AtomEvidence {
            atom,
            scope,
            anchor,
            note: String::new(),
        });
    prop_oneof![
        2 => prop::collection::vec(one, 0..4),
        2 => Just(
            Atom::ALL
                .iter()
                .map(|&atom| AtomEvidence {
                    atom,
                    scope: Scope::ControlledPressure,
                    anchor: paper(),
                    note: String::new(),
                })
                .collect()
        ),
    ]
}

fn descriptor(
    bundles: Vec<Vec<Obligation>>,
    preconditions: BTreeMap<Depth, Vec<Precondition>>,
) -> impl Strategy<Value = Descriptor> {
    let signal = (select(Signal::ALL), anchor()).prop_map(|(signal, anchor)| SignalEvidence {
        signal,
        anchor,
        note: String::new(),
    });
    let proposal = (select(Signal::ALL), select(Mode::ALL), select(Depth::ALL)).prop_map(
        |(primitive, mode, depth)| Proposal {
            primitive,
            mode,
            depth,
            note: String::new(),
        },
    );
    (
        evidence(bundles.clone()),
        prop::collection::vec(adapter(bundles, preconditions), 0..3),
        atoms(),
        prop::collection::vec(signal, 0..3),
        prop::collection::vec(proposal, 0..2),
    )
        .prop_map(|(native, adapters, atoms, signals, proposals)| Descriptor {
            runtime: RuntimeIdentity {
                name: "generated".into(),
                version: "0".into(),
                source: SourceKind::Documentation,
                reviewed: "2026-01-01".into(),
                identity: vec![kvlower_core::identity::RuntimeComponent {
                    kind: kvlower_core::identity::RuntimeKind::Vllm,
                    version: "0".into(),
                    patch: None,
                }],
                note: String::new(),
            },
            native,
            adapters,
            atoms,
            signals,
            proposals,
            non_claims: NonClaims {
                default: "generated".into(),
                modes: BTreeMap::new(),
            },
            allow_cited_positives: None,
            acknowledge: Vec::new(),
        })
}

/// Runs the differential over `cases` generated descriptors, every mode × every
/// depth of the ladder, from a fixed seed (deterministic in CI). Returns how
/// often each (label, subtype) was seen, so coverage can be asserted.
fn differential(cases: u32) -> BTreeMap<String, usize> {
    let catalog = &kvlower_tests::committed_repository().catalog;
    let bundles: Vec<Vec<Obligation>> = Mode::ALL
        .iter()
        .map(|&m| catalog.bundle(m).to_vec())
        .collect();
    let preconditions: BTreeMap<Depth, Vec<Precondition>> = Depth::ALL
        .iter()
        .map(|&d| {
            (
                d,
                catalog
                    .depth(d)
                    .map(|s| s.preconditions.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    let seen = RefCell::new(BTreeMap::<String, usize>::new());
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let result = runner.run(&descriptor(bundles, preconditions), |d| {
        for &mode in Mode::ALL {
            for &depth in Depth::ALL {
                let agreed = assert_agree(catalog, &d, mode, depth, &TestEnv);
                prop_assert!(agreed.is_ok(), "{}", agreed.err().unwrap_or_default());
                if let Ok((label, subtype)) = agreed {
                    let key = subtype.map_or(label.to_string(), |s| format!("{label}/{s}"));
                    *seen.borrow_mut().entry(key).or_default() += 1;
                }
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("oracle and checker disagree: {e}");
    }
    seen.into_inner()
}

#[test]
fn oracle_and_checker_agree_on_generated_descriptors() {
    let cases = kvlower_tests::cases(300, 3000);
    let seen = differential(cases);
    let rows: usize = seen.values().sum();
    assert_eq!(
        rows,
        cases as usize * Mode::ALL.len() * Depth::ALL.len(),
        "every generated row compared"
    );
    eprintln!("label distribution over {rows} generated rows: {seen:?}");
    // The generator reaches every label and every positive subtype, so agreement
    // is not agreement on trivial rows only (a few times each in the quick tier,
    // ten times each in the deep one).
    let floor = kvlower_tests::cases(3, 10) as usize;
    for key in [
        "native_sound",
        "rejected",
        "approximate",
        "unknown",
        "sound_with_adapter/adapter_observational",
        "sound_with_adapter/adapter_policy_controlled_pressure",
        "sound_with_adapter/adapter_hook_mechanism",
        "sound_with_adapter/backend_patch_witness",
    ] {
        assert!(
            seen.get(key).copied().unwrap_or(0) >= floor,
            "{key} seen {:?} times: {seen:?}",
            seen.get(key)
        );
    }
}
