//! The `kvlower` command line, as a library so tests can run it in-process.
//!
//! Exit codes (docs/output.md, "Exit codes"; stable, as ruff's and conftest's):
//! - `0` everything evaluated and valid (a failing row or gate is a verdict, not an error);
//! - `1` findings: content kvlower read and judged (an invalid descriptor, a stale
//!   generated result, a malformed trace line, a failing gate with `--fail-on fail`);
//! - `2` kvlower could not do its job: a usage error (or nothing to check), an input it
//!   could not read (missing, unreadable, refused: not a regular file, over its cap,
//!   outside the root; an unreachable publisher, an unwritable output), or an internal
//!   error.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};

use ctx::Ctx;
use output::{Format, Outcome, Style};

pub mod cmd;
pub mod compare;
pub mod config;
pub mod ctx;
pub mod generated;
pub mod html_page;
pub mod human;
pub mod layout;
pub mod opening;
pub mod output;
pub mod pin;
pub mod readme;
pub mod results;
pub mod schema;
pub mod suites;
pub mod validity;
pub mod write_guard;

/// The documented exit status of a kvlower run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything evaluated; all inputs valid and all results fresh.
    Success,
    /// At least one finding about content kvlower read (invalid input, stale
    /// result, malformed trace).
    Findings,
    /// The command line was wrong, or there was nothing to check.
    Usage,
    /// An input could not be read (missing, unreadable or refused), or kvlower
    /// itself failed: the verdict is unknown, not negative.
    Error,
}

impl Exit {
    pub fn as_u8(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Findings => 1,
            Exit::Usage | Exit::Error => 2,
        }
    }

    /// The exit of a run whose failing findings have these codes: [`Exit::Error`]
    /// when one says an input could not be read ([`kvlower_codes::Code::is_unread_input`]),
    /// else [`Exit::Findings`] when there is any, else [`Exit::Success`].
    pub fn of_codes(codes: impl IntoIterator<Item = kvlower_codes::Code>) -> Exit {
        let mut exit = Exit::Success;
        for code in codes {
            if code.is_unread_input() {
                return Exit::Error;
            }
            exit = Exit::Findings;
        }
        exit
    }

    /// The exit of a run that stops on `diagnostics` (nothing judged or written):
    /// [`Exit::Error`] when one says an input could not be read, else [`Exit::Findings`].
    pub fn stopped_by(diagnostics: &[kvlower_codes::Finding]) -> Exit {
        if diagnostics.iter().any(|d| d.code.is_unread_input()) {
            Exit::Error
        } else {
            Exit::Findings
        }
    }

    /// [`Exit::of_codes`] of the errors (not the warnings) among `diagnostics`.
    pub fn of_diagnostics(diagnostics: &[kvlower_codes::Finding]) -> Exit {
        Exit::of_codes(
            diagnostics
                .iter()
                .filter(|d| !d.is_warning())
                .map(|d| d.code),
        )
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "kvlower",
    version,
    about = "Decides, fail-closed, whether an LLM serving runtime supplies the obligations of a ResidentClaim mode"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Make a directory a kvlower repository: kvlower.toml, the baseline catalog, capabilities/ and schemas/
    Init(cmd::init::InitArgs),
    /// Validate descriptors and check that every generated result is fresh (never writes)
    Check(cmd::check::CheckArgs),
    /// Explain, row by row, why each mode got its label for one descriptor
    Explain(cmd::explain::ExplainArgs),
    /// Write a descriptor scaffold for a new runtime (every row starts unknown)
    New(cmd::new::NewArgs),
    /// Print the JSON Schema for descriptors or modes.yaml
    Schema(cmd::schema::SchemaArgs),
    /// Print shell completions
    Completions(cmd::completions::CompletionsArgs),
    /// List the stable diagnostic codes
    Codes(cmd::codes::CodesArgs),
    /// Explain one diagnostic code
    ExplainCode(cmd::codes::ExplainCodeArgs),
    /// Regenerate the lowering matrix and the other results under results/
    Matrix(cmd::matrix::MatrixArgs),
    /// Evaluate runtime event traces (JSON Lines) against the claim-scoped gates
    Gate(cmd::gate::GateArgs),
    /// Join a claim registry to a runtime's KV event stream (telemetry_join evidence)
    Join(cmd::join::JoinArgs),
    /// Judge a routing trace per accepted claim: route cost, placement and reuse (routing_hook evidence)
    Route(cmd::route::RouteArgs),
    /// Compare modes/modes.yaml with the built-in baseline catalog (`catalog diff`)
    Catalog(cmd::catalog::CatalogArgs),
    /// Record a runtime's raw KV-event stream (ZMQ) into a capture file for `join`
    Capture(cmd::capture::CaptureArgs),
    /// Run the bad-lowering counterexamples (bad_lowering/*.yaml) through the real checker and gate
    BadLowering(cmd::bad_lowering::BadLoweringArgs),
    /// Compare a live set-up's fresh evidence folder with the committed one (first differing file and line)
    ReproduceDiff(cmd::reproduce::ReproduceArgs),
}

