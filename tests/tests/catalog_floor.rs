//! The mode catalog is the trust root: `modes/modes.yaml` may strengthen the
//! built-in baseline (kvlower-core/src/baseline.rs) but never weaken it.
//!
//! - the committed catalog equals the baseline;
//! - each weakening class of the catalog issue (`tests/fixtures/catalog/`) is
//!   a located finding in `modes/modes.yaml`, and cannot raise a label even
//!   where the finding is ignored (the judgment uses the meet with the baseline);
//! - property: any random removal from the baseline is reported; any random
//!   strengthening is accepted and can only lower labels.

use std::collections::BTreeMap;

use kvlower_core::baseline::{self, Direction};
use kvlower_core::vocab::TraceGate;
use kvlower_core::{
    Atom, Catalog, CatalogDoc, Depth, Descriptor, Label, Mode, Obligation, Precondition, Signal,
    judge, row_depths,
};
use kvlower_evidence::load_repository;
use kvlower_tests::AssumeRepoFilesPresent;
use kvlower_tests::{kvlower, repo_root, sandbox};

fn committed() -> (Catalog, Vec<(String, Descriptor)>) {
    let (repo, diagnostics) =
        load_repository(kvlower_tests::committed_env()).expect("the repository loads");
    assert!(diagnostics.is_empty(), "{diagnostics:#?}");
    let descriptors = repo
        .descriptors
        .into_iter()
        .map(|d| (d.path, d.descriptor))
        .collect();
    (repo.catalog, descriptors)
}

/// Every row label of every committed descriptor under `catalog`.
fn labels(catalog: &Catalog, descriptors: &[(String, Descriptor)]) -> BTreeMap<String, Label> {
    let mut out = BTreeMap::new();
    for (path, d) in descriptors {
        for &mode in Mode::ALL {
            for depth in row_depths(d) {
                let j = judge(catalog, d, mode, depth, &AssumeRepoFilesPresent);
                out.insert(format!("{path} {mode}@{depth}"), j.label);
            }
        }
    }
    out
}

/// Labels may only go down: no new positive, no rejection lost.
fn assert_no_gain(before: &BTreeMap<String, Label>, after: &BTreeMap<String, Label>, what: &str) {
    for (row, b) in before {
        let a = after[row];
        assert!(
            b.is_positive() || !a.is_positive(),
            "{what}: {row} turned positive ({b} -> {a})"
        );
        assert!(
            *b != Label::Rejected || a == Label::Rejected,
            "{what}: {row} lost its rejection ({b} -> {a})"
        );
    }
}

#[test]
fn the_committed_catalog_is_the_baseline() {
    let (catalog, _) = committed();
    assert_eq!(
        catalog.doc(),
        &baseline::doc(),
        "modes/modes.yaml drifted from the baseline"
    );
    assert!(catalog.changes().is_empty(), "{:#?}", catalog.changes());
    assert_eq!(catalog.effective(), catalog.doc());
}

/// (fixture, the code it must produce, the line of `modes/modes.yaml` it must name).
const FIXTURES: &[(&str, &str, usize)] = &[
    ("hard_bundle_cut", "catalog-weakened", 27),
    ("mode_alias", "catalog-alias", 26),
    (
        "claim_registry_supplies_enforcement",
        "catalog-weakened",
        91,
    ),
    ("gate_widened", "catalog-weakened", 208),
    ("soft_priority_atoms_removed", "catalog-weakened", 21),
    ("backend_patch_preconditions_cut", "catalog-weakened", 129),
    ("mode_defined_twice", "duplicate-key", 40),
    ("forbidden_and_critical_emptied", "catalog-weakened", 186),
    ("join_documents_widened", "catalog-weakened", 249),
];

fn fixture(name: &str) -> String {
    std::fs::read_to_string(repo_root().join(format!("tests/fixtures/catalog/{name}.yaml")))
        .expect("fixture")
}

