//! Mutation controls (paper §8.2; docs/model.md): sixteen kinds, each over every
//! positive row it applies to, all failing closed.

use kvlower_audit::mutation::MutationKind;
use kvlower_audit::rows::positive_rows;
use kvlower_audit::synthetic::{
    CLAIM, connector_failure, connector_observation, reference_lifecycle,
};
use kvlower_audit::trace_controls::{any_passes, evaluate};
use kvlower_core::{Depth, judge};
use kvlower_evidence::load_repository;
use kvlower_tests::repo_root;
use kvlower_trace::TraceGate;

/// The sixteen kinds of paper §8.2, in the order `docs/model.md` lists them.
const KINDS: [&str; 16] = [
    "anchor_deleted",
    "anchor_emptied",
    "supported_to_partial",
    "supported_to_unknown",
    "supported_to_missing",
    "pressure_atoms_without_anchors",
    "adapter_scope_docs_only",
    "adapter_scope_source_inspection",
    "telemetry_join_precondition_removed",
    "routing_only_evidence",
    "wrong_claim_id_in_failure_attribution",
    "post_hoc_claim_naming",
    "restore_after_reuse_ordering",
    "fallback_recompute",
    "generic_counters",
    "storage_only_offload_evidence",
];

fn audit() -> &'static kvlower_audit::Audit {
    kvlower_tests::committed_audit()
}

#[test]
fn sixteen_of_sixteen_kinds_fail_closed() {
    let audit = audit();
    let m = &audit.mutations;
    let names: Vec<&str> = m.kinds.iter().map(|k| k.kind.name()).collect();
    assert_eq!(names, KINDS);
    for k in &m.kinds {
        assert!(k.mutated_rows > 0, "{} produced no mutant", k.kind);
        assert_eq!(k.mutated_rows, k.mutants.len());
        assert_eq!(
            k.failed_closed,
            k.mutated_rows,
            "{}: {:#?}",
            k.kind,
            k.mutants
                .iter()
                .filter(|m| !m.failed_closed)
                .collect::<Vec<_>>()
        );
        assert!(k.pass, "{}", k.kind);
        for mutant in &k.mutants {
            assert!(
                !mutant.result.starts_with("sound_with_adapter")
                    && !mutant.result.starts_with("native_sound"),
                "{}: {mutant:?}",
                k.kind
            );
        }
    }
    let total: usize = m.kinds.iter().map(|k| k.mutated_rows).sum();
    assert_eq!(
        m.summary(),
        format!("16/16 kinds fail closed over {total} mutated rows")
    );
    assert!(m.failures().is_empty());
}

#[test]
fn item_kinds_cover_every_supporting_item_of_every_positive_row() {
    let env = kvlower_tests::committed_env();
    let (repo, _) = load_repository(env).expect("loads");
    let descriptors: Vec<(&str, &kvlower_core::Descriptor)> = repo
        .descriptors
        .iter()
        .map(|d| (d.path.as_str(), &d.descriptor))
        .collect();
    let (rows, problems) = positive_rows(&repo.catalog, &descriptors, env);
    assert!(problems.is_empty(), "{problems:?}");
    assert!(!rows.is_empty());
    let items: usize = rows.iter().map(|r| r.support.len()).sum();
    let adapter_items: usize = rows
        .iter()
        .flat_map(|r| &r.support)
        .filter(|s| s.item.adapter().is_some())
        .count();
    let atoms: usize = rows.iter().map(|r| r.atoms.len()).sum();
    let join_preconditions: usize = rows
        .iter()
        .flat_map(|r| {
            r.supporting_adapters()
                .into_iter()
                .filter_map(|a| r.descriptor.adapters.get(a))
                .filter(|a| a.depth == Depth::TelemetryJoin)
                .map(|a| a.preconditions.len())
                .collect::<Vec<_>>()
        })
        .sum();
    // Each positive row, unmutated, is positive: the mutation is what makes it fall.
    for r in &rows {
        let j = judge(&repo.catalog, r.descriptor, r.mode(), r.depth(), env);
        assert!(j.label.is_positive(), "{}", r.id());
        assert_eq!(r.support.len(), j.obligations.len(), "{}", r.id());
    }
    let audit = audit();
    let count = |kind: MutationKind| {
        audit
            .mutations
            .kinds
            .iter()
            .find(|k| k.kind == kind)
            .map(|k| (k.mutated_rows, k.applied_to.len()))
            .expect("kind")
    };
    for kind in [
        MutationKind::AnchorDeleted,
        MutationKind::AnchorEmptied,
        MutationKind::SupportedToPartial,
        MutationKind::SupportedToUnknown,
        MutationKind::SupportedToMissing,
    ] {
        assert_eq!(count(kind), (items, rows.len()), "{kind}");
    }
    for kind in [
        MutationKind::AdapterScopeDocsOnly,
        MutationKind::AdapterScopeSourceInspection,
    ] {
        assert_eq!(count(kind).0, adapter_items, "{kind}");
    }
    assert_eq!(count(MutationKind::PressureAtomsWithoutAnchors).0, atoms);
    assert!(atoms >= 3, "the soft_priority row's three pressure atoms");
    assert_eq!(
        count(MutationKind::TelemetryJoinPreconditionRemoved).0,
        join_preconditions
    );
    assert_eq!(
        count(MutationKind::RoutingOnlyEvidence),
        (rows.len(), rows.len())
    );
    assert_eq!(
        count(MutationKind::StorageOnlyOffloadEvidence),
        (2 * rows.len(), rows.len())
    );
}

#[test]
fn synthetic_baselines_pass_their_gates_so_trace_mutants_are_not_vacuous() {
    for (trace, gate) in [
        (connector_failure(CLAIM), TraceGate::ConnectorFailureOutcome),
        (
            connector_observation(CLAIM),
            TraceGate::ConnectorObservation,
        ),
        (reference_lifecycle(CLAIM), TraceGate::ReferenceLifecycle),
    ] {
        let report = evaluate("baseline", &trace);
        assert!(report.is_valid(), "{:?}", report.diagnostics);
        assert!(any_passes(&report, gate), "{gate}: {:#?}", report.claims);
    }
    // and each trace kind mutated a passing baseline into a well-formed rejected trace
    let audit = audit();
    for k in audit
        .mutations
        .kinds
        .iter()
        .filter(|k| k.kind.is_trace_kind())
    {
        for m in &k.mutants {
            assert!(m.failed_closed, "{}: {m:?}", k.kind);
            assert!(m.result.starts_with("rejected by "), "{}: {m:?}", k.kind);
        }
    }
}

#[test]
fn mutation_results_have_the_json_contract_and_are_committed() {
    let audit = audit();
    let json: serde_json::Value = serde_json::from_str(&audit.mutations.json()).expect("json");
    assert_eq!(json["schema_version"], 1);
    let kinds = json["kinds"].as_array().expect("kinds");
    assert_eq!(kinds.len(), 16);
    for k in kinds {
        for key in ["kind", "mutated_rows", "failed_closed", "pass"] {
            assert!(k.get(key).is_some(), "{key}");
        }
    }
    // The committed result is the regenerated one (also what `kvlower check` enforces).
    let committed = std::fs::read_to_string(
        repo_root().join("results/descriptor-evidence-mutation-controls.json"),
    )
    .expect("committed");
    assert_eq!(committed, audit.mutations.json());
}
