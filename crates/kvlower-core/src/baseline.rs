//! The built-in baseline catalog: the paper's mode catalog compiled into the
//! binary as the floor that `modes/modes.yaml` may strengthen but never weaken.
//!
//! This is Rust data, not an `include_str!` of `modes/modes.yaml`: an edit of
//! the file must not be able to move the floor. Every entry names the paper
//! section or table it comes from; [`compare`] (in `baseline/compare.rs`) reports each difference of a
//! loaded catalog from this floor as a weakening (a finding) or a
//! strengthening (a local change), with that citation.
//!
//! [`crate::Catalog`] also judges under the *meet* of the loaded catalog and
//! this baseline (bundles and preconditions united, what a depth or gate may
//! supply intersected), so even a caller that ignores the finding cannot get a
//! label the baseline would not give.

use std::collections::BTreeMap;

use crate::catalog_doc::{
    CatalogDoc, DepthSpec, ForbiddenLowering, JoinDocumentSpec, ModeSpec, SignalSpec,
};
use crate::vocab::{Atom, Depth, Mode, Obligation, Precondition, Signal, TraceGate};

use Obligation as O;

mod campaign_rules;
mod compare;
mod meet;
mod signals;

pub use campaign_rules::{
    CAMPAIGN_CONTROLS, CONTROL_OUTCOME_NAMES, CONTROL_OUTCOMES, JUDGING_CODE,
};
pub(crate) use campaign_rules::{CONTROL_OUTCOME_SOURCE, JUDGING_CODE_SOURCE};

pub use compare::{CatalogChange, Direction, compare};
pub use meet::meet;
pub use signals::SIGNALS;

/// One mode's floor.
pub struct BaselineMode {
    pub mode: Mode,
    pub obligations: &'static [Obligation],
    pub enforcement_critical: &'static [Obligation],
    pub required_atoms: &'static [Atom],
    pub accepted_evidence: &'static str,
    pub rejected_false_positive: &'static str,
    /// Where the bundle comes from.
    pub source: &'static str,
    /// Where the enforcement-critical set and required atoms come from.
    pub critical_source: &'static str,
}

/// One adapter depth's ceiling (what it may supply) and floor (preconditions).
pub struct BaselineDepth {
    pub depth: Depth,
    pub meaning: &'static str,
    pub supplies: &'static [Obligation],
    pub supplies_any: bool,
    pub conditional: &'static [(Obligation, &'static [Atom])],
    pub preconditions: &'static [Precondition],
    /// Where what the depth may supply comes from.
    pub source: &'static str,
    /// Where the preconditions come from.
    pub preconditions_source: &'static str,
}

const TABLE1: &str = "paper §3, Table 1 and the evidence-to-obligation summary";
const CRITICAL: &str = "paper §4 (label rule: rejected when enforcement-critical obligations are missing) and §5, \"Deeper adapter trust boundaries\"";
const NO_CRITICAL: &str =
    "paper §4 and Table 9 (without enforcement-critical obligations a proposal stays approximate)";
const PRESSURE: &str = "paper §3 (soft_priority needs anchored pressure observations), §4 descriptor-to-row example and Table 2 rule 3";

