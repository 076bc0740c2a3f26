//! The closed vocabulary of the model: obligations, modes, adapter depths,
//! evidence statuses and scopes, approximation signals, evidence atoms and
//! adapter preconditions.
//!
//! Names are closed enums in code so that an unknown name is a parse error
//! with a location, never a string that silently matches nothing. Which name
//! relates to which (bundles, what a depth may supply, which signal suggests
//! which mode) is data: see `modes/modes.yaml` and [`crate::catalog`].

use serde::{Deserialize, Serialize};

// Every name table below is declared with `names!`, which lives in the leaf crate
// `kvlower-codes` (the diagnostic codes use it too) and is re-exported as
// `kvlower_core::names` (lib.rs).

crate::names! {
    /// One of the nineteen obligations a ResidentClaim mode can require.
    ///
    /// `active_refusal_or_defer` is accepted on input as an alias of
    /// `explicit_conflict_action` (see [`Obligation::from_input_name`]) and is
    /// never printed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Obligation {
        ClaimIdentity = "claim_identity",
        ExplicitAcceptance = "explicit_acceptance",
        MaterializationPredicate = "materialization_predicate",
        FootprintAccounting = "footprint_accounting",
        OrderedLifecycleEvents = "ordered_lifecycle_events",
        ClaimMaterializedEvent = "claim_materialized_event",
        ClaimDemotedBeforeLoss = "claim_demoted_before_loss",
        ClaimExpiredBoundary = "claim_expired_boundary",
        OffloadRestorability = "offload_restorability",
        RestorationFailureOutcome = "restoration_failure_outcome",
        VictimExclusionBeforeViolation = "victim_exclusion_before_violation",
        #[serde(alias = "active_refusal_or_defer")]
        ExplicitConflictAction = "explicit_conflict_action",
        BlockingClaimIds = "blocking_claim_ids",
        ClaimHarmAttribution = "claim_harm_attribution",
        ClaimScopedTelemetry = "claim_scoped_telemetry",
        PriorityInfluence = "priority_influence",
        RouteCostAttribution = "route_cost_attribution",
        PlacementAttribution = "placement_attribution",
        ReuseRoutingAttribution = "reuse_routing_attribution",
    }
}

impl Obligation {
    /// The short code used in the provenance index (paper §8.1; RC, PL, RR are ours).
    pub fn code(self) -> &'static str {
        use Obligation::*;
        match self {
            ClaimIdentity => "I",
            ExplicitAcceptance => "A",
            MaterializationPredicate => "P",
            FootprintAccounting => "F",
            OrderedLifecycleEvents => "L",
            ClaimMaterializedEvent => "M",
            ClaimDemotedBeforeLoss => "D",
            ClaimExpiredBoundary => "E",
            OffloadRestorability => "R",
            RestorationFailureOutcome => "RF",
            VictimExclusionBeforeViolation => "V",
            ExplicitConflictAction => "X",
            BlockingClaimIds => "B",
            ClaimHarmAttribution => "H",
            ClaimScopedTelemetry => "T",
            PriorityInfluence => "Pr",
            RouteCostAttribution => "RC",
            PlacementAttribution => "PL",
            ReuseRoutingAttribution => "RR",
        }
    }

    /// Parses a name as written in input files, accepting the legacy alias.
    pub fn from_input_name(s: &str) -> Option<Self> {
        match s {
            "active_refusal_or_defer" => Some(Obligation::ExplicitConflictAction),
            other => Obligation::from_name(other),
        }
    }

    /// Obligations that only enforcement can supply: refusal/conflict action,
    /// victim exclusion, blocking ids, restoration-failure outcomes, demotion,
    /// expiry and harm. Telemetry can never create these (fail-closed rule 6).
    ///
    /// This is deliberately code, not data: it is a safety property that a
    /// mis-edited `modes.yaml` must not be able to switch off.
    pub fn is_enforcement(self) -> bool {
        use Obligation::*;
        matches!(
            self,
            ExplicitConflictAction
                | VictimExclusionBeforeViolation
                | BlockingClaimIds
                | RestorationFailureOutcome
                | ClaimDemotedBeforeLoss
                | ClaimExpiredBoundary
                | ClaimHarmAttribution
        )
    }
}