/// The clap definition of the command line (for completions).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Runs kvlower with `args` (including the program name), writing to `out` and `err`.
pub fn run<I, T>(args: I, out: &mut dyn Write, err: &mut dyn Write) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    run_in(Path::new("."), args, out, err)
}

/// [`run`] as if started in the directory `start`: the root is found by walking up
/// from it when `--root` is not given, and relative paths on the command line
/// (`--root`, `check`'s descriptors, `explain`'s descriptor) are relative to it.
/// What the tests use to run kvlower "from a subfolder" in-process.
pub fn run_in<I, T>(start: &Path, args: I, out: &mut dyn Write, err: &mut dyn Write) -> Exit
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let format = std::env::var_os(FORMAT_ENV);
    run_with(start, args, format.as_deref(), out, err)
}

/// The environment variable that sets `--format` of every command that has one
/// (like `RUFF_OUTPUT_FORMAT`); a `--format` on the command line wins, and a
/// command without that format ignores it.
pub const FORMAT_ENV: &str = "KVLOWER_OUTPUT_FORMAT";

/// [`run`] with the value of [`FORMAT_ENV`] given (tests set it without touching
/// the process environment).
pub fn run_with_env_format(
    args: Vec<OsString>,
    env_format: Option<&std::ffi::OsStr>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    run_with(Path::new("."), args, env_format, out, err)
}

