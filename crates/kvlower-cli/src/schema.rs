//! JSON Schemas (draft-07, which editors' YAML support understands) for
//! descriptors and `modes.yaml`, generated from the Rust types so they can
//! never drift from what the loader accepts. Committed under `schemas/`;
//! descriptors point at theirs with a `# yaml-language-server: $schema=` line.

use kvlower_core::{CatalogDoc, Descriptor};
use schemars::generate::SchemaSettings;

use crate::results::{GeneratedFile, to_json};

pub const DESCRIPTOR_SCHEMA: &str = "schemas/descriptor.schema.json";
pub const MODES_SCHEMA: &str = "schemas/modes.schema.json";

/// The committed schema files.
pub fn files() -> Vec<GeneratedFile> {
    vec![
        GeneratedFile {
            path: DESCRIPTOR_SCHEMA,
            contents: schema_for::<Descriptor>("kvlower runtime descriptor"),
        },
        GeneratedFile {
            path: MODES_SCHEMA,
            contents: schema_for::<CatalogDoc>("kvlower mode catalog (modes/modes.yaml)"),
        },
    ]
}

fn schema_for<T: schemars::JsonSchema>(title: &str) -> String {
    let generator = SchemaSettings::draft07().into_generator();
    let mut schema = generator.into_root_schema_for::<T>();
    schema.insert("title".into(), title.into());
    to_json(&schema)
}
