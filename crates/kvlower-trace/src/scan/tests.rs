//! The fast path against serde_json: on every line, parsing with it must give what
//! serde_json alone gives (the same event, or the same problem), and it must take the
//! ordinary lines (else it only costs time).

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::event;
use crate::event::{FIELD_NAMES, KeyTable, RawEvent, field_table};
use crate::parse::{parse_line, parse_with_serde_json};

/// What serde_json alone makes of a line, as text (events have no `PartialEq`).
fn by_serde_json(bytes: &[u8]) -> String {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return format!("{:?}", parse_line(bytes).map(drop));
    };
    let mut e = RawEvent::default();
    match parse_with_serde_json(bytes, text, &mut e) {
        Ok(()) => format!("Ok({e:?})"),
        Err(p) => format!("Err({p:?})"),
    }
}

/// What the gate makes of a line (fast path first).
fn by_gate(bytes: &[u8]) -> String {
    match parse_line(bytes) {
        Ok(e) => format!("Ok({e:?})"),
        Err(p) => format!("Err({p:?})"),
    }
}

/// Whether the fast path takes the line (and then it must agree with serde_json).
fn fast_takes(line: &str) -> bool {
    let mut e = RawEvent::default();
    let taken = event(line.as_bytes(), line, &mut e);
    if taken {
        assert_eq!(
            format!("Ok({e:?})"),
            by_serde_json(line.as_bytes()),
            "the fast path took a line serde_json reads differently: {line:?}"
        );
    }
    taken
}

fn agree(line: &str) {
    assert_eq!(
        by_gate(line.as_bytes()),
        by_serde_json(line.as_bytes()),
        "the gate and serde_json disagree on {line:?}"
    );
    fast_takes(line);
}

#[test]
fn ordinary_lines_take_the_fast_path() {
    for line in [
        r#"{"event":"offload_load_job_created","event_sequence":7,"claim_id":"c1","transfer_type":["CPU","GPU"],"success":true,"num_hit_tokens":32,"blocking_claim_ids":["a","b"],"request_id":"r-1","timestamp_ns":1700000000000000000,"extra":{"k":[1,2.5,-3e-2,null,false]},"hook_scope":"x"}"#,
        r#"{}"#,
        r#" { "event" : "x" , "event_sequence" : 0 } "#,
        r#"{"request_id":17,"transfer_type":"GPU->CPU","schema_version":2,"unknown":"é ☃ 😀"}"#,
        r#"{"transfer_type":["GPU","CPU","disk"],"num_hit_tokens":null,"claim_id":null}"#,
    ] {
        assert!(fast_takes(line), "{line}");
        agree(line);
    }
}

