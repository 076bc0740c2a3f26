//! The generated JSON Schemas agree with the loader (issue 15 #13).
//!
//! - Every descriptor the loader accepts (the committed ones, and every
//!   accepted case below) the schema accepts.
//! - Every descriptor the loader rejects for a rule the schema can express
//!   (unknown fields and names, types, per-kind anchor fields, the shape of each
//!   anchor field, blank or multi-line names, depth `none`, preconditions of
//!   another depth) the schema rejects. The rules it cannot express are listed
//!   in [`NOT_EXPRESSED`] and [`NOT_JSON`], each with why, and the test holds
//!   that list exact: a listed case the schema starts to reject must leave it.
//! - Every anchor field pattern agrees with the loader's predicate, value by
//!   value ([`anchor_rules_agree_with_the_loader_field_by_field`]).

use std::fs;
use std::path::Path;

use kvlower_core::descriptor::{Anchor, AnchorKind};
use kvlower_tests::{copy_dir, repo_root, scratch_repo};
use serde_json::{Value, json};

fn schema_json(schema_file: &str) -> Value {
    serde_json::from_str(
        &fs::read_to_string(repo_root().join(schema_file)).expect("schema committed"),
    )
    .expect("schema is JSON")
}

fn validator(schema_file: &str) -> jsonschema::Validator {
    jsonschema::draft7::new(&schema_json(schema_file)).expect("a valid draft-07 schema")
}

/// A validator for one definition of the descriptor schema.
fn definition_validator(name: &str) -> jsonschema::Validator {
    let defs = schema_json("schemas/descriptor.schema.json")["definitions"].clone();
    jsonschema::draft7::new(&json!({"$ref": format!("#/definitions/{name}"), "definitions": defs}))
        .expect("a valid draft-07 schema")
}

fn yaml_as_json(path: &Path) -> Value {
    let src = fs::read_to_string(path).expect("read");
    kvlower_load::yaml::from_str(&src).expect("YAML")
}

