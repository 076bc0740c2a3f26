//! The meet of a loaded catalog and the baseline, which the judgment runs on.

use super::*;

/// The meet of `loaded` and the baseline: every bundle, critical set,
/// required atom, conditional atom, precondition and forbidden lowering of
/// either; what a depth, gate or join document may supply only if both allow
/// it. The judgment runs on this, so a weakened file cannot raise a label.
pub fn meet(loaded: &CatalogDoc) -> CatalogDoc {
    fn union<T: PartialEq + Copy>(into: &mut Vec<T>, from: &[T]) {
        for x in from {
            if !into.contains(x) {
                into.push(*x);
            }
        }
    }
    let mut doc = loaded.clone();
    for m in &MODES {
        if let Some(spec) = doc.modes.get_mut(&m.mode) {
            union(&mut spec.obligations, m.obligations);
            union(&mut spec.enforcement_critical, m.enforcement_critical);
            union(&mut spec.required_atoms, m.required_atoms);
        }
    }
    for d in &DEPTHS {
        if let Some(spec) = doc.depths.get_mut(&d.depth) {
            if !d.supplies_any {
                if spec.supplies_any {
                    spec.supplies_any = false;
                    spec.supplies = d.supplies.to_vec();
                }
                spec.supplies.retain(|o| d.supplies.contains(o));
            }
            for (o, atoms) in d.conditional {
                union(spec.conditional.entry(*o).or_default(), atoms);
            }
            let supplies_any = spec.supplies_any;
            let supplies = spec.supplies.clone();
            spec.conditional
                .retain(|o, _| supplies_any || supplies.contains(o));
            union(&mut spec.preconditions, d.preconditions);
        }
    }
    for (p, m, why, _) in &FORBIDDEN {
        if !doc
            .forbidden_lowerings
            .iter()
            .any(|f| f.primitive == *p && f.mode == *m)
        {
            doc.forbidden_lowerings.push(ForbiddenLowering {
                primitive: *p,
                mode: *m,
                why: (*why).into(),
            });
        }
    }
    let mut gates: BTreeMap<TraceGate, Vec<Obligation>> = BTreeMap::new();
    for (gate, witnesses, _) in &TRACE_GATES {
        let mut now = doc.trace_gates.get(gate).cloned().unwrap_or_default();
        now.retain(|o| witnesses.contains(o));
        gates.insert(*gate, now);
    }
    doc.trace_gates = gates;
    for (gate, positives, kinds, _) in &CAMPAIGN_CONTROLS {
        let rule = doc.campaign_controls.entry(*gate).or_insert_with(|| {
            crate::catalog_doc::CampaignControls {
                min_positive_runs: 0,
                controls: BTreeMap::new(),
                outcomes: BTreeMap::new(),
            }
        });
        // The floor's outcome of each of its kinds is the one a run must show.
        for (g, kind, outcome) in &CONTROL_OUTCOMES {
            if g == gate {
                rule.outcomes
                    .insert((*kind).to_owned(), (*outcome).to_owned());
            }
        }
        rule.min_positive_runs = rule.min_positive_runs.max(*positives);
        for (kind, n) in *kinds {
            let now = rule.controls.entry((*kind).to_owned()).or_insert(0);
            *now = (*now).max(*n);
        }
    }
    doc.join_documents
        .witnesses
        .retain(|o| JOIN_DOCUMENTS.1.contains(o));
    if doc.join_documents.depth != JOIN_DOCUMENTS.0 {
        // A document filed elsewhere than the baseline says witnesses nothing.
        doc.join_documents.depth = JOIN_DOCUMENTS.0;
        doc.join_documents.witnesses.clear();
    }
    doc
}