#[test]
fn every_weakening_class_is_a_located_finding() {
    for (name, code, line) in FIXTURES {
        let dir = kvlower_tests::scratch_repo(&["capabilities"]);
        std::fs::write(dir.path().join("modes/modes.yaml"), fixture(name)).expect("write");
        for entry in std::fs::read_dir(repo_root().join("capabilities")).expect("capabilities") {
            let entry = entry.expect("entry");
            std::fs::copy(
                entry.path(),
                dir.path().join("capabilities").join(entry.file_name()),
            )
            .expect("copy");
        }
        let root = dir.path().display().to_string();
        let run = kvlower(&["check", "--color", "never", "--root", &root]);
        assert_eq!(run.code, 1, "{name}: {}", run.stderr);
        let needle = format!("modes/modes.yaml:{line}:");
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with(&needle) && l.contains(&format!("error[{code}]"))),
            "{name}: no {code} at line {line}:\n{}",
            run.stderr
        );
        assert!(
            run.stdout.contains("nothing judged"),
            "{name}: {}",
            run.stdout
        );
        insta::assert_snapshot!(format!("catalog_{name}"), run.stderr);
    }
}

#[test]
fn a_weakened_catalog_cannot_raise_a_label_even_if_its_finding_is_ignored() {
    let (catalog, descriptors) = committed();
    let floor = labels(&catalog, &descriptors);
    let mut would_gain = 0;
    for (name, _, _) in FIXTURES {
        // A duplicate key never parses; everything else is a valid catalog.
        let Ok(doc) = kvlower_load::yaml::from_str::<CatalogDoc>(&fixture(name)) else {
            assert_eq!(*name, "mode_defined_twice");
            continue;
        };
        let weakened = Catalog::new(doc.clone()).expect("a valid (if weakened) catalog");
        assert!(
            weakened
                .changes()
                .iter()
                .any(|c| c.direction == Direction::Weakened),
            "{name}: not reported"
        );
        assert_no_gain(&floor, &labels(&weakened, &descriptors), name);
        // Non-vacuity: read literally (the independent oracle uses the data as
        // written), the weakened file does raise rows.
        for (_, d) in &descriptors {
            for row in kvlower_audit::oracle::derive_all(&doc, d, &AssumeRepoFilesPresent) {
                let base = judge(&catalog, d, row.mode, row.depth, &AssumeRepoFilesPresent);
                if (row.label.is_positive() && !base.label.is_positive())
                    || (base.label == Label::Rejected && row.label != Label::Rejected)
                {
                    would_gain += 1;
                }
            }
        }
    }
    assert!(would_gain > 0, "the fixtures would raise no committed row");
}

// ---------------------------------------------------------------- properties

mod properties {
    use super::*;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    /// One edit of the baseline; indices are taken modulo the list length.
    #[derive(Debug, Clone, Copy)]
    enum Edit {
        Bundle(usize, usize),
        Critical(usize),
        RequiredAtom(usize, usize),
        Supply(usize, usize),
        ConditionalAtom(usize, usize),
        Precondition(usize, usize),
        Forbidden(usize, usize),
        GateWitness(usize, usize),
        JoinWitness(usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        let i = || any::<usize>();
        prop_oneof![
            (i(), i()).prop_map(|(a, b)| Edit::Bundle(a, b)),
            i().prop_map(Edit::Critical),
            (i(), i()).prop_map(|(a, b)| Edit::RequiredAtom(a, b)),
            (i(), i()).prop_map(|(a, b)| Edit::Supply(a, b)),
            (i(), i()).prop_map(|(a, b)| Edit::ConditionalAtom(a, b)),
            (i(), i()).prop_map(|(a, b)| Edit::Precondition(a, b)),
            (i(), i()).prop_map(|(a, b)| Edit::Forbidden(a, b)),
            (i(), i()).prop_map(|(a, b)| Edit::GateWitness(a, b)),
            i().prop_map(Edit::JoinWitness),
        ]
    }

