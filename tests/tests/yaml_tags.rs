//! An explicit YAML tag is refused, never read as its text (docs/descriptor-format.md,
//! "YAML"). serde_yaml handed `name: !!binary eA==` or `version: !custom '1'` to a string
//! field as the plain text, so a descriptor, the catalog or a join registry could say one
//! thing to kvlower and another to every YAML tool that honours the tag. Every tag, on a
//! value or a key, on a scalar or a collection, at any depth, is `yaml-tag` at its line
//! and column, in every YAML input (they all go through kvlower-yaml).

use kvlower_tests::{kvlower, scratch_repo};

/// A descriptor `check` reads as valid (the control) with `{NAME}`, `{VERSION}`,
/// `{KEY}` and `{IDENTITY}` to tag.
const DESCRIPTOR: &str = "runtime:\n  name: {NAME}\n  version: '1'\n  source: simulator\n  reviewed: 2026-01-01\n  identity: {IDENTITY}[{kind: other, version: {VERSION}}]\n{KEY}non_claims: {default: none}\n";

fn descriptor(name: &str, version: &str, key: &str, identity: &str) -> String {
    DESCRIPTOR
        .replace("{NAME}", name)
        .replace("{VERSION}", version)
        .replace("{KEY}", key)
        .replace("{IDENTITY}", identity)
}

fn check(dir: &std::path::Path) -> kvlower_tests::Run {
    let root = dir.display().to_string();
    kvlower(&["check", "--color", "never", "--root", &root])
}

#[test]
fn a_tag_anywhere_in_a_descriptor_is_refused_at_its_place() {
    // (what is tagged, the descriptor, the finding's `file:line:col`)
    let cases = [
        (
            "a string value, core tag",
            descriptor("!!binary eA==", "'1'", "", ""),
            "x.yaml:2:9:",
        ),
        (
            "a value in a flow mapping in a list, custom tag",
            descriptor("x", "!custom '1'", "", ""),
            "x.yaml:6:37:",
        ),
        ("a key", descriptor("x", "'1'", "!!str ", ""), "x.yaml:7:1:"),
        (
            "a sequence",
            descriptor("x", "'1'", "", "!!seq "),
            "x.yaml:6:13:",
        ),
        (
            "a verbatim tag",
            descriptor("!<tag:yaml.org,2002:str> x", "'1'", "", ""),
            "x.yaml:2:9:",
        ),
        (
            "the non-specific tag",
            descriptor("! x", "'1'", "", ""),
            "x.yaml:2:9:",
        ),
    ];
    for (what, text, at) in &cases {
        let dir = scratch_repo(&["capabilities"]);
        std::fs::write(dir.path().join("capabilities/x.yaml"), text).expect("write");
        let run = check(dir.path());
        assert_eq!(run.code, 1, "{what}: {}", run.stderr);
        let line = run
            .stderr
            .lines()
            .find(|l| l.contains("error[yaml-tag]"))
            .unwrap_or_else(|| panic!("{what}: no yaml-tag finding:\n{}", run.stderr));
        assert!(
            line.starts_with(&format!("capabilities/{at}")),
            "{what}: {line}"
        );
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(said.contains("1 invalid"), "{what}: {said}");
    }
    // Two tags, two findings (every one is reported, like every duplicate key).
    let dir = scratch_repo(&["capabilities"]);
    std::fs::write(
        dir.path().join("capabilities/x.yaml"),
        descriptor("!a x", "!b '1'", "", ""),
    )
    .expect("write");
    let run = check(dir.path());
    assert_eq!(
        run.stderr.matches("error[yaml-tag]").count(),
        2,
        "{}",
        run.stderr
    );
    // The control: the same descriptor untagged is valid.
    let dir = scratch_repo(&["capabilities"]);
    std::fs::write(
        dir.path().join("capabilities/x.yaml"),
        descriptor("x", "'1'", "", ""),
    )
    .expect("write");
    let run = check(dir.path());
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("0 invalid"), "{said}");
    assert!(!run.stderr.contains("yaml-tag"), "{}", run.stderr);
}

#[test]
fn a_tag_in_the_catalog_is_refused() {
    let dir = scratch_repo(&["capabilities"]);
    let modes = dir.path().join("modes/modes.yaml");
    let text = std::fs::read_to_string(&modes).expect("read");
    assert!(text.contains("  soft_priority:\n"));
    std::fs::write(
        &modes,
        text.replacen("  soft_priority:\n", "  !!str soft_priority:\n", 1),
    )
    .expect("write");
    let run = check(dir.path());
    assert_ne!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("modes/modes.yaml:") && run.stderr.contains("error[yaml-tag]"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_tag_in_a_join_registry_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let registry = dir.path().join("registry.yaml");
    let events = dir.path().join("events.jsonl");
    std::fs::write(&events, "[1.0,[]]\n").expect("write");
    std::fs::write(
        &registry,
        "schema_version: 1\ncache_identity:\n  model: !!binary bQ==\n  tokenizer: t\n  hash_domain: {name: h, encoding: int}\n  runtime: {kind: vllm, version: \"synthetic\"}\n  namespace: default\n  adapter: {kind: base_model}\n  block_size: 2\nclaims: []\n",
    )
    .expect("write");
    let run = kvlower(&[
        "join",
        "--registry",
        &registry.display().to_string(),
        "--events",
        &events.display().to_string(),
        "--events-format",
        "vllm",
    ]);
    assert_eq!(run.code, 1, "{} {}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains("explicit YAML tag `!!binary`")
            || run
                .stderr
                .contains("explicit YAML tag `tag:yaml.org,2002:binary`"),
        "{}",
        run.stderr
    );
}
