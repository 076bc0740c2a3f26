//! The lowering judgment (paper §4; `docs/model.md`):
//!
//! ```text
//! Lower(d, a, E, m) iff for every o in O[m] there is e in d.native ∪ d.adapters[≤a] ∪ E
//!     with supports(e, o) ∧ anchored(e) ∧ depth_allowed(a, o)
//! ```
//!
//! [`judge`] returns a [`Judgment`] that carries its reasons: for every
//! obligation the evidence that satisfied it or, for each candidate, every
//! reason it did not count; the atoms, signals and proposals that decided the
//! label. Nothing here can raise a label from missing or doubtful input: every
//! defect only removes a candidate.

use serde::Serialize;

use crate::anchor_rules::AnchorDefect;
use crate::anchoring::{AnchorUse, Grade, anchor_counts, rerun};
use crate::catalog::Catalog;
use crate::descriptor::{Adapter, Descriptor, EvidenceItem};
use crate::environment::Environment;
use crate::vocab::{
    Ambiguity, Atom, Depth, Label, Mode, Obligation, Precondition, Signal, Status, Subtype,
};

/// Where an evidence item sits in its descriptor.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct EvidenceRef {
    /// `native` or the adapter's depth.
    pub depth: EvidenceDepth,
    /// YAML path of the item in the descriptor (`adapters[0].evidence[3]`).
    pub path: String,
    /// What the anchor names.
    pub anchor: String,
    /// Whether `check` re-ran the anchored evidence (a gate verdict or a join
    /// document committed here) rather than citing it.
    pub rerun: bool,
}

pub use crate::vocab::EvidenceDepth;

/// Why one candidate did not supply an obligation.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum Defeat {
    /// Rule 2: only `supported` evidence counts.
    StatusNotSupported { status: crate::vocab::Status },
    /// Rule 2: the anchor is incomplete or names nothing.
    Unanchored { defects: Vec<AnchorDefect> },
    /// The adapter is deeper than the row's selected depth.
    AdapterNotSelected {
        adapter_depth: Depth,
        row_depth: Depth,
    },
    /// Rule 6: telemetry cannot create enforcement.
    TelemetryCannotEnforce,
    /// Rule 5: this depth may not supply this obligation.
    DepthCannotSupply { adapter_depth: Depth },
    /// Rule 5: the depth supplies this obligation only with these atoms anchored.
    ConditionalAtomsMissing { atoms: Vec<Atom> },
    /// Rule 7 / trust boundary: the adapter's preconditions are not all anchored.
    PreconditionsUnmet { missing: Vec<Precondition> },
    /// Rule 7: the adapter declares an ambiguity.
    AmbiguityDeclared { ambiguities: Vec<Ambiguity> },
    /// Rule 4: docs-only or source-inspection evidence cannot make a positive
    /// row, native or adapter: a positive certifies exercised runtime paths.
    ScopeTooWeak { scope: crate::vocab::Scope },
    /// The evidence exercised other modes' paths, not this row's mode.
    NotExercisedForMode { modes: Vec<Mode> },
    /// The item does not say which modes' paths it exercised (`modes:` left out):
    /// omission must not widen evidence to every mode, so it supports none.
    ModesNotStated,
    /// Rule 7: another item at the same depth says the obligation is `missing`.
    Contradicted { by: String },
}

impl std::fmt::Display for Defeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: &[String]| v.join(", ");
        match self {
            Defeat::StatusNotSupported { status } => {
                write!(f, "status is `{status}`, not `supported`")
            }
            Defeat::Unanchored { defects } => write!(
                f,
                "unanchored: {}",
                list(&defects.iter().map(ToString::to_string).collect::<Vec<_>>())
            ),
            Defeat::AdapterNotSelected {
                adapter_depth,
                row_depth,
            } => {
                write!(
                    f,
                    "{adapter_depth} adapter is deeper than the row depth {row_depth}"
                )
            }
            Defeat::TelemetryCannotEnforce => f.write_str("telemetry cannot create enforcement"),
            Defeat::DepthCannotSupply { adapter_depth } => {
                write!(f, "depth {adapter_depth} may not supply this obligation")
            }
            Defeat::ConditionalAtomsMissing { atoms } => write!(
                f,
                "needs anchored atoms: {}",
                list(&atoms.iter().map(ToString::to_string).collect::<Vec<_>>())
            ),
            Defeat::PreconditionsUnmet { missing } => write!(
                f,
                "adapter preconditions not anchored: {}",
                list(&missing.iter().map(ToString::to_string).collect::<Vec<_>>())
            ),
            Defeat::AmbiguityDeclared { ambiguities } => write!(
                f,
                "adapter declares ambiguity: {}",
                list(
                    &ambiguities
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                )
            ),
            Defeat::ScopeTooWeak { scope } => {
                write!(
                    f,
                    "{scope} evidence cannot make a positive row (it exercised no runtime path)"
                )
            }
            Defeat::NotExercisedForMode { modes } => write!(
                f,
                "exercised for {} only",
                list(&modes.iter().map(ToString::to_string).collect::<Vec<_>>())
            ),
            Defeat::Contradicted { by } => write!(f, "contradicted by `missing` evidence at {by}"),
            Defeat::ModesNotStated => f.write_str(
                "it does not say which modes' paths it exercised (`modes: [..]` or `modes: all`)",
            ),
        }
    }
}

/// How one obligation of O[m] fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ObligationFinding {
    pub obligation: Obligation,
    /// The shallowest evidence that supplied it, if any.
    pub satisfied_by: Option<EvidenceRef>,
    /// Other items that would also supply it (redundant support).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_satisfied_by: Vec<EvidenceRef>,
    /// Every other candidate and why it did not count.
    pub rejected: Vec<(EvidenceRef, Vec<Defeat>)>,
}

/// How one required atom fared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AtomFinding {
    pub atom: Atom,
    pub anchored_by: Option<EvidenceRef>,
    pub rejected: Vec<(EvidenceRef, Vec<AnchorDefect>)>,
}

/// A proposal that applies to this row, and what became of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProposalFinding {
    pub offered: Offered,
    /// Where the proposal comes from (`proposals[0]`, `adapters[1].evidence[2]`).
    pub path: String,
    /// Set when the catalog forbids this lowering.
    pub forbidden_because: Option<String>,
}

/// What was offered as the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "offered")]
pub enum Offered {
    /// A primitive proposed as the mode (`proposals:` in the descriptor).
    Primitive { primitive: Signal },
    /// An adapter that claims one of the mode's enforcement-critical obligations.
    AdapterEnforcement {
        adapter_depth: Depth,
        obligation: Obligation,
    },
}

/// What was offered, as a noun: "`active_no_evict`", "the scheduler_hook
/// adapter's `explicit_conflict_action`". Every report frames it in its own
/// sentence ("… offered as the mode"); this is the one place that spells it.
impl std::fmt::Display for Offered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Offered::Primitive { primitive } => write!(f, "`{primitive}`"),
            Offered::AdapterEnforcement {
                adapter_depth,
                obligation,
            } => write!(f, "the {adapter_depth} adapter's `{obligation}`"),
        }
    }
}