/// Each line is one the fast path must hand to serde_json: were it taken, its value
/// could differ from serde_json's (or serde_json refuses it).
#[test]
fn lines_it_is_not_sure_of_go_to_serde_json() {
    let declined = [
        // Numbers a typed field reads another way, or refuses.
        r#"{"event_sequence":-0}"#,
        r#"{"event_sequence":-1}"#,
        r#"{"event_sequence":01}"#,
        r#"{"event_sequence":1.0}"#,
        r#"{"event_sequence":1e2}"#,
        r#"{"event_sequence":18446744073709551615}"#,
        r#"{"event_sequence":18446744073709551616}"#,
        r#"{"num_hit_tokens":1.5}"#,
        r#"{"num_hit_tokens":-0}"#,
        r#"{"num_hit_tokens":9007199254740993}"#,
        r#"{"num_hit_tokens":0.1}"#,
        // Escapes (a key could spell a declared one) and control characters (serde_json
        // allows them raw in the strings it reads as bytes, not in those it skips).
        r#"{"\u0065vent_sequence":1,"event_sequence":2}"#,
        r#"{"claim_id":"a\"b"}"#,
        "{\"claim_id\":\"a\u{1}b\"}",
        "{\"other\":\"a\u{1}b\"}",
        "{\"other\":\"a string long enough to be read eight bytes at a time \u{1f} here\"}",
        "{\"request_id\":\"a string long enough to be read eight bytes at a time \u{1} here\"}",
        r#"{"request_id":"\ud800"}"#,
        // A number serde_json converts (and refuses out of f64's range) where it would
        // only skip it under another key.
        r#"{"request_id":1e400}"#,
        r#"{"request_id":-1e400}"#,
        r#"{"request_id":1.8e308}"#,
        r#"{"request_id":1e99999999999}"#,
        r#"{"request_id":12345678901234567890}"#,
        r#"{"request_id":-01}"#,
        // A declared key twice; wrong JSON types.
        r#"{"claim_id":"a","claim_id":"b"}"#,
        r#"{"success":"true"}"#,
        r#"{"claim_id":5}"#,
        r#"{"blocking_claim_ids":"a"}"#,
        r#"{"blocking_claim_ids":["a",1]}"#,
        r#"{"transfer_type":[1,"GPU"]}"#,
        r#"{"transfer_type":{"from":"GPU"}}"#,
        r#"{"transfer_type":true}"#,
        // Syntax.
        r#"{"a":1,}"#,
        r#"{"a":1}x"#,
        r#"{"a":1} {}"#,
        r#"{"a" 1}"#,
        r#"{"a":tru}"#,
        r#"{"a":nul}"#,
        r#"{"a":-}"#,
        r#"{"a":1.}"#,
        r#"{"a":.5}"#,
        r#"{"a":1e}"#,
        r#"{"a":[1,]}"#,
        r#"{"a":"#,
        r#"{"a":"x"#,
        "{\"a\":1,\u{c}\"b\":2}",
        r#"[1]"#,
        r#""event""#,
        r#"{"a":1"#,
        r#"{a:1}"#,
        // Deeper than the fast path reads.
        r#"{"a":[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}"#,
    ];
    for line in declined {
        assert!(!fast_takes(line), "the fast path took {line:?}");
        agree(line);
    }
}

fn lookup(key: &[u8]) -> Option<crate::event::Field> {
    field_table().lookup(key)
}

/// Every declared key with every kind of value, edge numbers among them: the gate reads
/// each line as serde_json does (found by review: `request_id`, read with serde_json's
/// `deserialize_any`, refuses `1e400`, which a skipped value accepts).
#[test]
fn every_declared_key_with_every_kind_of_value() {
    let long_integer = format!("1{}", "0".repeat(400));
    let values = [
        "0",
        "-0",
        "1",
        "-1",
        "01",
        "-01",
        "1.0",
        "0.5",
        "-0.0",
        "1e2",
        "1E+2",
        "1e-2",
        "1e400",
        "-1e400",
        "1.8e308",
        "1.7976931348623157e308",
        "4.9e-324",
        "1e-400",
        "0e99999999999",
        "1e99999999999",
        "9007199254740993",
        "123456789012345",
        "1234567890123456",
        "9999999999999999999",
        "18446744073709551615",
        "18446744073709551616",
        "-9223372036854775808",
        "-9223372036854775809",
        long_integer.as_str(),
        "true",
        "false",
        "null",
        r#""""#,
        r#""a""#,
        r#""GPU""#,
        r#""\u0041""#,
        "\"a\u{1}b\"",
        "[]",
        "[1]",
        r#"["GPU","CPU"]"#,
        r#"["CPU","GPU"]"#,
        r#"["GPU","CPU",1e400]"#,
        r#"["a",null]"#,
        r#"[1e400]"#,
        "{}",
        r#"{"a":1e400}"#,
        r#"{"a":[{"b":null}]}"#,
    ];
    for name in FIELD_NAMES {
        for value in values {
            agree(&format!("{{\"{name}\":{value}}}"));
            agree(&format!("{{\"other\":{value},\"{name}\":{value}}}"));
        }
    }
}