crate::names! {
    /// A ResidentClaim mode; its obligation bundle lives in `modes.yaml`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Mode {
        BestEffort = "best_effort",
        SoftPriority = "soft_priority",
        HardProtected = "hard_protected",
        Demotable = "demotable",
        Expiring = "expiring",
        Offloadable = "offloadable",
        RoutedReuse = "routed_reuse",
    }
}

crate::names! {
    /// A rung of the adapter-depth ladder. The order of declaration is the
    /// ladder: selecting a depth admits every represented adapter at or below it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Depth {
        None = "none",
        TelemetryJoin = "telemetry_join",
        ClaimRegistry = "claim_registry",
        StorageRestorability = "storage_restorability",
        RoutingHook = "routing_hook",
        SchedulerHook = "scheduler_hook",
        AllocatorHook = "allocator_hook",
        BackendPatch = "backend_patch",
    }
}

crate::names! {
    /// How far an evidence item establishes its obligation. Only `supported`
    /// counts (fail-closed rule 2).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Status {
        Supported = "supported",
        Partial = "partial",
        Unknown = "unknown",
        Missing = "missing",
    }
}

crate::names! {
    /// Where an evidence item's fact was observed, weakest first.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Scope {
        DocsOnly = "docs_only",
        SourceInspection = "source_inspection",
        LitmusTrace = "litmus_trace",
        RuntimeTrace = "runtime_trace",
        ConformanceTrace = "conformance_trace",
        ControlledPressure = "controlled_pressure",
        FailureInjection = "failure_injection",
        ArtifactGenerated = "artifact_generated",
    }
}

impl Scope {
    /// True for scopes that observed a running system (a trace of some kind).
    /// Docs and source inspection describe what code could do, not what it did.
    pub fn is_runtime_observed(self) -> bool {
        !matches!(self, Scope::DocsOnly | Scope::SourceInspection)
    }
}

crate::names! {
    /// A primitive that makes a row plausible without satisfying any obligation
    /// (fail-closed rule 1). Which modes each suggests is data in `modes.yaml`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Signal {
        PriorityField = "priority_field",
        DurationField = "duration_field",
        BlockEvents = "block_events",
        StorageTier = "storage_tier",
        HostOffload = "host_offload",
        BlockTierMovement = "block_tier_movement",
        KvAwareRouting = "kv_aware_routing",
        ActiveNoEvict = "active_no_evict",
        ClaimJoinedOffload = "claim_joined_offload",
        GenericTransferCounters = "generic_transfer_counters",
        CachedTokenTelemetry = "cached_token_telemetry",
        RequestScopedPin = "request_scoped_pin",
        LeaseTtl = "lease_ttl",
        ObjectHardPin = "object_hard_pin",
        RequestScopedLoadFailure = "request_scoped_load_failure",
    }
}

crate::names! {
    /// An observed fact a row needs beyond its obligations. Atoms count only
    /// when anchored to a trace (fail-closed rule 3).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Atom {
        PressureControlsObserved = "pressure_controls_observed",
        BothClaimsJoinableBeforePressure = "both_claims_joinable_before_pressure",
        NoPrePressureClaimLoss = "no_pre_pressure_claim_loss",
        OrderedLifecycleTrace = "ordered_lifecycle_trace",
    }
}

