//! JSON Schemas (draft-07, which editors' YAML support understands) for
//! descriptors and `modes.yaml`, generated from the Rust types and then
//! tightened with the loader's own rules, so that the schema and `kvlower
//! check` agree. Committed under `schemas/`; descriptors point at theirs with
//! a `# yaml-language-server: $schema=` line.
//!
//! What the types alone cannot say is added here, each rule from the table
//! or predicate the loader uses (`docs/descriptor-format.md`, "The JSON
//! Schema"):
//! - per anchor kind, the fields it needs (with a visible character) and the
//!   fields it refuses ([`AnchorKind::required_fields`], [`AnchorKind::allowed_fields`]);
//! - the shape of each anchor field: `owner/name`, a 7–40 digit hex commit,
//!   an `http(s)://` URL, an ISO date, a relative path that is none of
//!   kvlower's own files, a paper section that exists, a note that is no
//!   placeholder, no control characters;
//! - names and versions with a visible character; no adapter at depth `none`;
//!   each adapter's preconditions from its depth's list in the catalog;
//! - the legacy obligation name `active_refusal_or_defer`.
//!
//! What a schema cannot check (a file's existence, a re-run verdict, today's
//! date, two adapters at one depth, duplicate YAML keys) stays with `check`;
//! `tests/tests/schema.rs` holds the list and proves both directions.

use kvlower_core::anchor_form::OWN_DIRS;
use kvlower_core::descriptor::AnchorKind;
use kvlower_core::{Catalog, CatalogDoc, Depth, Descriptor};
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use crate::generated::{GeneratedFile, to_json};

pub const DESCRIPTOR_SCHEMA: &str = "schemas/descriptor.schema.json";
pub const MODES_SCHEMA: &str = "schemas/modes.schema.json";

/// The legacy name the loader still accepts for `explicit_conflict_action`.
pub const OBLIGATION_ALIAS: (&str, &str) = ("active_refusal_or_defer", "explicit_conflict_action");

/// The committed schema files. The descriptor schema depends on the catalog
/// (which preconditions belong to which depth): `matrix` and `check` pass the
/// repository's.
pub fn files(catalog: &Catalog) -> Vec<GeneratedFile> {
    vec![
        GeneratedFile {
            path: DESCRIPTOR_SCHEMA,
            contents: to_json(&descriptor_schema(catalog)),
        },
        GeneratedFile {
            path: MODES_SCHEMA,
            contents: to_json(&modes_schema()),
        },
    ]
}

/// The descriptor schema under `catalog`.
pub fn descriptor_schema(catalog: &Catalog) -> Value {
    let mut schema = generate::<Descriptor>("kvlower runtime descriptor");
    add_text_definitions(&mut schema);
    anchor_rules(&mut schema);
    name_rules(&mut schema);
    adapter_rules(&mut schema, catalog);
    obligation_alias(&mut schema);
    describe_maps(
        &mut schema,
        &[
            (
                "/definitions/Adapter/properties/preconditions",
                "The anchor showing that `{}` holds at this adapter's trust boundary.",
            ),
            (
                "/definitions/NonClaims/properties/modes",
                "What the `{}` rows do not claim (replaces `default` for them).",
            ),
        ],
    );
    schema
}

/// The `modes.yaml` schema.
pub fn modes_schema() -> Value {
    let mut schema = generate::<CatalogDoc>("kvlower mode catalog (modes/modes.yaml)");
    obligation_alias(&mut schema);
    describe_maps(
        &mut schema,
        &[
            (
                "/properties/modes",
                "Mode `{}`: its bundle O[m] and what decides its negative labels.",
            ),
            (
                "/properties/depths",
                "Depth `{}`: what it may supply and the preconditions it needs.",
            ),
            (
                "/properties/signals",
                "Signal `{}`: what it is and which modes it suggests.",
            ),
            (
                "/properties/trace_gates",
                "The obligations a passing verdict of gate `{}` can witness.",
            ),
            (
                "/properties/campaign_controls",
                "What a gate campaign must show to witness gate `{}`: positive runs and control runs by kind.",
            ),
            (
                "/definitions/DepthSpec/properties/conditional",
                "The atoms that must be anchored before this depth supplies `{}`.",
            ),
        ],
    );
    schema
}

fn generate<T: schemars::JsonSchema>(title: &str) -> Value {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.insert("title".into(), title.into());
    schema.to_value()
}

// ------------------------------------------------------------------ patterns