/// Why the row got its label, as one of the judgment's truth-table arms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "because")]
pub enum LabelReason {
    /// Lower holds from native evidence alone.
    LowerHoldsNatively,
    /// Lower holds only with adapter or patch evidence.
    LowerHoldsWithAdapter,
    /// Lower fails and a proposal for this mode is a forbidden lowering.
    ForbiddenLowering { offered: Offered },
    /// Lower fails and a proposal lacks enforcement-critical obligations.
    ProposalLacksEnforcement { missing: Vec<Obligation> },
    /// Lower fails; these signals make the row plausible.
    SignalsWithoutObligations { signals: Vec<Signal> },
    /// Lower fails and nothing related was exercised.
    Inconclusive,
}

/// The label's reason as one sentence: what the matrix, `explain` and the
/// audit reports print (the one renderer of a [`LabelReason`]).
impl std::fmt::Display for LabelReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn list<T: std::fmt::Display>(v: &[T]) -> String {
            v.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        }
        match self {
            LabelReason::LowerHoldsNatively => {
                f.write_str("every obligation is supplied by anchored native evidence")
            }
            LabelReason::LowerHoldsWithAdapter => f.write_str(
                "every obligation is supplied by anchored evidence at an allowed adapter depth",
            ),
            LabelReason::ForbiddenLowering { offered } => {
                write!(f, "{offered} is offered as this mode, a forbidden lowering")
            }
            LabelReason::ProposalLacksEnforcement { missing } => write!(
                f,
                "a mapping is offered as this mode but lacks enforcement-critical {}",
                list(missing)
            ),
            LabelReason::SignalsWithoutObligations { signals } => write!(
                f,
                "signals {} make it plausible, but obligations are missing",
                list(signals)
            ),
            LabelReason::Inconclusive => {
                f.write_str("obligations are missing and no related signal was exercised")
            }
        }
    }
}

/// The judgment of one (descriptor, mode, depth) row, with its reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Judgment {
    pub mode: Mode,
    pub depth: Depth,
    pub label: Label,
    pub subtype: Option<Subtype>,
    /// For a positive row: `verified` when every anchor it rests on (each
    /// satisfying item, required atom and precondition of a contributing
    /// adapter) was re-run by `check`, `cited` otherwise.
    pub grade: Option<Grade>,
    pub reason: LabelReason,
    pub obligations: Vec<ObligationFinding>,
    pub atoms: Vec<AtomFinding>,
    /// Anchored signals that suggest this mode (they satisfy nothing).
    pub signals: Vec<Signal>,
    pub proposals: Vec<ProposalFinding>,
}

impl Judgment {
    pub fn satisfied(&self) -> impl Iterator<Item = Obligation> + '_ {
        self.obligations
            .iter()
            .filter(|f| f.satisfied_by.is_some())
            .map(|f| f.obligation)
    }

    pub fn missing(&self) -> impl Iterator<Item = Obligation> + '_ {
        self.obligations
            .iter()
            .filter(|f| f.satisfied_by.is_none())
            .map(|f| f.obligation)
    }

    pub fn missing_atoms(&self) -> impl Iterator<Item = Atom> + '_ {
        self.atoms
            .iter()
            .filter(|f| f.anchored_by.is_none())
            .map(|f| f.atom)
    }
}

/// The row depths a descriptor is judged at: `none`, each represented adapter
/// depth, and each depth a proposal names (so a forbidden proposal is judged
/// at its depth even when no adapter sits there).
pub fn row_depths(descriptor: &Descriptor) -> Vec<Depth> {
    let mut depths: Vec<Depth> = std::iter::once(Depth::None)
        .chain(descriptor.adapters.iter().map(|a| a.depth))
        .chain(descriptor.proposals.iter().map(|p| p.depth))
        .collect();
    depths.sort();
    depths.dedup();
    depths
}

/// Judges one row. Pure and total: every input gives a judgment.
pub fn judge(
    catalog: &Catalog,
    descriptor: &Descriptor,
    mode: Mode,
    depth: Depth,
    env: &dyn Environment,
) -> Judgment {
    judge_anchored(
        catalog,
        &Anchored::new(catalog, descriptor, env),
        mode,
        depth,
    )
}

/// A descriptor with every anchor of it judged once ([`anchor_counts`], for each
/// use the judgment makes of it): the rows of one descriptor, every mode and
/// depth, and its mutants ask the same anchors the same questions.
#[derive(Debug, Clone)]
pub struct Anchored<'a> {
    descriptor: &'a Descriptor,
    anchors: AnchorJudgments,
}

