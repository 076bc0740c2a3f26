//! The generated JSON Schemas describe what the loader accepts: every
//! committed descriptor validates, and the descriptors point editors at them.

use std::fs;

use kvlower_tests::repo_root;

fn validator(schema_file: &str) -> jsonschema::Validator {
    let schema: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(repo_root().join(schema_file)).expect("schema committed"),
    )
    .expect("schema is JSON");
    jsonschema::draft7::new(&schema).expect("a valid draft-07 schema")
}

fn yaml_as_json(path: &std::path::Path) -> serde_json::Value {
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
fn the_catalog_validates_against_its_schema() {
    let v = validator("schemas/modes.schema.json");
    let doc = yaml_as_json(&repo_root().join("modes/modes.yaml"));
    assert!(v.is_valid(&doc));
}

#[test]
fn the_schema_rejects_what_the_loader_rejects() {
    let v = validator("schemas/descriptor.schema.json");
    let mut doc = yaml_as_json(&repo_root().join("capabilities/vllm_patched.yaml"));
    doc["runtime"]["colour"] = "red".into();
    assert!(!v.is_valid(&doc), "unknown field");
    let mut doc = yaml_as_json(&repo_root().join("capabilities/vllm_patched.yaml"));
    doc["native"][0]["obligation"] = "claim_identiy".into();
    assert!(!v.is_valid(&doc), "unknown obligation");
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