/// The regular expressions, in the ECMA-262 dialect JSON Schema uses (and the
/// `jsonschema` crate translates). Character classes use `\uXXXX` escapes of
/// the Basic Multilingual Plane only, so that every engine reads them alike.
pub mod patterns {
    /// Control characters (`char::is_control`) and the line/paragraph separators
    /// (`kvlower_core::text::has_control`).
    const CONTROL: &str = r"\u0000-\u001f\u007f-\u009f\u2028\u2029";
    /// `char::is_whitespace`.
    const WHITESPACE: &str =
        r"\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
    /// Some character a reader can see (`has_visible`; unanchored on purpose): any
    /// but the characters of `kvlower_core::text::BLANK` in the BMP (astral blank
    /// characters are left to the loader).
    pub fn visible() -> String {
        use std::fmt::Write as _;
        let mut class = String::new();
        for &(lo, hi) in kvlower_core::text::BLANK {
            let (lo, hi) = (u32::from(lo), u32::from(hi).min(0xFFFF));
            if lo > 0xFFFF {
                continue;
            }
            let _ = write!(class, r"\u{lo:04x}");
            if hi > lo {
                let _ = write!(class, r"-\u{hi:04x}");
            }
        }
        format!("[^{class}]")
    }

    /// No control character anywhere (`has_control`).
    pub fn no_control() -> String {
        format!("^[^{CONTROL}]*$")
    }

    /// A commit id: 7 to 40 hexadecimal digits.
    pub const COMMIT: &str = "^[0-9A-Fa-f]{7,40}$";

    /// `owner/name`, each part of `[A-Za-z0-9._-]` and neither `.` nor `..`.
    pub const OWNER_NAME: &str = r"^(?!\.\.?/)[A-Za-z0-9._-]+/(?!\.\.?$)[A-Za-z0-9._-]+$";

    /// `http://` or `https://`, a host, and no whitespace or control character.
    pub fn http_url() -> String {
        format!("^https?://[^/?#{CONTROL}{WHITESPACE}][^{CONTROL}{WHITESPACE}]*$")
    }

    /// `YYYY-MM-DD`, a real calendar day (leap years included), from 1970.
    pub fn iso_date() -> String {
        let year = "(?:19[7-9][0-9]|[2-9][0-9]{3})";
        let leap = "(?:19(?:7[26]|8[048]|9[26])|[2-9][0-9](?:0[48]|[2468][048]|[13579][26])|(?:[2468][048]|[3579][26])00)";
        format!(
            "^(?:{year}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|{leap}-02-29)$"
        )
    }

    /// `kvlower_core::anchor_form::paper_section_known`: at least one citation,
    /// and every `§N`, `Table N` and `Appendix X` one the paper has (§1–§14,
    /// §6.1–§6.3, §8.1–§8.4, Tables 1–11, Appendix A).
    pub const PAPER_SECTION: &str = r"^(?=[\s\S]*(?:§|Table |Appendix ))(?:§(?:1[0-4]|6\.[1-3]|8\.[1-4]|[1-9])\.*(?![0-9.])|Table 0*(?:1[01]|[1-9])\.*(?![0-9.])|Appendix (?=A)|(?!§|Table |Appendix )[\s\S])*$";

    /// A relative path that stays inside its root: no leading `/` or `\`, no `..` segment.
    pub const RELATIVE_PATH: &str = r"^(?![/\\]|\.\.(?:[/\\]|$)|[\s\S]*[/\\]\.\.(?:[/\\]|$))";

    /// A `repo_file` path that is none of kvlower's own inputs or outputs.
    pub fn not_own_path() -> String {
        format!(
            r"^(?!(?:\.?[/\\])*(?:{})(?:[/\\]|$))",
            super::OWN_DIRS.join("|")
        )
    }

    /// A note that is not the scaffold's placeholder nor a bare TODO, TBD,
    /// FIXME, XXX, n/a, `-` or `?` (ASCII case-insensitive, after trimming).
    pub fn not_placeholder() -> String {
        let ci = |word: &str| -> String {
            word.chars()
                .map(|c| {
                    if c.is_ascii_alphabetic() {
                        format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase())
                    } else if c == '?' {
                        r"\?".to_string()
                    } else {
                        c.to_string()
                    }
                })
                .collect()
        };
        let bare: Vec<String> = ["todo", "tbd", "fixme", "xxx", "n/a", "-", "?"]
            .iter()
            .map(|w| ci(w))
            .collect();
        format!(
            "^(?![{WHITESPACE}]*(?:{}|(?:{})[.!:]*[{WHITESPACE}]*$))",
            ci("placeholder"),
            bare.join("|")
        )
    }
}

// ------------------------------------------------------------------ rules

fn definitions(schema: &mut Value) -> &mut Map<String, Value> {
    if schema.get("definitions").is_none() {
        schema["definitions"] = json!({});
    }
    schema["definitions"]
        .as_object_mut()
        .expect("definitions is an object")
}