/// What each anchor of one descriptor counts for, by position.
#[derive(Debug, Clone, PartialEq, Eq)]
struct AnchorJudgments {
    /// Per `native` item: its anchor's defects for the item's own use.
    native: Vec<Vec<AnchorDefect>>,
    /// Per adapter, in order.
    adapters: Vec<AdapterAnchors>,
    /// Per atom: its defects as an atom ([`atom_defects`]).
    atoms: Vec<Vec<AnchorDefect>>,
    /// Per signal: whether its anchor counts for a signal.
    signals: Vec<bool>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct AdapterAnchors {
    /// Per evidence item: its anchor's defects for the item's own use.
    items: Vec<Vec<AnchorDefect>>,
    /// The adapter's [`unmet_preconditions`].
    unmet: Vec<Precondition>,
    /// Whether every precondition of the adapter's depth is anchored by a
    /// re-run anchor that counts (what a `verified` grade needs of it).
    preconditions_rerun: bool,
}

/// The defects of an evidence item's anchor for the item's own use at `depth`.
fn item_anchor_defects(
    catalog: &Catalog,
    item: &EvidenceItem,
    depth: EvidenceDepth,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> Vec<AnchorDefect> {
    anchor_counts(catalog, &item.anchor, item_use(item, depth), subject, env)
}

fn signal_counts(
    catalog: &Catalog,
    signal: &crate::descriptor::SignalEvidence,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> bool {
    anchor_counts(catalog, &signal.anchor, AnchorUse::Signal, subject, env).is_empty()
}

/// Two items whose anchors are asked the same question: same anchor, same use.
fn same_anchor_use(a: &EvidenceItem, b: &EvidenceItem) -> bool {
    a.obligation == b.obligation && a.scope == b.scope && a.anchor == b.anchor
}

impl AdapterAnchors {
    fn of(
        catalog: &Catalog,
        adapter: &Adapter,
        subject: &crate::descriptor::RuntimeIdentity,
        env: &dyn Environment,
    ) -> AdapterAnchors {
        let at = EvidenceDepth::Adapter(adapter.depth);
        let (unmet, preconditions_rerun) = precondition_anchors(catalog, adapter, subject, env);
        AdapterAnchors {
            items: adapter
                .evidence
                .iter()
                .map(|item| item_anchor_defects(catalog, item, at, subject, env))
                .collect(),
            unmet,
            preconditions_rerun,
        }
    }
}

/// The adapter's [`unmet_preconditions`], and whether every precondition of its
/// depth is anchored by a re-run anchor that counts (see [`grade_of`]).
fn precondition_anchors(
    catalog: &Catalog,
    adapter: &Adapter,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> (Vec<Precondition>, bool) {
    let Some(spec) = catalog.depth(adapter.depth) else {
        // Fail-closed: a depth without rules supplies nothing (`depth_may_supply`),
        // so it cannot contribute; if it did, its anchors are not re-run ones.
        return (Vec::new(), false);
    };
    let mut unmet = Vec::new();
    let mut rerun_all = true;
    for p in &spec.preconditions {
        let use_ = AnchorUse::Precondition {
            precondition: *p,
            depth: adapter.depth,
        };
        match adapter.preconditions.get(p) {
            Some(anchor) => {
                let counts = anchor_counts(catalog, anchor, use_, subject, env).is_empty();
                if !counts {
                    unmet.push(*p);
                }
                rerun_all &= counts && rerun(anchor, use_);
            }
            None => {
                unmet.push(*p);
                rerun_all = false;
            }
        }
    }
    (unmet, rerun_all)
}

impl<'a> Anchored<'a> {
    /// Judges every anchor of `descriptor` once.
    pub fn new(
        catalog: &Catalog,
        descriptor: &'a Descriptor,
        env: &dyn Environment,
    ) -> Anchored<'a> {
        let subject = &descriptor.runtime;
        Anchored {
            descriptor,
            anchors: AnchorJudgments {
                native: descriptor
                    .native
                    .iter()
                    .map(|item| {
                        item_anchor_defects(catalog, item, EvidenceDepth::Native, subject, env)
                    })
                    .collect(),
                adapters: descriptor
                    .adapters
                    .iter()
                    .map(|a| AdapterAnchors::of(catalog, a, subject, env))
                    .collect(),
                atoms: descriptor
                    .atoms
                    .iter()
                    .map(|a| atom_defects(catalog, a, subject, env))
                    .collect(),
                signals: descriptor
                    .signals
                    .iter()
                    .map(|s| signal_counts(catalog, s, subject, env))
                    .collect(),
            },
        }
    }

    /// The descriptor judged.
    pub fn descriptor(&self) -> &'a Descriptor {
        self.descriptor
    }

    /// `edited`, a changed copy of this descriptor, with its anchors judged:
    /// an anchor asked the same question as the one at the same place here
    /// (same anchor, same use, same runtime) keeps its answer; every other
    /// anchor is judged afresh. The same as [`Anchored::new`] on `edited`.
    pub fn edited<'b>(
        &self,
        catalog: &Catalog,
        edited: &'b Descriptor,
        env: &dyn Environment,
    ) -> Anchored<'b> {
        let base = self.descriptor;
        if base.runtime != edited.runtime {
            return Anchored::new(catalog, edited, env);
        }
        let subject = &edited.runtime;
        let known = &self.anchors;
        let native = edited
            .native
            .iter()
            .enumerate()
            .map(
                |(i, item)| match (base.native.get(i), known.native.get(i)) {
                    (Some(b), Some(defects)) if same_anchor_use(b, item) => defects.clone(),
                    _ => item_anchor_defects(catalog, item, EvidenceDepth::Native, subject, env),
                },
            )
            .collect();
        let adapters = edited
            .adapters
            .iter()
            .enumerate()
            .map(
                |(ai, a)| match (base.adapters.get(ai), known.adapters.get(ai)) {
                    (Some(b), Some(j)) if b.depth == a.depth => {
                        let at = EvidenceDepth::Adapter(a.depth);
                        let items = a
                            .evidence
                            .iter()
                            .enumerate()
                            .map(|(i, item)| match (b.evidence.get(i), j.items.get(i)) {
                                (Some(bi), Some(defects)) if same_anchor_use(bi, item) => {
                                    defects.clone()
                                }
                                _ => item_anchor_defects(catalog, item, at, subject, env),
                            })
                            .collect();
                        let (unmet, preconditions_rerun) = if b.preconditions == a.preconditions {
                            (j.unmet.clone(), j.preconditions_rerun)
                        } else {
                            precondition_anchors(catalog, a, subject, env)
                        };
                        AdapterAnchors {
                            items,
                            unmet,
                            preconditions_rerun,
                        }
                    }
                    _ => AdapterAnchors::of(catalog, a, subject, env),
                },
            )
            .collect();
        let atoms = edited
            .atoms
            .iter()
            .enumerate()
            .map(|(i, a)| match (base.atoms.get(i), known.atoms.get(i)) {
                (Some(b), Some(defects)) if b.scope == a.scope && b.anchor == a.anchor => {
                    defects.clone()
                }
                _ => atom_defects(catalog, a, subject, env),
            })
            .collect();
        let signals = edited
            .signals
            .iter()
            .enumerate()
            .map(|(i, s)| match (base.signals.get(i), known.signals.get(i)) {
                (Some(b), Some(counts)) if b.anchor == s.anchor => *counts,
                _ => signal_counts(catalog, s, subject, env),
            })
            .collect();
        Anchored {
            descriptor: edited,
            anchors: AnchorJudgments {
                native,
                adapters,
                atoms,
                signals,
            },
        }
    }

    /// The defects of native item `i`'s anchor (not counting when out of range,
    /// which [`Anchored::new`] rules out).
    fn native_defects(&self, i: usize) -> &[AnchorDefect] {
        self.anchors.native.get(i).map_or(NOT_JUDGED, Vec::as_slice)
    }

    fn adapter(&self, ai: usize) -> Option<&AdapterAnchors> {
        self.anchors.adapters.get(ai)
    }

    fn adapter_item_defects(&self, ai: usize, i: usize) -> &[AnchorDefect] {
        self.adapter(ai)
            .and_then(|a| a.items.get(i))
            .map_or(NOT_JUDGED, Vec::as_slice)
    }

    fn atom_defects(&self, i: usize) -> &[AnchorDefect] {
        self.anchors.atoms.get(i).map_or(NOT_JUDGED, Vec::as_slice)
    }

    fn signal_counts(&self, i: usize) -> bool {
        self.anchors.signals.get(i).copied().unwrap_or(false)
    }
}

/// The defects of an anchor [`Anchored`] has no judgment for (never the case:
/// it judges every anchor of its descriptor); fail-closed, it does not count.
const NOT_JUDGED: &[AnchorDefect] = &[AnchorDefect::NoKind];

/// [`judge`] with the descriptor's anchors already judged: pure, no environment.
pub fn judge_anchored(
    catalog: &Catalog,
    anchored: &Anchored<'_>,
    mode: Mode,
    depth: Depth,
) -> Judgment {
    let descriptor = anchored.descriptor;
    let anchored_atoms: Vec<Atom> = descriptor
        .atoms
        .iter()
        .enumerate()
        .filter(|(i, _)| anchored.atom_defects(*i).is_empty())
        .map(|(_, a)| a.atom)
        .collect();
    let contradictions = Contradictions::of(descriptor);
    let obligations: Vec<ObligationFinding> = catalog
        .bundle(mode)
        .iter()
        .map(|&o| {
            judge_obligation(
                catalog,
                anchored,
                o,
                mode,
                depth,
                &anchored_atoms,
                &contradictions,
            )
        })
        .collect();
    let atoms: Vec<AtomFinding> = catalog
        .mode(mode)
        .required_atoms
        .iter()
        .map(|&atom| judge_atom(anchored, atom))
        .collect();
    let mut signals: Vec<Signal> = descriptor
        .signals
        .iter()
        .enumerate()
        .filter(|(_, s)| catalog.signal_suggests(s.signal, mode))
        .filter(|(i, _)| anchored.signal_counts(*i))
        .map(|(_, s)| s.signal)
        .collect();
    signals.sort();
    signals.dedup();
    let proposals = proposals_for(catalog, descriptor, mode, depth);

    let lower = lower_of(&obligations, &atoms);
    let critical = &catalog.mode(mode).enforcement_critical;
    let missing_critical: Vec<Obligation> = obligations
        .iter()
        .filter(|f| f.satisfied_by.is_none() && critical.contains(&f.obligation))
        .map(|f| f.obligation)
        .collect();
    let proposed = Proposed::of(&proposals);
    let (label, reason) = decide(lower, proposed, &missing_critical, &signals);
    let subtype =
        (label == Label::SoundWithAdapter).then(|| subtype_of(catalog, mode, &obligations));
    let grade = label
        .is_positive()
        .then(|| grade_of(anchored, &obligations, &atoms));

    Judgment {
        mode,
        depth,
        label,
        subtype,
        grade,
        reason,
        obligations,
        atoms,
        signals,
        proposals,
    }
}

