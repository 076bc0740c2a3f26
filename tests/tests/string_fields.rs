//! Issue 42, item 6: any field the generated schema types as a string takes only a YAML
//! string. The loader read `reason: true` (a YAML boolean) as the string `"true"`, so an
//! acknowledgement whose reason is no text silenced a warning while the schema, from the
//! same types, said `reason` is a string. This walks every string-typed field of both
//! generated schemas, in every committed document that has it, with a boolean, a number
//! and a null in its place: the loader refuses each (docs/descriptor-format.md).

use std::collections::BTreeSet;
use std::fs;

use serde_json::Value;

use kvlower_tests::{kvlower, repo_root, scratch_repo};

/// `node` with its `$ref` (and a one-element `allOf`) followed.
fn resolve<'a>(schema: &'a Value, node: &'a Value) -> &'a Value {
    resolve_named(schema, node).0
}

/// [`resolve`], with the name of the last definition followed.
fn resolve_named<'a>(schema: &'a Value, mut node: &'a Value) -> (&'a Value, Option<&'a str>) {
    let mut name = None;
    loop {
        if let Some(r) = node.get("$ref").and_then(Value::as_str) {
            let def = r.rsplit('/').next().expect("a definition");
            name = schema["definitions"]
                .as_object()
                .and_then(|d| d.get_key_value(def))
                .map(|(k, _)| k.as_str());
            node = &schema["definitions"][def];
        } else if let Some([one]) = node
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            && node.get("properties").is_none()
        {
            node = one;
        } else {
            return (node, name);
        }
    }
}

/// The site of `prop` of an object described by `node` at `site`: named by the object's
/// definition, so one struct field is one site wherever it appears.
fn child_site(schema: &Value, node: &Value, site: &str, prop: &str) -> String {
    match resolve_named(schema, node).1 {
        Some(def) => format!("{def}.{prop}"),
        // A map by another name (`conditional`: one key per obligation, each the same
        // list): one field, whichever key holds it.
        None if !site.is_empty() => format!("{site}.*"),
        None => format!("{site}.{prop}"),
    }
}

fn types(node: &Value) -> Vec<&str> {
    match node.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The branch of `node` (resolved, its `anyOf`/`oneOf` chosen by the value's JSON type)
/// that describes `value`.
fn branch<'a>(schema: &'a Value, node: &'a Value, value: &Value) -> Option<&'a Value> {
    let node = resolve(schema, node);
    let want = match value {
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::Null => "null",
    };
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = node.get(key).and_then(Value::as_array) {
            return options.iter().map(|o| resolve(schema, o)).find(|o| {
                types(o).contains(&want) || (want == "number" && types(o).contains(&"integer"))
            });
        }
    }
    Some(node)
}

/// The unresolved option of `node`'s `anyOf`/`oneOf` that [`branch`] chose (so its
/// definition's name is kept), or `node` itself.
fn branch_ref<'a>(schema: &'a Value, node: &'a Value, value: &Value) -> Option<&'a Value> {
    let resolved = resolve(schema, node);
    let chosen = branch(schema, node, value)?;
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = resolved.get(key).and_then(Value::as_array) {
            return options
                .iter()
                .find(|o| std::ptr::eq(resolve(schema, o), chosen));
        }
    }
    Some(node)
}

