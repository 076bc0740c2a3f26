//! `kvlower check` (not implemented yet).

use std::io::Write;

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct CheckArgs {}

pub fn run(_args: &CheckArgs, _out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    writeln!(err, "kvlower check: not implemented yet")?;
    Ok(Exit::Usage)
}