/// Whether Lower(d, a, E, m) holds for a row, and on what evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lower {
    /// Every obligation and required atom is supplied, each obligation by native evidence.
    HoldsNatively,
    /// Every obligation and required atom is supplied, some obligation by an adapter or patch.
    HoldsWithAdapter,
    /// Some obligation or required atom is not supplied.
    Fails,
}

fn lower_of(obligations: &[ObligationFinding], atoms: &[AtomFinding]) -> Lower {
    let all_satisfied = obligations.iter().all(|f| f.satisfied_by.is_some());
    let atoms_ok = atoms.iter().all(|f| f.anchored_by.is_some());
    let all_native = obligations.iter().all(|f| {
        f.satisfied_by
            .as_ref()
            .is_some_and(|e| e.depth == EvidenceDepth::Native)
    });
    match (all_satisfied && atoms_ok, all_native) {
        (true, true) => Lower::HoldsNatively,
        (true, false) => Lower::HoldsWithAdapter,
        (false, true | false) => Lower::Fails,
    }
}

/// What the row's applicable proposals amount to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proposed {
    /// Nothing is offered as the mode at this row.
    Nothing,
    /// Something is offered as the mode and no offer is a forbidden lowering.
    Allowed,
    /// This (the first forbidden offer) is a forbidden lowering of the mode.
    Forbidden(Offered),
}

impl Proposed {
    fn of(proposals: &[ProposalFinding]) -> Proposed {
        match (
            proposals.iter().find(|p| p.forbidden_because.is_some()),
            proposals,
        ) {
            (Some(p), _) => Proposed::Forbidden(p.offered),
            (None, []) => Proposed::Nothing,
            (None, [_, ..]) => Proposed::Allowed,
        }
    }
}

/// The label truth table (paper §4, Table 3; `docs/model.md`, "Labels").
///
/// Every input is in the matched tuple and every arm lists every input, so
/// the arms are disjoint: none relies on an earlier one having failed, and
/// their order does not matter. In the slice positions `[]` is "none" and
/// `[_, ..]` is "at least one". Arms marked *fail-closed* are the ways a row
/// that Lower does not hold for ends: never positive, and `rejected` only when
/// something was offered as the mode.
pub fn decide(
    lower: Lower,
    proposed: Proposed,
    missing_critical: &[Obligation],
    signals: &[Signal],
) -> (Label, LabelReason) {
    use Proposed::{Allowed, Forbidden, Nothing};
    match (lower, proposed, missing_critical, signals) {
        // Native evidence alone supplies every obligation and atom; what was
        // offered or suggested cannot take a supplied obligation away.
        (Lower::HoldsNatively, Nothing | Allowed | Forbidden(_), [] | [_, ..], [] | [_, ..]) => {
            (Label::NativeSound, LabelReason::LowerHoldsNatively)
        }
        // Adapter or patch evidence, each at an allowed depth, completes Lower.
        (Lower::HoldsWithAdapter, Nothing | Allowed | Forbidden(_), [] | [_, ..], [] | [_, ..]) => {
            (Label::SoundWithAdapter, LabelReason::LowerHoldsWithAdapter)
        }
        // Fail-closed: something was offered as this mode that must never be.
        (Lower::Fails, Forbidden(offered), [] | [_, ..], [] | [_, ..]) => {
            (Label::Rejected, LabelReason::ForbiddenLowering { offered })
        }
        // Fail-closed: an offered mapping lacks the mode's enforcement.
        (Lower::Fails, Allowed, missing @ [_, ..], [] | [_, ..]) => (
            Label::Rejected,
            LabelReason::ProposalLacksEnforcement {
                missing: missing.to_vec(),
            },
        ),
        // Fail-closed: related primitives make the row plausible, nothing more
        // (an offer that lacks no enforcement is not a misrepresentation).
        (Lower::Fails, Allowed, [], signals @ [_, ..])
        | (Lower::Fails, Nothing, [] | [_, ..], signals @ [_, ..]) => (
            Label::Approximate,
            LabelReason::SignalsWithoutObligations {
                signals: signals.to_vec(),
            },
        ),
        // Fail-closed: nothing related was exercised; no classification claim.
        (Lower::Fails, Allowed, [], []) | (Lower::Fails, Nothing, [] | [_, ..], []) => {
            (Label::Unknown, LabelReason::Inconclusive)
        }
    }
}

/// The deepest kind of evidence a positive adapter row rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Some obligation is supplied by a `backend_patch` adapter.
    Patch,
    /// Some obligation is supplied by an adapter other than a patch or a telemetry join.
    Hook,
    /// Every obligation is supplied natively or by a telemetry join.
    Telemetry,
}

/// What a positive adapter row establishes, from the evidence that made it
/// (paper §4, Table 3; `docs/model.md`, "Subtypes").
fn subtype_of(catalog: &Catalog, mode: Mode, obligations: &[ObligationFinding]) -> Subtype {
    let depths: Vec<EvidenceDepth> = obligations
        .iter()
        .filter_map(|f| f.satisfied_by.as_ref().map(|e| e.depth))
        .collect();
    let needs_pressure_atoms = !catalog.mode(mode).required_atoms.is_empty();
    subtype_for(&depths, needs_pressure_atoms)
}

/// [`subtype_of`] on the depths that supplied the obligations.
fn subtype_for(depths: &[EvidenceDepth], needs_pressure_atoms: bool) -> Subtype {
    let reach = if depths.contains(&EvidenceDepth::Adapter(Depth::BackendPatch)) {
        Reach::Patch
    } else if depths.iter().all(|d| {
        matches!(
            d,
            EvidenceDepth::Native | EvidenceDepth::Adapter(Depth::TelemetryJoin)
        )
    }) {
        Reach::Telemetry
    } else {
        Reach::Hook
    };
    match (reach, needs_pressure_atoms) {
        // A modified backend path supplies an obligation: whatever else the row
        // uses, what it establishes is the patch on the exercised path.
        (Reach::Patch, true | false) => Subtype::BackendPatchWitness,
        // The mode needs observed pressure atoms (soft_priority): without a
        // patch, the row reconstructs policy behaviour in the tested
        // controlled-pressure regime only.
        (Reach::Hook | Reach::Telemetry, true) => Subtype::AdapterPolicyControlledPressure,
        // Only native evidence and a telemetry join: selected claim-scoped
        // observations, reconstructed outside the runtime.
        (Reach::Telemetry, false) => Subtype::AdapterObservational,
        // A represented hook (registry, storage, routing, scheduler,
        // allocator) supplies obligations outside the backend.
        (Reach::Hook, false) => Subtype::AdapterHookMechanism,
    }
}