/// O[m], the enforcement-critical sets and required atoms (paper §3–§4).
pub const MODES: [BaselineMode; 7] = [
    BaselineMode {
        mode: Mode::BestEffort,
        obligations: &[
            O::ClaimIdentity,
            O::MaterializationPredicate,
            O::ClaimMaterializedEvent,
            O::ClaimScopedTelemetry,
        ],
        enforcement_critical: &[],
        required_atoms: &[],
        accepted_evidence: "anchored block/token/request evidence joined to a pre-registered claim and a named predicate at a named observation point",
        rejected_false_positive: "raw block stored/removed events",
        source: TABLE1,
        critical_source: NO_CRITICAL,
    },
    BaselineMode {
        mode: Mode::SoftPriority,
        obligations: &[
            O::ClaimIdentity,
            O::PriorityInfluence,
            O::ClaimScopedTelemetry,
        ],
        enforcement_critical: &[],
        required_atoms: &[
            Atom::PressureControlsObserved,
            Atom::BothClaimsJoinableBeforePressure,
            Atom::NoPrePressureClaimLoss,
        ],
        accepted_evidence: "original, swapped-priority and equal-priority pressure controls with claim-scoped retention order",
        rejected_false_positive: "a priority value, duration field, or priority API alone",
        source: TABLE1,
        critical_source: PRESSURE,
    },
    BaselineMode {
        mode: Mode::HardProtected,
        obligations: &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::MaterializationPredicate,
            O::FootprintAccounting,
            O::VictimExclusionBeforeViolation,
            O::ExplicitConflictAction,
            O::BlockingClaimIds,
            O::ClaimHarmAttribution,
            O::OrderedLifecycleEvents,
        ],
        enforcement_critical: &[
            O::VictimExclusionBeforeViolation,
            O::ExplicitConflictAction,
            O::BlockingClaimIds,
        ],
        required_atoms: &[],
        accepted_evidence: "anchored conflict trace for the claimed action (refusal, defer, route elsewhere, bound active KV, offload, split/recompute, explicit relaxation/demotion)",
        rejected_false_positive: "active no-evict for the running request",
        source: TABLE1,
        critical_source: CRITICAL,
    },
    BaselineMode {
        mode: Mode::Demotable,
        obligations: &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::ClaimDemotedBeforeLoss,
            O::OrderedLifecycleEvents,
        ],
        enforcement_critical: &[],
        required_atoms: &[],
        accepted_evidence: "claim-scoped demotion boundary before loss",
        rejected_false_positive: "priority update, lower cache level, post-hoc explanation",
        source: TABLE1,
        critical_source: NO_CRITICAL,
    },
    BaselineMode {
        mode: Mode::Expiring,
        obligations: &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::ClaimExpiredBoundary,
            O::OrderedLifecycleEvents,
        ],
        enforcement_critical: &[],
        required_atoms: &[],
        accepted_evidence: "claim-scoped boundary where responsibility ends before later loss",
        rejected_false_positive: "TTL/duration metadata alone",
        source: TABLE1,
        critical_source: NO_CRITICAL,
    },
    BaselineMode {
        mode: Mode::Offloadable,
        obligations: &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::MaterializationPredicate,
            O::OffloadRestorability,
            O::RestorationFailureOutcome,
            O::OrderedLifecycleEvents,
            O::ClaimHarmAttribution,
        ],
        enforcement_critical: &[],
        required_atoms: &[],
        accepted_evidence: "restore-before-reuse success plus a claim-scoped restoration failure/refusal, demotion, expiry or harm when restoration fails",
        rejected_false_positive: "storage tier, generic transfer counters, fallback recompute, wrong-claim failure",
        source: TABLE1,
        critical_source: NO_CRITICAL,
    },
    BaselineMode {
        mode: Mode::RoutedReuse,
        obligations: &[
            O::ClaimIdentity,
            O::MaterializationPredicate,
            O::RouteCostAttribution,
            O::PlacementAttribution,
            O::ReuseRoutingAttribution,
            O::ClaimScopedTelemetry,
        ],
        enforcement_critical: &[],
        required_atoms: &[],
        accepted_evidence: "route decision, placement and later reuse success/failure attributed to the accepted claim",
        rejected_false_positive: "KV-overlap routing score or worker choice alone",
        source: TABLE1,
        critical_source: NO_CRITICAL,
    },
];

const DEEPER: &str = "paper §5, \"Deeper adapter trust boundaries\"";