crate::names! {
    /// A trust-boundary precondition an adapter depth must meet before any of
    /// its evidence counts (paper Table 5 and "Deeper adapter trust boundaries").
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Precondition {
        // telemetry_join (all nine)
        ExternalAcceptedClaimRegistry = "external_accepted_claim_registry",
        StableClaimId = "stable_claim_id",
        ReusableObjectId = "reusable_object_id",
        FixedMaterializationPredicate = "fixed_materialization_predicate",
        DeterministicRequestTokenMap = "deterministic_request_token_map",
        FixedCacheIdentity = "fixed_cache_identity",
        NamedObservationPoint = "named_observation_point",
        JoinableBackendEvents = "joinable_backend_events",
        AmbiguityFailsClosed = "ambiguity_fails_closed",
        // claim_registry
        ClaimsRegisteredBeforeLifecycle = "claims_registered_before_lifecycle",
        // storage_restorability
        ClaimAcceptedBeforeOffload = "claim_accepted_before_offload",
        HooksNameSameClaimAndCacheIdentity = "hooks_name_same_claim_and_cache_identity",
        RestorationOrderedBeforeReuse = "restoration_ordered_before_reuse",
        FailureOutcomeBeforeFallback = "failure_outcome_before_fallback",
        // routing_hook
        RouteDecisionSeesAcceptedClaim = "route_decision_sees_accepted_claim",
        FixedWorkerCacheNamespace = "fixed_worker_cache_namespace",
        RouteCostPlacementReuseSameClaim = "route_cost_placement_reuse_same_claim",
        // scheduler_hook
        ConflictAtNamedBoundary = "conflict_at_named_boundary",
        ActionBeforeTerminalHandling = "action_before_terminal_handling",
        StableSpecificBlockingIds = "stable_specific_blocking_ids",
        // allocator_hook
        VictimCandidateSetExposed = "victim_candidate_set_exposed",
        ProtectedFootprintExposed = "protected_footprint_exposed",
        OrderedExclusionBeforeLoss = "ordered_exclusion_before_loss",
        // backend_patch
        PatchStackIdentified = "patch_stack_identified",
        PatchedCodeOnExercisedPath = "patched_code_on_exercised_path",
        AdjacentHooksAbsentOrDisabled = "adjacent_hooks_absent_or_disabled",
        AnalyzerChecksOrderAndIdentity = "analyzer_checks_order_and_identity",
    }
}

crate::names! {
    /// A known way a join or hook can be ambiguous. A declared ambiguity voids
    /// the adapter's evidence (fail-closed rule 7).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Ambiguity {
        MissingRegistry = "missing_registry",
        UnstableClaimIds = "unstable_claim_ids",
        CacheIdentityMismatch = "cache_identity_mismatch",
        PartialEventStream = "partial_event_stream",
        DuplicateOwnership = "duplicate_ownership",
        AmbiguousOrder = "ambiguous_order",
        PostHocClaimNaming = "post_hoc_claim_naming",
    }
}

crate::names! {
    /// A gate of the trace analyzer (`kvlower gate`) whose verdict evidence may rest on.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum TraceGate {
        // The trace crate decides these gates per claim and reports them under
        // these names, in this order (`docs/trace-format.md`). The comments are
        // not doc comments: the JSON schemas list the names only.

        // Connector witness path A: claim metadata flows through a successful
        // offload and CPU→GPU restore before reuse.
        ConnectorObservation = "connector_observation",
        // Connector witness path B: a controlled same-claim CPU→GPU load failure
        // becomes a claim-scoped, fail-closed scheduler-boundary refusal, in order.
        ConnectorFailureOutcome = "connector_failure_outcome",
        // Reference lifecycle hook: accepted → materialized → restorable
        // generation → failing generation with a claim-scoped outcome.
        ReferenceLifecycle = "reference_lifecycle",
        // Connector witness path C: in a trace with several claims, failure and
        // refusal are attributed to the target claim only.
        MultiClaimAttribution = "multi_claim_attribution",
        // Residency (connector family, kvlower's own): an accepted claim's
        // footprint is protected under pressure: its blocks are excluded from
        // the victims, the conflicting request gets an explicit action naming
        // it, and its end is accounted for.
        ClaimProtection = "claim_protection",
        // Residency: a claim-scoped demotion to a lower tier comes before the
        // loss of the claim's last device copy.
        ClaimDemotion = "claim_demotion",
        // Residency: the accepted duration's end is a claim-scoped boundary,
        // protection holds before it, and the loss it allows comes after it.
        ClaimExpiry = "claim_expiry",
    }
}