#[test]
fn every_declared_key_is_found() {
    for name in FIELD_NAMES {
        let field = lookup(name.as_bytes());
        assert_eq!(format!("{field:?}"), format!("Some({name})"));
        // Cut short or one byte longer, it is another key.
        let cut = lookup(&name.as_bytes()[..name.len() - 1]);
        assert_ne!(
            format!("{cut:?}"),
            format!("Some({name})"),
            "{name} cut short"
        );
        assert!(lookup(format!("{name}x").as_bytes()).is_none(), "{name}x");
    }
    assert!(lookup(b"").is_none());
}

/// Every declared key has its own slot, so its lookup is one comparison.
#[test]
fn declared_keys_do_not_collide() {
    let mut homes: Vec<usize> = FIELD_NAMES
        .iter()
        .map(|n| KeyTable::home(n.as_bytes()))
        .collect();
    homes.sort_unstable();
    homes.dedup();
    assert_eq!(homes.len(), FIELD_NAMES.len());
}

/// A table where every key collides still finds each (open addressing).
#[test]
fn colliding_keys_are_still_found() {
    let mut t = KeyTable::default();
    t.insert_at(7, b"a", crate::event::Field::event);
    t.insert_at(7, b"b", crate::event::Field::claim_id);
    assert_eq!(format!("{:?}", t.lookup_from(7, b"b")), "Some(claim_id)");
    assert_eq!(format!("{:?}", t.lookup_from(7, b"c")), "None");
}

/// Every line of every trace committed in this repository: the fast path agrees with
/// serde_json on each, and takes all but a few.
#[test]
fn committed_traces_read_the_same() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    for dir in ["evidence", "tests/fixtures/traces"] {
        collect_jsonl(&root.join(dir), &mut files);
    }
    assert!(files.len() > 100, "found {} traces", files.len());
    let (mut lines, mut taken) = (0usize, 0usize);
    for file in files {
        let Ok(bytes) = std::fs::read(&file) else {
            continue;
        };
        for line in bytes.split(|&b| b == b'\n') {
            let line = crate::parse::trim_json_whitespace(line);
            if line.is_empty() {
                continue;
            }
            lines += 1;
            assert_eq!(by_gate(line), by_serde_json(line), "{}", file.display());
            if let Ok(text) = std::str::from_utf8(line) {
                taken += usize::from(fast_takes(text));
            }
        }
    }
    // Only the malformed fixtures' lines are left to serde_json (1 of 5,946 when written).
    assert!(taken + 5 >= lines, "taken {taken} of {lines} lines");
}

fn collect_jsonl(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_jsonl(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

fn config() -> Config {
    let deep = std::env::var_os("KVLOWER_DEEP_TESTS").is_some_and(|v| !v.is_empty() && v != "0");
    Config {
        cases: if deep { 200_000 } else { 3_000 },
        failure_persistence: None,
        ..Config::default()
    }
}

fn whitespace() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => Just(String::new()),
        2 => Just(" ".to_owned()),
        1 => Just("\t\r\n ".to_owned()),
        1 => Just("\u{c}".to_owned()),
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => any::<u32>().prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| f.to_string()),
        1 => (-1e30f64..1e30).prop_map(|f| format!("{f:e}")),
        2 => prop::sample::select(vec![
            "0", "-0", "01", "1.0", "1e2", "1E+2", "1e-2", "-1", "1.", ".5", "-", "1e", "0x1",
            "18446744073709551615", "18446744073709551616", "9999999999999999999",
            "123456789012345", "1234567890123456", "9007199254740993", "1e400", "-0.0", "00",
            "1.8e308", "-1e400", "1e99999999999", "12345678901234567890123",
        ])
        .prop_map(str::to_owned),
    ]
}

