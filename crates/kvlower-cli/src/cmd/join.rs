//! `kvlower join` (not implemented yet).

use std::io::Write;

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct JoinArgs {}

pub fn run(_args: &JoinArgs, _out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    writeln!(err, "kvlower join: not implemented yet")?;
    Ok(Exit::Usage)
}