/// What each adapter depth may supply, and its preconditions (paper §5).
pub const DEPTHS: [BaselineDepth; 7] = [
    BaselineDepth {
        depth: Depth::TelemetryJoin,
        meaning: "an external registry and deterministic request/cache/event joins reconstruct selected observations; never enforcement",
        supplies: &[
            O::ClaimIdentity,
            O::MaterializationPredicate,
            O::ClaimMaterializedEvent,
            O::ClaimScopedTelemetry,
            O::PriorityInfluence,
        ],
        supplies_any: false,
        conditional: &[(O::PriorityInfluence, &[Atom::PressureControlsObserved])],
        preconditions: &crate::catalog_doc::TELEMETRY_JOIN_PRECONDITIONS,
        source: "paper §5, Table 4 and the text after Table 5 (telemetry-only adapters cannot satisfy enforcement); §4 descriptor-to-row example (priority influence only under controlled pressure)",
        preconditions_source: "paper §5, Table 5",
    },
    BaselineDepth {
        depth: Depth::ClaimRegistry,
        meaning: "accepted claim state is represented outside the backend or at a shallow integration point",
        supplies: &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::ClaimDemotedBeforeLoss,
            O::ClaimExpiredBoundary,
            O::OrderedLifecycleEvents,
        ],
        supplies_any: false,
        conditional: &[
            (O::ClaimDemotedBeforeLoss, &[Atom::OrderedLifecycleTrace]),
            (O::ClaimExpiredBoundary, &[Atom::OrderedLifecycleTrace]),
            (O::OrderedLifecycleEvents, &[Atom::OrderedLifecycleTrace]),
        ],
        preconditions: &[
            Precondition::ClaimsRegisteredBeforeLifecycle,
            Precondition::StableClaimId,
        ],
        source: "paper §5, Table 4; §3 evidence-to-obligation summary (demotable/expiring: claim_registry plus ordered lifecycle evidence)",
        preconditions_source: "paper §3 (claim registration must precede the classified events) and §5, Table 5 (stable claim id)",
    },
    BaselineDepth {
        depth: Depth::StorageRestorability,
        meaning: "storage/load-back hooks report claim-scoped restoration success and failure",
        supplies: &[
            O::OffloadRestorability,
            O::RestorationFailureOutcome,
            O::OrderedLifecycleEvents,
            O::ClaimHarmAttribution,
        ],
        supplies_any: false,
        conditional: &[],
        preconditions: &[
            Precondition::ClaimAcceptedBeforeOffload,
            Precondition::HooksNameSameClaimAndCacheIdentity,
            Precondition::RestorationOrderedBeforeReuse,
            Precondition::FailureOutcomeBeforeFallback,
        ],
        source: "paper §5, Table 4",
        preconditions_source: DEEPER,
    },
    BaselineDepth {
        depth: Depth::RoutingHook,
        meaning: "routing hooks attribute route cost, placement and later reuse to claims",
        supplies: &[
            O::RouteCostAttribution,
            O::PlacementAttribution,
            O::ReuseRoutingAttribution,
        ],
        supplies_any: false,
        conditional: &[],
        preconditions: &[
            Precondition::RouteDecisionSeesAcceptedClaim,
            Precondition::FixedWorkerCacheNamespace,
            Precondition::RouteCostPlacementReuseSameClaim,
        ],
        source: "paper §5, Table 4",
        preconditions_source: DEEPER,
    },
    BaselineDepth {
        depth: Depth::SchedulerHook,
        meaning: "scheduler hooks emit an explicit active/resident conflict action and report blocking claim ids",
        supplies: &[
            O::ExplicitConflictAction,
            O::BlockingClaimIds,
            O::OrderedLifecycleEvents,
        ],
        supplies_any: false,
        conditional: &[],
        preconditions: &[
            Precondition::ConflictAtNamedBoundary,
            Precondition::ActionBeforeTerminalHandling,
            Precondition::StableSpecificBlockingIds,
        ],
        source: "paper §5, Table 4 and the composition paragraph after \"Deeper adapter trust boundaries\"",
        preconditions_source: DEEPER,
    },
    BaselineDepth {
        depth: Depth::AllocatorHook,
        meaning: "allocator hooks exclude accepted claim victims before violation",
        supplies: &[
            O::VictimExclusionBeforeViolation,
            O::FootprintAccounting,
            O::ClaimHarmAttribution,
        ],
        supplies_any: false,
        conditional: &[],
        preconditions: &[
            Precondition::VictimCandidateSetExposed,
            Precondition::ProtectedFootprintExposed,
            Precondition::OrderedExclusionBeforeLoss,
        ],
        source: "paper §5, Table 4 and the composition paragraph after \"Deeper adapter trust boundaries\"",
        preconditions_source: DEEPER,
    },
    BaselineDepth {
        depth: Depth::BackendPatch,
        meaning: "a modified backend path supplies the obligations it exercises, each with an anchored trace",
        supplies: &[],
        supplies_any: true,
        conditional: &[],
        preconditions: &[
            Precondition::PatchStackIdentified,
            Precondition::PatchedCodeOnExercisedPath,
            Precondition::AdjacentHooksAbsentOrDisabled,
            Precondition::AnalyzerChecksOrderAndIdentity,
        ],
        source: "paper §5, Table 4 (a modified backend path supplies the represented obligations)",
        preconditions_source: DEEPER,
    },
];

