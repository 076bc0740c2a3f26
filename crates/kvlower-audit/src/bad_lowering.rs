//! The bad-lowering suite (paper §9, Table 9; the list in
//! `docs/model.md`, "What the committed results reproduce"): feature-table
//! inferences a less strict study might call supported, each checked by the
//! REAL checker or the REAL gate.
//!
//! One data file per counterexample in `bad_lowering/` (YAML): the naive
//! inference, the expected result, why, and what it rests on — a small inline
//! descriptor fragment judged by `kvlower_core::judge` against the real
//! `modes/modes.yaml` catalog, or small synthetic JSON Lines traces evaluated by
//! `kvlower_trace::evaluate_reader`. The caller hands in the files' contents;
//! this module parses (through `kvlower_yaml`, the only YAML entry point)
//! and judges, and never reads the file system itself.
//!
//! `block_removed → claim_harm` is an *obligation* claim, not a mode row, so it
//! is modelled as `signal_as_obligation`: the fragment's only evidence for the
//! obligation is the signal, and the case is an `invalid_lowering_claim` when
//! the obligation stays unsatisfied in every row (every mode whose bundle holds
//! it, every row depth) while the signal itself is anchored — signals never
//! satisfy obligations (fail-closed rule 1).

use std::fmt::Write as _;

use kvlower_core::{
    Catalog, Depth, Descriptor, Environment, Label, Mode, Obligation, Signal, judge, row_depths,
};
use kvlower_trace::{TraceGate, evaluate_reader};
use serde::{Deserialize, Serialize};

use crate::explain;
use crate::render::{cell, to_json};

/// One counterexample file, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    pub id: String,
    pub naive_inference: String,
    pub expected: Outcome,
    pub why: String,
    /// Where the counterexample comes from (paper section/table).
    #[serde(default)]
    pub source: String,
    pub check: CheckSpec,
}

/// What a case runs through, as written: exactly one of the three keys.
///
/// (A struct of options rather than an enum: serde_yaml would otherwise demand
/// YAML tags such as `!descriptor_row`, which hand-written data should not need.)
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    #[serde(default)]
    pub descriptor_row: Option<DescriptorRow>,
    #[serde(default)]
    pub signal_as_obligation: Option<SignalAsObligation>,
    #[serde(default)]
    pub connector_gate: Option<ConnectorGate>,
}

/// Judge one row of the fragment.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DescriptorRow {
    pub mode: Mode,
    pub depth: Depth,
    pub descriptor: Box<Descriptor>,
}

/// A signal proposed as an obligation (see the module docs).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignalAsObligation {
    pub signal: Signal,
    pub obligation: Obligation,
    pub descriptor: Box<Descriptor>,
}

/// Evaluate traces with the connector gate; every trace must be well formed,
/// no row of any trace may pass any of `gates`, and each trace's expected
/// controls must be recognised (so it is rejected for the right reason).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConnectorGate {
    pub gates: Vec<String>,
    pub traces: Vec<TraceCase>,
}

/// What a case runs through.
#[derive(Debug, Clone, Copy)]
pub enum Check<'a> {
    DescriptorRow(&'a DescriptorRow),
    SignalAsObligation(&'a SignalAsObligation),
    ConnectorGate(&'a ConnectorGate),
}

impl CheckSpec {
    /// The one check the spec names, or why it does not name exactly one.
    pub fn check(&self) -> Result<Check<'_>, String> {
        let found: Vec<Check<'_>> = [
            self.descriptor_row.as_ref().map(Check::DescriptorRow),
            self.signal_as_obligation
                .as_ref()
                .map(Check::SignalAsObligation),
            self.connector_gate.as_ref().map(Check::ConnectorGate),
        ]
        .into_iter()
        .flatten()
        .collect();
        match found.as_slice() {
            [one] => Ok(*one),
            _ => Err(format!(
                "`check` must name exactly one of descriptor_row, signal_as_obligation, connector_gate (found {})",
                found.len()
            )),
        }
    }
}

/// One synthetic trace of a gate case.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceCase {
    pub name: String,
    /// Control names (`wrong_claim_failure`, …) the gate must report for this trace.
    #[serde(default)]
    pub expect_controls: Vec<String>,
    pub jsonl: String,
}

kvlower_core::names! {
    /// A case's result.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
    pub enum Outcome {
        NativeSound = "native_sound",
        SoundWithAdapter = "sound_with_adapter",
        Rejected = "rejected",
        Approximate = "approximate",
        Unknown = "unknown",
        /// A signal proposed as an obligation, which it can never satisfy.
        InvalidLoweringClaim = "invalid_lowering_claim",
        /// The obligation was satisfied after all (the claim would be valid).
        ValidLoweringClaim = "valid_lowering_claim",
        /// No signal or no mode to test the claim against: the case proves nothing.
        VacuousClaim = "vacuous_claim",
        RejectedByConnectorGate = "rejected_by_connector_gate",
        AcceptedByConnectorGate = "accepted_by_connector_gate",
        /// The gate rejected the trace, but without recognising the expected control.
        RejectedWithoutExpectedControl = "rejected_without_expected_control",
        /// A trace has diagnostics: its rejection would prove nothing.
        MalformedTrace = "malformed_trace",
        /// The case file itself could not be read.
        CaseError = "case_error",
    }
}

