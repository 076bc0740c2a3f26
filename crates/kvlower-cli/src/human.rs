//! The human renderings of the documents the join and the routing gate return: the
//! library crates compute (`kvlower_join::JoinReport`, `kvlower_join::pressure::
//! PressureReport`, `kvlower_route::RouteReport`), the CLI renders. No library crate
//! renders for a terminal or prints (tests/tests/architecture.rs).

use std::fmt::Write as _;

use kvlower_join::document::describe_reason;
use kvlower_join::pressure::PressureReport;
use kvlower_join::{JoinReport, Verdict};
use kvlower_route::RouteReport;

/// The join's evidence document for a terminal: the stream, one line per claim (with
/// its verdict's details or reasons), the unmet preconditions and the summary.
pub fn join(r: &JoinReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "telemetry join: registry {} · events {} ({})",
        r.registry, r.events, r.format
    );
    let _ = writeln!(
        s,
        "stream: {} events on {} lines · {} stored, {} removed, {} updated, {} cleared · sequence {}",
        r.stream.events,
        r.stream.lines,
        r.stream.stored,
        r.stream.removed,
        r.stream.updated,
        r.stream.cleared,
        if r.stream.sequence_checked {
            "checked"
        } else {
            "not checkable"
        }
    );
    for g in &r.stream.ignored_groups {
        let _ = writeln!(
            s,
            "  ignored KV-cache group {} ({}): {} events; {}",
            g.group_idx,
            g.kind.as_deref().unwrap_or("kind not stated"),
            g.events,
            g.why
        );
    }
    for a in &r.stream.ambiguities {
        let _ = writeln!(s, "  stream ambiguity: {}", describe_reason(a));
    }
    let width = r
        .claims
        .iter()
        .map(|c| c.claim_id.0.len())
        .max()
        .unwrap_or(0);
    for c in &r.claims {
        let pred = c.predicate.as_deref().unwrap_or("(no predicate)");
        let obs = c
            .observation_point
            .map(|p| p.to_string())
            .unwrap_or_else(|| "(no observation point)".into());
        // Without sequence numbers a dropped batch can hide an eviction: such a
        // `materialized` is a reading of the file, not a verdict anything may anchor.
        let unanchored =
            matches!(c.verdict, Verdict::Materialized { .. }) && !r.stream.sequence_checked;
        let _ = writeln!(
            s,
            "{:width$}  {}{}  — {pred} at {obs}",
            c.claim_id.0,
            c.verdict.status(),
            if unanchored {
                " (unanchorable: no sequence numbers)"
            } else {
                ""
            }
        );
        match &c.verdict {
            Verdict::Materialized { since, tiers } => {
                let t: Vec<String> = tiers
                    .iter()
                    .map(|t| {
                        let unit = if t.blocks == 1 { "block" } else { "blocks" };
                        format!("{} ({} {unit})", t.tier, t.blocks)
                    })
                    .collect();
                let _ = writeln!(
                    s,
                    "{:width$}    since {since}; resident in {}",
                    "",
                    t.join(", ")
                );
            }
            Verdict::NotMaterialized {
                matched_prefix_tokens,
                required_tokens,
            } => {
                let _ = writeln!(
                    s,
                    "{:width$}    leading prefix resident: {matched_prefix_tokens} of {required_tokens} required tokens",
                    ""
                );
            }
            Verdict::Lost {
                materialized_at,
                lost_at,
            } => {
                let _ = writeln!(
                    s,
                    "{:width$}    materialized at {materialized_at}, lost at {lost_at}",
                    ""
                );
            }
            Verdict::InsufficientEvidence { reasons } => {
                for r in reasons {
                    let _ = writeln!(s, "{:width$}    - {}", "", describe_reason(r));
                }
            }
        }
    }
    let unmet: Vec<String> = r
        .preconditions
        .iter()
        .filter(|p| !p.held)
        .map(|p| format!("{} ({})", p.precondition, p.claims))
        .collect();
    let _ = writeln!(
        s,
        "summary: {} materialized, {} lost, {} not_materialized, {} insufficient_evidence",
        r.summary.materialized,
        r.summary.lost,
        r.summary.not_materialized,
        r.summary.insufficient_evidence
    );
    if !unmet.is_empty() {
        let _ = writeln!(
            s,
            "preconditions not met for every claim: {}",
            unmet.join(", ")
        );
    }
    if r.summary.materialized > 0 && !r.stream.sequence_checked {
        let _ = writeln!(
            s,
            "note: the stream carries no sequence numbers, so a lost batch could hide an eviction: \
             no materialized verdict here can anchor evidence (record with `kvlower capture`)"
        );
    }
    let _ = writeln!(
        s,
        "note: a telemetry join reconstructs observations; it supplies no enforcement."
    );
    s
}

