//! `evaluate_reader_pooled` (lines parsed on a pool) gives exactly what the
//! single-threaded reader gives: the same outline, diagnostics and verdicts, in the same
//! order, for every committed fixture and for traces that span many blocks.

use std::path::{Path, PathBuf};

use kvlower_trace::{ClaimVerdict, MAX_TRACE_BYTES, TraceOutline};

fn sequential(input: &[u8], max_bytes: u64) -> (TraceOutline, Vec<ClaimVerdict>) {
    let mut verdicts = Vec::new();
    let outline =
        kvlower_trace::evaluate_reader_bounded("t", input, max_bytes, |v| verdicts.push(v));
    (outline, verdicts)
}

fn pooled(input: &[u8], max_bytes: u64, threads: usize) -> (TraceOutline, Vec<ClaimVerdict>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    let mut verdicts = Vec::new();
    let outline =
        kvlower_trace::evaluate_reader_pooled("t", input, max_bytes, &pool, |v| verdicts.push(v));
    (outline, verdicts)
}

fn assert_same(input: &[u8], max_bytes: u64, what: &str) {
    let expected = sequential(input, max_bytes);
    for threads in [1, 2, 3] {
        assert_eq!(
            pooled(input, max_bytes, threads),
            expected,
            "{what}: pooled on {threads} threads differs"
        );
    }
}

fn jsonl_below(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jsonl_below(&path, found);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
}

#[test]
fn every_fixture_trace_is_judged_the_same() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
    let mut found = Vec::new();
    jsonl_below(&root, &mut found);
    assert!(found.len() > 10, "fixtures found: {}", found.len());
    for path in found {
        let bytes = std::fs::read(&path).unwrap();
        assert_same(&bytes, MAX_TRACE_BYTES, &path.display().to_string());
        // Cut short by the byte budget, too.
        let cut = (bytes.len() / 2) as u64;
        assert_same(&bytes, cut, &format!("{} cut at {cut}", path.display()));
    }
}

/// A connector trace of `claims` claims × `cycles` store/load cycles, with `noise` (bad
/// lines, blank lines, CRLF, a sequence going back) spread through it.
fn big_trace(claims: u64, cycles: u64, noise: bool) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"\n  \n");
    let mut seq = 0u64;
    let pad = "x".repeat(700);
    for cycle in 0..cycles {
        for c in 0..claims {
            for event in [
                "request_initialized",
                "offload_store_job_created",
                "offload_worker_transfer_finished",
                "offload_job_completed",
                "offload_lookup_result",
                "resident_claim_restore_required",
                "offload_load_job_created",
                "resident_claim_restored",
            ] {
                seq += 1;
                let line = format!(
                    r#"{{"event":"{event}","event_sequence":{seq},"claim_id":"claim-{c}","resident_claim_id":"claim-{c}","cache_identity":"id-{c}","transfer_type":["GPU","CPU"],"success":true,"is_store":true,"num_hit_tokens":16,"will_load_async":true,"pad":"{pad}"}}"#
                );
                out.extend_from_slice(line.as_bytes());
                if noise && seq.is_multiple_of(997) {
                    out.extend_from_slice(b"\r\n{not json}\n\n");
                } else if noise && seq.is_multiple_of(1999) {
                    // A second identity, an escape in a kept string, a sequence going back.
                    out.extend_from_slice(
                        format!(
                            "\n{{\"event\":\"offload_job_completed\",\"event_sequence\":{},\"claim_id\":\"claim-{c}\",\"cache_identity\":\"other\\u0041\"}}\n",
                            seq - 5
                        )
                        .as_bytes(),
                    );
                } else {
                    out.push(b'\n');
                }
            }
        }
        if noise && cycle == 1 {
            out.extend_from_slice("{\"event\":\"x\",\"bad\":\"\u{ff}\"}\n".as_bytes());
            out.extend_from_slice(b"{\"event\":\"x\",\"bad\":\"\xff\"}\n");
        }
    }
    // No newline after the last line.
    out.extend_from_slice(b"{\"event\":\"request_initialized\",\"event_sequence\":1}");
    out
}

#[test]
fn traces_over_many_blocks_are_judged_the_same() {
    let clean = big_trace(40, 12, false);
    assert!(clean.len() > 3 << 20, "spans several blocks");
    assert_same(&clean, MAX_TRACE_BYTES, "clean");
    let noisy = big_trace(40, 12, true);
    assert_same(&noisy, MAX_TRACE_BYTES, "noisy");
    assert_same(&noisy, (noisy.len() as u64) * 2 / 3, "noisy, cut");
    assert_same(&noisy, 0, "noisy, no budget");
}

#[test]
fn a_header_then_events_is_judged_the_same() {
    let mut trace = Vec::new();
    trace.extend_from_slice(b"\n");
    trace.extend_from_slice(b"{\"kvlower_trace_header\":1}\n");
    trace.extend_from_slice(&big_trace(3, 2, true));
    assert_same(&trace, MAX_TRACE_BYTES, "header");
    assert_same(b"", MAX_TRACE_BYTES, "empty");
    assert_same(b"\n\n", MAX_TRACE_BYTES, "blank");
    assert_same(b"[1]\n", MAX_TRACE_BYTES, "array");
}

/// Issue 50: a problem with a byte position has the column of that byte in its line,
/// the whitespace before the object counted, on every path (read in order, parsed on
/// the pool, held back until the family is known); one without a position has none.
#[test]
fn a_bad_byte_has_its_column_in_its_line() {
    let lines: [&[u8]; 5] = [
        b"{\"event\":\"request_initialized\",\"event_sequence\":0,\"hook_scope\":\"s\",\"monotonic_ns\":1}\n",
        b"  {\"event\":\"x\xffy\"}\n",
        b"\t[1]\n",
        b" {\"event\": x}\n",
        b"{\"event_sequence\":2,\"hook_scope\":\"s\",\"monotonic_ns\":2}\n",
    ];
    let trace = lines.concat();
    let trace = trace.as_slice();
    assert_same(trace, MAX_TRACE_BYTES, "bad bytes");
    let (outline, _) = sequential(trace, MAX_TRACE_BYTES);
    let at: Vec<(Option<u64>, Option<u32>)> = outline
        .diagnostics
        .iter()
        .map(|d| (d.line, d.column))
        .collect();
    // Line 2: invalid UTF-8 11 bytes into the object, after 2 spaces; line 3: not an
    // object, its first byte after a tab; line 4: where serde_json stopped (its column 10
    // in the object, after 1 space); line 5: no `event` (no byte position).
    assert_eq!(
        at[..4],
        [
            (Some(2), Some(14)),
            (Some(3), Some(2)),
            (Some(4), Some(11)),
            (Some(5), None)
        ],
        "{:?}",
        outline.diagnostics
    );
}
