//! The judgment over the repository's own catalog and descriptors: the
//! reproduction targets of docs/model.md, one test per fail-closed rule, and the
//! monotonicity property (weakening evidence never helps).

use kvlower_core::descriptor::{Anchor, Descriptor};
use kvlower_core::judgment::{Defeat, Judgment};
use kvlower_core::{
    Catalog, CatalogDoc, Depth, Label, Mode, Obligation, Scope, Status, Subtype, judge,
};
use kvlower_load::LoadedDescriptor;
use kvlower_tests::AssumeRepoFilesPresent;

/// The committed repository's catalog and descriptors, loaded once per test binary.
fn shared_repo() -> (&'static Catalog, &'static [LoadedDescriptor]) {
    let repo = kvlower_tests::committed_repository();
    (&repo.catalog, &repo.descriptors)
}

/// An owned copy, for tests that change what they judge.
fn repo() -> (Catalog, Vec<LoadedDescriptor>) {
    let (catalog, descriptors) = shared_repo();
    (catalog.clone(), descriptors.to_vec())
}

fn descriptor(descriptors: &[LoadedDescriptor], file: &str) -> Descriptor {
    descriptors
        .iter()
        .find(|d| d.path == format!("capabilities/{file}"))
        .unwrap_or_else(|| panic!("{file} is committed"))
        .descriptor
        .clone()
}

fn row(catalog: &Catalog, d: &Descriptor, mode: Mode, depth: Depth) -> Judgment {
    judge(catalog, d, mode, depth, &AssumeRepoFilesPresent)
}

fn codes(j: &Judgment) -> Vec<&'static str> {
    j.satisfied().map(Obligation::code).collect()
}

// ------------------------------------------------------- reproduction targets