    fn pick<T: Copy>(v: &[T], i: usize) -> Option<T> {
        (!v.is_empty()).then(|| v[i % v.len()])
    }

    fn mode(i: usize) -> Mode {
        Mode::ALL[i % Mode::ALL.len()]
    }

    /// Adapter depths the catalog describes (not `none`).
    fn depth(i: usize) -> Depth {
        Depth::ALL[1 + i % (Depth::ALL.len() - 1)]
    }

    /// Removes (or, for "may supply" lists, adds) one item: a weakening.
    /// Returns the YAML path prefix the report must name, or None if the edit
    /// does not apply to the baseline.
    fn weaken(doc: &mut CatalogDoc, e: Edit) -> Option<String> {
        match e {
            Edit::Bundle(m, k) => {
                let spec = doc.modes.get_mut(&mode(m))?;
                let o = pick(&spec.obligations, k)?;
                spec.obligations.retain(|x| *x != o);
                spec.enforcement_critical.retain(|x| *x != o);
                Some(format!("modes.{}.obligations", mode(m)))
            }
            Edit::Critical(k) => {
                let spec = doc.modes.get_mut(&Mode::HardProtected)?;
                let o = pick(&spec.enforcement_critical, k)?;
                spec.enforcement_critical.retain(|x| *x != o);
                Some("modes.hard_protected.enforcement_critical".into())
            }
            Edit::RequiredAtom(m, k) => {
                let spec = doc.modes.get_mut(&mode(m))?;
                let a = pick(&spec.required_atoms, k)?;
                spec.required_atoms.retain(|x| *x != a);
                Some(format!("modes.{}.required_atoms", mode(m)))
            }
            Edit::Supply(d, k) => {
                let spec = doc.depths.get_mut(&depth(d))?;
                if spec.supplies_any {
                    return None;
                }
                let o = pick(Obligation::ALL, k)?;
                if spec.supplies.contains(&o) {
                    return None;
                }
                spec.supplies.push(o);
                Some(format!("depths.{}.supplies", depth(d)))
            }
            Edit::ConditionalAtom(d, k) => {
                let spec = doc.depths.get_mut(&depth(d))?;
                let keys: Vec<Obligation> = spec.conditional.keys().copied().collect();
                let o = pick(&keys, k)?;
                spec.conditional.remove(&o);
                Some(format!("depths.{}.conditional", depth(d)))
            }
            Edit::Precondition(d, k) => {
                let spec = doc.depths.get_mut(&depth(d))?;
                let p = pick(&spec.preconditions, k)?;
                spec.preconditions.retain(|x| *x != p);
                Some(format!("depths.{}.preconditions", depth(d)))
            }
            Edit::Forbidden(k, _) => {
                let n = doc.forbidden_lowerings.len();
                if n == 0 {
                    return None;
                }
                doc.forbidden_lowerings.remove(k % n);
                Some("forbidden_lowerings".into())
            }
            Edit::GateWitness(g, k) => {
                let gate = TraceGate::ALL[g % TraceGate::ALL.len()];
                let w = doc.trace_gates.get_mut(&gate)?;
                let o = pick(Obligation::ALL, k)?;
                if w.contains(&o) {
                    return None;
                }
                w.push(o);
                Some(format!("trace_gates.{gate}"))
            }
            Edit::JoinWitness(k) => {
                let o = pick(Obligation::ALL, k)?;
                if doc.join_documents.witnesses.contains(&o) {
                    return None;
                }
                doc.join_documents.witnesses.push(o);
                Some("join_documents.witnesses".into())
            }
        }
    }