fn descriptor_paths() -> Vec<std::path::PathBuf> {
    let mut paths: Vec<_> = fs::read_dir(repo_root().join("capabilities"))
        .expect("capabilities/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    paths
}

// ------------------------------------------------------------------ the two judges

/// Loads descriptors as `kvlower check` does, in a scratch repository with the
/// real catalog and one plain repository file (`evidence/notes.txt`).
struct Loader {
    dir: tempfile::TempDir,
    catalog: kvlower_core::Catalog,
}

impl Loader {
    fn new() -> Loader {
        let dir = scratch_repo(&["capabilities", "evidence"]);
        // The committed evidence the committed descriptors anchor (re-run by the loader).
        copy_dir(&repo_root().join("evidence"), &dir.path().join("evidence"));
        // The patch and recorder files the committed campaigns' source digests cover.
        copy_dir(&repo_root().join("scripts"), &dir.path().join("scripts"));
        fs::write(dir.path().join("evidence/notes.txt"), "a plain file\n").expect("write");
        let mut diagnostics = Vec::new();
        let catalog =
            kvlower_load::load_catalog(dir.path(), &mut diagnostics).expect("the real catalog");
        Loader { dir, catalog }
    }

    /// The loader's findings for one descriptor text (empty: accepted).
    fn findings(&self, bytes: &[u8]) -> Vec<String> {
        let rel = "capabilities/case.yaml";
        fs::write(self.dir.path().join(rel), bytes).expect("write");
        let env = kvlower_evidence::FsEnvironment::new(self.dir.path().to_path_buf());
        let mut diagnostics = Vec::new();
        let loaded = kvlower_load::load_descriptor(
            self.dir.path(),
            rel,
            &self.catalog,
            &env,
            &mut diagnostics,
        );
        let mut findings: Vec<String> = diagnostics
            .iter()
            .map(|d| format!("{}: {}", d.code, d.message))
            .collect();
        if loaded.is_none() && findings.is_empty() {
            findings.push("not loaded".into());
        }
        findings
    }
}

/// What the schema says of a descriptor text: `None` when the YAML is refused
/// before it becomes one JSON value (the schema never sees it).
fn schema_accepts(v: &jsonschema::Validator, bytes: &[u8]) -> Option<bool> {
    let text = std::str::from_utf8(bytes).ok()?;
    let doc: Value = kvlower_load::yaml::from_str(text).ok()?;
    Some(v.is_valid(&doc))
}

fn schema_errors(v: &jsonschema::Validator, bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return vec!["not UTF-8".into()];
    };
    let Ok(doc) = kvlower_load::yaml::from_str::<Value>(text) else {
        return vec!["not YAML".into()];
    };
    v.iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

// ------------------------------------------------------------------ what the schema cannot say

/// Corpus cases whose YAML never becomes one JSON value (a YAML parser or
/// kvlower's structural pre-pass refuses the text), so no schema sees them.
const NOT_JSON: &[(&str, &str)] = &[
    (
        "alias_bomb",
        "an alias expansion bomb, refused by the YAML reader",
    ),
    ("binary_garbage", "not YAML"),
    (
        "duplicate_key",
        "a duplicate key: JSON keeps one value per key, the pre-pass refuses it",
    ),
    ("duplicate_precondition_key", "a duplicate key"),
    ("duplicate_top_level_key", "a duplicate key"),
    ("dedented_note_in_flow_anchor", "a YAML syntax error"),
    (
        "deep_nesting",
        "nesting deeper than 32, refused by the pre-pass",
    ),
    ("invalid_utf8", "not UTF-8"),
    ("multi_document", "two YAML documents"),
    ("nul_bytes", "NUL bytes are not YAML text"),
    ("syntax_unclosed_flow", "a YAML syntax error"),
    ("tab_indentation", "a YAML syntax error"),
];

/// Rules only `kvlower check` can apply: the case is rejected by the loader
/// and accepted by the schema, and must stay so (or leave this list).
const NOT_EXPRESSED: &[(&str, &str)] = &[
    (
        "anchor_repo_file_missing",
        "whether a repository file exists",
    ),
    (
        "duplicate_adapter_depth",
        "two list items sharing a value (draft-07 cannot compare items)",
    ),
    ("future_date", "today's date"),
    (
        "astral_invisible_note",
        "invisible characters outside the Basic Multilingual Plane (patterns use \\uXXXX escapes, which every engine reads alike)",
    ),
    ("own_file_through_a_link", "where a symbolic link leads"),
    (
        "supported_trace_on_a_plain_file",
        "what a repository file contains (a trace needs a re-run verdict)",
    ),
];

/// A valid descriptor to mutate: every anchor kind, an adapter with its
/// preconditions, atoms, signals, proposals and non-claims.
const BASE: &str = r#"# yaml-language-server: $schema=../schemas/descriptor.schema.json
runtime: {name: Acme Serve, version: 1.2.0, source: source_tree, note: synthetic, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}
native:
  - obligation: claim_identity
    status: missing
    scope: source_inspection
    anchor: {kind: public_source, repository: acme/serve, commit: 0123abc, path: src/cache.py, note: no claim id on the cache entry}
  - obligation: explicit_acceptance
    status: partial
    scope: docs_only
    anchor: {kind: docs_page, url: "https://docs.example.org/cache", retrieved: "2024-02-29", section: Caching, note: the docs describe a cache hint}
  - obligation: claim_materialized_event
    status: missing
    scope: litmus_trace
    anchor: {kind: paper, section: "§6.1", path: artifacts/run1, note: the paper reports no such event, preserves_order: true, preserves_claim_scope: true}
adapters:
  - depth: claim_registry
    name: an external registry
    preconditions:
      claims_registered_before_lifecycle: {kind: paper, section: "§9 Table 9", note: the registry is written first}
    evidence:
      - obligation: claim_identity
        status: partial
        scope: source_inspection
        anchor: {kind: public_source, repository: acme/serve, commit: 0123abc, path: src/registry.py, note: ids are assigned}
signals:
  - signal: priority_field
    anchor: {kind: repo_file, path: evidence/notes.txt, note: a priority field is visible}
proposals:
  - {primitive: active_no_evict, mode: hard_protected}
non_claims:
  default: nothing here was run
  modes: {best_effort: a hint only}
"#;

/// One mutated descriptor: its name, its text, and what both judges must say.
struct Case {
    name: &'static str,
    text: String,
    expect: Expect,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Both accept.
    Accept,
    /// Both reject.
    Reject,
    /// The loader rejects; the schema cannot tell (listed in [`NOT_EXPRESSED`]).
    NotExpressed,
}

fn case(name: &'static str, from: &str, to: &str, expect: Expect) -> Case {
    assert!(
        BASE.contains(from),
        "{name}: `{from}` is not in the base descriptor"
    );
    Case {
        name,
        text: BASE.replacen(from, to, 1),
        expect,
    }
}

fn mutations() -> Vec<Case> {
    use Expect::*;
    vec![
        case("base", "", "", Accept),
        // The documented legacy alias, as a value (issue 15 #13: the old schema refused it).
        case(
            "obligation_alias",
            "obligation: explicit_acceptance",
            "obligation: active_refusal_or_defer",
            Accept,
        ),
        case(
            "uppercase_commit",
            "commit: 0123abc",
            "commit: 0123ABC",
            Accept,
        ),
        case(
            "forty_digit_commit",
            "commit: 0123abc",
            "commit: 0123456789abcdef0123456789abcdef01234567",
            Accept,
        ),
        case(
            "null_field_of_another_kind",
            "kind: paper, section: \"§6.1\",",
            "kind: paper, section: \"§6.1\", url: ~,",
            Accept,
        ),
        case(
            "null_verdict",
            "path: evidence/notes.txt,",
            "path: evidence/notes.txt, verdict: ~,",
            Accept,
        ),
        case(
            "http_url",
            "https://docs.example.org/cache",
            "http://docs.example.org/cache?q=1#x",
            Accept,
        ),
        case(
            "paper_appendix",
            "§9 Table 9",
            "Appendix A and Table 05",
            Accept,
        ),
        case(
            "paper_section_trailing_dot",
            "\"§6.1\"",
            "\"see §6.\"",
            Accept,
        ),
        case(
            "owner_name_with_dots",
            "acme/serve, commit: 0123abc, path: src/cache.py",
            "acme.io/serve.rs, commit: 0123abc, path: src/cache.py",
            Accept,
        ),
        case(
            "unknown_top_level_field",
            "adapters:\n",
            "adapters: []\nunused:\n",
            Reject,
        ),
        // Per-kind fields.
        case(
            "public_source_without_commit",
            "commit: 0123abc, path: src/cache.py",
            "path: src/cache.py",
            Reject,
        ),
        case(
            "public_source_with_url",
            "path: src/cache.py,",
            "path: src/cache.py, url: \"https://x.org\",",
            Reject,
        ),
        case("paper_without_section", "section: \"§6.1\", ", "", Reject),
        case(
            "docs_page_without_retrieved",
            "retrieved: \"2024-02-29\", ",
            "",
            Reject,
        ),
        case(
            "repo_file_with_commit",
            "path: evidence/notes.txt,",
            "path: evidence/notes.txt, commit: 0123abc,",
            Reject,
        ),
        case(
            "verdict_on_a_paper_anchor",
            "section: \"§6.1\",",
            "section: \"§6.1\", verdict: {gate: connector_observation, pass: true},",
            Reject,
        ),
        case(
            "no_kind",
            "{kind: paper, section: \"§9 Table 9\",",
            "{section: \"§9 Table 9\",",
            Reject,
        ),
        case("no_note", ", note: ids are assigned", "", Reject),
        // Field shapes.
        case(
            "commit_not_hex",
            "commit: 0123abc",
            "commit: 0123abz",
            Reject,
        ),
        case(
            "commit_too_short",
            "commit: 0123abc",
            "commit: 0123ab",
            Reject,
        ),
        case(
            "commit_too_long",
            "commit: 0123abc",
            "commit: 0123456789abcdef0123456789abcdef012345678",
            Reject,
        ),
        case(
            "repository_as_url",
            "repository: acme/serve, commit: 0123abc, path: src/cache.py",
            "repository: \"https://github.com/acme/serve\", commit: 0123abc, path: src/cache.py",
            Reject,
        ),
        case(
            "repository_dot_dot",
            "repository: acme/serve, commit: 0123abc, path: src/cache.py",
            "repository: acme/.., commit: 0123abc, path: src/cache.py",
            Reject,
        ),
        case(
            "url_without_scheme",
            "https://docs.example.org/cache",
            "docs.example.org/cache",
            Reject,
        ),
        case(
            "url_with_a_space",
            "https://docs.example.org/cache",
            "https://docs.example.org/a cache",
            Reject,
        ),
        case("retrieved_yesterday", "\"2024-02-29\"", "yesterday", Reject),
        case(
            "retrieved_not_a_leap_day",
            "\"2024-02-29\"",
            "\"2023-02-29\"",
            Reject,
        ),
        case(
            "path_absolute",
            "path: src/cache.py",
            "path: /etc/passwd",
            Reject,
        ),
        case(
            "path_climbs_out",
            "path: src/cache.py",
            "path: src/../../x",
            Reject,
        ),
        case(
            "path_with_a_tab",
            "path: src/cache.py",
            "path: \"src/\\tcache.py\"",
            Reject,
        ),
        case(
            "repo_file_names_a_result",
            "path: evidence/notes.txt",
            "path: ./results/lowering-matrix.md",
            Reject,
        ),
        case("paper_section_unknown", "\"§6.1\"", "\"§6.9\"", Reject),
        case(
            "paper_section_without_a_citation",
            "\"§6.1\"",
            "see the paper",
            Reject,
        ),
        case(
            "placeholder_note",
            "note: no claim id on the cache entry",
            "note: \"PLACEHOLDER: anchor this\"",
            Reject,
        ),
        case(
            "todo_note",
            "note: no claim id on the cache entry",
            "note: \" todo. \"",
            Reject,
        ),
        case(
            "zero_width_note",
            "note: no claim id on the cache entry",
            "note: \"\\u200B\"",
            Reject,
        ),
        // Names, depths, preconditions.
        case(
            "blank_runtime_name",
            "name: Acme Serve",
            "name: \"\\u00A0\"",
            Reject,
        ),
        case(
            "runtime_version_with_a_newline",
            "version: 1.2.0",
            "version: \"1.2\\n0\"",
            Reject,
        ),
        case(
            "blank_adapter_name",
            "name: an external registry",
            "name: \" \"",
            Reject,
        ),
        case(
            "adapter_at_depth_none",
            "depth: claim_registry",
            "depth: none",
            Reject,
        ),
        case(
            "precondition_of_another_depth",
            "claims_registered_before_lifecycle:",
            "reusable_object_id:",
            Reject,
        ),
        case(
            "unknown_obligation",
            "obligation: explicit_acceptance",
            "obligation: explicit_acceptence",
            Reject,
        ),
        // Only `check` can tell.
        case(
            "future_date",
            "\"2024-02-29\"",
            "\"2999-01-01\"",
            NotExpressed,
        ),
        case(
            "astral_invisible_note",
            "note: no claim id on the cache entry",
            "note: \"\\U000E0041\"",
            NotExpressed,
        ),
        case(
            "duplicate_adapter_depth",
            "signals:\n",
            "  - {depth: claim_registry, name: a second registry}\nsignals:\n",
            NotExpressed,
        ),
        case(
            "anchor_repo_file_missing",
            "path: evidence/notes.txt",
            "path: evidence/absent.txt",
            NotExpressed,
        ),
        case(
            "own_file_through_a_link",
            "path: evidence/notes.txt",
            "path: evidence/link-to-modes",
            NotExpressed,
        ),
        case(
            "supported_trace_on_a_plain_file",
            "  - obligation: claim_materialized_event\n    status: missing\n    scope: litmus_trace\n    anchor: {kind: paper, section: \"§6.1\", path: artifacts/run1,",
            "  - obligation: claim_materialized_event\n    status: supported\n    scope: litmus_trace\n    anchor: {kind: repo_file, path: evidence/notes.txt,",
            NotExpressed,
        ),
    ]
}

#[test]
fn schema_and_loader_agree_on_every_case() {
    let schema = validator("schemas/descriptor.schema.json");
    let loader = Loader::new();
    #[cfg(unix)]
    std::os::unix::fs::symlink(
        "../modes/modes.yaml",
        loader.dir.path().join("evidence/link-to-modes"),
    )
    .expect("symlink");
    let mut failures = Vec::new();

    // The committed descriptors: accepted by both.
    for path in descriptor_paths() {
        let bytes = fs::read(&path).expect("read");
        let findings = loader.findings(&bytes);
        assert!(findings.is_empty(), "{}: {findings:#?}", path.display());
        if schema_accepts(&schema, &bytes) != Some(true) {
            failures.push(format!(
                "{}: the loader accepts it, the schema does not: {:#?}",
                path.display(),
                schema_errors(&schema, &bytes)
            ));
        }
    }

    // The bad-input corpus: every case is rejected by the loader; by the schema
    // too, unless listed (and then it must be exactly as listed).
    let corpus = repo_root().join("tests/corpus");
    let mut names: Vec<String> = fs::read_dir(&corpus)
        .expect("tests/corpus")
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".yaml")
                .map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 30);
    for name in &names {
        let bytes = fs::read(corpus.join(format!("{name}.yaml"))).expect("read");
        assert!(
            !loader.findings(&bytes).is_empty(),
            "{name}: the loader accepts a corpus case"
        );
        let verdict = schema_accepts(&schema, &bytes);
        let not_json = NOT_JSON.iter().any(|(n, _)| n == name);
        let not_expressed = NOT_EXPRESSED.iter().any(|(n, _)| n == name);
        match (verdict, not_json, not_expressed) {
            (None, true, _) | (Some(false), false, false) | (Some(true), false, true) => {}
            (None, false, _) => {
                failures.push(format!("{name}: not one JSON value; list it in NOT_JSON"))
            }
            (Some(_), true, _) => {
                failures.push(format!("{name}: is JSON; remove it from NOT_JSON"))
            }
            (Some(true), false, false) => failures.push(format!(
                "{name}: the loader rejects it, the schema accepts it"
            )),
            (Some(false), false, true) => failures.push(format!(
                "{name}: the schema rejects it now; remove it from NOT_EXPRESSED"
            )),
        }
    }

    // The mutations of a valid descriptor.
    for c in mutations() {
        let findings = loader.findings(c.text.as_bytes());
        let loader_accepts = findings.is_empty();
        let verdict = schema_accepts(&schema, c.text.as_bytes());
        let listed = NOT_EXPRESSED.iter().any(|(n, _)| *n == c.name);
        assert_eq!(
            c.expect == Expect::NotExpressed,
            listed,
            "{}: NOT_EXPRESSED and the case disagree",
            c.name
        );
        let ok = match c.expect {
            Expect::Accept => loader_accepts && verdict == Some(true),
            Expect::Reject => !loader_accepts && verdict == Some(false),
            Expect::NotExpressed => !loader_accepts && verdict == Some(true),
        };
        if !ok {
            failures.push(format!(
                "{}: expected {:?}; loader findings {findings:#?}; schema {verdict:?} {:#?}",
                c.name,
                c.expect,
                schema_errors(&schema, c.text.as_bytes())
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_not_expressed_rule_is_exercised() {
    let names: Vec<&str> = mutations().iter().map(|c| c.name).collect();
    let corpus = repo_root().join("tests/corpus");
    for (name, why) in NOT_EXPRESSED {
        assert!(
            names.contains(name) || corpus.join(format!("{name}.yaml")).exists(),
            "{name} ({why}) has no case"
        );
    }
    for (name, why) in NOT_JSON {
        assert!(
            corpus.join(format!("{name}.yaml")).exists(),
            "{name} ({why}) has no case"
        );
    }
}

// ------------------------------------------------------------------ field by field

/// A valid anchor of each kind.
fn base_anchor(kind: AnchorKind) -> Value {
    match kind {
        AnchorKind::Paper => json!({"kind": "paper", "section": "§6.1", "note": "n"}),
        AnchorKind::PublicSource => {
            json!({"kind": "public_source", "repository": "a/b", "commit": "abcdef1", "path": "src/x.py", "note": "n"})
        }
        AnchorKind::DocsPage => {
            json!({"kind": "docs_page", "url": "https://a.example/x", "retrieved": "2024-01-02", "note": "n"})
        }
        AnchorKind::RepoFile => json!({"kind": "repo_file", "path": "evidence/x.txt", "note": "n"}),
    }
}

/// Values to try in each field (besides absent and `null`).
fn samples(field: &str) -> Vec<Value> {
    let strings: &[&str] = match field {
        "repository" => &[
            "vllm-project/vllm",
            "a/b",
            "Owner_1.x/name-2",
            "..a/b",
            "a/.b",
            "https://github.com/a/b",
            "a/b/c",
            "./b",
            "a/..",
            "../b",
            "a/",
            "/b",
            "a b/c",
            "ab",
            "",
            "\u{200b}",
            "a/b\n",
        ],
        "commit" => &[
            "abcdef1",
            "ABCDEF1",
            "abcdef",
            "abcdefg",
            " abcdef1",
            "abcdef1 ",
            "",
            "\u{200b}",
            "0123456789abcdef0123456789abcdef01234567",
            "0123456789abcdef0123456789abcdef012345678",
        ],
        "path" => &[
            "src/a.py",
            "/etc/passwd",
            "\\x",
            "a/../b",
            "..",
            "../a",
            "a/..",
            "a/..b",
            "..a",
            "a\\..\\b",
            "",
            " ",
            "capabilities/x.yaml",
            "./capabilities/x",
            ".//results",
            "capabilitiesx/a",
            "Capabilities/x",
            "a\tb",
            "docs/x.md",
            ".",
            "./",
            "modes",
            "bad_lowering\\x",
            "schemas/",
        ],
        "section" => &[
            "§6.1",
            "§9 Table 9 (x)",
            "§8.3-§8.4",
            "§7 and §12",
            "Appendix A",
            "Table 5",
            "§99",
            "§6.9",
            "see the paper",
            "Table 12",
            "§",
            "Appendix B",
            "",
            "\u{200b}",
            "§6.",
            "§6..1",
            "Table 05",
            "Table 5.1",
            "§10.",
            "Appendix Appendix B",
            "TTable 5",
            "§6.1\n",
            "§14",
            "§15",
            "Table 0",
            "Appendix A, §8.4.",
            "§8.5",
        ],
        "url" => &[
            "https://docs.example.com/x",
            "http://a",
            "docs.example.com/x",
            "https://",
            "https:///x",
            "https://a b",
            "ftp://a",
            "https://a\u{a0}b",
            "https://?x",
            "HTTPS://a",
            "https://a\u{200b}b",
            "https://a\u{85}b",
            "",
            "\u{200b}",
            "https://a\u{1}b",
            "https://#",
        ],
        "retrieved" => &[
            "2024-02-29",
            "2023-02-29",
            "2000-02-29",
            "1900-02-29",
            "1969-12-31",
            "1970-01-01",
            "yesterday",
            "2024-1-01",
            "2024-13-01",
            "2024-04-31",
            "2024-04-30",
            "",
            "2100-02-29",
            "9999-12-31",
            "2024-00-10",
            "2024-01-00",
            " 2024-01-01",
            "2024-01-01\n",
        ],
        "note" => &[
            "shows X",
            "",
            " ",
            "\u{200b}",
            "TODO",
            "todo.",
            "Todo!",
            " tbd ",
            "placeholder: anchor",
            "PLACEHOLDER",
            "n/a",
            "N/A",
            "-",
            "?",
            "?.",
            "todo :",
            "todos",
            "xxx yyy",
            "fixme:",
            "…",
            "\u{200b}todo",
            "line one\nline two",
            "placeholders",
            "Placeholderish",
            "--",
            "t\u{f3}do",
        ],
        _ => &[],
    };
    let mut values: Vec<Value> = strings.iter().map(|s| json!(s)).collect();
    if field == "verdict" {
        values.push(json!({"gate": "connector_observation", "pass": true}));
        values.push(json!({"claim_id": "c", "gate": "reference_lifecycle", "pass": false}));
    }
    if field == "kind" {
        values.extend(["paper", "public_source", "docs_page", "repo_file"].map(|k| json!(k)));
    }
    values
}

#[test]
fn anchor_rules_agree_with_the_loader_field_by_field() {
    let anchor_schema = definition_validator("Anchor");
    let mut fields: Vec<&str> = AnchorKind::ALL_FIELDS.to_vec();
    fields.extend(["note", "verdict", "kind"]);
    let mut checked = 0;
    let mut disagreements = Vec::new();
    for &kind in AnchorKind::ALL {
        let base = base_anchor(kind);
        for field in &fields {
            let mut variants = vec![None, Some(Value::Null)];
            variants.extend(samples(field).into_iter().map(Some));
            for value in variants {
                let mut anchor = base.clone();
                match &value {
                    None => {
                        anchor.as_object_mut().expect("object").remove(*field);
                    }
                    Some(v) => anchor[*field] = v.clone(),
                }
                // The loader's view: the anchor as it deserializes, judged structurally.
                let loader_accepts = match serde_json::from_value::<Anchor>(anchor.clone()) {
                    Ok(a) => a.defects(None).is_empty(),
                    Err(_) => false,
                };
                let schema_accepts = anchor_schema.is_valid(&anchor);
                checked += 1;
                if loader_accepts != schema_accepts {
                    disagreements.push(format!(
                        "{anchor}: loader {loader_accepts}, schema {schema_accepts}"
                    ));
                }
            }
        }
    }
    assert!(checked > 600, "only {checked} anchors checked");
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
}

/// `VisibleText` and `SingleLine` against `kvlower_core::text` for every
/// character of the Basic Multilingual Plane.
#[test]
fn text_patterns_agree_with_the_loader_on_every_bmp_character() {
    let visible = definition_validator("VisibleText");
    let single = definition_validator("SingleLine");
    let mut wrong = Vec::new();
    for c in (0u32..=0xFFFF).filter_map(char::from_u32) {
        let s = c.to_string();
        if visible.is_valid(&json!(s)) != kvlower_core::text::has_visible(&s) {
            wrong.push(format!("visible U+{:04X}", c as u32));
        }
        if single.is_valid(&json!(s)) == kvlower_core::text::has_control(&s) {
            wrong.push(format!("control U+{:04X}", c as u32));
        }
    }
    assert!(wrong.is_empty(), "{wrong:?}");
}

/// Every calendar string of a wide grid, against `parse_iso_date`.
#[test]
fn the_date_pattern_is_the_loaders_calendar() {
    let anchor_schema = definition_validator("Anchor");
    let mut wrong = Vec::new();
    for year in (1960..=2110).chain([2400, 2800, 3200, 3600, 4000, 5200, 9600, 9999]) {
        for month in 0..=13 {
            for day in [0, 1, 9, 10, 19, 20, 28, 29, 30, 31, 32] {
                let date = format!("{year:04}-{month:02}-{day:02}");
                let mut anchor = base_anchor(AnchorKind::DocsPage);
                anchor["retrieved"] = json!(date);
                let schema = anchor_schema.is_valid(&anchor);
                let loader = kvlower_core::anchor_form::parse_iso_date(&date).is_some();
                if schema != loader {
                    wrong.push(format!("{date}: schema {schema}, loader {loader}"));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every sequence of up to four tokens, against `paper_section_known`.
#[test]
fn the_paper_section_pattern_is_the_loaders_list() {
    let anchor_schema = definition_validator("Anchor");
    let tokens = [
        "§",
        "Table ",
        "Appendix ",
        "A",
        "B",
        "1",
        "0",
        "4",
        "6",
        ".",
        " ",
        "x",
        "-",
    ];
    let mut strings = vec![String::new()];
    let mut frontier = vec![String::new()];
    for _ in 0..4 {
        let next: Vec<String> = frontier
            .iter()
            .flat_map(|s| tokens.iter().map(move |t| format!("{s}{t}")))
            .collect();
        strings.extend(next.iter().cloned());
        frontier = next;
    }
    let mut wrong = Vec::new();
    for section in &strings {
        let mut anchor = base_anchor(AnchorKind::Paper);
        anchor["section"] = json!(section);
        let schema = anchor_schema.is_valid(&anchor);
        let loader = kvlower_core::anchor_form::paper_section_known(section);
        if schema != loader {
            wrong.push(format!("{section:?}: schema {schema}, loader {loader}"));
        }
    }
    assert!(strings.len() > 30_000);
    assert!(wrong.is_empty(), "{wrong:#?}");
}

// ------------------------------------------------------------------ shape of the schemas

#[test]
fn every_committed_descriptor_validates_against_the_schema() {
    let v = validator("schemas/descriptor.schema.json");
    let paths = descriptor_paths();
    assert!(paths.len() >= 6);
    for path in paths {
        let doc = yaml_as_json(&path);
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:#?}", path.display());
    }
}

#[test]
fn the_catalog_validates_against_its_schema_and_so_does_the_alias() {
    let v = validator("schemas/modes.schema.json");
    let doc = yaml_as_json(&repo_root().join("modes/modes.yaml"));
    assert!(v.is_valid(&doc));
    // The loader reads the legacy name in the catalog too, as a value and as a key.
    let text = fs::read_to_string(repo_root().join("modes/modes.yaml"))
        .expect("read")
        .replace("explicit_conflict_action", "active_refusal_or_defer");
    let dir = scratch_repo(&[]);
    fs::write(dir.path().join("modes/modes.yaml"), &text).expect("write");
    let mut diagnostics = Vec::new();
    assert!(
        kvlower_load::read_catalog(dir.path(), &mut diagnostics).is_some(),
        "{diagnostics:#?}"
    );
    let doc: Value = kvlower_load::yaml::from_str(&text).expect("YAML");
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// Every property of both schemas says what it is (the issue counted 17 of 49).
#[test]
fn every_property_has_a_description() {
    fn walk(node: &Value, path: &str, missing: &mut Vec<String>, total: &mut usize) {
        match node {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    for (name, prop) in props {
                        *total += 1;
                        if prop
                            .get("description")
                            .and_then(Value::as_str)
                            .is_none_or(str::is_empty)
                        {
                            missing.push(format!("{path}/properties/{name}"));
                        }
                    }
                }
                for (k, v) in map {
                    walk(v, &format!("{path}/{k}"), missing, total);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{path}/{i}"), missing, total);
                }
            }
            _ => {}
        }
    }
    for file in [
        "schemas/descriptor.schema.json",
        "schemas/modes.schema.json",
    ] {
        let mut missing = Vec::new();
        let mut total = 0;
        walk(&schema_json(file), "", &mut missing, &mut total);
        assert!(total > 40, "{file}: {total} properties");
        assert!(missing.is_empty(), "{file}: {missing:#?}");
    }
}

#[test]
fn descriptors_and_the_catalog_name_their_schema_for_editors() {
    for path in descriptor_paths() {
        let first = fs::read_to_string(&path)
            .expect("read")
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        assert_eq!(
            first,
            "# yaml-language-server: $schema=../schemas/descriptor.schema.json",
            "{} must start with the schema modeline",
            path.display()
        );
    }
    let first = fs::read_to_string(repo_root().join("modes/modes.yaml")).expect("read");
    assert!(first.starts_with("# yaml-language-server: $schema=../schemas/modes.schema.json\n"));
}

/// `kvlower schema` prints what `matrix` commits (under the repository's catalog).
#[test]
fn kvlower_schema_prints_the_committed_files() {
    let root = repo_root().display().to_string();
    for (kind, file) in [
        ("descriptor", "schemas/descriptor.schema.json"),
        ("modes", "schemas/modes.schema.json"),
    ] {
        let run = kvlower_tests::kvlower(&["schema", kind, "--root", &root]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            run.stdout,
            fs::read_to_string(repo_root().join(file)).expect("read"),
            "{file}"
        );
    }
}