#[test]
fn spec_targets_hold_on_the_committed_matrix() {
    let (catalog, descriptors) = repo();
    let rows = kvlower_core::matrix::judge_all(
        &catalog,
        descriptors.iter().map(|d| (d.path.as_str(), &d.descriptor)),
        &AssumeRepoFilesPresent,
    );
    assert!(
        rows.iter().all(|r| r.judgment.label != Label::NativeSound),
        "no native_sound row"
    );

    type PositiveRow = (String, Mode, Depth, Option<Subtype>, Vec<&'static str>);
    let positives: Vec<PositiveRow> = rows
        .iter()
        .filter(|r| r.judgment.label.is_positive())
        .map(|r| {
            (
                r.descriptor_path.to_string(),
                r.judgment.mode,
                r.judgment.depth,
                r.judgment.subtype,
                codes(&r.judgment),
            )
        })
        .collect();
    let expected = vec![
        (
            "capabilities/sglang_hicache_bbe9c7e.yaml",
            Mode::BestEffort,
            Depth::TelemetryJoin,
            Subtype::AdapterObservational,
            vec!["I", "P", "M", "T"],
        ),
        (
            "capabilities/tensorrt_llm_1_3_0rc14_container.yaml",
            Mode::BestEffort,
            Depth::TelemetryJoin,
            Subtype::AdapterObservational,
            vec!["I", "P", "M", "T"],
        ),
        (
            "capabilities/tensorrt_llm_1_3_0rc14_container.yaml",
            Mode::SoftPriority,
            Depth::TelemetryJoin,
            Subtype::AdapterPolicyControlledPressure,
            vec!["I", "Pr", "T"],
        ),
        (
            "capabilities/vllm_patched.yaml",
            Mode::BestEffort,
            Depth::BackendPatch,
            Subtype::BackendPatchWitness,
            vec!["I", "P", "M", "T"],
        ),
        (
            "capabilities/vllm_patched.yaml",
            Mode::HardProtected,
            Depth::BackendPatch,
            Subtype::BackendPatchWitness,
            vec!["I", "A", "P", "F", "V", "X", "B", "H", "L"],
        ),
        (
            "capabilities/vllm_patched.yaml",
            Mode::Demotable,
            Depth::BackendPatch,
            Subtype::BackendPatchWitness,
            vec!["I", "A", "D", "L"],
        ),
        (
            "capabilities/vllm_patched.yaml",
            Mode::Expiring,
            Depth::BackendPatch,
            Subtype::BackendPatchWitness,
            vec!["I", "A", "E", "L"],
        ),
        (
            "capabilities/vllm_patched.yaml",
            Mode::Offloadable,
            Depth::BackendPatch,
            Subtype::BackendPatchWitness,
            vec!["I", "A", "P", "R", "RF", "L", "H"],
        ),
    ];
    let expected: Vec<_> = expected
        .into_iter()
        .map(|(p, m, d, s, c)| (p.to_string(), m, d, Some(s), c))
        .collect();
    assert_eq!(
        positives, expected,
        "exactly the positive rows the paper reports"
    );

    let label_of = |file: &str, mode: Mode, depth: Depth| {
        rows.iter()
            .find(|r| {
                r.descriptor_path == format!("capabilities/{file}")
                    && r.judgment.mode == mode
                    && r.judgment.depth == depth
            })
            .map(|r| r.judgment.label)
    };
    let rc14 = "tensorrt_llm_1_3_0rc14_container.yaml";
    assert_eq!(
        rows.iter()
            .filter(|r| r.descriptor_path.ends_with(rc14))
            .count(),
        14
    );
    assert_eq!(
        label_of(rc14, Mode::HardProtected, Depth::None),
        Some(Label::Rejected)
    );
    assert_eq!(
        label_of(rc14, Mode::HardProtected, Depth::TelemetryJoin),
        Some(Label::Rejected)
    );
    assert_eq!(
        label_of(rc14, Mode::Expiring, Depth::None),
        Some(Label::Approximate)
    );
    assert_eq!(
        label_of(rc14, Mode::Expiring, Depth::TelemetryJoin),
        Some(Label::Approximate)
    );
    assert_eq!(
        label_of(rc14, Mode::Offloadable, Depth::None),
        Some(Label::Approximate)
    );
    assert_eq!(
        label_of(rc14, Mode::Offloadable, Depth::TelemetryJoin),
        Some(Label::Approximate)
    );
    assert_eq!(
        label_of(
            "tensorrt_llm_1_3_0rc15_container.yaml",
            Mode::Offloadable,
            Depth::None
        ),
        Some(Label::Approximate)
    );
    assert_eq!(
        label_of(
            "sglang_hicache_bbe9c7e.yaml",
            Mode::Offloadable,
            Depth::None
        ),
        Some(Label::Approximate)
    );
    assert_eq!(
        label_of(
            "sglang_hicache_bbe9c7e.yaml",
            Mode::Offloadable,
            Depth::TelemetryJoin
        ),
        Some(Label::Approximate)
    );
    for depth in [Depth::None, Depth::RoutingHook] {
        assert_eq!(
            label_of("dynamo_router_docs.yaml", Mode::RoutedReuse, depth),
            Some(Label::Approximate)
        );
    }
}

// ---------------------------------------------------------------- the seven rules

/// The rc14 descriptor, whose best_effort and soft_priority rows at
/// telemetry_join are positive: each rule test breaks exactly one thing.
fn rc14() -> (Catalog, Descriptor) {
    let (catalog, descriptors) = repo();
    let d = descriptor(&descriptors, "tensorrt_llm_1_3_0rc14_container.yaml");
    assert!(
        row(&catalog, &d, Mode::BestEffort, Depth::TelemetryJoin)
            .label
            .is_positive()
    );
    assert!(
        row(&catalog, &d, Mode::SoftPriority, Depth::TelemetryJoin)
            .label
            .is_positive()
    );
    (catalog, d)
}

fn join_evidence(d: &mut Descriptor) -> &mut Vec<kvlower_core::descriptor::EvidenceItem> {
    &mut d.adapters[0].evidence
}

#[test]
fn rule_1_signals_never_satisfy_obligations() {
    let (catalog, mut d) = rc14();
    // Keep every signal (block events, priority, ...) but drop the evidence.
    d.adapters.clear();
    d.native.clear();
    assert!(!d.signals.is_empty());
    for mode in [
        Mode::BestEffort,
        Mode::SoftPriority,
        Mode::Offloadable,
        Mode::Expiring,
    ] {
        let j = row(&catalog, &d, mode, Depth::None);
        assert_eq!(
            j.satisfied().count(),
            0,
            "{mode}: signals satisfied something"
        );
        assert_eq!(
            j.label,
            Label::Approximate,
            "{mode}: signals make a row plausible, nothing more"
        );
    }
}

#[test]
fn rule_2_only_supported_anchored_evidence_counts() {
    let (catalog, d) = rc14();
    for status in [Status::Partial, Status::Unknown, Status::Missing] {
        let mut m = d.clone();
        join_evidence(&mut m)[0].status = status; // claim_identity
        let j = row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin);
        assert!(
            !j.label.is_positive(),
            "{status} evidence made a positive row"
        );
        assert!(j.missing().any(|o| o == Obligation::ClaimIdentity));
    }
    let mut m = d.clone();
    join_evidence(&mut m)[1].anchor = Anchor::default(); // materialization_predicate
    let j = row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin);
    assert!(!j.label.is_positive());
    let defeats = &j.obligations[1].rejected[0].1;
    assert!(
        defeats
            .iter()
            .any(|d| matches!(d, Defeat::Unanchored { .. })),
        "{defeats:?}"
    );
}