fn string() -> impl Strategy<Value = String> {
    let plain = "[a-zA-Z0-9_:./ -]{0,12}".prop_map(|s| format!("\"{s}\""));
    let odd = prop::collection::vec(
        prop::sample::select(vec![
            "a", "GPU", "CPU", "é", "😀", "\\\"", "\\\\", "\\n", "\\u0041", "\\ud800", "\\x",
            "\u{1}", "\u{1f}", "\t", "\"", "\\",
        ]),
        0..5,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat()));
    // Long enough that the scanner reads them a word at a time.
    let long = (
        prop::sample::select(vec!["\u{1}", "\u{1f}", "\\\"", "\"", "é", " "]),
        0..40usize,
    )
        .prop_map(|(odd, at)| {
            let mut s = "a string read a word at a time, forty-odd bytes".to_owned();
            s.insert_str(at, odd);
            format!("\"{s}\"")
        });
    prop_oneof![4 => plain, 1 => odd, 1 => long]
}

fn value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => string(),
        3 => number(),
        2 => prop::sample::select(vec!["true", "false", "null", "tru", "nul", "True", "[]", "{}"])
            .prop_map(str::to_owned),
        2 => prop::sample::select(vec![
            r#"["GPU","CPU"]"#, r#"["CPU","GPU"]"#, r#"["GPU","CPU","x"]"#, r#"["GPU"]"#,
            r#"["GPU",1]"#, r#"[1,"CPU"]"#, r#"["a","b","c"]"#, r#"[null]"#,
        ])
        .prop_map(str::to_owned),
    ];
    leaf.prop_recursive(20, 64, 4, |inner| {
        prop_oneof![
            prop::collection::vec((whitespace(), inner.clone()), 0..4).prop_map(|items| {
                let items: Vec<String> =
                    items.into_iter().map(|(w, v)| format!("{w}{v}")).collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec(("[a-z]{1,3}", inner), 0..3).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(FIELD_NAMES.to_vec()).prop_map(str::to_owned),
        1 => prop::sample::select(vec!["other", "", "Event", "event_sequencex", "\\u0065vent"])
            .prop_map(str::to_owned),
    ]
}

/// A line: an object of members, with whitespace and one optional edit.
fn line() -> impl Strategy<Value = String> {
    let member = (
        whitespace(),
        key(),
        whitespace(),
        whitespace(),
        value(),
        whitespace(),
    )
        .prop_map(|(a, k, b, c, v, d)| format!("{a}\"{k}\"{b}:{c}{v}{d}"));
    let body = prop::collection::vec(member, 0..12).prop_map(|m| format!("{{{}}}", m.join(",")));
    let edit = prop_oneof![
        6 => Just(None),
        1 => (any::<prop::sample::Index>()).prop_map(|i| Some((i, None))),
        1 => (any::<prop::sample::Index>(), prop::sample::select(vec![
            ",", ":", "\"", "{", "}", "[", "]", "\\", " ", "0", "-", ".", "e", "n", "\u{1}", "é",
        ]))
        .prop_map(|(i, c)| Some((i, Some(c)))),
    ];
    (body, edit).prop_map(|(mut line, edit)| {
        if let Some((index, insert)) = edit {
            // Edit at a character boundary: the reader has checked the line is UTF-8.
            let bounds: Vec<usize> = line.char_indices().map(|(i, _)| i).collect();
            if !bounds.is_empty() {
                let at = bounds[index.index(bounds.len())];
                match insert {
                    Some(s) => line.insert_str(at, s),
                    None => {
                        line.remove(at);
                    }
                }
            }
        }
        line
    })
}

proptest! {
    #![proptest_config(config())]

    /// The rule itself: with the fast path, every line reads as serde_json alone reads it.
    #[test]
    fn the_fast_path_never_changes_a_reading(line in line()) {
        prop_assert_eq!(by_gate(line.as_bytes()), by_serde_json(line.as_bytes()), "{:?}", line);
    }
}