/// Shared definitions for text fields.
fn add_text_definitions(schema: &mut Value) {
    let defs = definitions(schema);
    defs.insert(
        "VisibleText".into(),
        json!({
            "description": "Text with at least one visible character (White_Space, Default_Ignorable_Code_Point, control and format characters do not count).",
            "type": "string",
            "pattern": patterns::visible(),
        }),
    );
    defs.insert(
        "SingleLine".into(),
        json!({
            "description": "Text without control characters (no line break, tab or escape).",
            "type": "string",
            "pattern": patterns::no_control(),
        }),
    );
}

/// `schema[pointer]`, which the generated schema must have.
fn at<'a>(schema: &'a mut Value, pointer: &str) -> &'a mut Value {
    // The pointers are this file's own, into types it generates from: a
    // missing one is a bug here, caught by every test that renders a schema.
    schema
        .pointer_mut(pointer)
        .expect("the generated schema has every pointer the overlay names")
}

/// The description a field's doc comment gave, or `fallback`.
fn description_of(node: &Value, fallback: &str) -> String {
    node.get("description")
        .and_then(Value::as_str)
        .unwrap_or(fallback)
        .to_string()
}

/// A name or version: visible, one line (`blank-value`, `control-character`).
fn name_rules(schema: &mut Value) {
    for pointer in [
        "/definitions/RuntimeIdentity/properties/name",
        "/definitions/RuntimeIdentity/properties/version",
        "/definitions/Adapter/properties/name",
    ] {
        let node = at(schema, pointer);
        let description = description_of(node, "A name");
        *node = json!({
            "description": description,
            "type": "string",
            "allOf": [
                {"$ref": "#/definitions/VisibleText"},
                {"$ref": "#/definitions/SingleLine"}
            ]
        });
    }
}

/// Every anchor rule `Anchor::defects` reports as a finding without looking
/// at the file system or the clock.
fn anchor_rules(schema: &mut Value) {
    let anchor = at(schema, "/definitions/Anchor");
    let props = anchor["properties"]
        .as_object_mut()
        .expect("Anchor has properties");
    let nullable = |p: &Map<String, Value>, name: &str, extra: Value| -> Value {
        let mut node = json!({
            "description": description_of(&p[name], name),
            "type": ["string", "null"],
        });
        if let (Some(node), Some(extra)) = (node.as_object_mut(), extra.as_object()) {
            node.extend(extra.clone());
        }
        node
    };
    let no_control = json!({"pattern": patterns::no_control()});
    let updates = [
        ("repository", json!({"pattern": patterns::OWNER_NAME})),
        ("commit", json!({"pattern": patterns::COMMIT})),
        (
            "path",
            json!({"allOf": [{"pattern": patterns::no_control()}, {"pattern": patterns::RELATIVE_PATH}]}),
        ),
        ("section", no_control.clone()),
        ("url", json!({"pattern": patterns::http_url()})),
        ("retrieved", json!({"pattern": patterns::iso_date()})),
    ];
    for (name, extra) in updates {
        let node = nullable(props, name, extra);
        props.insert(name.into(), node);
    }
    let kind_description = description_of(&props["kind"], "kind");
    props.insert(
        "kind".into(),
        json!({"description": kind_description, "allOf": [{"$ref": "#/definitions/AnchorKind"}]}),
    );
    let note_description = description_of(&props["note"], "note");
    props.insert(
        "note".into(),
        json!({
            "description": note_description,
            "type": "string",
            "allOf": [
                {"$ref": "#/definitions/VisibleText"},
                {"pattern": patterns::not_placeholder()}
            ]
        }),
    );
    anchor["required"] = json!(["kind", "note"]);
    let per_kind: Vec<Value> = AnchorKind::ALL
        .iter()
        .map(|&kind| {
            let mut then_props = Map::new();
            for &field in AnchorKind::ALL_FIELDS.iter() {
                if kind.required_fields().contains(&field) {
                    then_props.insert(
                        field.into(),
                        json!({
                            "description": format!("Required by `{}`.", kind.name()),
                            "type": "string",
                            "allOf": [{"$ref": "#/definitions/VisibleText"}]
                        }),
                    );
                } else if !kind.allowed_fields().contains(&field) {
                    then_props.insert(
                        field.into(),
                        json!({
                            "description": format!("Not a field of `{}`.", kind.name()),
                            "type": "null"
                        }),
                    );
                }
            }
            match kind {
                AnchorKind::Paper => {
                    then_props.insert(
                        "section".into(),
                        json!({
                            "description": "A section, table or appendix the paper has: §1–§14, §6.1–§6.3, §8.1–§8.4, Table 1–11, Appendix A.",
                            "type": "string",
                            "pattern": patterns::PAPER_SECTION
                        }),
                    );
                }
                AnchorKind::RepoFile => {
                    then_props.insert(
                        "path".into(),
                        json!({
                            "description": format!(
                                "A file of this repository that is none of kvlower's own ({}/).",
                                OWN_DIRS.join("/, ")
                            ),
                            "type": "string",
                            "allOf": [
                                {"$ref": "#/definitions/VisibleText"},
                                {"pattern": patterns::not_own_path()}
                            ]
                        }),
                    );
                }
                AnchorKind::PublicSource | AnchorKind::DocsPage => {}
            }
            if kind != AnchorKind::RepoFile {
                then_props.insert(
                    "verdict".into(),
                    json!({"description": "A gate verdict needs a `repo_file` trace.", "type": "null"}),
                );
                then_props.insert(
                    "source_files".into(),
                    json!({"description": "Source files name a `repo_file` gate campaign's patch and recorder, or a patched join document's patch files.", "type": "null"}),
                );
            }
            json!({
                "if": {
                    "properties": {"kind": {
                        "description": format!("The rules below apply to `{}` anchors.", kind.name()),
                        "const": kind.name()
                    }},
                    "required": ["kind"]
                },
                "then": {"required": kind.required_fields(), "properties": then_props}
            })
        })
        .collect();
    anchor["allOf"] = Value::Array(per_kind);
}

