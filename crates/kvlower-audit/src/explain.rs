//! Turns a judgment or a gate verdict into short explanation lines.
//!
//! The bad-lowering suite records these lines in its report and its insta
//! snapshots: a reviewer sees *why* each counterexample got its result, not
//! only the label, and a change in the reasons shows up as a snapshot diff.

use kvlower_core::{Judgment, Label};
use kvlower_trace::{TraceGate, TraceReport};

/// Every reason of one row: label, each obligation, atoms, signals, proposals.
pub fn judgment(j: &Judgment) -> Vec<String> {
    let mut lines = vec![format!(
        "{}@{}: {} — {}",
        j.mode, j.depth, j.label, j.reason
    )];
    for f in &j.obligations {
        let head = format!("{} {}", f.obligation.code(), f.obligation);
        match &f.satisfied_by {
            Some(e) => lines.push(format!("{head}: satisfied by {} ({})", e.path, e.depth)),
            None if f.rejected.is_empty() => {
                lines.push(format!("{head}: not satisfied — no evidence item names it"))
            }
            None => {
                let why: Vec<String> = f
                    .rejected
                    .iter()
                    .map(|(r, defeats)| {
                        let d: Vec<String> = defeats.iter().map(ToString::to_string).collect();
                        format!("{} ({}): {}", r.path, r.depth, d.join("; "))
                    })
                    .collect();
                lines.push(format!("{head}: not satisfied — {}", why.join(" | ")));
            }
        }
    }
    for a in &j.atoms {
        match &a.anchored_by {
            Some(e) => lines.push(format!("atom {}: anchored by {}", a.atom, e.path)),
            None if a.rejected.is_empty() => {
                lines.push(format!("atom {}: not anchored — no atom evidence", a.atom))
            }
            None => {
                let why: Vec<String> = a
                    .rejected
                    .iter()
                    .map(|(r, defects)| {
                        let d: Vec<String> = defects.iter().map(ToString::to_string).collect();
                        format!("{}: {}", r.path, d.join("; "))
                    })
                    .collect();
                lines.push(format!(
                    "atom {}: not anchored — {}",
                    a.atom,
                    why.join(" | ")
                ));
            }
        }
    }
    for s in &j.signals {
        lines.push(format!(
            "signal {s} suggests the mode (a signal satisfies no obligation)"
        ));
    }
    for p in &j.proposals {
        lines.push(match &p.forbidden_because {
            Some(why) => format!(
                "proposal {}: {} offered as the mode — forbidden: {why}",
                p.path, p.offered
            ),
            None => format!(
                "proposal {}: {} offered as the mode — not a forbidden lowering{}",
                p.path,
                p.offered,
                if j.label == Label::Rejected {
                    ""
                } else {
                    "; the mode has no missing enforcement-critical obligation to reject it on"
                }
            ),
        });
    }
    lines
}

/// One line per claim row and gate of a trace report, plus its diagnostics.
pub fn trace(name: &str, report: &TraceReport, gates: &[TraceGate]) -> Vec<String> {
    let mut lines = vec![format!(
        "trace {name}: {} family, {} events, {}",
        report.family,
        report.events,
        if report.is_valid() {
            "no diagnostics".to_string()
        } else {
            format!("{} diagnostic(s)", report.diagnostics.len())
        }
    )];
    for d in &report.diagnostics {
        let line = d.line.map_or_else(|| "-".to_string(), |l| l.to_string());
        lines.push(format!("  diagnostic at line {line}: {}", d.problem));
    }
    for c in &report.claims {
        let who = c
            .claim_id
            .as_deref()
            .map_or("unclaimed events".to_string(), |c| format!("claim {c}"));
        for g in gates {
            match c.gates.get(g) {
                Some(r) if r.pass => lines.push(format!("  {who}: {g} passes")),
                Some(r) => lines.push(format!(
                    "  {who}: {g} rejected — missing {}",
                    r.missing_names().join(", ")
                )),
                None => lines.push(format!("  {who}: {g} does not apply")),
            }
        }
        if !c.controls_rejected.is_empty() {
            let controls: Vec<&str> = c.controls_rejected.iter().map(|c| c.name()).collect();
            lines.push(format!(
                "  {who}: controls recognised: {}",
                controls.join(", ")
            ));
        }
    }
    lines
}
