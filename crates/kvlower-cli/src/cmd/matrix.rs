//! `kvlower matrix` (not implemented yet).

use std::io::Write;

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct MatrixArgs {}

pub fn run(_args: &MatrixArgs, _out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    writeln!(err, "kvlower matrix: not implemented yet")?;
    Ok(Exit::Usage)
}
