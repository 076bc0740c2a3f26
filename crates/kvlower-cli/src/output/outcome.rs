//! What a command returns: an [`Outcome`] (how it ends, its findings, its summary, its
//! payload, in which [`Form`]), which the command computes without printing; and
//! [`render`], the one place an outcome reaches the screen (called once per run, from
//! `lib.rs`). The stream policy of docs/output.md ("Streams") is written here, once:
//!
//! - **stdout** carries the command's result: the payload (a document, rows, verdicts)
//!   and the one-line summary, stopped or not; in a machine format (`json`, `sarif`,
//!   `markdown`, the `::error` lines of `github`) exactly one document.
//! - **stderr** carries what a person reads beside it: the findings (rendered by the
//!   shared renderers), the notes (`check -v`, stale-result diffs, deprecations) and an
//!   error that stopped the run (`error: ...`).
//! - With `--format json` every outcome is one envelope on stdout, except the join and
//!   route evidence documents, which keep their own contract ([`Payload::own_json`]).

use kvlower_codes::Finding;
use serde::Serialize;
use std::io::{self, Write};

use super::{
    ColorChoice, Format, envelope_json, escape_control, github_annotation, markdown_findings,
    md_cell, render_human, sarif,
};
use crate::Exit;

/// How an outcome is shown in the human formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A report of findings (`check`, `catalog diff`, a stopped `explain`): each finding
    /// with its source line, caret and hint on stderr, then the payload's text and the
    /// summary on stdout; Markdown and SARIF as `check` writes them.
    Report,
    /// A report whose findings are one line each (`matrix`, `bad-lowering`, `init`,
    /// `new`, `schema`: the commands whose only machine format is the envelope): the
    /// findings on stderr; the payload's text and the summary on stdout.
    Lines,
    /// A document (a schema, a code's explanation, a scaffold, `explain`'s rows, a
    /// campaign report, the join and route reports): its human text alone on stdout,
    /// its Markdown under `markdown`, its envelope (or its own JSON) under `json`.
    Document,
}

/// A command's result, computed without printing.
#[derive(Debug)]
pub struct Outcome<P> {
    /// The command's name in the envelope and the summary (`matrix`, `catalog diff`).
    pub command: String,
    pub exit: Exit,
    pub form: Form,
    pub findings: Vec<Finding>,
    pub summary: String,
    /// What failed the run without an error finding (`check --deny-warnings`, a usage
    /// error): the envelope's `error`.
    pub error: Option<String>,
    /// How the run's stopping error reads for people, on stderr, in place of the
    /// findings and the summary (`error: ...`; `error[code]: ...` for the evidence tools).
    pub refusal: Option<String>,
    pub payload: Option<P>,
    /// Lines for the person reading stderr, written first in every format (`check -v`,
    /// stale-result diffs, deprecation notes).
    pub notes: Vec<String>,
}

/// A command's payload: serialized as the envelope's `payload`, and written for people.
pub trait Payload: Serialize {
    /// The payload's human text, on stdout (before the summary of a report).
    fn human(&self) -> String;

    /// The payload's Markdown: after the summary and the findings of a report, or the
    /// whole of a document; none unless the command has one.
    fn markdown(&self) -> String {
        String::new()
    }

    /// A document with a JSON contract of its own (the join and route evidence, which
    /// `check` re-runs), written under `--format json` instead of the envelope.
    fn own_json(&self) -> Option<String> {
        None
    }
}

impl Payload for () {
    fn human(&self) -> String {
        String::new()
    }
}

/// A document that is its text in every form (a schema, completions).
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub struct Text(pub String);

impl Payload for Text {
    fn human(&self) -> String {
        self.0.clone()
    }
    fn markdown(&self) -> String {
        self.0.clone()
    }
}

impl<P> Outcome<P> {
    /// A finished run: `exit`, `summary`, `payload`, shown as `form`.
    pub fn done(command: &str, exit: Exit, form: Form, summary: String, payload: P) -> Outcome<P> {
        Outcome {
            command: command.to_owned(),
            exit,
            form,
            findings: Vec::new(),
            summary,
            error: None,
            refusal: None,
            payload: Some(payload),
            notes: Vec::new(),
        }
    }

    /// A run that ended on findings or a verdict, with no payload.
    pub fn report(
        command: &str,
        exit: Exit,
        form: Form,
        findings: Vec<Finding>,
        summary: String,
    ) -> Outcome<P> {
        Outcome {
            command: command.to_owned(),
            exit,
            form,
            findings,
            summary,
            error: None,
            refusal: None,
            payload: None,
            notes: Vec::new(),
        }
    }

