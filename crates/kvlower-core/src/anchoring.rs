//! Whether an anchor counts for one use: the single gate every piece of
//! evidence passes through (an obligation at a depth, an atom, an adapter's
//! precondition, a signal). See `docs/descriptor-format.md`, "What counts".
//!
//! Why one function: when obligations, atoms and preconditions each had their
//! own check, a failing trace verdict voided an obligation but still anchored
//! an atom. Every use now asks [`anchor_counts`], and the environment only
//! reports *facts* about repository files ([`RepoFile`]); the rules stay here,
//! pure.

use serde::Serialize;

use crate::anchor_form::{AnchorDefect, Reason};
use crate::catalog::Catalog;
use crate::descriptor::{Anchor, AnchorKind, ClaimedVerdict};
/// The facts the environment reports, beside the [`crate::Environment`] that reports them.
pub use crate::environment::{
    CampaignDocumentFacts, JoinDocumentFacts, RepoFile, RoutingDocumentFacts, TraceVerdictFacts,
};
pub use crate::identity::{RecordedComponent, RecordedRuntime, recorded_runtime_fits};
use crate::vocab::EvidenceDepth;
use crate::vocab::{Depth, Obligation, Precondition, Scope, TraceGate};

/// What an anchor is being asked to support.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnchorUse {
    /// An evidence item supplying `obligation`, at `depth`, observed at `scope`.
    Obligation {
        obligation: Obligation,
        depth: EvidenceDepth,
        scope: Scope,
    },
    /// An observed atom (pressure controls, ordered lifecycle trace, …).
    Atom { scope: Scope },
    /// One trust-boundary precondition of an adapter at `depth`.
    Precondition {
        precondition: Precondition,
        depth: Depth,
    },
    /// An approximation signal: it never satisfies anything, so a static
    /// source is enough.
    Signal,
}

impl AnchorUse {
    /// Uses that claim something happened at run time. A repository file can
    /// only back them when `check` re-runs it (a gate verdict or a join document).
    fn claims_run_time(self) -> bool {
        match self {
            AnchorUse::Obligation { scope, .. } => scope.is_runtime_observed(),
            AnchorUse::Atom { .. } | AnchorUse::Precondition { .. } => true,
            AnchorUse::Signal => false,
        }
    }

    /// The scope whose structural trace requirements apply.
    fn scope(self) -> Option<Scope> {
        match self {
            AnchorUse::Obligation { scope, .. } | AnchorUse::Atom { scope } => Some(scope),
            AnchorUse::Precondition { .. } | AnchorUse::Signal => None,
        }
    }
}

/// Decides whether `anchor` counts for `use_`: every defect, structural or
/// found by re-running the anchored file. Empty means it counts.
/// `subject` is the runtime of the descriptor the anchor sits in: an evidence
/// document of another runtime anchors nothing of it.
pub fn anchor_counts(
    catalog: &Catalog,
    anchor: &Anchor,
    use_: AnchorUse,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn crate::environment::Environment,
) -> Vec<AnchorDefect> {
    let mut defects = anchor.defects(use_.scope());
    // The date first: asking the environment for today costs a clock read.
    if let Some(date) = anchor
        .retrieved
        .as_deref()
        .and_then(crate::anchor_form::parse_iso_date)
        && date > env.today()
    {
        defects.push(AnchorDefect::DateInFuture);
    }
    if let Some(v) = &anchor.verdict
        && !v.pass
    {
        // A failing verdict supports nothing, whatever it is used for.
        defects.push(AnchorDefect::VerdictIsAFailure);
    }
    if let (Some(v), AnchorUse::Obligation { obligation, .. }) = (&anchor.verdict, use_)
        && !catalog.gate_witnesses(v.gate, obligation)
    {
        defects.push(AnchorDefect::GateDoesNotWitness { gate: v.gate });
    }
    match (anchor.kind, anchor.path.as_deref()) {
        (Some(AnchorKind::RepoFile), Some(path)) if crate::text::has_visible(path) => {
            defects.extend(repo_file_defects(
                catalog,
                path,
                anchor.verdict.as_ref(),
                anchor.source_files.as_deref(),
                use_,
                subject,
                env,
            ));
        }
        (Some(AnchorKind::RepoFile), _) => {}
        // `Anchor::defects` already reports a verdict on another kind.
        _ => {}
    }
    defects.sort();
    defects.dedup();
    defects
}