impl From<Label> for Outcome {
    fn from(l: Label) -> Outcome {
        match l {
            Label::NativeSound => Outcome::NativeSound,
            Label::SoundWithAdapter => Outcome::SoundWithAdapter,
            Label::Rejected => Outcome::Rejected,
            Label::Approximate => Outcome::Approximate,
            Label::Unknown => Outcome::Unknown,
        }
    }
}

/// One data file's contents, as handed in by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseSource {
    /// Relative to the repository root (`bad_lowering/01_….yaml`).
    pub path: String,
    pub contents: String,
}

/// One case's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub file: String,
    pub naive_inference: String,
    /// `None` when the file could not be read.
    pub expected: Option<Outcome>,
    pub actual: Outcome,
    pub pass: bool,
    pub why: String,
    /// What the checker or gate said, line by line.
    pub explanation: Vec<String>,
}

/// The whole suite.
#[derive(Debug, Clone)]
pub struct BadLowering {
    pub cases: Vec<CaseResult>,
}

/// Runs every case (sorted by file path).
pub fn run(catalog: &Catalog, sources: &[CaseSource], env: &dyn Environment) -> BadLowering {
    let mut sources: Vec<&CaseSource> = sources.iter().collect();
    sources.sort_by(|a, b| a.path.cmp(&b.path));
    let cases = sources
        .into_iter()
        .map(|s| run_case(catalog, s, env))
        .collect();
    BadLowering { cases }
}

fn run_case(catalog: &Catalog, source: &CaseSource, env: &dyn Environment) -> CaseResult {
    let case: CaseFile = match kvlower_yaml::from_str(&source.contents) {
        Ok(case) => case,
        Err(e) => {
            let stem = source
                .path
                .rsplit('/')
                .next()
                .unwrap_or(&source.path)
                .to_string();
            let at = e
                .location
                .map_or(String::new(), |(l, c)| format!(" at {l}:{c}"));
            return CaseResult {
                id: stem,
                file: source.path.clone(),
                naive_inference: String::new(),
                expected: None,
                actual: Outcome::CaseError,
                pass: false,
                why: String::new(),
                explanation: vec![format!(
                    "cannot read the case{at}: {} ({})",
                    e.message, e.path
                )],
            };
        }
    };
    let (actual, explanation) = match case.check.check() {
        Ok(check) => evaluate(catalog, check, env),
        Err(e) => (Outcome::CaseError, vec![e]),
    };
    CaseResult {
        pass: actual == case.expected,
        id: case.id,
        file: source.path.clone(),
        naive_inference: case.naive_inference,
        expected: Some(case.expected),
        actual,
        why: case.why,
        explanation,
    }
}

/// Runs one check through the real checker or gate.
pub fn evaluate(
    catalog: &Catalog,
    check: Check<'_>,
    env: &dyn Environment,
) -> (Outcome, Vec<String>) {
    match check {
        Check::DescriptorRow(r) => {
            let j = judge(catalog, &r.descriptor, r.mode, r.depth, env);
            (j.label.into(), explain::judgment(&j))
        }
        Check::SignalAsObligation(s) => {
            signal_as_obligation(catalog, s.signal, s.obligation, &s.descriptor, env)
        }
        Check::ConnectorGate(g) => connector_gate(&g.gates, &g.traces),
    }
}

fn signal_as_obligation(
    catalog: &Catalog,
    signal: Signal,
    obligation: Obligation,
    d: &Descriptor,
    env: &dyn Environment,
) -> (Outcome, Vec<String>) {
    let mut lines = Vec::new();
    let anchored = d.signals.iter().any(|s| {
        s.signal == signal
            && kvlower_core::anchor_counts(
                catalog,
                &s.anchor,
                kvlower_core::AnchorUse::Signal,
                &d.runtime,
                env,
            )
            .is_empty()
    });
    lines.push(format!(
        "signal {signal} is {} in the fragment; it is proposed as obligation {obligation} ({})",
        if anchored { "anchored" } else { "NOT anchored" },
        obligation.code()
    ));
    let mut rows = 0;
    let mut satisfied_somewhere = false;
    for &mode in Mode::ALL {
        if !catalog.bundle(mode).contains(&obligation) {
            continue;
        }
        for depth in row_depths(d) {
            rows += 1;
            let j = judge(catalog, d, mode, depth, env);
            let finding = j.obligations.iter().find(|f| f.obligation == obligation);
            match finding.and_then(|f| f.satisfied_by.as_ref()) {
                Some(e) => {
                    satisfied_somewhere = true;
                    lines.push(format!(
                        "{mode}@{depth}: {obligation} satisfied by {} — the claim would hold",
                        e.path
                    ));
                }
                None => lines.push(format!(
                    "{mode}@{depth}: {obligation} not satisfied (row {}); the signal is not evidence",
                    j.label
                )),
            }
        }
    }
    let outcome = if satisfied_somewhere {
        Outcome::ValidLoweringClaim
    } else if !anchored || rows == 0 {
        Outcome::VacuousClaim
    } else {
        Outcome::InvalidLoweringClaim
    };
    (outcome, lines)
}

