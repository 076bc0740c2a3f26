//! How a loaded catalog differs from the baseline: each difference a weakening (a
//! finding), a strengthening (a local change) or neutral, with the baseline entry's
//! citation.

use std::collections::BTreeSet;

use super::*;

/// Which way a difference from the baseline goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The loaded catalog accepts something the baseline does not: a finding.
    Weakened,
    /// The loaded catalog demands more than the baseline: allowed, a local change.
    Strengthened,
    /// Neither (an approximation signal's suggestions): listed for review.
    Neutral,
}

/// One difference between a loaded catalog and the baseline.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct CatalogChange {
    pub direction: Direction,
    /// YAML path of the mode, depth, gate or list concerned (`modes.hard_protected.obligations`).
    pub path: String,
    /// What changed, e.g. "removed from the bundle O[m]".
    pub what: String,
    /// The item concerned, e.g. `footprint_accounting`.
    pub item: String,
    /// The paper section or table the baseline entry comes from.
    pub source: &'static str,
}

impl std::fmt::Display for CatalogChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let word = match self.direction {
            Direction::Weakened => "weakened",
            Direction::Strengthened => "strengthened",
            Direction::Neutral => "changed",
        };
        write!(
            f,
            "{word} `{}`: {} `{}` ({})",
            self.path, self.what, self.item, self.source
        )
    }
}

fn set<T: Ord + Copy>(v: &[T]) -> BTreeSet<T> {
    v.iter().copied().collect()
}