/// The defects of a `repo_file` anchor, from what the file is.
fn repo_file_defects(
    catalog: &Catalog,
    path: &str,
    verdict: Option<&ClaimedVerdict>,
    source_files: Option<&[String]>,
    use_: AnchorUse,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn crate::environment::Environment,
) -> Vec<AnchorDefect> {
    match env.repo_file(path) {
        RepoFile::Missing => vec![AnchorDefect::RepoFileMissing],
        RepoFile::Refused { .. } => vec![AnchorDefect::RepoFileRefused],
        RepoFile::OwnFile => vec![AnchorDefect::OwnFile],
        RepoFile::JoinDocument(facts) => {
            let mut d = join_document_defects(catalog, &facts, use_);
            if let Some(why) = facts
                .patch_digests
                .as_ref()
                .and_then(|recorded| patch_files_problem(recorded, source_files, env))
            {
                d.push(AnchorDefect::JoinPatchFilesDisagree(why));
            }
            // The registry alone names the runtime of events that record none.
            if facts.events_runtime.is_none() {
                d.push(AnchorDefect::JoinEventsRecordNoRuntime);
            }
            if !recorded_runtime_fits(facts.runtime.as_ref(), &subject.identity) {
                d.push(AnchorDefect::EvidenceOfAnotherRuntime);
            }
            if verdict.is_some() {
                // A gate verdict is about a trace; a join document is not one.
                d.push(AnchorDefect::TraceVerdictDisagrees);
            }
            d
        }
        RepoFile::RoutingDocument(facts) => {
            let mut d = routing_document_defects(catalog, &facts, use_);
            if !recorded_runtime_fits(facts.runtime.as_ref(), &subject.identity) {
                d.push(AnchorDefect::EvidenceOfAnotherRuntime);
            }
            if verdict.is_some() {
                // A gate verdict is about a `kvlower gate` trace, not a routing document.
                d.push(AnchorDefect::TraceVerdictDisagrees);
            }
            d
        }
        RepoFile::CampaignDocument(facts) => {
            let mut d = campaign_document_defects(catalog, &facts, use_);
            // The trust root (the descriptor) names the source files; a campaign whose
            // recorder or patch is another file anchors nothing.
            let mut named: Vec<&str> = source_files
                .unwrap_or_default()
                .iter()
                .map(String::as_str)
                .collect();
            named.sort_unstable();
            let mut recorded: Vec<&str> = facts.source_files.iter().map(String::as_str).collect();
            recorded.sort_unstable();
            if facts.held && (source_files.is_none() || named != recorded) {
                d.push(AnchorDefect::CampaignDoesNotHold(Reason::new(format!(
                    "the campaign's source files ({}) are not the ones the anchor's `source_files` names ({})",
                    recorded.join(", "),
                    if source_files.is_none() { "none".to_owned() } else { named.join(", ") }
                ))));
            }
            if facts.held
                && let Some(why) = unpinned_judging_code(catalog, &facts.recorder)
            {
                d.push(AnchorDefect::CampaignDoesNotHold(Reason::new(why)));
            }
            if !recorded_runtime_fits(facts.runtime.as_ref(), &subject.identity) {
                d.push(AnchorDefect::EvidenceOfAnotherRuntime);
            }
            if verdict.is_some() {
                // A claimed verdict is about one trace; the campaign states its own.
                d.push(AnchorDefect::TraceVerdictDisagrees);
            }
            d
        }
        RepoFile::Plain => match verdict {
            Some(v) => {
                let facts = env.trace_verdict(path, v);
                let mut d: Vec<AnchorDefect> = facts.defect.into_iter().collect();
                // A trace anchors only the runtime its header records; a trace
                // without a header still gates, but anchors nothing.
                if !recorded_runtime_fits(facts.runtime.as_ref(), &subject.identity) {
                    d.push(AnchorDefect::EvidenceOfAnotherRuntime);
                }
                d
            }
            None if use_.claims_run_time() => vec![AnchorDefect::NotReRunnable],
            None => Vec::new(),
        },
    }
}