/// [`run_in`] with the value of [`FORMAT_ENV`] given.
fn run_with(
    start: &Path,
    args: Vec<OsString>,
    env_format: Option<&std::ffi::OsStr>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let args = match env_format {
        Some(value) if !value.is_empty() => {
            // A value no command has is a typo in CI configuration: said, then ignored
            // (a format another command has is ignored without a word, docs/output.md).
            let known = value
                .to_str()
                .is_some_and(|v| Format::ALL.iter().any(|f| f.name() == v));
            if !known {
                let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
                let _ = writeln!(
                    err,
                    "warning: {FORMAT_ENV}=`{}` is no format of any kvlower command ({}); ignored",
                    output::escape_control(&value.to_string_lossy()),
                    names.join(", ")
                );
            }
            with_env_format(args, value)
        }
        _ => args,
    };
    let parsed = command()
        .try_get_matches_from(&args)
        .and_then(|m| Ok((<Cli as clap::FromArgMatches>::from_arg_matches(&m)?, m)));
    let cli = match parsed {
        Ok((mut cli, matches)) => {
            locate(&mut cli, &matches, start);
            cli
        }
        Err(e) => {
            let is_info = matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            );
            let rendered = e.render().to_string();
            if is_info {
                let _ = write!(out, "{rendered}");
                return Exit::Success;
            }
            // Asked for JSON: a usage error is a JSON document too (on stdout),
            // with clap's message also on stderr for the person reading the log.
            if wants_json(&args) {
                let message = rendered.lines().next().unwrap_or("usage error");
                let message = message.strip_prefix("error: ").unwrap_or(message);
                let usage = Outcome::<()>::error(&command_name(&args), Exit::Usage, message);
                let _ = output::render(Style::of(Format::Json), &usage, out, err);
            }
            let _ = write!(err, "{rendered}");
            return Exit::Usage;
        }
    };
    // A reader that goes away (`kvlower check | head -1`) must not change the verdict:
    // the writers swallow a closed pipe, and the command still returns its real exit.
    let mut out = PipeSafe::new(out);
    let mut err = PipeSafe::new(err);
    let (out, err): (&mut dyn Write, &mut dyn Write) = (&mut out, &mut err);
    let result = match &cli.command {
        Command::Init(a) => show(Style::of(a.format), cmd::init::run(a), out, err),
        Command::Check(a) => show(a.style(), cmd::check::run(a, &Ctx::new(&a.root)), out, err),
        Command::Matrix(a) => show(
            Style::of(a.format),
            cmd::matrix::run(a, &Ctx::new(&a.root)),
            out,
            err,
        ),
        Command::Explain(a) => show(
            (&a.report).into(),
            cmd::explain::run(a, &Ctx::new(&a.root)),
            out,
            err,
        ),
        Command::New(a) => show(Style::of(a.format), cmd::new::run(a), out, err),
        Command::Schema(a) => show(Style::of(Format::Human), cmd::schema::run(a), out, err),
        Command::Completions(a) => {
            show(Style::of(Format::Human), cmd::completions::run(a), out, err)
        }
        Command::Codes(a) => show(Style::of(a.format), cmd::codes::run_codes(a), out, err),
        Command::ExplainCode(a) => show(
            Style::of(a.format),
            cmd::codes::run_explain_code(a),
            out,
            err,
        ),
        Command::Gate(a) => gate(a, out, err),
        Command::Join(a) => {
            let style = Style::of(cmd::join::output_format(a));
            show(style, cmd::join::run(a), out, err)
        }
        Command::Route(a) => show(Style::of(a.format), cmd::route::run(a), out, err),
        Command::Capture(a) => {
            // The one line capture says while it runs: a publisher's test waits for it.
            let mut announce = || {
                let _ = writeln!(err, "kvlower capture: subscribed");
                let _ = err.flush();
            };
            let outcome = cmd::capture::run(a, &mut announce);
            show(Style::of(a.format), outcome, out, err)
        }
        Command::BadLowering(a) => show(
            Style::of(a.format),
            cmd::bad_lowering::run(a, &Ctx::new(&a.root)),
            out,
            err,
        ),
        Command::ReproduceDiff(a) => {
            show(Style::of(Format::Human), cmd::reproduce::run(a), out, err)
        }
        Command::Catalog(a) => show(cmd::catalog::style(a), cmd::catalog::run(a), out, err),
    };
    match result {
        Ok(exit) => exit,
        Err(e) => {
            // An internal error or an I/O failure outside the inputs (an unwritable
            // results/, ...): exit 2, and under `--format json` still one envelope on stdout.
            let message = format!("{e:#}");
            let format = if wants_json(&args) {
                Format::Json
            } else {
                Format::Human
            };
            let failed = Outcome::<()>::error(&command_name(&args), Exit::Error, &message);
            let _ = output::render(Style::of(format), &failed, out, err);
            Exit::Error
        }
    }
}

/// Renders a command's outcome: the one place a command's result reaches the screen
/// ([`output::render`], by the stream policy of docs/output.md).
fn show<P: output::Payload>(
    style: Style,
    outcome: anyhow::Result<Outcome<P>>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    Ok(output::render(style, &outcome?, out, err)?)
}

