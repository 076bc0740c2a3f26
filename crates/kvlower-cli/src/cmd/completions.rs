//! `kvlower completions <shell>`: shell completions generated from the program's
//! own definitions.

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