/// Why the judging code that wrote a campaign's truth is not the code the catalog pins
/// (`None`: every file is pinned, at its current bytes). The recorder is kvlower's own
/// judging code, pinned in the trust root, not judged code a patch author may edit and
/// re-run (docs/conformance.md, "Pinned judging code").
fn unpinned_judging_code(catalog: &Catalog, recorder: &[(String, String)]) -> Option<String> {
    if recorder.is_empty() {
        return Some("the truth names no judging code that wrote it".to_owned());
    }
    let pins = &catalog.effective().judging_code;
    for (path, sha) in recorder {
        match pins.iter().find(|p| &p.path == path) {
            None => {
                return Some(format!(
                    "the truth was written by `{path}`, which the catalog's `judging_code` does not pin: only pinned judging code writes truth"
                ));
            }
            Some(pin) if &pin.sha256 != sha => {
                return Some(format!(
                    "judging code `{path}` has SHA-256 {sha}, the catalog pins {}: the recorder changed, and counts only once its pin is reviewed",
                    pin.sha256
                ));
            }
            Some(_) => {}
        }
    }
    None
}

/// Why the files an anchor's `source_files` names are not the patch files a patched join
/// document's capture recorded (`recorded`: their sha256 digests, or why there are none);
/// `None` when the set of the named files' digests is exactly the recorded set. The
/// descriptor is the trust root: which files make up a patch is its to say, and each is
/// recomputed from the repository.
fn patch_files_problem(
    recorded: &Result<Vec<String>, Reason>,
    source_files: Option<&[String]>,
    env: &dyn crate::environment::Environment,
) -> Option<Reason> {
    let recorded: std::collections::BTreeSet<&str> = match recorded {
        Ok(digests) => digests.iter().map(String::as_str).collect(),
        Err(why) => return Some(why.clone()),
    };
    patch_files_unnamed(&recorded, source_files, env).map(Reason::new)
}

/// [`patch_files_problem`] for a capture that records `recorded`: core's own reasons,
/// without a hint of their own.
fn patch_files_unnamed(
    recorded: &std::collections::BTreeSet<&str>,
    source_files: Option<&[String]>,
    env: &dyn crate::environment::Environment,
) -> Option<String> {
    let Some(named) = source_files.filter(|f| !f.is_empty()) else {
        return Some("the anchor names no `source_files` (the patch's files)".to_owned());
    };
    let mut found = std::collections::BTreeSet::new();
    for file in named {
        match env.repo_file_sha256(file) {
            Err(why) => return Some(format!("`{file}`: {why}")),
            Ok(digest) if !recorded.contains(digest.as_str()) => {
                return Some(format!(
                    "`{file}` is not a file the capture ran (its sha256 is not among the header's patch file digests)"
                ));
            }
            Ok(digest) => {
                found.insert(digest);
            }
        }
    }
    let unnamed = recorded.len().saturating_sub(found.len());
    (unnamed > 0).then(|| {
        format!("{unnamed} patch file digest(s) the capture header records are not named in `source_files`")
    })
}

/// A campaign anchors, when it held, the obligations its witnessed gates witness
/// (the catalog's `trace_gates`), any precondition (its traces ran the patched
/// path, in order, checked by the gate), and no atom.
fn campaign_document_defects(
    catalog: &Catalog,
    facts: &CampaignDocumentFacts,
    use_: AnchorUse,
) -> Vec<AnchorDefect> {
    if !facts.held {
        return vec![AnchorDefect::CampaignDoesNotHold(
            facts
                .problem
                .clone()
                .unwrap_or_else(|| Reason::new("it does not hold")),
        )];
    }
    let witnesses = match use_ {
        AnchorUse::Obligation { obligation, .. } => campaign_witnessed(catalog, facts)
            .iter()
            .any(|g| catalog.gate_witnesses(*g, obligation)),
        AnchorUse::Atom { .. } => false,
        AnchorUse::Precondition { .. } | AnchorUse::Signal => true,
    };
    if witnesses {
        Vec::new()
    } else {
        vec![AnchorDefect::CampaignDoesNotWitness]
    }
}