    /// The outcome of a command stopped by `findings` before it did anything:
    /// summary `kvlower COMMAND: N finding(s)WHAT` and the exit they call for
    /// ([`Exit::stopped_by`]).
    pub fn stopped(command: &str, form: Form, findings: Vec<Finding>, what: &str) -> Outcome<P> {
        let summary = format!("kvlower {command}: {} finding(s){what}", findings.len());
        Outcome::report(
            command,
            Exit::stopped_by(&findings),
            form,
            findings,
            summary,
        )
    }

    /// An error that ends a command before any judgment (a usage error, exit 2; an
    /// input or output it could not use): `error: MESSAGE` on stderr, or the envelope
    /// with the message as its `error` (and the summary `kvlower COMMAND: MESSAGE`).
    pub fn error(command: &str, exit: Exit, message: &str) -> Outcome<P> {
        Outcome {
            command: command.to_owned(),
            exit,
            form: Form::Report,
            findings: Vec::new(),
            summary: format!("kvlower {command}: {message}"),
            error: Some(message.to_owned()),
            refusal: Some(format!("error: {}\n", escape_control(message))),
            payload: None,
            notes: Vec::new(),
        }
    }

    /// An evidence tool's refusal of its input: the input's coded `finding` (its code
    /// decides the exit: 2 unread, 1 malformed) in the envelope, and `human`, the text
    /// people read on stderr (`error[code]: ...`) in place of the finding.
    pub fn refused(command: &str, finding: Finding, summary: String, human: String) -> Outcome<P> {
        let exit = Exit::of_codes([finding.code]);
        Outcome::report(command, exit, Form::Report, vec![finding], summary).with_refusal(human)
    }

    /// The outcome with `human` written on stderr in place of its findings and summary.
    pub fn with_refusal(mut self, human: String) -> Outcome<P> {
        self.refusal = Some(human);
        self
    }

    /// The outcome with `notes` written first on stderr.
    pub fn with_notes(mut self, notes: Vec<String>) -> Outcome<P> {
        self.notes = notes;
        self
    }
}

/// How the run asked its outcome to be shown: the command's `--format`, `--color` and
/// `--quiet` (a command without one takes the default).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub format: Format,
    pub color: ColorChoice,
    pub quiet: bool,
}

impl Style {
    /// `format`, with colour `auto` and not quiet.
    pub fn of(format: Format) -> Style {
        Style {
            format,
            color: ColorChoice::Auto,
            quiet: false,
        }
    }
}

impl From<&super::ReportOptions> for Style {
    fn from(o: &super::ReportOptions) -> Style {
        Style {
            format: o.format,
            color: o.color,
            quiet: o.quiet,
        }
    }
}