#[test]
fn rule_3_atoms_count_only_when_anchored_to_a_trace() {
    let (catalog, d) = rc14();
    let mut unanchored = d.clone();
    for atom in &mut unanchored.atoms {
        atom.anchor.preserves_order = false;
    }
    let mut docs_only = d.clone();
    for atom in &mut docs_only.atoms {
        atom.scope = Scope::DocsOnly;
    }
    for m in [unanchored, docs_only] {
        let j = row(&catalog, &m, Mode::SoftPriority, Depth::TelemetryJoin);
        assert!(!j.label.is_positive());
        assert_eq!(j.missing_atoms().count(), 3);
        // priority_influence from a join is conditional on the pressure atom too.
        assert!(j.missing().any(|o| o == Obligation::PriorityInfluence));
        // best_effort needs no atoms and stays positive: the rule is specific.
        assert!(
            row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin)
                .label
                .is_positive()
        );
    }
}

#[test]
fn rule_4_docs_and_source_adapter_evidence_is_not_an_adapter_positive() {
    let (catalog, d) = rc14();
    for scope in [Scope::DocsOnly, Scope::SourceInspection] {
        let mut m = d.clone();
        for e in join_evidence(&mut m) {
            e.scope = scope;
        }
        let j = row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin);
        assert!(
            !j.label.is_positive(),
            "{scope} evidence made an adapter positive"
        );
        assert!(j.obligations.iter().all(|f| {
            f.rejected
                .iter()
                .any(|(_, ds)| ds.contains(&Defeat::ScopeTooWeak { scope }))
        }));
    }
}

#[test]
fn rule_5_adapter_depth_constrains_obligations() {
    let (catalog, mut d) = rc14();
    // A join claiming routing obligations: the depth may not supply them.
    let template = join_evidence(&mut d)[0].clone();
    for o in [
        Obligation::RouteCostAttribution,
        Obligation::PlacementAttribution,
        Obligation::ReuseRoutingAttribution,
    ] {
        let mut e = template.clone();
        e.obligation = o;
        join_evidence(&mut d).push(e);
    }
    let j = row(&catalog, &d, Mode::RoutedReuse, Depth::TelemetryJoin);
    assert!(!j.label.is_positive());
    assert_eq!(
        j.missing().collect::<Vec<_>>(),
        vec![
            Obligation::RouteCostAttribution,
            Obligation::PlacementAttribution,
            Obligation::ReuseRoutingAttribution
        ]
    );
    assert!(j.obligations[2].rejected.iter().any(|(_, ds)| ds.contains(
        &Defeat::DepthCannotSupply {
            adapter_depth: Depth::TelemetryJoin
        }
    )));
    // An adapter deeper than the row is not selected.
    let j = row(&catalog, &d, Mode::BestEffort, Depth::None);
    assert!(!j.label.is_positive());
    assert!(j.obligations[0].rejected.iter().any(|(_, ds)| ds.contains(
        &Defeat::AdapterNotSelected {
            adapter_depth: Depth::TelemetryJoin,
            row_depth: Depth::None
        }
    )));
}