/// A positive row is `verified` only when every anchor it rests on was re-run:
/// the satisfying items, the required atoms, and every precondition of each
/// adapter that supplied an obligation.
fn grade_of(
    anchored: &Anchored<'_>,
    obligations: &[ObligationFinding],
    atoms: &[AtomFinding],
) -> Grade {
    let items_rerun = obligations
        .iter()
        .all(|f| f.satisfied_by.as_ref().is_some_and(|e| e.rerun));
    let atoms_rerun = atoms
        .iter()
        .all(|f| f.anchored_by.as_ref().is_some_and(|e| e.rerun));
    let contributing: Vec<Depth> = obligations
        .iter()
        .filter_map(|f| match f.satisfied_by.as_ref()?.depth {
            EvidenceDepth::Adapter(d) => Some(d),
            EvidenceDepth::Native => None,
        })
        .collect();
    // Every precondition of each contributing adapter re-run (a depth without
    // rules fails closed: see `precondition_anchors`).
    let preconditions_rerun = anchored
        .descriptor
        .adapters
        .iter()
        .enumerate()
        .filter(|(_, a)| contributing.contains(&a.depth))
        .all(|(ai, _)| anchored.adapter(ai).is_some_and(|a| a.preconditions_rerun));
    if items_rerun && atoms_rerun && preconditions_rerun {
        Grade::Verified
    } else {
        Grade::Cited
    }
}

/// Rule 3: an atom counts only when anchored to a runtime trace.
fn atom_defects(
    catalog: &Catalog,
    atom: &crate::descriptor::AtomEvidence,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> Vec<AnchorDefect> {
    let mut defects = anchor_counts(
        catalog,
        &atom.anchor,
        AnchorUse::Atom { scope: atom.scope },
        subject,
        env,
    );
    if !atom.scope.is_runtime_observed() {
        // A docs or source fact is not an observation; say so as an order/scope defect.
        defects.push(AnchorDefect::TraceOrderNotPreserved);
    }
    defects
}

fn judge_atom(anchored: &Anchored<'_>, atom: Atom) -> AtomFinding {
    let descriptor = anchored.descriptor;
    let mut anchored_by = None;
    let mut rejected = Vec::new();
    for (i, a) in descriptor
        .atoms
        .iter()
        .enumerate()
        .filter(|(_, a)| a.atom == atom)
    {
        let r = EvidenceRef {
            depth: EvidenceDepth::Native,
            path: format!("atoms[{i}]"),
            anchor: a.anchor.target(),
            rerun: rerun(&a.anchor, AnchorUse::Atom { scope: a.scope }),
        };
        let defects = anchored.atom_defects(i);
        if defects.is_empty() && anchored_by.is_none() {
            anchored_by = Some(r);
        } else if !defects.is_empty() {
            rejected.push((r, defects.to_vec()));
        }
    }
    AtomFinding {
        atom,
        anchored_by,
        rejected,
    }
}

fn judge_obligation(
    catalog: &Catalog,
    anchored: &Anchored<'_>,
    obligation: Obligation,
    mode: Mode,
    row_depth: Depth,
    anchored_atoms: &[Atom],
    contradictions: &Contradictions,
) -> ObligationFinding {
    let descriptor = anchored.descriptor;
    let mut candidates: Vec<(EvidenceRef, Vec<Defeat>)> = Vec::new();
    for (i, item) in descriptor.native.iter().enumerate() {
        if item.obligation != obligation {
            continue;
        }
        let at = EvidenceDepth::Native;
        let r = evidence_ref(at, format!("native[{i}]"), item);
        let mut defeats = item_defeats(item, mode, anchored.native_defects(i));
        defeats.extend(contradictions.of_item(ListId::Native, item));
        candidates.push((r, defeats));
    }
    for (ai, adapter) in descriptor.adapters.iter().enumerate() {
        // Judged once per adapter by `Anchored`; fail-closed when absent (never).
        let unmet = anchored
            .adapter(ai)
            .map_or(Precondition::ALL, |a| a.unmet.as_slice());
        for (i, item) in adapter.evidence.iter().enumerate() {
            if item.obligation != obligation {
                continue;
            }
            let at = EvidenceDepth::Adapter(adapter.depth);
            let r = evidence_ref(at, format!("adapters[{ai}].evidence[{i}]"), item);
            let mut defeats = item_defeats(item, mode, anchored.adapter_item_defects(ai, i));
            defeats.extend(contradictions.of_item(ListId::Adapter(ai), item));
            defeats.extend(adapter_defeats(
                catalog,
                adapter,
                item,
                row_depth,
                anchored_atoms,
                unmet,
            ));
            candidates.push((r, defeats));
        }
    }
    // Shallowest winning candidate first: native, then up the ladder.
    candidates.sort();
    let mut satisfied_by = None;
    let mut also_satisfied_by = Vec::new();
    let mut rejected = Vec::new();
    for (r, mut defeats) in candidates {
        if defeats.is_empty() {
            if satisfied_by.is_none() {
                satisfied_by = Some(r);
            } else {
                also_satisfied_by.push(r);
            }
        } else {
            defeats.sort();
            defeats.dedup();
            rejected.push((r, defeats));
        }
    }
    ObligationFinding {
        obligation,
        satisfied_by,
        also_satisfied_by,
        rejected,
    }
}

fn evidence_ref(depth: EvidenceDepth, path: String, item: &EvidenceItem) -> EvidenceRef {
    EvidenceRef {
        depth,
        path,
        anchor: item.anchor.target(),
        rerun: rerun(&item.anchor, item_use(item, depth)),
    }
}

fn item_use(item: &EvidenceItem, depth: EvidenceDepth) -> AnchorUse {
    AnchorUse::Obligation {
        obligation: item.obligation,
        depth,
        scope: item.scope,
    }
}

/// The preconditions the catalog sets for the adapter's depth that no counting
/// anchor of the adapter meets (rule 5). A depth the catalog does not describe
/// sets none here; its items are defeated by `DepthCannotSupply`.
fn unmet_preconditions(
    catalog: &Catalog,
    adapter: &Adapter,
    subject: &crate::descriptor::RuntimeIdentity,
    env: &dyn Environment,
) -> Vec<Precondition> {
    let depth = adapter.depth;
    catalog.depth(depth).map_or_else(Vec::new, |spec| {
        spec.preconditions
            .iter()
            .filter(|p| {
                adapter.preconditions.get(p).is_none_or(|anchor| {
                    let use_ = AnchorUse::Precondition {
                        precondition: **p,
                        depth,
                    };
                    !anchor_counts(catalog, anchor, use_, subject, env).is_empty()
                })
            })
            .copied()
            .collect()
    })
}

/// Which evidence list of a descriptor an item sits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ListId {
    Native,
    Adapter(usize),
}

/// Rule 7, indexed once per judgment so that the scan is linear: a `missing`
/// item for the same obligation in the same list (and exercised for a common
/// mode, or for every mode) contradicts a `supported` one; neither wins.
struct Contradictions {
    /// Per (list, obligation): the first `missing` item, the first `missing`
    /// item exercised for every mode, and the first per mode.
    first: std::collections::BTreeMap<(ListId, Obligation), MissingIndex>,
}