    /// Adds (or, for "may supply" lists, removes) one item: a strengthening.
    fn strengthen(doc: &mut CatalogDoc, e: Edit) {
        fn add<T: PartialEq + Copy>(v: &mut Vec<T>, x: T) {
            if !v.contains(&x) {
                v.push(x);
            }
        }
        match e {
            Edit::Bundle(m, k) => {
                if let Some(spec) = doc.modes.get_mut(&mode(m)) {
                    add(
                        &mut spec.obligations,
                        Obligation::ALL[k % Obligation::ALL.len()],
                    );
                }
            }
            Edit::Critical(k) => {
                let m = mode(k);
                if let Some(spec) = doc.modes.get_mut(&m)
                    && let Some(o) = pick(&spec.obligations, k / 7)
                {
                    add(&mut spec.enforcement_critical, o);
                }
            }
            Edit::RequiredAtom(m, k) => {
                if let Some(spec) = doc.modes.get_mut(&mode(m)) {
                    add(&mut spec.required_atoms, Atom::ALL[k % Atom::ALL.len()]);
                }
            }
            Edit::Supply(d, k) => {
                if let Some(spec) = doc.depths.get_mut(&depth(d))
                    && !spec.supplies_any
                    && let Some(o) = pick(&spec.supplies, k)
                {
                    spec.supplies.retain(|x| *x != o);
                    spec.conditional.remove(&o);
                }
            }
            Edit::ConditionalAtom(d, k) => {
                if let Some(spec) = doc.depths.get_mut(&depth(d)) {
                    let supplied = if spec.supplies_any {
                        Obligation::ALL.to_vec()
                    } else {
                        spec.supplies.clone()
                    };
                    if let Some(o) = pick(&supplied, k) {
                        add(
                            spec.conditional.entry(o).or_default(),
                            Atom::ALL[k % Atom::ALL.len()],
                        );
                    }
                }
            }
            Edit::Precondition(d, k) => {
                if let Some(spec) = doc.depths.get_mut(&depth(d))
                    && depth(d) != Depth::TelemetryJoin
                {
                    add(
                        &mut spec.preconditions,
                        Precondition::ALL[k % Precondition::ALL.len()],
                    );
                }
            }
            Edit::Forbidden(s, m) => {
                let f = kvlower_core::catalog::ForbiddenLowering {
                    primitive: Signal::ALL[s % Signal::ALL.len()],
                    mode: mode(m),
                    why: "a stricter local catalog".into(),
                };
                if doc.forbidden(&f) {
                    doc.forbidden_lowerings.push(f);
                }
            }
            Edit::GateWitness(g, k) => {
                let gate = TraceGate::ALL[g % TraceGate::ALL.len()];
                if let Some(w) = doc.trace_gates.get_mut(&gate)
                    && let Some(o) = pick(w, k)
                {
                    w.retain(|x| *x != o);
                }
            }
            Edit::JoinWitness(k) => {
                let w = &mut doc.join_documents.witnesses;
                if let Some(o) = pick(w, k) {
                    w.retain(|x| *x != o);
                }
            }
        }
    }

    /// A forbidden lowering not yet listed.
    trait NewForbidden {
        fn forbidden(&self, f: &kvlower_core::catalog::ForbiddenLowering) -> bool;
    }
    impl NewForbidden for CatalogDoc {
        fn forbidden(&self, f: &kvlower_core::catalog::ForbiddenLowering) -> bool {
            !self
                .forbidden_lowerings
                .iter()
                .any(|x| x.primitive == f.primitive && x.mode == f.mode)
        }
    }

