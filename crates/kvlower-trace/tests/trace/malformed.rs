//! Fail-closed handling of bad input: every problem is a diagnostic at its line, and the
//! claims it touches cannot pass.

use crate::common::*;
use kvlower_trace::{Problem, TraceFamily, TraceGate, TraceReport};
use serde_json::json;

/// The (line, message) pairs of a report.
fn diags(r: &TraceReport) -> Vec<(Option<u64>, String)> {
    r.diagnostics
        .iter()
        .map(|d| (d.line, d.message()))
        .collect()
}

/// `same_claim_failure` with line `at` (1-based) replaced by `bad`.
fn with_line(at: usize, bad: &str) -> TraceReport {
    let text = same_claim_failure().jsonl();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[at - 1] = bad;
    eval(&(lines.join("\n") + "\n"))
}

fn assert_nothing_passes(r: &TraceReport) {
    for v in &r.claims {
        for (gate, g) in &v.gates {
            assert!(
                !g.pass,
                "{gate} of {:?} passed despite {:?}",
                v.claim_id, r.diagnostics
            );
        }
    }
}

#[test]
fn not_json_is_reported_at_its_line_and_taints_every_claim() {
    let r = with_line(3, "{\"event\": \"offload_store_job_created\",");
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].line, Some(3));
    assert!(
        matches!(r.diagnostics[0].problem, Problem::NotJson(_)),
        "{:?}",
        diags(&r)
    );
    assert_nothing_passes(&r);
    let m = &r.claims[0].gates[&TraceGate::ConnectorFailureOutcome].missing;
    assert!(m.iter().any(|x| x.name() == "well_formed_trace"));
}

#[test]
fn non_objects_are_named() {
    for (bad, what) in [
        ("[1, 2]", "an array"),
        ("\"event\"", "a string"),
        ("42", "a number"),
        ("null", "null"),
        ("true", "a boolean"),
    ] {
        let r = with_line(5, bad);
        assert_eq!(
            diags(&r),
            [(Some(5), format!("not a JSON object (found {what})"))]
        );
        assert_nothing_passes(&r);
    }
}

#[test]
fn missing_event_taints_its_claim() {
    let mut t = same_claim_failure();
    t.events[6].remove("event");
    let r = eval(&t.jsonl());
    assert_eq!(diags(&r), [(Some(7), "missing `event`".to_owned())]);
    assert_nothing_passes(&r);
}

#[test]
fn missing_sequence_is_reported() {
    let mut t = success();
    t.events[2].remove("event_sequence");
    let r = eval(&t.jsonl());
    assert_eq!(
        diags(&r),
        [(Some(3), "missing `event_sequence`".to_owned())]
    );
    assert_nothing_passes(&r);
}

#[test]
fn repeated_and_decreasing_sequences_are_reported() {
    let mut t = same_claim_failure();
    t.events[4].insert("event_sequence".into(), json!(3));
    let r = eval(&t.jsonl());
    assert_eq!(
        diags(&r),
        [(
            Some(5),
            "event_sequence 3 does not increase (previous 3)".to_owned()
        )]
    );
    assert_nothing_passes(&r);

    let mut t = same_claim_failure();
    t.events[10].insert("event_sequence".into(), json!(2));
    let r = eval(&t.jsonl());
    assert_eq!(
        diags(&r),
        [(
            Some(11),
            "event_sequence 2 does not increase (previous 9)".to_owned()
        )]
    );
    assert_nothing_passes(&r);
}

#[test]
fn skipped_sequence_numbers_are_fine() {
    let mut t = same_claim_failure();
    for (i, e) in t.events.iter_mut().enumerate() {
        e.insert("event_sequence".into(), json!(i as u64 * 7 + 3));
    }
    let r = eval(&t.jsonl());
    assert!(r.is_valid(), "{:?}", diags(&r));
    assert!(r.claims[0].passes(TraceGate::ConnectorFailureOutcome));
}