/// The gates a held campaign witnesses: some scenario passes the gate in every run and
/// some in none, and the runs meet the catalog's `campaign_controls` for the gate (the
/// minimum positives, and every control kind at its minimum). A gate the catalog lists
/// no campaign rule for is never witnessed.
pub fn campaign_witnessed(catalog: &Catalog, facts: &CampaignDocumentFacts) -> Vec<TraceGate> {
    facts
        .witnessed
        .iter()
        .copied()
        .filter(|g| campaign_gate_missing(catalog, facts, *g).is_empty())
        .collect()
}

/// What a campaign lacks to witness `gate`, in words (empty: nothing).
pub fn campaign_gate_missing(
    catalog: &Catalog,
    facts: &CampaignDocumentFacts,
    gate: TraceGate,
) -> Vec<String> {
    let mut out = Vec::new();
    if !facts.held {
        out.push("the campaign does not hold".to_owned());
    }
    let Some(rule) = catalog.campaign_controls(gate) else {
        out.push("the catalog lists no campaign rule for this gate".to_owned());
        return out;
    };
    if !facts.witnessed.contains(&gate) {
        out.push("no scenario expects it in every run and another in no run".to_owned());
    }
    let counts = facts.gates.get(&gate).cloned().unwrap_or_default();
    if counts.positives < rule.min_positive_runs {
        out.push(format!(
            "positive runs: {} of {}",
            counts.positives, rule.min_positive_runs
        ));
    }
    for (kind, min) in &rule.controls {
        let n = campaign_control_runs(rule, &counts, kind);
        if n < *min {
            let outcome = rule
                .outcomes
                .get(kind)
                .map_or("(none named)", String::as_str);
            let all = counts.controls.get(kind).copied().unwrap_or(0);
            out.push(format!(
                "control `{kind}`: {n} of {min} runs showing the outcome `{outcome}` ({all} of the kind in all)"
            ));
        }
    }
    out
}

/// The runs of control kind `kind` that count: those whose engine truth shows the outcome
/// the catalog names for the kind (none when it names none: fail closed).
pub fn campaign_control_runs(
    rule: &crate::catalog_doc::CampaignControls,
    counts: &crate::environment::CampaignGateCounts,
    kind: &str,
) -> u32 {
    rule.outcomes
        .get(kind)
        .and_then(|o| counts.outcomes.get(kind).and_then(|by| by.get(o)))
        .copied()
        .unwrap_or(0)
}

/// A join document anchors only what a join can witness, at the depth it
/// records, and only when it held.
fn join_document_defects(
    catalog: &Catalog,
    facts: &JoinDocumentFacts,
    use_: AnchorUse,
) -> Vec<AnchorDefect> {
    let mut defects = Vec::new();
    if !facts.reproduces {
        return vec![AnchorDefect::JoinEvidenceDisagrees];
    }
    let Some(doc_depth) = facts.depth else {
        return vec![AnchorDefect::JoinEvidenceInsufficient];
    };
    // Every precondition the catalog sets for the recorded depth must have held.
    let all_held = match catalog.depth(doc_depth) {
        // Fail-closed: an empty list would hold vacuously (the catalog
        // refuses one, but a join document never rests on that alone).
        Some(spec) => {
            !spec.preconditions.is_empty()
                && spec.preconditions.iter().all(|p| facts.held.contains(p))
        }
        // Fail-closed: a document recorded at `none` has no trust boundary to have held.
        None => false,
    };
    if !all_held || !facts.stream_sound {
        defects.push(AnchorDefect::JoinEvidenceInsufficient);
    }
    match use_ {
        AnchorUse::Obligation {
            obligation, depth, ..
        } => {
            if depth != EvidenceDepth::Adapter(doc_depth)
                || doc_depth != catalog.join_document_depth()
            {
                defects.push(AnchorDefect::JoinDocumentWrongDepth {
                    recorded: doc_depth,
                });
            }
            if !join_document_witnesses(catalog, obligation) {
                defects.push(AnchorDefect::JoinDocumentDoesNotWitness);
            }
        }
        AnchorUse::Precondition {
            precondition,
            depth,
        } => {
            if depth != doc_depth {
                defects.push(AnchorDefect::JoinDocumentWrongDepth {
                    recorded: doc_depth,
                });
            }
            if !facts.held.contains(&precondition) {
                defects.push(AnchorDefect::JoinDocumentDoesNotWitness);
            }
        }
        // A join reconstructs block residency; it observes no pressure control
        // or lifecycle atom.
        AnchorUse::Atom { .. } => defects.push(AnchorDefect::JoinDocumentDoesNotWitness),
        AnchorUse::Signal => {}
    }
    defects
}

