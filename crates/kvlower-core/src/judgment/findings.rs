//! What a judgment returns: the row's label and, for every obligation, atom and
//! proposal, what decided it (the evidence that counted, or each candidate's defeats).

use super::*;

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
