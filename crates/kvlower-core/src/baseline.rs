//! The built-in baseline catalog: the paper's mode catalog compiled into the
//! binary as the floor that `modes/modes.yaml` may strengthen but never weaken.
//!
//! This is Rust data, not an `include_str!` of `modes/modes.yaml`: an edit of
//! the file must not be able to move the floor. Every entry names the paper
//! section or table it comes from; [`compare`] reports each difference of a
//! loaded catalog from this floor as a weakening (a finding) or a
//! strengthening (a local change), with that citation.
//!
//! [`crate::Catalog`] also judges under the *meet* of the loaded catalog and
//! this baseline (bundles and preconditions united, what a depth or gate may
//! supply intersected), so even a caller that ignores the finding cannot get a
//! label the baseline would not give.

use std::collections::{BTreeMap, BTreeSet};

use crate::catalog_doc::{
    CatalogDoc, DepthSpec, ForbiddenLowering, JoinDocumentSpec, ModeSpec, SignalSpec,
};
use crate::vocab::{Atom, Depth, Mode, Obligation, Precondition, Signal, TraceGate};

use Obligation as O;

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
pub const FORBIDDEN: [(Signal, Mode, &str, &str); 3] = [
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

/// Approximation signals (they never satisfy an obligation, paper Table 2
/// rule 1). Not part of the floor: they only move rows between `approximate`
/// and `unknown`; a change is listed as neutral.
pub const SIGNALS: [(Signal, &str, &[Mode]); 15] = [
    (
        Signal::PriorityField,
        "a retention/eviction priority value on blocks or requests",
        &[Mode::SoftPriority],
    ),
    (
        Signal::DurationField,
        "a retention duration or TTL attached to blocks or requests",
        &[Mode::Expiring],
    ),
    (
        Signal::BlockEvents,
        "block stored/removed/updated events",
        &[Mode::BestEffort],
    ),
    (
        Signal::StorageTier,
        "a host, disk or remote storage tier for KV blocks",
        &[Mode::Offloadable, Mode::Demotable],
    ),
    (
        Signal::HostOffload,
        "eviction or copy of KV blocks to host memory",
        &[Mode::Offloadable, Mode::Demotable],
    ),
    (
        Signal::BlockTierMovement,
        "observed movement of block hashes between cache levels",
        &[Mode::Offloadable, Mode::Demotable],
    ),
    (
        Signal::KvAwareRouting,
        "routing by KV overlap, prefix scores or worker cache state",
        &[Mode::RoutedReuse],
    ),
    (
        Signal::ActiveNoEvict,
        "no eviction of the running request's blocks (active-request scheduling)",
        &[Mode::HardProtected],
    ),
    (
        Signal::ClaimJoinedOffload,
        "an offload observation joined to a registered claim, without restoration outcomes",
        &[Mode::Offloadable],
    ),
    (
        Signal::GenericTransferCounters,
        "transfer, onboard or request-failure counters without claim ids",
        &[Mode::Offloadable],
    ),
    (
        Signal::CachedTokenTelemetry,
        "per-request cached-token counts",
        &[Mode::BestEffort],
    ),
    (
        Signal::RequestScopedPin,
        "a pin or lock held for a request or a load window, released with it",
        &[Mode::HardProtected],
    ),
    (
        Signal::LeaseTtl,
        "a lease or pin that lapses after a time-to-live",
        &[Mode::Expiring, Mode::HardProtected],
    ),
    (
        Signal::ObjectHardPin,
        "a permanent, ownerless pin on a stored object (never an eviction candidate), with no claim, conflict action or blocking ids",
        &[Mode::HardProtected],
    ),
    (
        Signal::RequestScopedLoadFailure,
        "a per-request or per-read restore failure (an error or recompute policy) that names no claim",
        &[Mode::Offloadable],
    ),
];

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
        campaign_controls: CAMPAIGN_CONTROLS
            .iter()
            .map(|(g, positives, kinds, _)| {
                (
                    *g,
                    crate::catalog_doc::CampaignControls {
                        min_positive_runs: *positives,
                        controls: kinds.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
                    },
                )
            })
            .collect(),
    }
}

/// The paper ran 30 runs per positive scenario (§8.3, Table 8); every positive gate
/// here needs as many. Controls: each Table 8 control kind at its paper count
/// (10 each, 1 for generic counters) for the connector gates; 5 engine-level runs per
/// residency control kind (a kind is the first requirement its runs miss).
const CAMPAIGN_SOURCE: &str =
    "paper §8.3, Table 8 (30 runs per positive scenario; the control taxonomy)";

/// Per trace gate: minimum positive runs and (control kind, minimum runs).
#[expect(
    clippy::type_complexity,
    reason = "a table, read once into the document"
)]
pub const CAMPAIGN_CONTROLS: [(TraceGate, u32, &[(&str, u32)], &str); 5] = [
    (
        TraceGate::ConnectorObservation,
        30,
        &[
            ("ordinary_offload_without_claim", 10),
            ("store_offload_to_cpu_path", 5),
        ],
        CAMPAIGN_SOURCE,
    ),
    (
        TraceGate::ConnectorFailureOutcome,
        30,
        &[
            ("unclaimed_failure", 10),
            ("wrong_claim_failure", 10),
            ("fallback_recompute", 10),
            ("ordinary_offload_without_claim", 10),
            ("generic_counters_only", 1),
        ],
        CAMPAIGN_SOURCE,
    ),
    (
        TraceGate::ClaimProtection,
        30,
        &[
            ("claim_accepted_with_footprint", 5),
            ("claim_materialized_with_footprint", 5),
            ("claim_blocks_protected", 5),
            ("victims_exclude_claim_blocks", 5),
        ],
        CAMPAIGN_SOURCE,
    ),
    (
        TraceGate::ClaimDemotion,
        30,
        &[
            ("claim_accepted_with_footprint", 5),
            ("claim_scoped_demotion_to_lower_tier", 5),
        ],
        CAMPAIGN_SOURCE,
    ),
    (
        TraceGate::ClaimExpiry,
        30,
        &[
            ("claim_accepted_with_duration", 5),
            ("protection_held_before_boundary", 5),
            ("claim_scoped_expiry_boundary", 5),
        ],
        CAMPAIGN_SOURCE,
    ),
];

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
            }
        });
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
