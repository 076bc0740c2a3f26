//! `kvlower gate --campaign DOC`: the conformance report of one gate campaign document
//! (docs/conformance.md). It re-runs the campaign as `check` does (every trace, the
//! engine truth, the source digest) and prints, per gate the campaign states, whether it
//! is witnessed, and what is missing: positive runs, control kinds and their runs, or why
//! the campaign does not hold (the run, gate and fact of a disagreement with the truth).
//!
//! Exit status: 0 the campaign holds (whatever it witnesses); 1 it does not hold, or is
//! not a (well-formed) campaign document; 2 a document or catalog it could not read (a
//! document refused before it is read carries the file system's own code:
//! `not-a-regular-file`, `file-too-large`, `unreadable-file`).
//! Every refusal is a coded finding.

use std::fmt::Write as _;
use std::path::Path;

use kvlower_core::anchoring::{campaign_gate_missing, campaign_witnessed};
use kvlower_core::environment::CampaignDocumentFacts;
use serde::Serialize;

use crate::Exit;
use kvlower_codes::{Code, Finding};

use crate::opening::stopped_by;
use crate::output::{Form, Outcome, Payload, escape_control};

#[derive(Debug, Serialize)]
struct GateLine {
    gate: String,
    witnessed: bool,
    positives: u32,
    min_positive_runs: Option<u32>,
    /// Kind → (runs, minimum): every kind the catalog needs and every kind seen.
    controls: std::collections::BTreeMap<String, ControlCount>,
    missing: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ControlCount {
    runs: u32,
    min: u32,
}

/// The campaign's report: the envelope's payload, and its text for people (every
/// gate, witnessed or not and what is missing, then the summary line).
#[derive(Debug, Serialize)]
pub struct CampaignReport {
    campaign: String,
    held: bool,
    problem: Option<String>,
    gates: Vec<GateLine>,
    #[serde(skip)]
    summary: String,
}

impl Payload for CampaignReport {
    fn human(&self) -> String {
        let mut text = String::new();
        if !self.held {
            let _ = writeln!(
                text,
                "{}: does not hold: {}",
                escape_control(&self.campaign),
                escape_control(self.problem.as_deref().unwrap_or("(no reason recorded)"))
            );
        }
        for g in &self.gates {
            let state = if g.witnessed {
                "witnessed"
            } else {
                "not witnessed"
            };
            let min = g
                .min_positive_runs
                .map_or_else(|| "-".to_owned(), |m| m.to_string());
            let controls: Vec<String> = g
                .controls
                .iter()
                .map(|(k, c)| format!("{k} {}/{}", c.runs, c.min))
                .collect();
            let _ = writeln!(
                text,
                "{}: {state}; positives {}/{min}; controls: {}",
                g.gate,
                g.positives,
                if controls.is_empty() {
                    "none".to_owned()
                } else {
                    controls.join(", ")
                }
            );
            for m in &g.missing {
                let _ = writeln!(text, "  missing: {}", escape_control(m));
            }
        }
        let _ = writeln!(text, "{}", escape_control(&self.summary));
        text
    }
    fn markdown(&self) -> String {
        self.human()
    }
}

fn lines(catalog: &kvlower_core::Catalog, facts: &CampaignDocumentFacts) -> Vec<GateLine> {
    let witnessed = campaign_witnessed(catalog, facts);
    let mut gates: std::collections::BTreeSet<kvlower_core::vocab::TraceGate> =
        facts.gates.keys().copied().collect();
    gates.extend(facts.witnessed.iter().copied());
    gates
        .into_iter()
        .map(|gate| {
            let counts = facts.gates.get(&gate).cloned().unwrap_or_default();
            let rule = catalog.campaign_controls(gate);
            let mut controls = std::collections::BTreeMap::new();
            for (kind, runs) in &counts.controls {
                controls.insert(
                    kind.clone(),
                    ControlCount {
                        runs: *runs,
                        min: 0,
                    },
                );
            }
            if let Some(rule) = rule {
                for (kind, min) in &rule.controls {
                    // Only the runs showing the kind's outcome count (docs/conformance.md,
                    // "Control outcomes").
                    let runs = kvlower_core::anchoring::campaign_control_runs(rule, &counts, kind);
                    let line = controls
                        .entry(kind.clone())
                        .or_insert(ControlCount { runs: 0, min: 0 });
                    line.min = *min;
                    line.runs = runs;
                }
            }
            GateLine {
                gate: gate.to_string(),
                witnessed: witnessed.contains(&gate),
                positives: counts.positives,
                min_positive_runs: rule.map(|r| r.min_positive_runs),
                controls,
                missing: campaign_gate_missing(catalog, facts, gate),
            }
        })
        .collect()
}

/// Runs the report for `doc` (a path from the working directory) under `root`.
pub fn run(root: &Path, doc: &Path) -> anyhow::Result<Outcome<CampaignReport>> {
    // Every refusal is a coded finding (docs/diagnostic-codes.md), never bare text.
    let stop =
        |findings: Vec<Finding>| stopped_by("gate", Form::Report, findings, "no campaign judged");
    let shown = escape_control(&doc.display().to_string()).into_owned();
    let mut diagnostics = Vec::new();
    let Some(catalog) = kvlower_load::load_catalog(root, &mut diagnostics) else {
        if diagnostics.is_empty() {
            diagnostics.push(Finding::new(
                Code::InvalidCatalog,
                kvlower_load::MODES_PATH,
                "the catalog (modes/modes.yaml) could not be read",
            ));
        }
        return Ok(stop(diagnostics));
    };
    let (Ok(canon_root), Ok(canon_doc)) = (
        kvlower_fs::inspect::resolved(root),
        kvlower_fs::inspect::resolved(doc),
    ) else {
        let finding = Finding::new(
            Code::UnreadableFile,
            shown,
            "cannot read the campaign document: it does not exist (or is a broken link)",
        )
        .with_hint("name a gate campaign document (docs/conformance.md), e.g. evidence/<run>/gate-campaign.json");
        return Ok(stop(vec![finding]));
    };
    let Some(rel) = canon_doc
        .strip_prefix(&canon_root)
        .ok()
        .and_then(|p| p.to_str())
        .map(str::to_owned)
    else {
        let finding = Finding::new(
            Code::FileOutsideRoot,
            shown,
            "the campaign document is not inside the repository root",
        )
        .with_hint("a campaign re-runs files of the repository: name one under --root");
        return Ok(stop(vec![finding]));
    };
    // Refused before it is read (a directory, a FIFO, a device, over the cap): the file
    // system's own code and exit 2, as for every other refused input (docs/output.md).
    // Resolving reads nothing, so the kind (its cap) plays no part here.
    let refusal = match kvlower_fs::FileKind::JoinDocument
        .open()
        .within_resolved(&canon_root)
        .resolve(&rel)
    {
        Err(refusal) => Some(refusal),
        Ok(found) if found.len > kvlower_evidence::MAX_ANCHORED_FILE_BYTES => {
            Some(kvlower_fs::Refusal::TooLarge {
                path: rel.clone(),
                kind: kvlower_fs::FileKind::JoinDocument,
                cap: kvlower_evidence::MAX_ANCHORED_FILE_BYTES,
            })
        }
        Ok(_) => None,
    };
    if let Some(refusal) = refusal {
        return Ok(stop(vec![refusal.finding(rel.as_str())]));
    }
    let env = kvlower_evidence::FsEnvironment::new(root.to_path_buf());
    let facts = match env.campaign_facts(&rel) {
        Ok(Some(facts)) => facts,
        Ok(None) => {
            let finding = Finding::new(
                Code::CampaignDocumentInvalid,
                rel.as_str(),
                "not a kvlower-gate-campaign document",
            )
            .with_hint("docs/conformance.md describes the campaign document");
            return Ok(stop(vec![finding]));
        }
        Err(why) => {
            let finding = Finding::new(Code::CampaignDocumentInvalid, rel.as_str(), why)
                .with_hint("docs/conformance.md describes the campaign document");
            return Ok(stop(vec![finding]));
        }
    };
    let gates = lines(&catalog, &facts);
    let exit = if facts.held {
        Exit::Success
    } else {
        Exit::Findings
    };
    let witnessed = gates.iter().filter(|g| g.witnessed).count();
    let summary = if facts.held {
        format!(
            "{rel}: holds; {witnessed} of {} gates witnessed",
            gates.len()
        )
    } else {
        format!("{rel}: does not hold")
    };
    let report = CampaignReport {
        campaign: rel,
        held: facts.held,
        problem: facts.problem.as_ref().map(|r| r.why.clone()),
        gates,
        summary: summary.clone(),
    };
    Ok(Outcome::done("gate", exit, Form::Document, summary, report))
}