#[derive(Default)]
struct MissingIndex {
    any: Option<usize>,
    every_mode: Option<usize>,
    per_mode: std::collections::BTreeMap<Mode, usize>,
}

impl Contradictions {
    fn of(descriptor: &Descriptor) -> Contradictions {
        let mut first: std::collections::BTreeMap<(ListId, Obligation), MissingIndex> =
            std::collections::BTreeMap::new();
        let lists = std::iter::once((ListId::Native, &descriptor.native)).chain(
            descriptor
                .adapters
                .iter()
                .enumerate()
                .map(|(ai, a)| (ListId::Adapter(ai), &a.evidence)),
        );
        for (list, items) in lists {
            for (i, item) in items.iter().enumerate() {
                if item.status != Status::Missing {
                    continue;
                }
                let idx = first.entry((list, item.obligation)).or_default();
                idx.any.get_or_insert(i);
                if item.modes.is_empty() {
                    idx.every_mode.get_or_insert(i);
                }
                for m in &item.modes {
                    idx.per_mode.entry(*m).or_insert(i);
                }
            }
        }
        Contradictions { first }
    }

    fn of_item(&self, list: ListId, item: &EvidenceItem) -> Option<Defeat> {
        if item.status != Status::Supported {
            return None;
        }
        let idx = self.first.get(&(list, item.obligation))?;
        let at = if item.modes.is_empty() {
            idx.any
        } else {
            item.modes
                .iter()
                .filter_map(|m| idx.per_mode.get(m).copied())
                .chain(idx.every_mode)
                .min()
        }?;
        let by = match list {
            ListId::Native => format!("native[{at}]"),
            ListId::Adapter(ai) => format!("adapters[{ai}].evidence[{at}]"),
        };
        Some(Defeat::Contradicted { by })
    }
}

/// Rules 2 and 4: supported and anchored for this use; the item exercised
/// this mode's path; it observed a running system (native or adapter alike:
/// a positive row certifies exercised runtime paths, paper §4).
fn item_defeats(item: &EvidenceItem, mode: Mode, anchor_defects: &[AnchorDefect]) -> Vec<Defeat> {
    let mut defeats = Vec::new();
    if item.modes.is_empty() {
        // Only a `supported` item could have counted; for any other the status says why.
        if item.status == Status::Supported {
            defeats.push(Defeat::ModesNotStated);
        }
    } else if !item.modes.contains(&mode) {
        defeats.push(Defeat::NotExercisedForMode {
            modes: item.modes.clone(),
        });
    }
    if item.status != Status::Supported {
        defeats.push(Defeat::StatusNotSupported {
            status: item.status,
        });
    }
    if !anchor_defects.is_empty() {
        defeats.push(Defeat::Unanchored {
            defects: anchor_defects.to_vec(),
        });
    }
    if !item.scope.is_runtime_observed() {
        defeats.push(Defeat::ScopeTooWeak { scope: item.scope });
    }
    defeats
}

/// Rules 5–7: what the adapter's depth, preconditions and ambiguities allow.
fn adapter_defeats(
    catalog: &Catalog,
    adapter: &Adapter,
    item: &EvidenceItem,
    row_depth: Depth,
    anchored_atoms: &[Atom],
    unmet_preconditions: &[Precondition],
) -> Vec<Defeat> {
    let mut defeats = Vec::new();
    let depth = adapter.depth;
    if depth > row_depth {
        defeats.push(Defeat::AdapterNotSelected {
            adapter_depth: depth,
            row_depth,
        });
    }
    // Rule 6 in code, independent of the catalog: a join observes, it never enforces.
    if depth == Depth::TelemetryJoin && item.obligation.is_enforcement() {
        defeats.push(Defeat::TelemetryCannotEnforce);
    } else if depth == Depth::None || !catalog.depth_may_supply(depth, item.obligation) {
        defeats.push(Defeat::DepthCannotSupply {
            adapter_depth: depth,
        });
    }
    // A depth without rules (only `none`) is already defeated above as
    // `DepthCannotSupply`: it has no conditions to add.
    if let Some(atoms) = catalog
        .depth(depth)
        .and_then(|spec| spec.conditional.get(&item.obligation))
    {
        let missing: Vec<Atom> = atoms
            .iter()
            .filter(|a| !anchored_atoms.contains(a))
            .copied()
            .collect();
        if !missing.is_empty() {
            defeats.push(Defeat::ConditionalAtomsMissing { atoms: missing });
        }
    }
    if !unmet_preconditions.is_empty() {
        defeats.push(Defeat::PreconditionsUnmet {
            missing: unmet_preconditions.to_vec(),
        });
    }
    if !adapter.ambiguities.is_empty() {
        let mut ambiguities = adapter.ambiguities.clone();
        ambiguities.sort();
        ambiguities.dedup();
        defeats.push(Defeat::AmbiguityDeclared { ambiguities });
    }
    defeats
}