#[test]
fn claim_id_and_resident_claim_id_must_agree() {
    let mut t = success();
    t.events[8].insert("resident_claim_id".into(), json!(CLAIM_B));
    let r = eval(&t.jsonl());
    assert_eq!(
        diags(&r),
        [(
            Some(9),
            format!("claim_id `{CLAIM_A}` differs from resident_claim_id `{CLAIM_B}` on one event")
        )]
    );
    assert_nothing_passes(&r);
    assert_eq!(r.claims.len(), 2, "both claims are reported, both failing");
}

#[test]
fn ambiguous_identity_is_a_diagnostic_with_its_line() {
    let mut t = success();
    t.events[11].insert("reusable_object_id".into(), json!("object:other"));
    let r = eval(&t.jsonl());
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].line, Some(12));
    assert_eq!(
        r.diagnostics[0].message(),
        format!(
            "ambiguous_claim_cache_identity: claim `{CLAIM_A}` has a second `reusable_object_id`: `object:other` (first `object:{CLAIM_A}`)"
        )
    );
    assert_nothing_passes(&r);
}

#[test]
fn a_mistyped_field_is_named() {
    let mut t = success();
    t.events[4].insert("success".into(), json!("yes"));
    let r = eval(&t.jsonl());
    assert_eq!(r.diagnostics.len(), 1);
    assert_eq!(r.diagnostics[0].line, Some(5));
    assert!(
        r.diagnostics[0]
            .message()
            .starts_with("field `success`: invalid type: string \"yes\", expected a boolean"),
        "{}",
        r.diagnostics[0].message()
    );
    assert_nothing_passes(&r);
}

#[test]
fn a_repeated_key_is_malformed() {
    let r = with_line(
        2,
        r#"{"event":"offload_lookup_result","event","x","event_sequence":1}"#,
    );
    assert_eq!(r.diagnostics[0].line, Some(2));
    let r = with_line(
        2,
        r#"{"event":"offload_lookup_result","event":"x","event_sequence":1}"#,
    );
    assert_eq!(r.diagnostics[0].line, Some(2));
    assert!(
        r.diagnostics[0]
            .message()
            .contains("duplicate field `event`"),
        "{:?}",
        diags(&r)
    );
}

#[test]
fn empty_and_blank_traces() {
    let r = eval("");
    assert_eq!(diags(&r), [(None, "trace has no events".to_owned())]);
    assert_eq!(r.family, TraceFamily::Unknown);
    assert!(r.claims.is_empty());
    let r = eval("\n   \n\t\n");
    assert_eq!(diags(&r), [(None, "trace has no events".to_owned())]);
}

#[test]
fn blank_lines_and_crlf_are_tolerated_and_lines_still_count() {
    let text = same_claim_failure().jsonl().replace('\n', "\r\n\n");
    let r = eval(&text);
    assert!(r.is_valid(), "{:?}", diags(&r));
    assert!(r.claims[0].passes(TraceGate::ConnectorFailureOutcome));
    let bad = text.replacen("\"offload_lookup_result\"", "\"offload_lookup_result\",", 1);
    let r = eval(&bad);
    assert_eq!(r.diagnostics[0].line, Some(3), "blank lines are counted");
}

#[test]
fn undecidable_family_is_reported() {
    let r = eval("{\"event\":\"resident_claim_restored\",\"event_sequence\":1}\n");
    assert_eq!(r.family, TraceFamily::Unknown);
    assert!(matches!(r.diagnostics[0].problem, Problem::UnknownFamily));
}

#[test]
fn a_family_decided_late_replays_earlier_lines() {
    // The first line tells no family; the second does. The first is still judged.
    let mut t = success();
    for key in ["hook_scope", "monotonic_ns"] {
        t.events[0].remove(key);
    }
    t.events[0].insert("event".into(), json!("resident_claim_offloaded"));
    let r = eval(&t.jsonl());
    assert_eq!(r.family, TraceFamily::Connector);
    assert!(r.is_valid(), "{:?}", diags(&r));
    assert_eq!(r.events, 17);
}

#[test]
fn mixed_families_are_rejected() {
    let mut text = reference_positive().jsonl();
    let connector_line = success()
        .jsonl()
        .lines()
        .next()
        .unwrap()
        .replace("\"event_sequence\":0", "\"event_sequence\":99");
    text.push_str(&connector_line);
    text.push('\n');
    let r = eval(&text);
    assert_eq!(r.family, TraceFamily::Reference);
    assert_eq!(
        diags(&r),
        [(
            Some(11),
            "a connector-family event in a reference-family trace".to_owned()
        )]
    );
}