/// A routing gate document anchors only what its recorded depth may supply and it
/// witnessed (every claim passed), and only the preconditions that held, when it
/// reproduces and every precondition of that depth held. Like a join it observes no
/// atom, and it never supplies an enforcement obligation (fail-closed rule 6).
fn routing_document_defects(
    catalog: &Catalog,
    facts: &RoutingDocumentFacts,
    use_: AnchorUse,
) -> Vec<AnchorDefect> {
    if !facts.reproduces {
        return vec![AnchorDefect::RoutingEvidenceDisagrees];
    }
    let Some(doc_depth) = facts.depth else {
        return vec![AnchorDefect::RoutingEvidenceInsufficient];
    };
    let mut defects = Vec::new();
    let spec = catalog.depth(doc_depth);
    let required = spec.map_or(&[][..], |s| s.preconditions.as_slice());
    if doc_depth != Depth::RoutingHook
        || required.is_empty()
        || !required.iter().all(|p| facts.held.contains(p))
    {
        defects.push(AnchorDefect::RoutingEvidenceInsufficient);
    }
    match use_ {
        AnchorUse::Obligation {
            obligation, depth, ..
        } => {
            if depth != EvidenceDepth::Adapter(doc_depth) {
                defects.push(AnchorDefect::RoutingDocumentWrongDepth {
                    recorded: doc_depth,
                });
            }
            let may_supply = spec.is_some_and(|s| s.supplies.contains(&obligation));
            if obligation.is_enforcement() || !may_supply || !facts.witnessed.contains(&obligation)
            {
                defects.push(AnchorDefect::RoutingDocumentDoesNotWitness);
            }
        }
        AnchorUse::Precondition {
            precondition,
            depth,
        } => {
            if depth != doc_depth {
                defects.push(AnchorDefect::RoutingDocumentWrongDepth {
                    recorded: doc_depth,
                });
            }
            if !facts.held.contains(&precondition) {
                defects.push(AnchorDefect::RoutingDocumentDoesNotWitness);
            }
        }
        AnchorUse::Atom { .. } => defects.push(AnchorDefect::RoutingDocumentDoesNotWitness),
        AnchorUse::Signal => {}
    }
    defects
}

/// What a join document may witness: the catalog's `join_documents` table
/// (held to the built-in baseline: telemetry obligations only), never an
/// enforcement obligation (fail-closed rule 6, in code as well).
fn join_document_witnesses(catalog: &Catalog, obligation: Obligation) -> bool {
    !obligation.is_enforcement() && catalog.join_document_witnesses(obligation)
}

crate::names! {
    /// How strongly a positive row is backed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
    pub enum Grade {
        /// Every anchor it rests on was re-run by `kvlower check` from files
        /// committed here (a gate verdict, a join document or a routing gate document).
        Verified = "verified",
        /// At least one anchor is cited: the paper, a public source, a docs page.
        Cited = "cited",
    }
}

/// Whether an anchor that counted for `use_` was re-run by `check`. A
/// counting `repo_file` anchor for a run-time use was necessarily re-run (see
/// [`anchor_counts`]); anything else is cited.
pub fn rerun(anchor: &Anchor, use_: AnchorUse) -> bool {
    anchor.kind == Some(AnchorKind::RepoFile) && use_.claims_run_time()
}

#[cfg(test)]
mod routing_document_tests {
    //! What a routing gate document may anchor (docs/routing-trace.md, "When a routing
    //! document can anchor evidence"). Each assertion fails without its rule.
    use super::*;
    use crate::vocab::Depth;

