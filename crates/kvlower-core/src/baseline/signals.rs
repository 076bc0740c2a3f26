//! The approximation signals of the baseline: a table of its own because it is not part of
//! the floor (a signal never satisfies an obligation, paper Table 2 rule 1), so a change to it
//! is listed as neutral, while the rest of `baseline.rs` is the floor itself.

use crate::vocab::{Mode, Signal};

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