#[test]
fn rule_6_telemetry_cannot_create_enforcement() {
    let (catalog, mut d) = rc14();
    let template = join_evidence(&mut d)[0].clone();
    let enforcement: Vec<Obligation> = Obligation::ALL
        .iter()
        .copied()
        .filter(|o| o.is_enforcement())
        .collect();
    for &o in &enforcement {
        let mut e = template.clone();
        e.obligation = o;
        join_evidence(&mut d).push(e);
    }
    for mode in [
        Mode::HardProtected,
        Mode::Demotable,
        Mode::Expiring,
        Mode::Offloadable,
    ] {
        let j = row(&catalog, &d, mode, Depth::TelemetryJoin);
        assert!(!j.label.is_positive(), "{mode}");
        for f in j
            .obligations
            .iter()
            .filter(|f| f.obligation.is_enforcement())
        {
            assert!(
                f.satisfied_by.is_none(),
                "{mode}: telemetry supplied {}",
                f.obligation
            );
            assert!(
                f.rejected
                    .iter()
                    .any(|(_, ds)| ds.contains(&Defeat::TelemetryCannotEnforce))
            );
        }
    }
    // A join that claims enforcement offers the mode, so the row is rejected.
    assert_eq!(
        row(&catalog, &d, Mode::HardProtected, Depth::TelemetryJoin).label,
        Label::Rejected
    );

    // The catalog cannot switch the rule off either.
    let mut doc: CatalogDoc = catalog.doc().clone();
    doc.depths
        .get_mut(&Depth::TelemetryJoin)
        .expect("telemetry_join is described")
        .supplies
        .push(Obligation::VictimExclusionBeforeViolation);
    let errors =
        Catalog::new(doc).expect_err("telemetry supplying enforcement is rejected on load");
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("telemetry cannot create enforcement"))
    );
}

#[test]
fn rule_7_ambiguity_fails_closed() {
    use kvlower_core::vocab::{Ambiguity, Precondition};
    let (catalog, d) = rc14();
    // Every missing precondition voids the join (missing registry, unstable ids, ...).
    for p in catalog
        .depth(Depth::TelemetryJoin)
        .expect("described")
        .preconditions
        .clone()
    {
        let mut m = d.clone();
        m.adapters[0].preconditions.remove(&p);
        let j = row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin);
        assert!(!j.label.is_positive(), "without {p} the join still counted");
        assert_eq!(j.satisfied().count(), 0);
    }
    // An unanchored precondition is as good as a missing one.
    let mut m = d.clone();
    m.adapters[0]
        .preconditions
        .insert(Precondition::FixedCacheIdentity, Anchor::default());
    assert!(
        !row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin)
            .label
            .is_positive()
    );
    // Each declared ambiguity voids the adapter's evidence.
    for &a in Ambiguity::ALL {
        let mut m = d.clone();
        m.adapters[0].ambiguities.push(a);
        let j = row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin);
        assert!(!j.label.is_positive(), "{a} did not fail closed");
        assert!(j.obligations[0].rejected.iter().any(|(_, ds)| ds.contains(
            &Defeat::AmbiguityDeclared {
                ambiguities: vec![a]
            }
        )));
    }
}

#[test]
fn trace_anchors_must_preserve_order_and_claim_scope() {
    let (catalog, d) = rc14();
    for strip in [0, 1] {
        let mut m = d.clone();
        for e in join_evidence(&mut m) {
            if strip == 0 {
                e.anchor.preserves_order = false;
            } else {
                e.anchor.preserves_claim_scope = false;
            }
        }
        assert!(
            !row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin)
                .label
                .is_positive()
        );
    }
}

#[test]
fn the_legacy_alias_loads_as_explicit_conflict_action() {
    let src = "runtime: {name: t, version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}\nnon_claims: {default: test}\nnative:\n  - obligation: active_refusal_or_defer\n    status: missing\n    scope: docs_only\n    anchor: {kind: paper, section: x, note: y}\n";
    let d: Descriptor = kvlower_load::yaml::from_str(src).expect("parses");
    assert_eq!(d.native[0].obligation, Obligation::ExplicitConflictAction);
}

// ---------------------------------------------------------------- monotonicity

mod monotonicity {
    use super::*;
    use proptest::prelude::*;

    /// One way to weaken a descriptor; indices are taken modulo the list length.
    #[derive(Debug, Clone)]
    enum Weakening {
        LowerStatus(usize, Status),
        RemoveAnchor(usize),
        RemovePrecondition(usize, usize),
        RemoveAdapter(usize),
        WeakenScope(usize, Scope),
        RemoveAtom(usize),
        DeclareAmbiguity(usize, usize),
        StripTraceFlags(usize),
    }

