//! `kvlower completions <shell>`: shell completions generated from the program's
//! own definitions.

use crate::Exit;
use crate::output::{Form, Outcome, Text};

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(args: &CompletionsArgs) -> anyhow::Result<Outcome<Text>> {
    let mut command = crate::command();
    // clap_complete panics when its writer fails (a closed pipe: `... | head -1`),
    // so generate into memory; the renderer writes it once.
    let mut buffer = Vec::new();
    clap_complete::generate(args.shell, &mut command, "kvlower", &mut buffer);
    let text = String::from_utf8(buffer)?;
    let summary = format!("kvlower completions: {}", args.shell);
    Ok(Outcome::done(
        "completions",
        Exit::Success,
        Form::Document,
        summary,
        Text(text),
    ))
}