/// No adapter at depth `none`; each adapter's preconditions are its depth's.
fn adapter_rules(schema: &mut Value, catalog: &Catalog) {
    let adapter = at(schema, "/definitions/Adapter");
    let depth_description = description_of(&adapter["properties"]["depth"], "depth");
    adapter["properties"]["depth"] = json!({
        "description": depth_description,
        "allOf": [{"$ref": "#/definitions/Depth"}, {"not": {"const": Depth::None.name()}}]
    });
    let per_depth: Vec<Value> = Depth::ALL
        .iter()
        .filter(|&&d| d != Depth::None)
        .map(|&depth| {
            let allowed: Vec<&str> = catalog
                .depth(depth)
                .map(|s| s.preconditions.iter().map(|p| p.name()).collect())
                .unwrap_or_default();
            let preconditions = if allowed.is_empty() {
                json!({"description": format!("Depth `{depth}` has no preconditions."), "maxProperties": 0})
            } else {
                json!({
                    "description": format!("The preconditions of depth `{depth}` in the catalog."),
                    "propertyNames": {"enum": allowed}
                })
            };
            json!({
                "if": {
                    "properties": {"depth": {
                        "description": format!("The rules below apply to adapters at depth `{depth}`."),
                        "const": depth.name()
                    }},
                    "required": ["depth"]
                },
                "then": {"properties": {"preconditions": preconditions}}
            })
        })
        .collect();
    adapter["allOf"] = Value::Array(per_depth);
}

/// The loader reads `active_refusal_or_defer` as `explicit_conflict_action`
/// (a serde alias), as a value and as a map key: so must the schema.
fn obligation_alias(schema: &mut Value) {
    let (alias, name) = OBLIGATION_ALIAS;
    if let Some(values) = schema
        .pointer_mut("/definitions/Obligation/enum")
        .and_then(Value::as_array_mut)
    {
        values.push(alias.into());
    }
    add_alias_keys(schema, alias, name);
}

/// Wherever a map keyed by obligations lists `name`, lists `alias` beside it.
fn add_alias_keys(node: &mut Value, alias: &str, name: &str) {
    match node {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get_mut("properties")
                && let Some(spec) = props.get(name).cloned()
                && !props.contains_key(alias)
            {
                let spec = with_description(
                    spec,
                    &format!("Legacy name of `{name}` (read as it, never printed)."),
                );
                props.insert(alias.into(), spec);
            }
            for v in map.values_mut() {
                add_alias_keys(v, alias, name);
            }
        }
        Value::Array(items) => {
            for v in items {
                add_alias_keys(v, alias, name);
            }
        }
        _ => {}
    }
}

/// `node` with `description` set; a bare `$ref` is wrapped in `allOf`,
/// since draft-07 ignores a reference's siblings.
fn with_description(node: Value, description: &str) -> Value {
    let mut node = match node {
        Value::Object(map) if map.contains_key("$ref") => json!({"allOf": [Value::Object(map)]}),
        other => other,
    };
    if let Some(map) = node.as_object_mut() {
        map.insert("description".into(), description.into());
    }
    node
}

/// Describes every key of the enum-keyed maps at `pointer` with `template`
/// (`{}` is the key).
fn describe_maps(schema: &mut Value, maps: &[(&str, &str)]) {
    for (pointer, template) in maps {
        let props = at(schema, &format!("{pointer}/properties"))
            .as_object_mut()
            .expect("an enum-keyed map lists its keys as properties");
        for (key, node) in props.iter_mut() {
            if node.get("description").is_none() {
                *node = with_description(node.take(), &template.replace("{}", key));
            }
        }
    }
}