/// `gate`, the one command that streams: its verdicts reach the screen trace by trace
/// through [`output::Screen`] (whose streams only `output/` can write); `--campaign`
/// and the errors before the first trace are outcomes like every command's.
fn gate(
    args: &cmd::gate::GateArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Exit> {
    // Diagnostics are many short lines: one write each would be one system call each.
    // (stdout comes buffered from `main`.)
    let mut err = std::io::BufWriter::with_capacity(1 << 16, err);
    let ran = cmd::gate::run(args, &mut output::Screen::new(out, &mut err));
    let exit = match ran? {
        cmd::gate::GateRun::Streamed(exit) => exit,
        cmd::gate::GateRun::Stopped(outcome) => {
            output::render((&args.report).into(), &outcome, out, &mut err)?
        }
        cmd::gate::GateRun::Campaign(outcome) => {
            output::render((&args.report).into(), &outcome, out, &mut err)?
        }
    };
    err.flush()?;
    Ok(exit)
}

/// Resolves the root of every command that has one ([`config::resolve_root`]:
/// `--root` when given, else found by walking up from `start`) and makes the
/// command's own paths relative to `start`.
fn locate(cli: &mut Cli, matches: &clap::ArgMatches, start: &Path) {
    let Some((_, sub)) = matches.subcommand() else {
        return;
    };
    let explicit = |m: &clap::ArgMatches| {
        m.value_source("root") == Some(clap::parser::ValueSource::CommandLine)
    };
    let resolve = |root: &mut PathBuf, m: &clap::ArgMatches| {
        *root = config::resolve_root(explicit(m).then_some(root.as_path()), start);
    };
    match &mut cli.command {
        Command::Check(a) => {
            resolve(&mut a.root, sub);
            for path in &mut a.descriptors {
                *path = config::join(start, path);
            }
        }
        Command::Matrix(a) => resolve(&mut a.root, sub),
        Command::Init(a) => a.dir = config::join(start, &a.dir),
        Command::Explain(a) => {
            resolve(&mut a.root, sub);
            a.descriptor = config::join(start, &a.descriptor);
        }
        Command::Gate(a) => {
            resolve(&mut a.root, sub);
            if let Some(doc) = &mut a.campaign {
                *doc = config::join(start, doc);
            }
        }
        Command::New(a) => resolve(&mut a.root, sub),
        Command::Schema(a) => resolve(&mut a.root, sub),
        Command::BadLowering(a) => resolve(&mut a.root, sub),
        Command::ReproduceDiff(a) => {
            a.committed = config::join(start, &a.committed);
            a.fresh = config::join(start, &a.fresh);
        }
        Command::Catalog(a) => {
            let cmd::catalog::CatalogCommand::Diff(d) = &mut a.command;
            if let Some((_, verb)) = sub.subcommand() {
                resolve(&mut d.root, verb);
            }
        }
        _ => {}
    }
}

/// Inserts `--format VALUE` right after the subcommand (`catalog diff` with its
/// verb) when that command takes `--format` and the command line gives none.
fn with_env_format(mut args: Vec<OsString>, value: &std::ffi::OsStr) -> Vec<OsString> {
    let given = args
        .iter()
        .skip(1)
        .any(|a| a == "--format" || a.to_str().is_some_and(|a| a.starts_with("--format=")));
    if given {
        return args;
    }
    let root = command();
    let mut cmd = &root;
    let mut at = 1;
    while let Some(word) = args.get(at).and_then(|a| a.to_str()) {
        match cmd.find_subcommand(word) {
            Some(sub) => {
                cmd = sub;
                at += 1;
            }
            None => break,
        }
    }
    // Only where the command has a `--format` that takes this value: a format the
    // command does not have (`sarif` for `explain`) is ignored, not a usage error.
    let takes_format = at > 1
        && cmd
            .get_arguments()
            .find(|a| a.get_long() == Some("format"))
            .is_some_and(|a| {
                value
                    .to_str()
                    .is_some_and(|v| a.get_possible_values().iter().any(|p| p.matches(v, false)))
            });
    if takes_format {
        let mut flag = OsString::from("--format=");
        flag.push(value);
        args.insert(at, flag);
    }
    args
}

/// The subcommand named on the command line (`catalog diff` with its verb), for
/// the envelope of a run that ended before the command could say it.
fn command_name(args: &[OsString]) -> String {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map_while(|a| a.to_str())
        .take_while(|a| !a.starts_with('-'))
        .take(2)
        .collect();
    match words.as_slice() {
        ["catalog", verb, ..] => format!("catalog {verb}"),
        [command, ..] => (*command).to_string(),
        [] => "kvlower".to_string(),
    }
}

/// Whether the command line asks for `--format json` (looked up before parsing
/// succeeds, so a usage error can still answer in JSON).
fn wants_json(args: &[OsString]) -> bool {
    args.iter()
        .zip(args.iter().skip(1))
        .any(|(a, b)| a == "--format" && b == "json")
        || args.iter().any(|a| a == "--format=json")
}

/// A writer that treats a closed pipe as "nobody is reading any more": the
/// write is dropped and reported as done, so the command runs to its verdict
/// and exits with its real code (1 for findings), never 0 because a reader left.
/// Every other I/O error is passed through.
pub struct PipeSafe<'a> {
    inner: &'a mut dyn Write,
    closed: bool,
}

impl<'a> PipeSafe<'a> {
    pub fn new(inner: &'a mut dyn Write) -> PipeSafe<'a> {
        PipeSafe {
            inner,
            closed: false,
        }
    }

    /// Whether the reader closed the pipe.
    pub fn closed(&self) -> bool {
        self.closed
    }
}

impl Write for PipeSafe<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        match self.inner.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(buf.len())
            }
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.closed {
            return Ok(());
        }
        match self.inner.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}
