//! `kvlower schema`: the JSON Schema for descriptors or modes.yaml, generated from
//! the program's own definitions.

use std::path::PathBuf;

use crate::Exit;
use crate::output::{Form, Outcome, Text};

/// Which schema `kvlower schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SchemaKind {
    Descriptor,
    Modes,
}

#[derive(Debug, clap::Args)]
pub struct SchemaArgs {
    /// The schema to print (both are committed under schemas/ by `kvlower matrix`)
    #[arg(value_enum, default_value_t = SchemaKind::Descriptor)]
    pub kind: SchemaKind,
    /// Repository root: the descriptor schema follows its modes/modes.yaml (which
    /// preconditions belong to which depth); the built-in catalog when it has none
    /// [default: the nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
}

/// The schema asked for, as a document; an invalid catalog stops it (its findings one
/// line each, nothing printed on stdout but the summary).
pub fn run(args: &SchemaArgs) -> anyhow::Result<Outcome<Text>> {
    let wanted = match args.kind {
        SchemaKind::Descriptor => crate::schema::DESCRIPTOR_SCHEMA,
        SchemaKind::Modes => crate::schema::MODES_SCHEMA,
    };
    let catalog = if kvlower_fs::inspect::exists(&args.root.join(kvlower_load::MODES_PATH)) {
        let mut diagnostics = Vec::new();
        match kvlower_load::load_catalog(&args.root, &mut diagnostics) {
            Some(catalog) => catalog,
            None => {
                let summary = "kvlower schema: the catalog is invalid; nothing printed";
                let exit = Exit::stopped_by(&diagnostics);
                let form = Form::Lines;
                return Ok(Outcome::report(
                    "schema",
                    exit,
                    form,
                    diagnostics,
                    summary.into(),
                ));
            }
        }
    } else {
        kvlower_core::Catalog::new(kvlower_core::baseline::doc())
            .map_err(|_| anyhow::anyhow!("the built-in baseline catalog does not validate"))?
    };
    let text: String = crate::schema::files(&catalog)
        .into_iter()
        .filter(|file| file.path == wanted)
        .map(|file| file.contents)
        .collect();
    let summary = format!("kvlower schema: {wanted}");
    Ok(Outcome::done(
        "schema",
        Exit::Success,
        Form::Document,
        summary,
        Text(text),
    ))
}