/// Proposals that apply to this row: explicit ones at or below the row depth,
/// and any selected adapter that claims one of the mode's enforcement-critical
/// obligations (an adapter offering enforcement *is* a proposal of the mode).
fn proposals_for(
    catalog: &Catalog,
    descriptor: &Descriptor,
    mode: Mode,
    depth: Depth,
) -> Vec<ProposalFinding> {
    let mut found: Vec<ProposalFinding> = descriptor
        .proposals
        .iter()
        .enumerate()
        .filter(|(_, p)| p.mode == mode && p.depth <= depth)
        .map(|(i, p)| ProposalFinding {
            offered: Offered::Primitive {
                primitive: p.primitive,
            },
            path: format!("proposals[{i}]"),
            forbidden_because: catalog.forbidden(p.primitive, mode).map(|f| f.why.clone()),
        })
        .collect();
    let critical = &catalog.mode(mode).enforcement_critical;
    for (ai, adapter) in descriptor.adapters.iter().enumerate() {
        if adapter.depth > depth {
            continue;
        }
        if let Some((i, e)) = adapter
            .evidence
            .iter()
            .enumerate()
            .find(|(_, e)| e.status == Status::Supported && critical.contains(&e.obligation))
        {
            found.push(ProposalFinding {
                offered: Offered::AdapterEnforcement {
                    adapter_depth: adapter.depth,
                    obligation: e.obligation,
                },
                path: format!("adapters[{ai}].evidence[{i}]"),
                forbidden_because: None,
            });
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input of [`decide`]: each `Lower`, each kind of proposal (both
    /// kinds of forbidden offer), and none, one or two missing critical
    /// obligations and signals.
    fn every_input() -> Vec<(Lower, Proposed, Vec<Obligation>, Vec<Signal>)> {
        let lowers = [Lower::HoldsNatively, Lower::HoldsWithAdapter, Lower::Fails];
        let proposed = [
            Proposed::Nothing,
            Proposed::Allowed,
            Proposed::Forbidden(Offered::Primitive {
                primitive: Signal::ActiveNoEvict,
            }),
            Proposed::Forbidden(Offered::AdapterEnforcement {
                adapter_depth: Depth::SchedulerHook,
                obligation: Obligation::ExplicitConflictAction,
            }),
        ];
        let missing = [
            vec![],
            vec![Obligation::VictimExclusionBeforeViolation],
            vec![
                Obligation::ExplicitConflictAction,
                Obligation::BlockingClaimIds,
            ],
        ];
        let signals = [
            vec![],
            vec![Signal::ActiveNoEvict],
            vec![Signal::PriorityField, Signal::LeaseTtl],
        ];
        let mut inputs = Vec::new();
        for l in lowers {
            for p in proposed {
                for m in &missing {
                    for s in &signals {
                        inputs.push((l, p, m.clone(), s.clone()));
                    }
                }
            }
        }
        inputs
    }

    /// The truth table as it was first written: ordered arms, a guard and a
    /// fall-through. [`decide`] replaced it and must agree on every input.
    fn ordered_table(
        lower: Lower,
        proposed: Proposed,
        missing_critical: &[Obligation],
        signals: &[Signal],
    ) -> (Label, LabelReason) {
        let lower_native = lower == Lower::HoldsNatively;
        let holds = lower != Lower::Fails;
        let forbidden = match proposed {
            Proposed::Forbidden(o) => Some(o),
            Proposed::Nothing | Proposed::Allowed => None,
        };
        let no_proposals = proposed == Proposed::Nothing;
        match (lower_native, holds, forbidden, no_proposals) {
            (true, _, _, _) => (Label::NativeSound, LabelReason::LowerHoldsNatively),
            (false, true, _, _) => (Label::SoundWithAdapter, LabelReason::LowerHoldsWithAdapter),
            (false, false, Some(offered), _) => {
                (Label::Rejected, LabelReason::ForbiddenLowering { offered })
            }
            (false, false, None, false) if !missing_critical.is_empty() => (
                Label::Rejected,
                LabelReason::ProposalLacksEnforcement {
                    missing: missing_critical.to_vec(),
                },
            ),
            _ if !signals.is_empty() => (
                Label::Approximate,
                LabelReason::SignalsWithoutObligations {
                    signals: signals.to_vec(),
                },
            ),
            _ => (Label::Unknown, LabelReason::Inconclusive),
        }
    }

    #[test]
    fn the_label_decision_is_total_and_agrees_with_the_ordered_table() {
        let inputs = every_input();
        assert_eq!(inputs.len(), 3 * 4 * 3 * 3);
        for (lower, proposed, missing, signals) in inputs {
            let (label, reason) = decide(lower, proposed, &missing, &signals);
            let case = format!("{lower:?} {proposed:?} {missing:?} {signals:?}");
            assert_eq!(
                (label, reason.clone()),
                ordered_table(lower, proposed, &missing, &signals),
                "{case}"
            );
            // Fail-closed: positive exactly when Lower holds, native exactly
            // when it holds natively; rejected only for something offered;
            // approximate only on a signal.
            assert_eq!(label.is_positive(), lower != Lower::Fails, "{case}");
            assert_eq!(
                label == Label::NativeSound,
                lower == Lower::HoldsNatively,
                "{case}"
            );
            if label == Label::Rejected {
                assert_ne!(proposed, Proposed::Nothing, "{case}");
            }
            if label == Label::Approximate {
                assert!(!signals.is_empty(), "{case}");
            }
            let reason_label = match reason {
                LabelReason::LowerHoldsNatively => Label::NativeSound,
                LabelReason::LowerHoldsWithAdapter => Label::SoundWithAdapter,
                LabelReason::ForbiddenLowering { .. }
                | LabelReason::ProposalLacksEnforcement { .. } => Label::Rejected,
                LabelReason::SignalsWithoutObligations { .. } => Label::Approximate,
                LabelReason::Inconclusive => Label::Unknown,
            };
            assert_eq!(label, reason_label, "{case}");
        }
    }

    /// One sentence per reason, the same in every report: the matrix, `explain`
    /// and the audit's explanations all print this `Display`.
    #[test]
    fn each_label_reason_renders_one_sentence() {
        let primitive = Offered::Primitive {
            primitive: Signal::ActiveNoEvict,
        };
        let adapter = Offered::AdapterEnforcement {
            adapter_depth: Depth::SchedulerHook,
            obligation: Obligation::ExplicitConflictAction,
        };
        assert_eq!(primitive.to_string(), "`active_no_evict`");
        assert_eq!(
            adapter.to_string(),
            "the scheduler_hook adapter's `explicit_conflict_action`"
        );
        let cases = [
            (
                LabelReason::LowerHoldsNatively,
                "every obligation is supplied by anchored native evidence",
            ),
            (
                LabelReason::LowerHoldsWithAdapter,
                "every obligation is supplied by anchored evidence at an allowed adapter depth",
            ),
            (
                LabelReason::ForbiddenLowering { offered: primitive },
                "`active_no_evict` is offered as this mode, a forbidden lowering",
            ),
            (
                LabelReason::ForbiddenLowering { offered: adapter },
                "the scheduler_hook adapter's `explicit_conflict_action` is offered as this mode, \
                 a forbidden lowering",
            ),
            (
                LabelReason::ProposalLacksEnforcement {
                    missing: vec![
                        Obligation::ExplicitConflictAction,
                        Obligation::BlockingClaimIds,
                    ],
                },
                "a mapping is offered as this mode but lacks enforcement-critical \
                 explicit_conflict_action, blocking_claim_ids",
            ),
            (
                LabelReason::SignalsWithoutObligations {
                    signals: vec![Signal::PriorityField],
                },
                "signals priority_field make it plausible, but obligations are missing",
            ),
            (
                LabelReason::Inconclusive,
                "obligations are missing and no related signal was exercised",
            ),
        ];
        for (reason, sentence) in cases {
            assert_eq!(reason.to_string(), sentence);
        }
    }

    /// The subtype chain as it was first written (order-dependent branches).
    fn ordered_subtype(depths: &[EvidenceDepth], needs_pressure_atoms: bool) -> Subtype {
        if depths.contains(&EvidenceDepth::Adapter(Depth::BackendPatch)) {
            Subtype::BackendPatchWitness
        } else if needs_pressure_atoms {
            Subtype::AdapterPolicyControlledPressure
        } else if depths.iter().all(|d| {
            matches!(
                d,
                EvidenceDepth::Native | EvidenceDepth::Adapter(Depth::TelemetryJoin)
            )
        }) {
            Subtype::AdapterObservational
        } else {
            Subtype::AdapterHookMechanism
        }
    }

    #[test]
    fn the_subtype_agrees_with_the_ordered_chain_on_every_set_of_depths() {
        let all: Vec<EvidenceDepth> = std::iter::once(EvidenceDepth::Native)
            .chain(Depth::ALL.iter().map(|d| EvidenceDepth::Adapter(*d)))
            .collect();
        for set in 0u32..(1 << all.len()) {
            let depths: Vec<EvidenceDepth> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| set & (1 << i) != 0)
                .map(|(_, d)| *d)
                .collect();
            for atoms in [false, true] {
                assert_eq!(
                    subtype_for(&depths, atoms),
                    ordered_subtype(&depths, atoms),
                    "{depths:?} {atoms}"
                );
            }
        }
    }

    /// An empty bundle would make Lower hold vacuously; [`lower_of`] itself
    /// would call that native (which is why [`Bundle`] cannot be empty).
    #[test]
    fn lower_needs_every_obligation_and_atom() {
        let evidence = |depth| EvidenceRef {
            depth,
            path: "native[0]".into(),
            anchor: String::new(),
            rerun: false,
        };
        let finding = |by: Option<EvidenceRef>| ObligationFinding {
            obligation: Obligation::ClaimIdentity,
            satisfied_by: by,
            also_satisfied_by: Vec::new(),
            rejected: Vec::new(),
        };
        let atom = |by: Option<EvidenceRef>| AtomFinding {
            atom: Atom::PressureControlsObserved,
            anchored_by: by,
            rejected: Vec::new(),
        };
        let native = finding(Some(evidence(EvidenceDepth::Native)));
        let adapter = finding(Some(evidence(EvidenceDepth::Adapter(Depth::SchedulerHook))));
        let anchored = atom(Some(evidence(EvidenceDepth::Native)));
        assert_eq!(lower_of(&[], &[]), Lower::HoldsNatively);
        assert_eq!(
            lower_of(std::slice::from_ref(&native), &[]),
            Lower::HoldsNatively
        );
        assert_eq!(
            lower_of(&[native.clone(), adapter], std::slice::from_ref(&anchored)),
            Lower::HoldsWithAdapter
        );
        assert_eq!(
            lower_of(&[native.clone(), finding(None)], &[anchored]),
            Lower::Fails
        );
        assert_eq!(lower_of(&[native], &[atom(None)]), Lower::Fails);
    }
}

/// Evidence that can never count, whatever the row: the judgment already ignores
/// it (so it never changes a label), and `check` reports it as a warning so that
/// its author learns why. Each names the YAML path of what is inert and the
/// judgment's own reason ([`Defeat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InertEvidence {
    /// YAML path of the item, adapter or signal (`adapters[0]`, `native[2].anchor`).
    pub path: String,
    pub why: Inert,
}

/// Why a piece of evidence is inert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inert {
    /// An adapter whose trust-boundary preconditions are not all anchored: none of
    /// its `supported` items can supply anything ([`Defeat::PreconditionsUnmet`]).
    PreconditionsUnmet {
        depth: Depth,
        missing: Vec<Precondition>,
        anchored: usize,
        items: usize,
    },
    /// A `supported`, trace-scoped item whose anchor does not state
    /// `preserves_order` / `preserves_claim_scope` ([`Defeat::Unanchored`]).
    TraceScopeNotPreserved { defects: Vec<AnchorDefect> },
    /// A `supported` item whose scope is docs or source reading ([`Defeat::ScopeTooWeak`]).
    ScopeTooWeak { scope: crate::vocab::Scope },
    /// A signal that suggests `mode` and that the catalog lists as a forbidden
    /// lowering of it, which no proposal offers as that mode: as a signal it can
    /// only make the row `approximate`; the forbidden lowering never counts.
    ForbiddenSignalNotProposed { signal: Signal, mode: Mode },
}