/// Every difference of `loaded` from the baseline that can change a label,
/// plus neutral signal changes; sorted by direction (weakenings first), then path.
pub fn compare(loaded: &CatalogDoc) -> Vec<CatalogChange> {
    let mut out = Vec::new();
    let mut push = |direction, path: String, what: String, item: String, source: &'static str| {
        out.push(CatalogChange {
            direction,
            path,
            what,
            item,
            source,
        })
    };
    use Direction::{Neutral, Strengthened, Weakened};

    for m in &MODES {
        let path = format!("modes.{}", m.mode);
        let (obligations, critical, atoms) = match loaded.modes.get(&m.mode) {
            Some(s) => (
                set(&s.obligations),
                set(&s.enforcement_critical),
                set(&s.required_atoms),
            ),
            None => Default::default(),
        };
        let lists = [
            (
                "obligations",
                "the bundle O[m]",
                names(m.obligations),
                names_of(&obligations),
                m.source,
            ),
            (
                "enforcement_critical",
                "the enforcement-critical set",
                names(m.enforcement_critical),
                names_of(&critical),
                m.critical_source,
            ),
            (
                "required_atoms",
                "the required atoms",
                names(m.required_atoms),
                names_of(&atoms),
                m.critical_source,
            ),
        ];
        for (field, label, base, now, source) in &lists {
            for gone in base.difference(now) {
                push(
                    Weakened,
                    format!("{path}.{field}"),
                    format!("removed from {label}"),
                    gone.to_string(),
                    source,
                );
            }
            for extra in now.difference(base) {
                push(
                    Strengthened,
                    format!("{path}.{field}"),
                    format!("added to {label}"),
                    extra.to_string(),
                    source,
                );
            }
        }
    }

    for d in &DEPTHS {
        let path = format!("depths.{}", d.depth);
        let Some(spec) = loaded.depths.get(&d.depth) else {
            push(
                Weakened,
                "depths".into(),
                "depth not described".into(),
                d.depth.to_string(),
                d.source,
            );
            continue;
        };
        // What the depth may supply: more is weaker.
        if spec.supplies_any && !d.supplies_any {
            push(
                Weakened,
                format!("{path}.supplies_any"),
                "may supply any obligation".into(),
                "supplies_any".into(),
                d.source,
            );
        }
        if !d.supplies_any {
            let base = set(d.supplies);
            let now = set(&spec.supplies);
            if !spec.supplies_any {
                for extra in now.difference(&base) {
                    push(
                        Weakened,
                        format!("{path}.supplies"),
                        "may now supply".into(),
                        extra.to_string(),
                        d.source,
                    );
                }
            }
            for gone in base.difference(&now) {
                if !spec.supplies_any {
                    push(
                        Strengthened,
                        format!("{path}.supplies"),
                        "may no longer supply".into(),
                        gone.to_string(),
                        d.source,
                    );
                }
            }
        } else if !spec.supplies_any {
            push(
                Strengthened,
                format!("{path}.supplies_any"),
                "supplies only a list, not any obligation".into(),
                list(&spec.supplies),
                d.source,
            );
        }
        let may_supply = |o: Obligation| spec.supplies_any || spec.supplies.contains(&o);
        // Conditional atoms: fewer is weaker (while the depth still supplies the obligation).
        for (o, atoms) in d.conditional {
            let now = spec.conditional.get(o).map(|a| set(a)).unwrap_or_default();
            for a in atoms.iter().filter(|a| !now.contains(a)) {
                if may_supply(*o) {
                    push(
                        Weakened,
                        format!("{path}.conditional"),
                        format!("`{o}` no longer needs atom"),
                        a.to_string(),
                        d.source,
                    );
                }
            }
        }
        for (o, atoms) in &spec.conditional {
            let base: BTreeSet<Atom> = d
                .conditional
                .iter()
                .find(|(b, _)| b == o)
                .map(|(_, a)| set(a))
                .unwrap_or_default();
            for a in atoms.iter().filter(|a| !base.contains(a)) {
                push(
                    Strengthened,
                    format!("{path}.conditional"),
                    format!("`{o}` now needs atom"),
                    a.to_string(),
                    d.source,
                );
            }
        }
        // Preconditions: fewer is weaker.
        let base = set(d.preconditions);
        let now = set(&spec.preconditions);
        for gone in base.difference(&now) {
            push(
                Weakened,
                format!("{path}.preconditions"),
                "removed precondition".into(),
                gone.to_string(),
                d.preconditions_source,
            );
        }
        for extra in now.difference(&base) {
            push(
                Strengthened,
                format!("{path}.preconditions"),
                "added precondition".into(),
                extra.to_string(),
                d.preconditions_source,
            );
        }
    }

    let forbidden: BTreeSet<(Signal, Mode)> = loaded
        .forbidden_lowerings
        .iter()
        .map(|f| (f.primitive, f.mode))
        .collect();
    for (p, m, _, source) in &FORBIDDEN {
        if !forbidden.contains(&(*p, *m)) {
            push(
                Weakened,
                "forbidden_lowerings".into(),
                "removed forbidden lowering".into(),
                format!("{p} as {m}"),
                source,
            );
        }
    }
    for (p, m) in &forbidden {
        if !FORBIDDEN.iter().any(|(bp, bm, _, _)| bp == p && bm == m) {
            push(
                Strengthened,
                "forbidden_lowerings".into(),
                "added forbidden lowering".into(),
                format!("{p} as {m}"),
                "paper §9 (a forbidden lowering is rejected)",
            );
        }
    }

    for (gate, witnesses, source) in &TRACE_GATES {
        let path = format!("trace_gates.{gate}");
        let base = set(witnesses);
        let now = loaded
            .trace_gates
            .get(gate)
            .map(|w| set(w))
            .unwrap_or_default();
        for extra in now.difference(&base) {
            push(
                Weakened,
                path.clone(),
                "the gate now witnesses".into(),
                extra.to_string(),
                source,
            );
        }
        for gone in base.difference(&now) {
            push(
                Strengthened,
                path.clone(),
                "the gate no longer witnesses".into(),
                gone.to_string(),
                source,
            );
        }
    }

    for (gate, positives, kinds, source) in &CAMPAIGN_CONTROLS {
        let path = format!("campaign_controls.{gate}");
        let Some(now) = loaded.campaign_controls.get(gate) else {
            push(
                Weakened,
                path,
                "a campaign no longer needs controls for the gate".into(),
                gate.to_string(),
                source,
            );
            continue;
        };
        if now.min_positive_runs < *positives {
            push(
                Weakened,
                path.clone(),
                format!("minimum positive runs lowered from {positives}"),
                now.min_positive_runs.to_string(),
                source,
            );
        }
        for (kind, n) in *kinds {
            match now.controls.get(*kind) {
                None => push(
                    Weakened,
                    path.clone(),
                    "control kind dropped".into(),
                    (*kind).to_owned(),
                    source,
                ),
                Some(m) if m < n => push(
                    Weakened,
                    path.clone(),
                    format!("minimum runs of a control kind lowered from {n} to {m}"),
                    (*kind).to_owned(),
                    source,
                ),
                Some(_) => {}
            }
        }
    }

    for (gate, kind, outcome) in &CONTROL_OUTCOMES {
        let now = loaded
            .campaign_controls
            .get(gate)
            .and_then(|r| r.outcomes.get(*kind));
        // Left out, the floor's outcome holds (the meet); another one is overridden by the
        // floor too, but states a rule the judgment does not keep: a reviewer must see it.
        if now.is_some_and(|o| o != outcome) {
            push(
                Weakened,
                format!("campaign_controls.{gate}.outcomes"),
                format!("the outcome a control must show is no longer `{outcome}`"),
                (*kind).to_owned(),
                CONTROL_OUTCOME_SOURCE,
            );
        }
    }

    let (depth, witnesses, source) = JOIN_DOCUMENTS;
    if loaded.join_documents.depth != depth {
        push(
            Weakened,
            "join_documents.depth".into(),
            format!("join documents filed instead of at `{depth}` at"),
            loaded.join_documents.depth.to_string(),
            source,
        );
    }
    let base = set(witnesses);
    let now = set(&loaded.join_documents.witnesses);
    for extra in now.difference(&base) {
        push(
            Weakened,
            "join_documents.witnesses".into(),
            "a join document now witnesses".into(),
            extra.to_string(),
            source,
        );
    }
    for gone in base.difference(&now) {
        push(
            Strengthened,
            "join_documents.witnesses".into(),
            "a join document no longer witnesses".into(),
            gone.to_string(),
            source,
        );
    }

    // Judging code: any pin that is not the built-in one (added, removed or of other
    // bytes) is a weakening a reviewer must look at: the pinned code decides what truth is.
    let base: BTreeSet<(&str, &str)> = JUDGING_CODE.iter().copied().collect();
    let now: BTreeSet<(&str, &str)> = loaded
        .judging_code
        .iter()
        .map(|p| (p.path.as_str(), p.sha256.as_str()))
        .collect();
    for (path, sha) in now.difference(&base) {
        let what = if base.iter().any(|(p, _)| p == path) {
            "the pin of judging code changed to"
        } else {
            "judging code pinned that the baseline does not pin, at"
        };
        push(
            Weakened,
            "judging_code".into(),
            format!("{what} {sha}"),
            (*path).to_owned(),
            JUDGING_CODE_SOURCE,
        );
    }
    for (path, _) in base.difference(&now) {
        if !now.iter().any(|(p, _)| p == path) {
            push(
                Weakened,
                "judging_code".into(),
                "the pin of judging code removed".into(),
                (*path).to_owned(),
                JUDGING_CODE_SOURCE,
            );
        }
    }

    for (signal, _, suggests) in &SIGNALS {
        let now = loaded
            .signals
            .get(signal)
            .map(|s| set(&s.suggests))
            .unwrap_or_default();
        let base = set(suggests);
        if now != base {
            push(
                Neutral,
                format!("signals.{signal}.suggests"),
                format!("suggests instead of {}", list(suggests)),
                list(&now.into_iter().collect::<Vec<_>>()),
                "paper §4, Table 2 rule 1 (signals only make a row approximate)",
            );
        }
    }
    out.sort();
    out
}

fn names<T: std::fmt::Display>(v: &[T]) -> BTreeSet<String> {
    v.iter().map(ToString::to_string).collect()
}

fn names_of<T: std::fmt::Display>(v: &BTreeSet<T>) -> BTreeSet<String> {
    v.iter().map(ToString::to_string).collect()
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    if v.is_empty() {
        "nothing".into()
    } else {
        v.iter()
            .map(|x| format!("`{x}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