    fn weakening() -> impl Strategy<Value = Weakening> {
        let status = prop_oneof![
            Just(Status::Partial),
            Just(Status::Unknown),
            Just(Status::Missing)
        ];
        let scope = prop_oneof![Just(Scope::DocsOnly), Just(Scope::SourceInspection)];
        prop_oneof![
            (any::<usize>(), status).prop_map(|(i, s)| Weakening::LowerStatus(i, s)),
            any::<usize>().prop_map(Weakening::RemoveAnchor),
            (any::<usize>(), any::<usize>()).prop_map(|(a, p)| Weakening::RemovePrecondition(a, p)),
            any::<usize>().prop_map(Weakening::RemoveAdapter),
            (any::<usize>(), scope).prop_map(|(i, s)| Weakening::WeakenScope(i, s)),
            any::<usize>().prop_map(Weakening::RemoveAtom),
            (any::<usize>(), any::<usize>()).prop_map(|(a, k)| Weakening::DeclareAmbiguity(a, k)),
            any::<usize>().prop_map(Weakening::StripTraceFlags),
        ]
    }

    /// Every evidence item of the descriptor, native then adapter, mutably.
    fn items(d: &mut Descriptor) -> Vec<&mut kvlower_core::descriptor::EvidenceItem> {
        let mut all: Vec<_> = d.native.iter_mut().collect();
        for a in &mut d.adapters {
            all.extend(a.evidence.iter_mut());
        }
        all
    }

    fn apply(d: &mut Descriptor, w: &Weakening) {
        use kvlower_core::vocab::Ambiguity;
        match w {
            Weakening::LowerStatus(i, s) => {
                let mut all = items(d);
                let n = all.len();
                if n > 0 {
                    all[i % n].status = *s;
                }
            }
            Weakening::RemoveAnchor(i) => {
                let mut all = items(d);
                let n = all.len();
                if n > 0 {
                    all[i % n].anchor = Anchor::default();
                }
            }
            Weakening::RemovePrecondition(a, p) => {
                let n = d.adapters.len();
                if n > 0 {
                    let adapter = &mut d.adapters[a % n];
                    let keys: Vec<_> = adapter.preconditions.keys().copied().collect();
                    if !keys.is_empty() {
                        adapter.preconditions.remove(&keys[p % keys.len()]);
                    }
                }
            }
            Weakening::RemoveAdapter(a) => {
                let n = d.adapters.len();
                if n > 0 {
                    d.adapters.remove(a % n);
                }
            }
            Weakening::WeakenScope(i, s) => {
                let mut all = items(d);
                let n = all.len();
                if n > 0 {
                    all[i % n].scope = *s;
                }
            }
            Weakening::RemoveAtom(i) => {
                let n = d.atoms.len();
                if n > 0 {
                    d.atoms.remove(i % n);
                }
            }
            Weakening::DeclareAmbiguity(a, k) => {
                let n = d.adapters.len();
                if n > 0 {
                    d.adapters[a % n]
                        .ambiguities
                        .push(Ambiguity::ALL[k % Ambiguity::ALL.len()]);
                }
            }
            Weakening::StripTraceFlags(i) => {
                let mut all = items(d);
                let n = all.len();
                if n > 0 {
                    all[i % n].anchor.preserves_order = false;
                }
            }
        }
    }

    fn check_never_helps(catalog: &Catalog, original: &Descriptor, weakenings: &[Weakening]) {
        let mut weakened = original.clone();
        for w in weakenings {
            apply(&mut weakened, w);
        }
        for &mode in Mode::ALL {
            for depth in kvlower_core::row_depths(original) {
                let before = row(catalog, original, mode, depth);
                let after = row(catalog, &weakened, mode, depth);
                let gained: Vec<Obligation> = after
                    .satisfied()
                    .filter(|o| !before.satisfied().any(|b| b == *o))
                    .collect();
                assert!(
                    gained.is_empty(),
                    "{mode}@{depth}: weakening {weakenings:?} added {gained:?}"
                );
                assert!(
                    before.label.is_positive() || !after.label.is_positive(),
                    "{mode}@{depth}: weakening {weakenings:?} turned a non-positive row positive"
                );
                assert!(
                    after.missing_atoms().count() >= before.missing_atoms().count(),
                    "{mode}@{depth}: weakening anchored an atom"
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: kvlower_tests::cases(32, 256), ..ProptestConfig::default() })]

        #[test]
        fn weakening_evidence_never_adds_an_obligation_or_a_positive(
            which in any::<usize>(),
            weakenings in proptest::collection::vec(weakening(), 1..6),
        ) {
            let (catalog, descriptors) = shared_repo();
            let original = &descriptors[which % descriptors.len()].descriptor;
            check_never_helps(catalog, original, &weakenings);
        }
    }

