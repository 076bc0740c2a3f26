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

use crate::catalog::Catalog;
use crate::descriptor::{Anchor, AnchorDefect, AnchorKind, ClaimedVerdict};
use crate::judgment::EvidenceDepth;
use crate::vocab::{Depth, Obligation, Precondition, Scope};

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

/// What a `repo_file` anchor's file turned out to be. The environment reads
/// the file (and re-runs what it can); [`anchor_counts`] decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoFile {
    /// Not there: nothing to anchor.
    Missing,
    /// Refused before it was opened: it resolves outside the repository (links
    /// included), or is not a regular file, or is too large. `why` says which.
    Refused { why: String },
    /// One of kvlower's own inputs or outputs (`capabilities/`, `modes/`,
    /// `results/`, `schemas/`, `bad_lowering/`): a descriptor cannot be its own evidence.
    OwnFile,
    /// A `kvlower join` evidence document, recognised by its content (not its
    /// name), and what re-running it showed.
    JoinDocument(JoinDocumentFacts),
    /// Any other file. A trace among them is re-run only through a claimed verdict.
    Plain,
}

/// What re-running a committed join evidence document showed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JoinDocumentFacts {
    /// Re-running the join on the registry and event file it names gives the
    /// same document, byte for byte in value.
    pub reproduces: bool,
    /// The depth the document records (`telemetry_join` for every join);
    /// `None` when it names no known depth.
    pub depth: Option<Depth>,
    /// The preconditions the document reports as held.
    pub held: Vec<Precondition>,
    /// The stream carried sequence numbers, declared no stream ambiguity, and
    /// some claim was materialized with none left insufficient.
    pub stream_sound: bool,
}

/// Decides whether `anchor` counts for `use_`: every defect, structural or
/// found by re-running the anchored file. Empty means it counts.
pub fn anchor_counts(
    catalog: &Catalog,
    anchor: &Anchor,
    use_: AnchorUse,
    env: &dyn crate::descriptor::Environment,
) -> Vec<AnchorDefect> {
    let mut defects = anchor.defects(use_.scope());
    if let (Some(today), Some(date)) = (
        env.today(),
        anchor
            .retrieved
            .as_deref()
            .and_then(crate::descriptor::parse_iso_date),
    ) && date > today
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
                use_,
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
    use_: AnchorUse,
    env: &dyn crate::descriptor::Environment,
) -> Vec<AnchorDefect> {
    match env.repo_file(path) {
        RepoFile::Missing => vec![AnchorDefect::RepoFileMissing],
        RepoFile::Refused { .. } => vec![AnchorDefect::RepoFileRefused],
        RepoFile::OwnFile => vec![AnchorDefect::OwnFile],
        RepoFile::JoinDocument(facts) => {
            let mut d = join_document_defects(catalog, &facts, use_);
            if verdict.is_some() {
                // A gate verdict is about a trace; a join document is not one.
                d.push(AnchorDefect::TraceVerdictDisagrees);
            }
            d
        }
        RepoFile::Plain => match verdict {
            Some(v) => env.trace_verdict_defect(path, v).into_iter().collect(),
            None if use_.claims_run_time() => vec![AnchorDefect::NotReRunnable],
            None => Vec::new(),
        },
    }
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
        /// committed here (a gate verdict or a join document).
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