/// Forbidden lowerings: (primitive, mode, why, source).
pub const FORBIDDEN: [(Signal, Mode, &str, &str); 5] = [
    (
        Signal::ActiveNoEvict,
        Mode::HardProtected,
        "active no-evict protects the running request, not an accepted future-resident claim; it has no victim exclusion, conflict action, blocking claim ids or harm attribution",
        "paper §9, Table 9 and §3 (hard_protected: active no-evict is not enough)",
    ),
    (
        Signal::RequestScopedPin,
        Mode::HardProtected,
        "a request- or load-window-scoped pin ends with the request; it is not an accepted future-resident claim",
        "paper §3 (hard_protected: protection of running requests is not enough) and Table 9",
    ),
    (
        Signal::PriorityField,
        Mode::HardProtected,
        "priority is a preorder over victims, not exclusion; the highest priority is still evicted under pressure",
        "paper §3, Table 1 (without victim exclusion hard protection collapses to soft priority)",
    ),
    (
        Signal::RequestScopedPin,
        Mode::Expiring,
        "a request- or transfer-scoped hold that lapses with the request or by the clock is not an accepted claim; it marks no claim-scoped boundary where responsibility ends, and a read after the lapse is not refused",
        "paper §3, Table 1 (expiring: without a responsibility boundary post-duration loss cannot be classified) and §9 (lowerings that misrepresent the contract fail closed), as for request_scoped_pin as hard_protected",
    ),
    (
        Signal::RequestScopedPin,
        Mode::Offloadable,
        "a hold for one transfer window is not an accepted claim's restorability; when it lapses before the read, the reader gets no claim-scoped restoration failure",
        "paper §9, Table 9 (an unclaimed load failure is no restoration failure outcome) and the §1 counterexamples (request-failure counters are not restoration failure)",
    ),
];

const WITNESS: &str = "paper §7, vLLM witness paths A-C, and §8.3, Table 8";

/// Which obligations a passing verdict of each trace gate may witness.
pub const TRACE_GATES: [(TraceGate, &[Obligation], &str); 7] = [
    (
        TraceGate::ConnectorObservation,
        &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::MaterializationPredicate,
            O::OffloadRestorability,
            O::OrderedLifecycleEvents,
            O::ClaimScopedTelemetry,
        ],
        "paper §7, vLLM witness path A (successful offload/load observation)",
    ),
    (
        TraceGate::ConnectorFailureOutcome,
        &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::MaterializationPredicate,
            O::RestorationFailureOutcome,
            O::OrderedLifecycleEvents,
            O::ExplicitConflictAction,
            O::BlockingClaimIds,
            O::ClaimHarmAttribution,
            O::ClaimScopedTelemetry,
        ],
        "paper §7, vLLM witness path B (same-claim failure outcome)",
    ),
    (
        TraceGate::ReferenceLifecycle,
        &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::MaterializationPredicate,
            O::ClaimMaterializedEvent,
            O::OffloadRestorability,
            O::RestorationFailureOutcome,
            O::OrderedLifecycleEvents,
            O::ClaimHarmAttribution,
            O::ClaimScopedTelemetry,
        ],
        WITNESS,
    ),
    (
        TraceGate::MultiClaimAttribution,
        &[
            O::ClaimIdentity,
            O::BlockingClaimIds,
            O::RestorationFailureOutcome,
            O::ClaimHarmAttribution,
        ],
        "paper §7, vLLM witness path C (multi-claim attribution control)",
    ),
    (
        TraceGate::ClaimProtection,
        &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::MaterializationPredicate,
            O::FootprintAccounting,
            O::VictimExclusionBeforeViolation,
            O::ExplicitConflictAction,
            O::BlockingClaimIds,
            O::ClaimHarmAttribution,
            O::OrderedLifecycleEvents,
        ],
        "paper §3 and Table 1 (hard_protected: victim exclusion, an explicit conflict action with blocking claim ids, footprint accounting, harm attribution)",
    ),
    (
        TraceGate::ClaimDemotion,
        &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::ClaimDemotedBeforeLoss,
            O::OrderedLifecycleEvents,
        ],
        "paper §3 and Table 1 (demotable: a claim-scoped demotion boundary before loss)",
    ),
    (
        TraceGate::ClaimExpiry,
        &[
            O::ClaimIdentity,
            O::ExplicitAcceptance,
            O::ClaimExpiredBoundary,
            O::OrderedLifecycleEvents,
        ],
        "paper §3 and Table 1 (expiring: a claim-scoped boundary where responsibility ends before later loss)",
    ),
];

