//! What a command returns: an [`Outcome`] (how it ends, its findings, its summary, its
//! payload), which the command computes without printing. Two emitters write one:
//! [`emit`] for the commands whose formats are [`Format::SIMPLE`] (human text or the
//! JSON envelope; findings shown as one line each), and [`super::report`] for the
//! shared formats (human with source line and caret, github, markdown, json, sarif).

use std::io::{self, Write};

use kvlower_codes::Finding;
use serde::Serialize;

use super::{Format, envelope_json};
use crate::Exit;

/// A command's result: the exit it ends with, the findings that stopped it (empty
/// when it ran), its one-line summary and its payload (`None` when it stopped).
#[derive(Debug)]
pub struct Outcome<P> {
    /// The command's name in the envelope and the summary (`matrix`, `bad-lowering`).
    pub command: &'static str,
    pub exit: Exit,
    pub findings: Vec<Finding>,
    pub summary: String,
    /// What failed the run without an error finding (`check --deny-warnings`): the
    /// envelope's `error`; the other formats say it in the summary.
    pub error: Option<String>,
    pub payload: Option<P>,
}

/// A command's payload: serialized as the envelope's `payload`, and written for people.
pub trait Payload: Serialize {
    /// The payload's human text, on stdout before the summary line.
    fn human(&self, out: &mut dyn Write) -> io::Result<()>;

    /// The payload's Markdown, after the summary (and the findings) of
    /// [`super::report`]'s Markdown; none unless the command has one.
    fn markdown(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }
}

impl Payload for () {
    fn human(&self, _out: &mut dyn Write) -> io::Result<()> {
        Ok(())
    }
}

impl<P> Outcome<P> {
    /// The outcome of a command stopped by `findings` before it did anything:
    /// summary `kvlower COMMAND: N finding(s)WHAT` and the exit they call for
    /// ([`Exit::stopped_by`]).
    pub fn stopped(command: &'static str, findings: Vec<Finding>, what: &str) -> Outcome<P> {
        Outcome {
            command,
            exit: Exit::stopped_by(&findings),
            summary: format!("kvlower {command}: {} finding(s){what}", findings.len()),
            findings,
            error: None,
            payload: None,
        }
    }
}

/// Writes `outcome` in `format` (`human` or `json`; any other is written as human):
/// - `json`: the shared envelope on stdout, the payload in it;
/// - `human`, with findings: each finding on stderr, then the summary on stderr;
/// - `human`, without: the payload's text, then the summary, on stdout.
///
/// Returns the outcome's exit.
pub fn emit<P: Payload>(
    format: Format,
    outcome: &Outcome<P>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Exit> {
    if format == Format::Json {
        let doc = envelope_json(
            outcome.command,
            outcome.exit,
            &outcome.summary,
            &outcome.findings,
            outcome.error.as_deref(),
            outcome.payload.as_ref(),
        );
        write!(out, "{doc}")?;
    } else if outcome.findings.is_empty() {
        if let Some(payload) = &outcome.payload {
            payload.human(out)?;
        }
        writeln!(out, "{}", outcome.summary)?;
    } else {
        for d in &outcome.findings {
            writeln!(err, "{d}")?;
        }
        writeln!(err, "{}", outcome.summary)?;
    }
    Ok(outcome.exit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvlower_codes::Code;

    #[derive(Serialize)]
    struct Rows(Vec<&'static str>);

    impl Payload for Rows {
        fn human(&self, out: &mut dyn Write) -> io::Result<()> {
            self.0.iter().try_for_each(|r| writeln!(out, "{r}"))
        }
    }

    fn emitted(format: Format, outcome: &Outcome<Rows>) -> (Exit, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = emit(format, outcome, &mut out, &mut err).unwrap_or(Exit::Error);
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (exit, text(out), text(err))
    }

    /// The stream policy holds whatever the command: a stopped outcome's findings and
    /// summary go to stderr and nothing to stdout; a finished one's payload and summary
    /// go to stdout; in JSON, one envelope on stdout with the payload in it.
    #[test]
    fn an_outcome_is_written_by_the_stream_policy() {
        let finding = Finding::new(Code::ConfigInvalid, "kvlower.toml", "not UTF-8");
        let stopped = Outcome::<Rows>::stopped("matrix", vec![finding], "; nothing written");
        let (exit, out, err) = emitted(Format::Human, &stopped);
        assert_eq!(exit, Exit::Findings);
        assert_eq!(out, "");
        assert!(err.ends_with("\nkvlower matrix: 1 finding(s); nothing written\n"));

        let done = Outcome {
            command: "matrix",
            exit: Exit::Success,
            findings: Vec::new(),
            summary: "kvlower matrix: 1 file(s) written".to_string(),
            error: None,
            payload: Some(Rows(vec!["wrote a"])),
        };
        let (exit, out, err) = emitted(Format::Human, &done);
        assert_eq!(exit, Exit::Success);
        assert_eq!(out, "wrote a\nkvlower matrix: 1 file(s) written\n");
        assert_eq!(err, "");

        let (_, out, err) = emitted(Format::Json, &done);
        assert_eq!(err, "");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(doc["payload"], serde_json::json!(["wrote a"]));
        assert_eq!(doc["ok"], serde_json::json!(true));
    }
}
