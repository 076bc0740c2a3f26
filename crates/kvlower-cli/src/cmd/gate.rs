//! `kvlower gate` (not implemented yet).

use std::io::Write;

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct GateArgs {}

pub fn run(_args: &GateArgs, _out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    writeln!(err, "kvlower gate: not implemented yet")?;
    Ok(Exit::Usage)
}