/// The depth a `kvlower join` evidence document is filed at, and what it may
/// witness: telemetry obligations only, what telemetry_join may supply.
pub const JOIN_DOCUMENTS: (Depth, &[Obligation], &str) = (
    Depth::TelemetryJoin,
    &[
        O::ClaimIdentity,
        O::MaterializationPredicate,
        O::ClaimMaterializedEvent,
        O::ClaimScopedTelemetry,
        O::PriorityInfluence,
    ],
    "paper §5, Tables 4 and 5 (a telemetry join reconstructs observations, never enforcement)",
);

/// The baseline as a catalog document (what `modes/modes.yaml` should say).
pub fn doc() -> CatalogDoc {
    CatalogDoc {
        modes: MODES
            .iter()
            .map(|m| {
                (
                    m.mode,
                    ModeSpec {
                        obligations: m.obligations.to_vec(),
                        enforcement_critical: m.enforcement_critical.to_vec(),
                        required_atoms: m.required_atoms.to_vec(),
                        accepted_evidence: m.accepted_evidence.into(),
                        rejected_false_positive: m.rejected_false_positive.into(),
                    },
                )
            })
            .collect(),
        depths: DEPTHS
            .iter()
            .map(|d| {
                (
                    d.depth,
                    DepthSpec {
                        meaning: d.meaning.into(),
                        supplies: d.supplies.to_vec(),
                        supplies_any: d.supplies_any,
                        conditional: d
                            .conditional
                            .iter()
                            .map(|(o, a)| (*o, a.to_vec()))
                            .collect(),
                        preconditions: d.preconditions.to_vec(),
                    },
                )
            })
            .collect(),
        signals: SIGNALS
            .iter()
            .map(|(s, description, suggests)| {
                (
                    *s,
                    SignalSpec {
                        description: (*description).into(),
                        suggests: suggests.to_vec(),
                    },
                )
            })
            .collect(),
        forbidden_lowerings: FORBIDDEN
            .iter()
            .map(|(primitive, mode, why, _)| ForbiddenLowering {
                primitive: *primitive,
                mode: *mode,
                why: (*why).into(),
            })
            .collect(),
        trace_gates: TRACE_GATES
            .iter()
            .map(|(g, w, _)| (*g, w.to_vec()))
            .collect(),
        join_documents: JoinDocumentSpec {
            depth: JOIN_DOCUMENTS.0,
            witnesses: JOIN_DOCUMENTS.1.to_vec(),
        },
        judging_code: JUDGING_CODE
            .iter()
            .map(|(path, sha256)| crate::catalog_doc::JudgingPin {
                path: (*path).to_owned(),
                sha256: (*sha256).to_owned(),
            })
            .collect(),
        campaign_controls: CAMPAIGN_CONTROLS
            .iter()
            .map(|(g, positives, kinds, _)| {
                (
                    *g,
                    crate::catalog_doc::CampaignControls {
                        min_positive_runs: *positives,
                        controls: kinds.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
                        outcomes: CONTROL_OUTCOMES
                            .iter()
                            .filter(|(gate, _, _)| gate == g)
                            .map(|(_, k, o)| ((*k).to_owned(), (*o).to_owned()))
                            .collect(),
                    },
                )
            })
            .collect(),
    }
}