#[test]
fn reference_sequence_is_one_based_and_versioned() {
    let mut t = reference_positive();
    t.events[0].insert("event_sequence".into(), json!(0));
    let r = eval(&t.jsonl());
    assert_eq!(r.diagnostics[0].line, Some(1));
    assert!(matches!(
        r.diagnostics[0].problem,
        Problem::ReferenceSequenceZero
    ));
    assert!(!r.claims[0].passes(TraceGate::ReferenceLifecycle));

    let mut t = reference_positive();
    t.events[3].insert("schema_version".into(), json!(2));
    let r = eval(&t.jsonl());
    assert_eq!(
        diags(&r),
        [(
            Some(4),
            "unsupported schema_version 2 (expected 1)".to_owned()
        )]
    );
    assert!(!r.claims[0].passes(TraceGate::ReferenceLifecycle));
}

#[test]
fn a_line_past_the_cap_is_skipped_and_reported() {
    let mut text = success().jsonl();
    let huge = format!(
        "{{\"event\":\"x\",\"pad\":\"{}\"}}\n",
        "a".repeat(kvlower_trace::MAX_LINE_BYTES)
    );
    text.insert_str(0, &huge);
    let r = eval(&text);
    assert_eq!(r.diagnostics[0].line, Some(1));
    assert!(matches!(r.diagnostics[0].problem, Problem::LineTooLong(_)));
    assert_eq!(r.events, 17, "the following lines are still read");
}

#[test]
fn invalid_utf8_is_not_json() {
    let mut bytes = success().jsonl().into_bytes();
    bytes.splice(0..0, b"{\"event\":\"\xff\xfe\"}\n".iter().copied());
    let r = kvlower_trace::evaluate_reader("fixture", bytes.as_slice());
    assert_eq!(r.diagnostics[0].line, Some(1));
    assert_nothing_passes(&r);
}

#[test]
fn diagnostics_are_capped() {
    let text = "x\n".repeat(kvlower_trace::MAX_DIAGNOSTICS + 5);
    let r = eval(&text);
    assert_eq!(r.diagnostics.len(), kvlower_trace::MAX_DIAGNOSTICS + 1);
    assert_eq!(
        r.diagnostics.last().unwrap().message(),
        "6 more diagnostics not shown"
    );
}

/// A bound on the bytes of one trace: past it reading stops (so an endless input such as
/// `/dev/zero` through a pipe ends) and no claim can pass.
#[test]
fn a_trace_past_its_byte_budget_stops_and_cannot_pass() {
    let text = same_claim_failure().jsonl();
    let len = text.len() as u64;
    let evaluate = |budget: u64| {
        let mut claims = Vec::new();
        let outline =
            kvlower_trace::evaluate_reader_bounded("fixture", text.as_bytes(), budget, |v| {
                claims.push(v)
            });
        (outline, claims)
    };
    // Exactly the budget: the whole trace is judged.
    let (outline, claims) = evaluate(len);
    assert!(outline.diagnostics.is_empty(), "{:?}", outline.diagnostics);
    assert!(claims[0].passes(TraceGate::ConnectorFailureOutcome));
    // One byte less: the last line is never judged, and nothing passes.
    let (outline, claims) = evaluate(len - 1);
    assert_eq!(
        outline.diagnostics.last().map(|d| &d.problem),
        Some(&Problem::TraceTooLarge(len - 1))
    );
    for v in &claims {
        assert!(v.gates.values().all(|g| !g.pass), "{v:?}");
    }
    // An endless input ends at the budget.
    let endless = std::io::BufReader::new(std::io::repeat(b'0'));
    let outline = kvlower_trace::evaluate_reader_bounded("zero", endless, 1 << 20, |_| {});
    assert!(
        outline
            .diagnostics
            .iter()
            .any(|d| d.problem == Problem::TraceTooLarge(1 << 20)),
        "{:?}",
        outline.diagnostics
    );
}