    #[test]
    fn any_removal_from_the_baseline_is_reported() {
        // 128 cases by default, the full 512 in the deep tier (KVLOWER_DEEP_TESTS=1, which
        // .ci/run's deep step runs for this file): the default run stays fast (issue 49).
        let mut runner = TestRunner::new(Config::with_cases(kvlower_tests::cases(128, 512)));
        runner
            .run(&proptest::collection::vec(edit(), 1..4), |edits| {
                let mut doc = baseline::doc();
                let mut expected = Vec::new();
                for e in edits {
                    if let Some(path) = weaken(&mut doc, e) {
                        expected.push(path);
                    }
                }
                let changes = baseline::compare(&doc);
                for path in &expected {
                    prop_assert!(
                        changes
                            .iter()
                            .any(|c| c.direction == Direction::Weakened && c.path == *path),
                        "{path} not reported: {changes:#?}"
                    );
                }
                prop_assert_eq!(expected.is_empty(), changes.is_empty());
                Ok(())
            })
            .expect("property");
    }

    #[test]
    fn any_strengthening_is_accepted_and_only_lowers_labels() {
        let (catalog, descriptors) = committed();
        let floor = labels(&catalog, &descriptors);
        // Each case judges every committed descriptor under a stricter catalog: 16 by
        // default, the full 64 in the deep tier (.ci/run's deep step runs this file).
        let mut runner = TestRunner::new(Config::with_cases(kvlower_tests::cases(16, 64)));
        runner
            .run(&proptest::collection::vec(edit(), 1..5), |edits| {
                let mut doc = baseline::doc();
                for e in &edits {
                    strengthen(&mut doc, *e);
                }
                let changes = baseline::compare(&doc);
                prop_assert!(
                    changes.iter().all(|c| c.direction != Direction::Weakened),
                    "{edits:?} reported as a weakening: {changes:#?}"
                );
                let stricter = Catalog::new(doc.clone())
                    .map_err(|e| TestCaseError::fail(format!("{edits:?}: {e:?}")))?;
                prop_assert_eq!(
                    stricter.effective(),
                    &doc,
                    "the meet of a stricter catalog is itself"
                );
                assert_no_gain(
                    &floor,
                    &labels(&stricter, &descriptors),
                    &format!("{edits:?}"),
                );
                Ok(())
            })
            .expect("property");
    }