    fn catalog() -> Catalog {
        Catalog::new(crate::baseline::doc()).unwrap_or_else(|_| unreachable!())
    }

    fn held_doc() -> RoutingDocumentFacts {
        RoutingDocumentFacts {
            reproduces: true,
            depth: Some(Depth::RoutingHook),
            held: vec![
                Precondition::RouteDecisionSeesAcceptedClaim,
                Precondition::FixedWorkerCacheNamespace,
                Precondition::RouteCostPlacementReuseSameClaim,
            ],
            witnessed: vec![
                Obligation::RouteCostAttribution,
                Obligation::PlacementAttribution,
                Obligation::ReuseRoutingAttribution,
            ],
            runtime: None,
        }
    }

    fn item(obligation: Obligation, depth: Depth) -> AnchorUse {
        AnchorUse::Obligation {
            obligation,
            depth: EvidenceDepth::Adapter(depth),
            scope: Scope::RuntimeTrace,
        }
    }

    #[test]
    fn a_held_document_anchors_the_routing_obligations_at_routing_hook() {
        let c = catalog();
        for o in held_doc().witnessed {
            assert_eq!(
                routing_document_defects(&c, &held_doc(), item(o, Depth::RoutingHook)),
                vec![]
            );
        }
        let pre = AnchorUse::Precondition {
            precondition: Precondition::FixedWorkerCacheNamespace,
            depth: Depth::RoutingHook,
        };
        assert_eq!(routing_document_defects(&c, &held_doc(), pre), vec![]);
    }

    #[test]
    fn it_anchors_nothing_else() {
        let c = catalog();
        let d = held_doc();
        // Not a routing_hook obligation.
        assert!(
            routing_document_defects(&c, &d, item(Obligation::ClaimIdentity, Depth::RoutingHook))
                .contains(&AnchorDefect::RoutingDocumentDoesNotWitness)
        );
        // Another depth.
        assert!(
            routing_document_defects(
                &c,
                &d,
                item(Obligation::RouteCostAttribution, Depth::BackendPatch)
            )
            .contains(&AnchorDefect::RoutingDocumentWrongDepth {
                recorded: Depth::RoutingHook
            })
        );
        // An atom.
        assert!(
            routing_document_defects(
                &c,
                &d,
                AnchorUse::Atom {
                    scope: Scope::RuntimeTrace
                }
            )
            .contains(&AnchorDefect::RoutingDocumentDoesNotWitness)
        );
        // An obligation the document did not witness.
        let mut partial = held_doc();
        partial.witnessed.clear();
        assert!(
            routing_document_defects(
                &c,
                &partial,
                item(Obligation::PlacementAttribution, Depth::RoutingHook)
            )
            .contains(&AnchorDefect::RoutingDocumentDoesNotWitness)
        );
    }

    #[test]
    fn a_stale_or_unheld_document_anchors_nothing() {
        let c = catalog();
        let use_ = item(Obligation::RouteCostAttribution, Depth::RoutingHook);
        let mut stale = held_doc();
        stale.reproduces = false;
        assert_eq!(
            routing_document_defects(&c, &stale, use_),
            vec![AnchorDefect::RoutingEvidenceDisagrees]
        );
        let mut unheld = held_doc();
        unheld.held.pop();
        assert!(
            routing_document_defects(&c, &unheld, use_)
                .contains(&AnchorDefect::RoutingEvidenceInsufficient)
        );
        let mut other_depth = held_doc();
        other_depth.depth = Some(Depth::TelemetryJoin);
        assert!(
            routing_document_defects(&c, &other_depth, use_)
                .contains(&AnchorDefect::RoutingEvidenceInsufficient)
        );
    }
}

#[cfg(test)]
mod patch_files_tests {
    //! A patched join document's patch files come from the anchor's `source_files` (the
    //! descriptor is the trust root); each assertion fails without its rule.
    use super::patch_files_problem;
    use crate::anchor_form::{AnchorDefect, Reason};
    use crate::environment::{Environment, RepoFile, TraceVerdictFacts};

    /// `a.py` and `b.py` hash to `A` and `B`; every other file is missing.
    struct Files;

