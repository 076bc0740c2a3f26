//! `kvlower join` inputs (issue 12 #1-#3 for registries, token maps and event files):
//! a FIFO or a device is refused before it is opened (no hang, no unbounded read), and
//! a registry's `token_map.file` stays inside the registry's directory, links included.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use kvlower_tests::{Run, kvlower};

const REGISTRY: &str = r#"schema_version: 1
cache_identity:
  model: m
  tokenizer: t
  hash_domain: {name: h, encoding: int}
  runtime: {kind: vllm, version: "synthetic"}
  namespace: default
  adapter: {kind: base_model}
  block_size: 2
claims:
  - claim_id: c1
    reusable_object_id: o1
    TOKENS
    predicate: leading_prefix_at_least(2)
    registered_before: {event_index: 0}
    observe_at: {event_index: 0}
"#;

fn registry(tokens: &str) -> String {
    REGISTRY.replace("TOKENS", tokens)
}

/// Runs `kvlower join` on a thread and fails (instead of hanging) after 20 s.
fn join_bounded(reg: &Path, events: &Path) -> Run {
    let (tx, rx) = mpsc::channel();
    let (reg, events) = (reg.display().to_string(), events.display().to_string());
    std::thread::spawn(move || {
        let r = kvlower(&[
            "join",
            "--registry",
            &reg,
            "--events",
            &events,
            "--events-format",
            "vllm",
        ]);
        let _ = tx.send(r);
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("kvlower join hung on a special file")
}

fn mkfifo(p: &Path) {
    let ok = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo");
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("events.jsonl"), "[1.0,[]]\n").unwrap();
    std::fs::write(
        dir.path().join("registry.yaml"),
        registry("token_ids: [1, 2]"),
    )
    .unwrap();
    dir
}

#[test]
fn fifos_and_devices_are_refused_before_opening() {
    let dir = setup();
    let d = dir.path();
    mkfifo(&d.join("fifo"));
    std::os::unix::fs::symlink("/dev/zero", d.join("zero")).unwrap();
    // As the registry, the event file, and (through a link) both.
    for (reg, ev) in [
        (d.join("fifo"), d.join("events.jsonl")),
        (d.join("registry.yaml"), d.join("fifo")),
        (d.join("zero"), d.join("events.jsonl")),
        (d.join("registry.yaml"), d.join("zero")),
        (Path::new("/dev/zero").to_path_buf(), d.join("events.jsonl")),
    ] {
        let r = join_bounded(&reg, &ev);
        assert_eq!(r.code, 2, "{reg:?} {ev:?}: {}", r.stdout);
        assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    }
    // As a token map.
    for name in ["fifo", "zero"] {
        std::fs::write(
            d.join("registry.yaml"),
            registry(&format!("token_map: {{file: {name}, key: k}}")),
        )
        .unwrap();
        let r = join_bounded(&d.join("registry.yaml"), &d.join("events.jsonl"));
        assert_eq!(r.code, 2, "{name}: {}", r.stdout);
        // The link to /dev/zero also leaves the directory: either refusal will do.
        assert!(
            r.stderr.contains("not a regular file") || r.stderr.contains("outside"),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn token_maps_stay_inside_the_registry_directory() {
    let outer = tempfile::tempdir().unwrap();
    let d = outer.path().join("repo");
    std::fs::create_dir(&d).unwrap();
    std::fs::write(d.join("events.jsonl"), "[1.0,[]]\n").unwrap();
    let map = r#"{"tokenizer": "t", "entries": {"k": [1, 2]}}"#;
    std::fs::write(outer.path().join("outside.json"), map).unwrap();
    std::fs::write(d.join("inside.json"), map).unwrap();
    std::os::unix::fs::symlink(outer.path().join("outside.json"), d.join("link.json")).unwrap();
    let abs = outer.path().join("outside.json").display().to_string();
    for file in ["../outside.json", abs.as_str(), "link.json"] {
        std::fs::write(
            d.join("registry.yaml"),
            registry(&format!("token_map: {{file: \"{file}\", key: k}}")),
        )
        .unwrap();
        let r = join_bounded(&d.join("registry.yaml"), &d.join("events.jsonl"));
        assert_eq!(r.code, 2, "{file}: {}", r.stdout);
        assert!(r.stderr.contains("token_map.file"), "{file}: {}", r.stderr);
    }
    // The same map inside the directory is read.
    std::fs::write(
        d.join("registry.yaml"),
        registry("token_map: {file: inside.json, key: k}"),
    )
    .unwrap();
    let r = join_bounded(&d.join("registry.yaml"), &d.join("events.jsonl"));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn an_oversized_registry_is_refused_not_read() {
    let dir = setup();
    let big = dir.path().join("big.yaml");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(kvlower_join::input::MAX_REGISTRY_BYTES + 1)
        .unwrap();
    let r = join_bounded(&big, &dir.path().join("events.jsonl"));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("cap"), "{}", r.stderr);
}

/// Issue 34, item 6: a JSON Lines events file whose line holds only a form feed (or a
/// no-break space, or a line separator) was skipped as blank (`str::trim`); none of them
/// is JSON whitespace, so such a line is malformed (exit 1). Space, tab and CR stay blank.
#[test]
fn only_json_whitespace_makes_an_events_line_blank() {
    let dir = setup();
    let reg = dir.path().join("registry.yaml");
    let events = dir.path().join("events.jsonl");
    for line in ["\u{c}", "\u{a0}", "\u{2028}", "\u{b}"] {
        std::fs::write(&events, format!("[1.0,[]]\n{line}\n[2.0,[]]\n")).unwrap();
        let run = join_bounded(&reg, &events);
        assert_eq!(run.code, 1, "{line:?}: {}{}", run.stdout, run.stderr);
    }
    std::fs::write(&events, "[1.0,[]]\n \t\r\n[2.0,[]]\n").unwrap();
    let run = join_bounded(&reg, &events);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}
