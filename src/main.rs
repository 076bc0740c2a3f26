//! The `kvlower` binary (the root package): a thin shell over [`kvlower_cli::run`].

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    // Buffered: a campaign's verdicts are many short lines, and the locked stdout
    // alone is line-buffered (one write per line). Flushed below, on every exit.
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let mut err = stderr.lock();
    let code = kvlower_cli::run(std::env::args_os(), &mut out, &mut err);
    // A closed pipe (`kvlower matrix | head`) is not an error worth reporting.
    let _ = out.flush();
    ExitCode::from(code.as_u8())
}
