//! `kvlower completions <shell>` and `kvlower schema`: files generated from
//! the program's own definitions.

use std::io::Write;

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(
    args: &CompletionsArgs,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    let mut command = crate::command();
    // clap_complete panics when its writer fails (a closed pipe: `... | head -1`),
    // so generate into memory and write once, through the caller's error handling.
    let mut buffer = Vec::new();
    clap_complete::generate(args.shell, &mut command, "kvlower", &mut buffer);
    out.write_all(&buffer)?;
    Ok(Exit::Success)
}

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
}

pub fn run_schema(
    args: &SchemaArgs,
    out: &mut dyn Write,
    _err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    let wanted = match args.kind {
        SchemaKind::Descriptor => crate::schema::DESCRIPTOR_SCHEMA,
        SchemaKind::Modes => crate::schema::MODES_SCHEMA,
    };
    for file in crate::schema::files() {
        if file.path == wanted {
            write!(out, "{}", file.contents)?;
        }
    }
    Ok(Exit::Success)
}