    impl Environment for Files {
        fn repo_file(&self, _path: &str) -> RepoFile {
            RepoFile::Missing
        }
        fn trace_verdict(
            &self,
            _path: &str,
            _verdict: &crate::descriptor::ClaimedVerdict,
        ) -> TraceVerdictFacts {
            TraceVerdictFacts::default()
        }
        fn today(&self) -> (i32, u32, u32) {
            (2026, 1, 1)
        }
        fn repo_file_sha256(&self, path: &str) -> Result<String, String> {
            match path {
                "a.py" => Ok("A".into()),
                "b.py" => Ok("B".into()),
                _ => Err("not in the repository".into()),
            }
        }
    }

    fn named(files: &[&str]) -> Vec<String> {
        files.iter().map(|f| (*f).to_owned()).collect()
    }

    #[test]
    fn the_named_files_digests_must_be_exactly_the_recorded_ones() {
        let one: Result<Vec<String>, Reason> = Ok(vec!["A".into()]);
        let two: Result<Vec<String>, Reason> = Ok(vec!["A".into(), "B".into()]);
        assert_eq!(
            patch_files_problem(&one, Some(&named(&["a.py"])), &Files),
            None
        );
        assert_eq!(
            patch_files_problem(&one, Some(&named(&["a.py", "a.py"])), &Files),
            None
        );
        assert_eq!(
            patch_files_problem(&two, Some(&named(&["b.py", "a.py"])), &Files),
            None
        );
        // None named, an empty list, an extra file, another file, a missing file, a
        // recorded digest left unnamed.
        assert!(patch_files_problem(&one, None, &Files).is_some());
        assert!(patch_files_problem(&one, Some(&[]), &Files).is_some());
        let extra = patch_files_problem(&one, Some(&named(&["a.py", "b.py"])), &Files);
        assert!(extra.is_some_and(|why| why.hint.is_none() && why.why.contains("b.py")));
        assert!(patch_files_problem(&one, Some(&named(&["b.py"])), &Files).is_some());
        let missing = patch_files_problem(&one, Some(&named(&["c.py"])), &Files);
        assert!(missing.is_some_and(|why| why.hint.is_none() && why.why.contains("c.py")));
        assert!(patch_files_problem(&two, Some(&named(&["a.py"])), &Files).is_some());
        // Events without a header (JSON Lines) record no digest: nothing can match.
        // ...and the reason the join found is carried as it is, with its own hint.
        let none: Result<Vec<String>, Reason> =
            Err(Reason::with_hint("not a capture", "re-capture it"));
        assert_eq!(
            patch_files_problem(&none, Some(&named(&["a.py"])), &Files),
            Some(Reason::with_hint("not a capture", "re-capture it"))
        );
    }

    /// A reason's own hint leads the defect's hint, which then names the anchored file;
    /// without one, the defect's generic hint stands. The message is the same either way.
    #[test]
    fn a_reasons_own_hint_leads_the_defects() {
        let anchor = crate::descriptor::Anchor {
            path: Some("ev/c.json".into()),
            ..crate::descriptor::Anchor::default()
        };
        let own = AnchorDefect::CampaignDoesNotHold(Reason::with_hint("why", "restore it"));
        let generic = AnchorDefect::CampaignDoesNotHold(Reason::new("why"));
        assert_eq!(
            own.hint(&anchor),
            "restore it; then run `kvlower gate --campaign ev/c.json`"
        );
        assert!(
            generic
                .hint(&anchor)
                .starts_with("run `kvlower gate --campaign ev/c.json`: every trace")
        );
        assert_eq!(own.to_string(), generic.to_string());
        let own = AnchorDefect::JoinPatchFilesDisagree(Reason::with_hint("why", "re-capture"));
        let generic = AnchorDefect::JoinPatchFilesDisagree(Reason::new("why"));
        assert!(
            own.hint(&anchor)
                .starts_with("re-capture; then name in the anchor's `source_files`")
        );
        assert!(own.hint(&anchor).contains("ev/c.json"));
        assert!(
            generic
                .hint(&anchor)
                .starts_with("name in the anchor's `source_files` exactly")
        );
        assert_eq!(own.to_string(), generic.to_string());
    }
}