fn connector_gate(gate_names: &[String], traces: &[TraceCase]) -> (Outcome, Vec<String>) {
    let mut lines = Vec::new();
    let mut gates = Vec::new();
    for name in gate_names {
        match TraceGate::from_name(name) {
            Some(g) => gates.push(g),
            None => {
                lines.push(format!("unknown gate `{name}`"));
                return (Outcome::CaseError, lines);
            }
        }
    }
    if gates.is_empty() || traces.is_empty() {
        lines.push("a gate case needs at least one gate and one trace".into());
        return (Outcome::CaseError, lines);
    }
    let mut outcome = Outcome::RejectedByConnectorGate;
    for t in traces {
        let report = evaluate_reader(&t.name, t.jsonl.as_bytes());
        lines.extend(explain::trace(&t.name, &report, &gates));
        let recognised: Vec<&str> = report
            .claims
            .iter()
            .flat_map(|c| c.controls_rejected.iter().map(|c| c.name()))
            .collect();
        let this = if !report.is_valid() {
            Outcome::MalformedTrace
        } else if report
            .claims
            .iter()
            .any(|c| gates.iter().any(|g| c.passes(*g)))
        {
            Outcome::AcceptedByConnectorGate
        } else if t
            .expect_controls
            .iter()
            .any(|c| !recognised.contains(&c.as_str()))
        {
            lines.push(format!(
                "  expected controls not all recognised: {}",
                t.expect_controls.join(", ")
            ));
            Outcome::RejectedWithoutExpectedControl
        } else {
            Outcome::RejectedByConnectorGate
        };
        if this != Outcome::RejectedByConnectorGate && outcome == Outcome::RejectedByConnectorGate {
            outcome = this;
        }
    }
    (outcome, lines)
}

impl BadLowering {
    pub fn passing(&self) -> usize {
        self.cases.iter().filter(|c| c.pass).count()
    }

    pub fn summary(&self) -> String {
        format!(
            "{}/{} counterexamples as expected",
            self.passing(),
            self.cases.len()
        )
    }

    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.cases.is_empty() {
            out.push("bad-lowering suite: no cases found in bad_lowering/".to_string());
        }
        for c in self.cases.iter().filter(|c| !c.pass) {
            out.push(format!(
                "bad-lowering suite: {} ({}): expected {}, got {}",
                c.id,
                c.file,
                c.expected
                    .map_or("(unreadable)".to_string(), |e| e.to_string()),
                c.actual
            ));
        }
        out
    }

    /// `results/bad-lowering-counterexamples.json`.
    pub fn json(&self) -> String {
        #[derive(Serialize)]
        struct Doc<'a> {
            schema_version: u32,
            cases: &'a [CaseResult],
            summary: String,
        }
        to_json(&Doc {
            schema_version: crate::SCHEMA_VERSION,
            cases: &self.cases,
            summary: self.summary(),
        })
    }

    /// `results/bad-lowering-counterexamples.md`.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        md.push_str("# Bad-lowering counterexamples\n\n");
        md.push_str("Generated by `kvlower matrix` (or `kvlower bad-lowering`) from `bad_lowering/*.yaml`; do not edit.\n");
        md.push_str("Each feature-table inference runs through the real checker (a small descriptor fragment judged\n");
        md.push_str(
            "against `modes/modes.yaml`) or the real connector gate (small synthetic traces).\n\n",
        );
        let _ = writeln!(md, "**{}.**\n", self.summary());
        md.push_str("| case | naive inference | expected | actual | pass | why it fails |\n");
        md.push_str("|---|---|---|---|---|---|\n");
        for c in &self.cases {
            let _ = writeln!(
                md,
                "| `{}` | {} | {} | {} | {} | {} |",
                c.id,
                cell(&c.naive_inference),
                c.expected.map_or("—".to_string(), |e| e.to_string()),
                c.actual,
                if c.pass { "yes" } else { "**NO**" },
                cell(&c.why)
            );
        }
        md.push_str("\n## Explanations\n");
        for c in &self.cases {
            let _ = writeln!(md, "\n### `{}` (`{}`)\n", c.id, c.file);
            md.push_str("```text\n");
            for l in &c.explanation {
                md.push_str(l);
                md.push('\n');
            }
            md.push_str("```\n");
        }
        md
    }
}