/// Writes `outcome` as `style` asks, by the stream policy of this module's header;
/// returns its exit.
pub fn render<P: Payload>(
    style: Style,
    outcome: &Outcome<P>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<Exit> {
    for note in &outcome.notes {
        write!(err, "{note}")?;
    }
    let envelope = || {
        envelope_json(
            &outcome.command,
            outcome.exit,
            &outcome.summary,
            &outcome.findings,
            outcome.error.as_deref(),
            outcome.payload.as_ref(),
        )
    };
    match style.format {
        Format::Json => {
            let own = outcome.payload.as_ref().and_then(Payload::own_json);
            write!(out, "{}", own.unwrap_or_else(envelope))?;
            return Ok(outcome.exit);
        }
        Format::Sarif if outcome.form != Form::Document => {
            let error = outcome.refusal.as_ref().and(outcome.error.as_deref());
            write!(out, "{}", sarif(&outcome.findings, error))?;
            return Ok(outcome.exit);
        }
        _ => {}
    }
    if let Some(refusal) = &outcome.refusal {
        write!(err, "{refusal}")?;
        return Ok(outcome.exit);
    }
    match (outcome.form, outcome.payload.as_ref()) {
        (Form::Document, Some(payload)) => {
            let text = match style.format {
                Format::Markdown => payload.markdown(),
                _ => payload.human(),
            };
            write!(out, "{text}")?;
        }
        (Form::Lines, _) => {
            for d in &outcome.findings {
                writeln!(err, "{d}")?;
            }
            if let Some(payload) = outcome
                .payload
                .as_ref()
                .filter(|_| outcome.findings.is_empty())
            {
                write!(out, "{}", payload.human())?;
            }
            writeln!(out, "{}", outcome.summary)?;
        }
        (_, payload) => report(style, outcome, payload, out, err)?,
    }
    Ok(outcome.exit)
}

/// [`Form::Report`] in the formats for people and Markdown: the findings (on stderr, with
/// their source line and caret), the payload's text (unless `--quiet`) and the summary
/// line; or a Markdown summary. Each finding carries its own source line: nothing is
/// read again.
fn report<P: Payload>(
    style: Style,
    outcome: &Outcome<P>,
    payload: Option<&P>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> io::Result<()> {
    let Outcome {
        command,
        findings,
        summary,
        ..
    } = outcome;
    if style.format == Format::Markdown {
        writeln!(out, "### kvlower {command}\n")?;
        writeln!(out, "{}\n", md_cell(summary))?;
        if !style.quiet {
            if !findings.is_empty() {
                write!(out, "{}", markdown_findings(findings))?;
            }
            if let Some(payload) = payload {
                write!(out, "{}", payload.markdown())?;
            }
        }
        return Ok(());
    }
    if style.format == Format::Github {
        for d in findings {
            writeln!(out, "{}", github_annotation(d))?;
        }
    }
    if !style.quiet {
        let color = style.color.enabled();
        for d in findings {
            writeln!(err, "{}", render_human(d, color))?;
        }
        if let Some(payload) = payload {
            write!(out, "{}", payload.human())?;
        }
    }
    writeln!(out, "{}", escape_control(summary))
}

/// The screen a streaming command (`gate`) writes to as it goes: its streams are private
/// to `output/`, so a command can hand it on to the emitters here but never write to it.
pub struct Screen<'a> {
    pub(super) out: &'a mut dyn Write,
    pub(super) err: &'a mut dyn Write,
}

impl<'a> Screen<'a> {
    pub fn new(out: &'a mut dyn Write, err: &'a mut dyn Write) -> Screen<'a> {
        Screen { out, err }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvlower_codes::Code;

    #[derive(Serialize)]
    struct Rows(Vec<&'static str>);

    impl Payload for Rows {
        fn human(&self) -> String {
            self.0.iter().map(|r| format!("{r}\n")).collect()
        }
    }

    fn rendered(format: Format, outcome: &Outcome<Rows>) -> (Exit, String, String) {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let exit = render(Style::of(format), outcome, &mut out, &mut err).unwrap_or(Exit::Error);
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        (exit, text(out), text(err))
    }

    /// The stream policy holds whatever the command: a stopped outcome's findings go to
    /// stderr and its summary to stdout; a finished one's payload and summary go to
    /// stdout; in JSON, one envelope on stdout with the payload in it; an error is
    /// `error: ...` on stderr and nothing on stdout.
    #[test]
    fn an_outcome_is_written_by_the_stream_policy() {
        let finding = Finding::new(Code::ConfigInvalid, "kvlower.toml", "not UTF-8");
        let stopped =
            Outcome::<Rows>::stopped("matrix", Form::Lines, vec![finding], "; nothing written");
        let (exit, out, err) = rendered(Format::Human, &stopped);
        assert_eq!(exit, Exit::Findings);
        assert_eq!(out, "kvlower matrix: 1 finding(s); nothing written\n");
        assert!(err.contains("not UTF-8"), "{err}");

        let done = Outcome::done(
            "matrix",
            Exit::Success,
            Form::Lines,
            "kvlower matrix: 1 file(s) written".to_string(),
            Rows(vec!["wrote a"]),
        );
        let (exit, out, err) = rendered(Format::Human, &done);
        assert_eq!(exit, Exit::Success);
        assert_eq!(out, "wrote a\nkvlower matrix: 1 file(s) written\n");
        assert_eq!(err, "");

        let (_, out, err) = rendered(Format::Json, &done);
        assert_eq!(err, "");
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap_or_default();
        assert_eq!(doc["payload"], serde_json::json!(["wrote a"]));
        assert_eq!(doc["ok"], serde_json::json!(true));

        let error = Outcome::<Rows>::error("matrix", Exit::Usage, "no \u{1b} here");
        let (exit, out, err) = rendered(Format::Human, &error);
        assert_eq!((exit, out.as_str()), (Exit::Usage, ""));
        assert_eq!(err, "error: no \\u{1b} here\n");
    }
}