/// The pressure controls for a terminal: every trial, then the atoms they derive.
pub fn pressure(r: &PressureReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "pressure controls: {} · registry {} ({})",
        r.controls, r.registry, r.format
    );
    for p in &r.design_problems {
        let _ = writeln!(
            s,
            "  design problem: {}",
            serde_json::to_string(p).unwrap_or_default()
        );
    }
    for r in &r.runs {
        let pr: Vec<String> = r
            .priorities
            .iter()
            .map(|(c, p)| format!("{c}={p}"))
            .collect();
        let exp: Vec<&str> = r.expected_first_lost.iter().map(|c| c.0.as_str()).collect();
        let _ = writeln!(
            s,
            "{}: priorities {} · expected first loss {} · followed {}",
            serde_json::to_value(r.run)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            pr.join(", "),
            exp.join(" + "),
            r.followed
        );
        for t in &r.trials {
            let lost: Vec<&str> = t.first_lost.iter().map(|c| c.0.as_str()).collect();
            let at = t
                .first_loss
                .map_or_else(|| "no loss".to_string(), |e| e.to_string());
            let _ = writeln!(
                s,
                "  {}  first lost: {} at {at} · {}",
                t.events,
                if lost.is_empty() {
                    "-".to_string()
                } else {
                    lost.join(" + ")
                },
                if t.followed_priority {
                    "followed priority"
                } else {
                    "did not follow"
                }
            );
            for reason in &t.reasons {
                let _ = writeln!(
                    s,
                    "    - {}",
                    serde_json::to_string(reason).unwrap_or_default()
                );
            }
        }
    }
    for a in &r.atoms {
        let per: Vec<String> = a
            .per_run
            .iter()
            .map(|(k, v)| {
                format!(
                    "{} {v}",
                    serde_json::to_value(k)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                )
            })
            .collect();
        let _ = writeln!(
            s,
            "atom {}: {} ({}; {})",
            serde_json::to_value(a.atom)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            if a.observed {
                "observed"
            } else {
                "NOT observed"
            },
            a.count,
            per.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "note: controlled-pressure evidence for the tested regime only; a join supplies no enforcement."
    );
    s
}

/// The routing gate's document for a terminal: one line per claim, then the document's
/// preconditions and witnesses.
pub fn route(r: &RouteReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "routing gate: {} ({} requests; router {}, engine {})",
        r.trace, r.requests, r.router, r.engine
    );
    for c in &r.claims {
        let place = c.placement.as_ref().map_or("-".to_string(), |p| {
            format!(
                "{} on {}",
                p.request_id,
                p.cache_namespace.as_deref().unwrap_or("?")
            )
        });
        let reuse = c.reuse.as_ref().map_or("-".to_string(), |p| {
            format!(
                "{} on {} (cached {})",
                p.request_id,
                p.cache_namespace.as_deref().unwrap_or("?"),
                p.num_cached_tokens
            )
        });
        let _ = writeln!(
            s,
            "  {} {}: placement {place}; reuse {reuse}",
            if c.pass { "PASS" } else { "FAIL" },
            c.claim_id
        );
        for r in &c.reasons {
            let _ = writeln!(s, "      {}", r.describe());
        }
    }
    for u in &r.unattributed_requests {
        let _ = writeln!(
            s,
            "  (no claim) {} -> worker {} (overlap {} blocks): supports nothing",
            u.request_id,
            u.worker_id,
            u.device_overlap_blocks
                .map_or("?".to_string(), |b| b.to_string())
        );
    }
    for p in &r.preconditions {
        let _ = writeln!(s, "  precondition {}: {}", p.name.name(), p.held);
    }
    let w: Vec<&str> = r.witnesses.iter().map(|o| o.name()).collect();
    let _ = writeln!(
        s,
        "{}: witnesses [{}]",
        if r.pass { "pass" } else { "fail" },
        w.join(", ")
    );
    s
}