    #[test]
    fn weakening_catches_a_judgment_that_counts_partial_evidence() {
        // Guard for the property itself: a single status downgrade on a positive row
        // must be visible, or the property above could be vacuous.
        let (catalog, d) = rc14();
        let mut m = d.clone();
        apply(
            &mut m,
            &Weakening::LowerStatus(d.native.len(), Status::Partial),
        );
        let before = row(&catalog, &d, Mode::BestEffort, Depth::TelemetryJoin);
        let after = row(&catalog, &m, Mode::BestEffort, Depth::TelemetryJoin);
        assert!(before.label.is_positive() && !after.label.is_positive());
    }
}

// ---------------------------------------------------------------- review findings

#[test]
fn contradicting_missing_evidence_at_the_same_depth_fails_closed() {
    let (catalog, mut d) = rc14();
    let mut contra = join_evidence(&mut d)[0].clone(); // claim_identity, supported
    contra.status = Status::Missing;
    join_evidence(&mut d).push(contra);
    let j = row(&catalog, &d, Mode::BestEffort, Depth::TelemetryJoin);
    assert!(!j.label.is_positive());
    assert!(
        j.obligations[0]
            .rejected
            .iter()
            .any(|(_, ds)| ds.iter().any(|x| matches!(x, Defeat::Contradicted { .. })))
    );
}

#[test]
fn evidence_counts_only_for_the_modes_whose_path_it_exercised() {
    let (catalog, mut d) = rc14();
    for e in join_evidence(&mut d) {
        e.modes = vec![Mode::SoftPriority];
    }
    assert!(
        !row(&catalog, &d, Mode::BestEffort, Depth::TelemetryJoin)
            .label
            .is_positive()
    );
    assert!(
        row(&catalog, &d, Mode::SoftPriority, Depth::TelemetryJoin)
            .label
            .is_positive()
    );
    // The committed vLLM patch descriptor: the offloadable row rests on the
    // scheduler-boundary witness, not on the hard-claim conformance suite.
    let (_, descriptors) = repo();
    let vllm = descriptor(&descriptors, "vllm_patched.yaml");
    let j = row(&catalog, &vllm, Mode::Offloadable, Depth::BackendPatch);
    assert!(j.label.is_positive());
    for f in &j.obligations {
        let by = f.satisfied_by.as_ref().expect("satisfied");
        assert!(
            !by.anchor.contains("artifacts/conformance"),
            "{}: {}",
            f.obligation,
            by.anchor
        );
    }
}

#[test]
fn a_documentation_page_cannot_anchor_run_time_evidence() {
    let (catalog, mut d) = rc14();
    for e in join_evidence(&mut d) {
        e.anchor.kind = Some(kvlower_core::AnchorKind::DocsPage);
        e.anchor.url = Some("https://example.org/docs".into());
        e.anchor.retrieved = Some("2026-11-22".into());
    }
    let j = row(&catalog, &d, Mode::BestEffort, Depth::TelemetryJoin);
    assert!(!j.label.is_positive());
}

#[test]
fn the_catalog_cannot_weaken_the_join_boundary() {
    let (catalog, _) = rc14();
    let mut doc: CatalogDoc = catalog.doc().clone();
    let spec = doc
        .depths
        .get_mut(&Depth::TelemetryJoin)
        .expect("described");
    // Nine entries, but not the nine of Table 5.
    spec.preconditions = vec![kvlower_core::Precondition::StableClaimId; 9];
    let errors = Catalog::new(doc).expect_err("rejected");
    assert!(
        errors
            .iter()
            .any(|e| e.message.contains("exactly the nine preconditions")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.message.contains("listed twice")),
        "{errors:?}"
    );
}