    /// Guard for the property: the strengthening generator does lower labels.
    #[test]
    fn strengthening_does_lower_a_committed_positive() {
        let (catalog, descriptors) = committed();
        let floor = labels(&catalog, &descriptors);
        let mut doc = baseline::doc();
        strengthen(&mut doc, Edit::RequiredAtom(0, 3)); // best_effort needs ordered_lifecycle_trace
        let stricter = Catalog::new(doc).expect("valid");
        let after = labels(&stricter, &descriptors);
        assert!(
            floor
                .iter()
                .any(|(row, l)| l.is_positive() && !after[row].is_positive()),
            "no positive row was lowered"
        );
    }
}

// ---------------------------------------------------------------- the CLI

#[test]
fn catalog_diff_lists_each_difference_with_its_line() {
    let root = repo_root().display().to_string();
    let run = kvlower(&["catalog", "diff", "--root", &root]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("equals the built-in baseline"),
        "{}",
        run.stdout
    );

    // A stricter local catalog: listed, accepted.
    let dir = sandbox();
    let modes = dir.path().join("modes/modes.yaml");
    let text = std::fs::read_to_string(&modes).expect("read").replace(
        "    obligations: [claim_identity, materialization_predicate, claim_materialized_event, claim_scoped_telemetry]",
        "    obligations: [claim_identity, materialization_predicate, claim_materialized_event, claim_scoped_telemetry, explicit_acceptance]",
    );
    std::fs::write(&modes, text).expect("write");
    let root = dir.path().display().to_string();
    let human = kvlower(&["catalog", "diff", "--root", &root]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    insta::assert_snapshot!("catalog_diff_strengthened_human", human.stdout);
    let json = kvlower(&["catalog", "diff", "--root", &root, "--format", "json"]);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(doc["payload"]["equals_baseline"], false);
    assert_eq!(doc["payload"]["changes"][0]["direction"], "strengthened");
    assert_eq!(doc["payload"]["changes"][0]["line"], 17);
    let md = kvlower(&["catalog", "diff", "--root", &root, "--format", "markdown"]);
    insta::assert_snapshot!("catalog_diff_strengthened_markdown", md.stdout);

    // `matrix` under it records the local change; `check` is green.
    assert_eq!(kvlower(&["matrix", "--root", &root]).code, 0);
    let check = kvlower(&["check", "--root", &root]);
    assert_eq!(check.code, 0, "{}", check.stderr);
    let matrix =
        std::fs::read_to_string(dir.path().join("results/lowering-matrix.md")).expect("md");
    assert!(
        matrix.contains("1 local change(s) from the built-in baseline"),
        "{matrix}"
    );

    // A weaker one: listed, refused.
    std::fs::write(&modes, fixture("gate_widened")).expect("write");
    let weak = kvlower(&["catalog", "diff", "--root", &root]);
    assert_eq!(weak.code, 1, "{}", weak.stdout);
    assert!(
        weak.stdout
            .contains("modes/modes.yaml:208:3: weakened `trace_gates.connector_observation`"),
        "{}",
        weak.stdout
    );
}

#[test]
fn check_fails_when_the_matrix_was_judged_under_another_catalog() {
    let dir = sandbox();
    let path = dir.path().join("results/lowering-matrix.json");
    let text = std::fs::read_to_string(&path).expect("read");
    let digest = kvlower_evidence::load_repository(kvlower_tests::committed_env())
        .expect("loads")
        .0
        .catalog
        .digest();
    assert!(
        text.contains(&digest),
        "the matrix records the catalog digest"
    );
    std::fs::write(&path, text.replace(&digest, &"0".repeat(64))).expect("write");
    let root = dir.path().display().to_string();
    let run = kvlower(&["check", "--color", "never", "--root", &root]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("results/lowering-matrix.json: error[catalog-mismatch]"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_already_refused_edits_stay_refused() {
    type Edit = fn(&mut CatalogDoc);
    let cases: [(&str, Edit, &str); 5] = [
        (
            "an empty bundle",
            |d| {
                d.modes
                    .get_mut(&Mode::BestEffort)
                    .expect("mode")
                    .obligations
                    .clear()
            },
            "at least one obligation",
        ),
        (
            "telemetry supplying enforcement",
            |d| {
                d.depths
                    .get_mut(&Depth::TelemetryJoin)
                    .expect("depth")
                    .supplies
                    .push(Obligation::BlockingClaimIds)
            },
            "telemetry cannot create enforcement",
        ),
        (
            "an obligation listed twice",
            |d| {
                d.modes
                    .get_mut(&Mode::BestEffort)
                    .expect("mode")
                    .obligations
                    .push(Obligation::ClaimIdentity)
            },
            "listed twice",
        ),
        (
            "supplies_any below backend_patch",
            |d| {
                d.depths
                    .get_mut(&Depth::AllocatorHook)
                    .expect("depth")
                    .supplies_any = true
            },
            "only backend_patch may supply any obligation",
        ),
        (
            "a join document witnessing enforcement",
            |d| {
                d.join_documents
                    .witnesses
                    .push(Obligation::ExplicitConflictAction)
            },
            "a join document may not witness",
        ),
    ];
    for (what, edit, message) in cases {
        let mut doc = baseline::doc();
        edit(&mut doc);
        let errors = Catalog::new(doc).expect_err(what);
        assert!(
            errors.iter().any(|e| e.message.contains(message)),
            "{what}: {errors:?}"
        );
    }
    // Merge keys and a second document are refused by the parser.
    for (what, text) in [
        (
            "merge key",
            "modes:\n  best_effort:\n    <<: {obligations: [claim_identity]}\n",
        ),
        ("two documents", "modes: {}\n---\nmodes: {}\n"),
    ] {
        assert!(
            kvlower_load::yaml::from_str::<CatalogDoc>(text).is_err(),
            "{what} accepted"
        );
    }
}