/// The inert evidence of `descriptor` (see [`InertEvidence`]), in document order.
/// Uses the judgment's own checks: [`unmet_preconditions`], the structural anchor
/// defects, [`Scope::is_runtime_observed`](crate::vocab::Scope::is_runtime_observed)
/// and [`Catalog::forbidden`].
pub fn inert_evidence(
    catalog: &Catalog,
    descriptor: &Descriptor,
    env: &dyn Environment,
) -> Vec<InertEvidence> {
    let mut found = Vec::new();
    let items = |list: &[EvidenceItem], prefix: &str, found: &mut Vec<_>| {
        for (i, item) in list.iter().enumerate() {
            if item.status != Status::Supported {
                continue;
            }
            if !item.scope.is_runtime_observed() {
                found.push(InertEvidence {
                    path: format!("{prefix}[{i}].scope"),
                    why: Inert::ScopeTooWeak { scope: item.scope },
                });
                continue;
            }
            let defects: Vec<AnchorDefect> = item
                .anchor
                .defects(Some(item.scope))
                .into_iter()
                .filter(|d| {
                    matches!(
                        d,
                        AnchorDefect::TraceOrderNotPreserved
                            | AnchorDefect::TraceClaimScopeNotPreserved
                    )
                })
                .collect();
            if !defects.is_empty() {
                found.push(InertEvidence {
                    path: format!("{prefix}[{i}].anchor"),
                    why: Inert::TraceScopeNotPreserved { defects },
                });
            }
        }
    };
    items(&descriptor.native, "native", &mut found);
    for (ai, adapter) in descriptor.adapters.iter().enumerate() {
        let supported = adapter
            .evidence
            .iter()
            .filter(|e| e.status == Status::Supported)
            .count();
        let missing = unmet_preconditions(catalog, adapter, &descriptor.runtime, env);
        if supported > 0 && !missing.is_empty() {
            let required = catalog
                .depth(adapter.depth)
                .map_or(0, |spec| spec.preconditions.len());
            found.push(InertEvidence {
                path: format!("adapters[{ai}]"),
                why: Inert::PreconditionsUnmet {
                    depth: adapter.depth,
                    anchored: required.saturating_sub(missing.len()),
                    missing,
                    items: supported,
                },
            });
        }
        items(
            &adapter.evidence,
            &format!("adapters[{ai}].evidence"),
            &mut found,
        );
    }
    for (si, s) in descriptor.signals.iter().enumerate() {
        for mode in Mode::ALL.iter() {
            if catalog.signal_suggests(s.signal, *mode)
                && catalog.forbidden(s.signal, *mode).is_some()
                && !descriptor
                    .proposals
                    .iter()
                    .any(|p| p.primitive == s.signal && p.mode == *mode)
            {
                found.push(InertEvidence {
                    path: format!("signals[{si}]"),
                    why: Inert::ForbiddenSignalNotProposed {
                        signal: s.signal,
                        mode: *mode,
                    },
                });
            }
        }
    }
    found
}

impl std::fmt::Display for Inert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: Vec<String>| v.join(", ");
        match self {
            Inert::PreconditionsUnmet {
                depth,
                missing,
                anchored,
                items,
            } => write!(
                f,
                "{depth} adapter has {anchored} of its {} preconditions anchored (missing: {}); none of its {items} supported item(s) can count",
                anchored + missing.len(),
                list(missing.iter().map(ToString::to_string).collect())
            ),
            Inert::TraceScopeNotPreserved { defects } => write!(
                f,
                "trace-scoped evidence never counts unless its anchor states {}",
                list(
                    defects
                        .iter()
                        .map(|d| match d {
                            AnchorDefect::TraceOrderNotPreserved =>
                                "`preserves_order: true`".to_string(),
                            AnchorDefect::TraceClaimScopeNotPreserved => {
                                "`preserves_claim_scope: true`".to_string()
                            }
                            other => other.to_string(),
                        })
                        .collect()
                )
            ),
            Inert::ScopeTooWeak { scope } => write!(
                f,
                "a `supported` item with scope `{scope}` never counts: {}",
                Defeat::ScopeTooWeak { scope: *scope }
            ),
            Inert::ForbiddenSignalNotProposed { signal, mode } => write!(
                f,
                "signal `{signal}` suggests {mode} but is a forbidden lowering of it, and no proposal offers it as {mode}: it can make the {mode} row `approximate`, never `rejected`"
            ),
        }
    }
}