/// Every (site, path) where `value` holds a string the schema types as a string. A site
/// names the schema node (its definition and property) so coverage can be counted.
fn string_leaves(
    schema: &Value,
    node: &Value,
    value: &Value,
    site: &str,
    path: &mut Vec<PathStep>,
    out: &mut Vec<(String, Vec<PathStep>)>,
) {
    let parent = node;
    let Some(node) = branch(schema, node, value) else {
        return;
    };
    // An object branch of an `anyOf` is named by its own definition.
    let parent = if value.is_object() {
        branch_ref(schema, parent, value).unwrap_or(parent)
    } else {
        parent
    };
    match value {
        Value::String(_) if types(node).contains(&"string") => {
            out.push((site.to_string(), path.clone()))
        }
        Value::Array(items) => {
            if let Some(item) = node.get("items") {
                for (i, v) in items.iter().enumerate() {
                    path.push(PathStep::Index(i));
                    string_leaves(schema, item, v, &format!("{site}[]"), path, out);
                    path.pop();
                }
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let prop = node
                    .get("properties")
                    .and_then(|p| p.get(k))
                    .or_else(|| node.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(prop) = prop {
                    path.push(PathStep::Key(k.clone()));
                    let site = child_site(schema, parent, site, k);
                    string_leaves(schema, prop, v, &site, path, out);
                    path.pop();
                }
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Key(String),
    Index(usize),
}

fn at<'a>(doc: &'a mut Value, path: &[PathStep]) -> &'a mut Value {
    path.iter().fold(doc, |v, step| match step {
        PathStep::Key(k) => &mut v[k.as_str()],
        PathStep::Index(i) => &mut v[*i],
    })
}

/// Every string-typed property site of the schema, as [`string_leaves`] names them.
fn all_sites(schema: &Value, node: &Value, site: &str, depth: usize, out: &mut BTreeSet<String>) {
    if depth > 12 {
        return;
    }
    let resolved = resolve(schema, node);
    let mut options: Vec<&Value> = vec![node];
    for key in ["anyOf", "oneOf"] {
        if let Some(o) = resolved.get(key).and_then(Value::as_array) {
            options.extend(o.iter());
        }
    }
    for raw in options {
        let o = resolve(schema, raw);
        if types(o).contains(&"string") {
            out.insert(site.to_string());
        }
        if let Some(item) = o.get("items") {
            all_sites(schema, item, &format!("{site}[]"), depth + 1, out);
        }
        if let Some(props) = o.get("properties").and_then(Value::as_object) {
            for (k, p) in props {
                let site = child_site(schema, raw, site, k);
                all_sites(schema, p, &site, depth + 1, out);
            }
        }
    }
}

fn check_file(kind: &str, rel: &str, text: &str) -> bool {
    let mut diagnostics = Vec::new();
    match kind {
        "descriptor" => {
            kvlower_load::parse_yaml::<kvlower_core::Descriptor>(rel, text, &mut diagnostics)
                .is_some()
        }
        _ => kvlower_load::parse_yaml::<kvlower_core::catalog_doc::CatalogDoc>(
            rel,
            text,
            &mut diagnostics,
        )
        .is_some(),
    }
}

fn walk(kind: &str, schema_file: &str, files: &[String]) {
    let schema: Value =
        serde_json::from_str(&fs::read_to_string(repo_root().join(schema_file)).expect("schema"))
            .expect("json");
    let mut sites = BTreeSet::new();
    all_sites(&schema, &schema, "", 0, &mut sites);
    let mut covered = BTreeSet::new();
    let mut mutated = 0;
    let deep = kvlower_tests::cases(0, 1) == 1;
    for rel in files {
        let text = fs::read_to_string(repo_root().join(rel)).expect("read");
        let mut diagnostics = Vec::new();
        let doc: Value = kvlower_load::parse_yaml(rel, &text, &mut diagnostics).expect("yaml");
        assert!(check_file(kind, rel, &text), "{rel} loads as committed");
        let mut leaves = Vec::new();
        string_leaves(&schema, &schema, &doc, "", &mut Vec::new(), &mut leaves);
        for (site, path) in leaves {
            // Each site once in all the files (every leaf with KVLOWER_DEEP_TESTS=1): the
            // default run stays fast.
            if !covered.insert(site.clone()) && !deep {
                continue;
            }
            // A null is allowed where the schema says `["string", "null"]`: not walked.
            for wrong in [Value::Bool(true), Value::from(1), Value::from(1.5)] {
                let mut edited = doc.clone();
                *at(&mut edited, &path) = wrong.clone();
                // JSON is YAML: the edited document is read as written.
                let text = serde_json::to_string_pretty(&edited).expect("json");
                assert!(
                    !check_file(kind, rel, &text),
                    "{rel}: `{site}` took {wrong} where the schema says a string ({path:?})"
                );
                mutated += 1;
            }
        }
    }
    assert!(mutated > 0);
    let missing: Vec<&String> = sites.difference(&covered).collect();
    assert!(
        missing.is_empty(),
        "{schema_file}: string-typed fields no walked document holds (add them to a fixture): {missing:?}"
    );
}

#[test]
fn every_string_typed_field_of_the_descriptor_schema_takes_only_a_string() {
    let mut files: Vec<String> = fs::read_dir(repo_root().join("capabilities"))
        .expect("capabilities")
        .flatten()
        .map(|e| format!("capabilities/{}", e.file_name().to_string_lossy()))
        .filter(|f| f.ends_with(".yaml"))
        .collect();
    files.sort();
    // The string fields no committed descriptor uses.
    files.push("tests/fixtures/string_fields/every_field.yaml".into());
    walk("descriptor", "schemas/descriptor.schema.json", &files);
}

#[test]
fn every_string_typed_field_of_the_catalog_schema_takes_only_a_string() {
    walk(
        "catalog",
        "schemas/modes.schema.json",
        &["modes/modes.yaml".to_string()],
    );
}

/// The attack end to end: an acknowledgement whose `reason` is a YAML boolean
/// (or a number) is a `wrong-type` finding and acknowledges nothing; a quoted `'true'`
/// is a reason (text, if a poor one).
#[test]
fn an_acknowledgement_whose_reason_is_a_boolean_silences_nothing() {
    let dir = scratch_repo(&["capabilities"]);
    let name = "capabilities/sglang_hicache_bbe9c7e.yaml";
    let src = fs::read_to_string(repo_root().join(name)).expect("descriptor");
    let (head, tail) = src
        .split_once("    reason: >-\n")
        .expect("the acknowledgement");
    let rest = &tail[tail.find("\n\n").expect("the reason's end")..];
    for (reason, wrong) in [("true", true), ("1", true), ("'true'", false)] {
        let text = format!("{head}    reason: {reason}{rest}");
        fs::write(dir.path().join(name), text).expect("write");
        let run = kvlower(&[
            "check",
            "--root",
            &dir.path().display().to_string(),
            "--format",
            "json",
        ]);
        let doc: Value = serde_json::from_str(&run.stdout).expect("json");
        let found = doc["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .any(|d| d["code"] == "wrong-type" && d["yaml_path"] == "acknowledge[0].reason");
        assert_eq!(found, wrong, "reason: {reason}: {doc}");
    }
}