crate::names! {
    /// The label of one matrix row (paper §4, Table 3).
    ///
    /// Declared, and so ordered, from the label that decides least to the one
    /// that decides most: `unknown < approximate < rejected < sound_with_adapter
    /// < native_sound`. A greater label is a stronger answer (a rejection is a
    /// decided misrepresentation, an approximation only plausible), so the
    /// README's cell for a (descriptor, mode) is the maximum over its depths.
    /// Reports that list labels best-first iterate [`Label::ALL`] in reverse.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Label {
        Unknown = "unknown",
        Approximate = "approximate",
        Rejected = "rejected",
        SoundWithAdapter = "sound_with_adapter",
        NativeSound = "native_sound",
    }
}

impl Label {
    /// Whether the row claims the mode is lowered.
    pub fn is_positive(self) -> bool {
        matches!(self, Label::NativeSound | Label::SoundWithAdapter)
    }
}

crate::names! {
    /// What a positive adapter row actually establishes; the label alone
    /// overstates it (paper §4, Table 3).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
    pub enum Subtype {
        /// A telemetry join reconstructs selected claim-scoped observations.
        AdapterObservational = "adapter_observational",
        /// Policy behaviour reconstructed in the tested controlled-pressure regime.
        AdapterPolicyControlledPressure = "adapter_policy_controlled_pressure",
        /// A represented hook (registry, storage, routing, scheduler, allocator)
        /// supplies obligations outside the backend.
        AdapterHookMechanism = "adapter_hook_mechanism",
        /// A modified backend path supplies the obligations on the exercised path.
        BackendPatchWitness = "backend_patch_witness",
    }
}

/// The depth an evidence item is supplied at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceDepth {
    Native,
    #[serde(untagged)]
    Adapter(Depth),
}

impl std::fmt::Display for EvidenceDepth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvidenceDepth::Native => f.write_str("native"),
            EvidenceDepth::Adapter(d) => write!(f, "{d}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_codes_are_unique() {
        let mut codes = std::collections::BTreeSet::new();
        for o in Obligation::ALL {
            assert_eq!(Obligation::from_name(o.name()), Some(*o));
            assert!(codes.insert(o.code()), "duplicate code {}", o.code());
        }
        assert_eq!(Obligation::ALL.len(), 19);
        assert_eq!(Mode::ALL.len(), 7);
        assert_eq!(Depth::ALL.len(), 8);
    }

    #[test]
    fn legacy_alias_normalises_and_is_never_printed() {
        assert_eq!(
            Obligation::from_input_name("active_refusal_or_defer"),
            Some(Obligation::ExplicitConflictAction)
        );
        assert!(
            Obligation::ALL
                .iter()
                .all(|o| o.name() != "active_refusal_or_defer")
        );
    }

    crate::names! {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
        enum Plain {
            First = "first-name",
            /// Documented.
            Second = "second_name",
        }
    }

    crate::names! {
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(tag = "kind")]
        enum Tagged {
            Unit = "unit_name",
            Fields { a: u64, b: String } = "fields_name",
        }
    }

    /// The one name table is what serde reads and writes, and every list
    /// derived from it is complete.
    #[test]
    fn names_are_the_serde_names() {
        assert_eq!(Plain::ALL, [Plain::First, Plain::Second]);
        assert_eq!((Plain::COUNT, Plain::Second.index()), (2, 1));
        for p in Plain::ALL {
            let json = serde_json::to_value(p).ok();
            assert_eq!(json, Some(p.name().into()));
            assert_eq!(Plain::from_name(p.name()), Some(*p));
            assert_eq!(p.to_string(), p.name());
            let back: Option<Plain> = serde_json::from_value(p.name().into()).ok();
            assert_eq!(back, Some(*p));
        }
        assert_eq!(Plain::from_name("First"), None);
        for t in [
            Tagged::Unit,
            Tagged::Fields {
                a: 1,
                b: "x".into(),
            },
        ] {
            let json = serde_json::to_value(&t).unwrap_or_default();
            assert_eq!(json["kind"], t.as_str(), "{json}");
            assert_eq!(t.to_string(), t.as_str());
        }
    }

    #[test]
    fn depth_ladder_is_ordered() {
        assert!(Depth::None < Depth::TelemetryJoin);
        assert!(Depth::AllocatorHook < Depth::BackendPatch);
    }
}
