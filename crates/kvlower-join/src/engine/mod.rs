//! The join itself: replay the stream, keep the live block tree, and judge each claim at
//! its observation point.
//!
//! Memory holds one record per *live* block plus a tombstone for each removed block that
//! lies on a claim's chain (claims are few). A removed block that no claim needs is
//! forgotten, so a later store whose parent hash is unknown cannot be told apart from a
//! stream that started mid-way: when such a block's tokens match a non-first block of a
//! claim, that claim fails closed (`unjoinable_parent`) rather than being guessed.
//!
//! One [`Engine`] holds the replay's state; each phase of an event is a module of its
//! own, in the order an event meets them:
//!
//! - [`stream`]: the per-stream checks (sequence numbers, timestamps, cache instance,
//!   cache identity) every event passes first;
//! - [`block_events`]: what a store, removal, update or clear does to the block table
//!   and to the claims' chains;
//! - [`verdict`]: whether each claim's predicate holds, its verdict at its observation
//!   point, and the report with its precondition tallies;
//! - [`claims`]: the claims' running state and the index events find them by.
//!
//! The input drivers ([`crate::input`]) decode lines or capture frames and hand each
//! one to [`Engine::feed`].

mod block_events;
mod claims;
mod stream;
mod verdict;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::mem::{Discriminant, discriminant};
use std::num::NonZeroU32;

use crate::blocks::{BlockTable, FoldState, TierId};
use crate::document::{EventRef, Reason, StreamSummary};
use crate::events::{Decoded, DecodedLine, Issue, KvEvent, Tier};
use crate::registry::{EventFormat, HashEncoding, Registry, StreamPoint};
use block_events::Origin;
use claims::{ClaimIndex, ClaimTrack};
use stream::CacheInstance;

/// Options that change what is judged, not how.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JoinOptions {
    /// Judge every claim at this point instead of its registered one (pressure trials).
    pub observe_at: Option<StreamPoint>,
}

/// The replay's whole state: the registry it judges, the live blocks, the claims'
/// running state and the stream's own record. Built once per join, fed one decoded
/// line or frame at a time, and consumed by [`Engine::finish`].
pub(crate) struct Engine<'r> {
    registry: &'r Registry,
    format: EventFormat,
    block_size: Option<NonZeroU32>,
    encoding: Option<HashEncoding>,
    claims: Vec<ClaimTrack>,
    /// Reasons every claim shares from the registry and format (before any event).
    registry_reasons: Vec<Reason>,
    blocks: BlockTable,
    /// Every tier the stream named, interned: a block record holds ids.
    tier_names: Vec<Tier>,
    tier_ids: HashMap<Tier, TierId, FoldState>,
    /// Stream-level ambiguities: each taints every claim not yet judged.
    stream_ambiguities: Vec<Reason>,
    summary: StreamSummary,
    last_index: Option<u64>,
    last_ref: Option<EventRef>,
    last_ts: Option<f64>,
    /// Last sequence number per publisher (capture rank; 0 for JSON Lines).
    last_seq: BTreeMap<u16, u64>,
    seq_present: Option<bool>,
    /// The cache instance of the first joined event; any other one later is an ambiguity.
    first_instance: Option<CacheInstance>,
    /// How many claims have no verdict yet (the replay stops judging at zero).
    claims_unjudged: usize,
    /// The claims indexed once, so that an event costs what it touches rather than
    /// one look at every claim (issue 21 item 8).
    index: ClaimIndex,
    /// The capture header's operator-declared engine facts (captures only).
    capture_meta: Option<BTreeMap<String, String>>,
    /// Work done by every clear so far: one step per record and per copy it looks at
    /// (a clear costs the copies it holds, never records × tiers; tests read it).
    clear_steps: u64,
}

/// The most distinct tiers one stream may name (docs/join.md "Offload tiers and
/// ownership"): medium strings are unbounded and each is a tier, so without a cap a
/// stream could grow the tier table, and every clear's kept-tier table, at will.
pub(crate) const MAX_TIERS: usize = 64;

impl Engine<'_> {
    /// The id of tier `t`, interned on first sight; `None` (and `unknown_tier`, a
    /// stream-wide ambiguity) for a tier beyond the stream's [`MAX_TIERS`].
    fn tier_id(&mut self, t: Tier, here: EventRef) -> Option<TierId> {
        if let Some(id) = self.tier_ids.get(&t) {
            return Some(*id);
        }
        let id = match TierId::try_from(self.tier_names.len()) {
            Ok(id) if self.tier_names.len() < MAX_TIERS => id,
            _ => {
                self.ambiguity(Reason::UnknownTier {
                    event: here,
                    tier: format!("{t}: more than {MAX_TIERS} tiers in one stream"),
                });
                return None;
            }
        };
        self.tier_names.push(t.clone());
        self.tier_ids.insert(t, id);
        Some(id)
    }

    /// The id of tier `t`, if the stream named it before.
    fn find_tier(&self, t: &Tier) -> Option<TierId> {
        self.tier_ids.get(t).copied()
    }

    /// The tier interned as `id`.
    fn tier_name(&self, id: TierId) -> Option<&Tier> {
        self.tier_names.get(id as usize)
    }

    /// vLLM's `kv_cache_report_mode`: the registry's cache identity, else the capture
    /// header's `--meta`.
    fn report_mode(&self) -> Option<&str> {
        self.registry
            .cache_identity
            .kv_cache_report_mode
            .as_deref()
            .or_else(|| {
                self.capture_meta
                    .as_ref()
                    .and_then(|m| m.get("kv_cache_report_mode"))
                    .map(String::as_str)
            })
    }
}

/// Adds `r` unless a reason of its kind is already listed: the first occurrence of a
/// kind is the one a reader needs to find (the list stays small on a hostile stream).
fn push_once(list: &mut Vec<Reason>, r: Reason) {
    let d: Discriminant<Reason> = discriminant(&r);
    if !list.iter().any(|x| discriminant(x) == d) {
        list.push(r);
    }
}

impl<'r> Engine<'r> {
    /// The engine before any event: the registry's claims indexed, and the reasons
    /// the registry and format alone give.
    pub(crate) fn new(
        registry: &'r Registry,
        format: EventFormat,
        opts: JoinOptions,
    ) -> Engine<'r> {
        let id = &registry.cache_identity;
        let mut registry_reasons = Vec::new();
        for f in id.missing_fields() {
            registry_reasons.push(Reason::MissingCacheIdentityField { field: f.into() });
        }
        if let Some(rt) = &id.runtime
            && rt.kind != format
        {
            registry_reasons.push(Reason::RuntimeMismatch {
                registry: rt.kind,
                events: format,
            });
        }
        let claims: Vec<ClaimTrack> = registry
            .claims
            .iter()
            .map(|c| ClaimTrack::new(c, id.block_size, format, opts.observe_at))
            .collect();
        let claims_unjudged = claims.len();
        let index = ClaimIndex::new(&claims);
        Engine {
            registry,
            format,
            block_size: id.block_size,
            encoding: id.hash_domain.as_ref().map(|h| h.encoding),
            claims,
            registry_reasons,
            blocks: BlockTable::default(),
            tier_names: Vec::new(),
            tier_ids: HashMap::default(),
            stream_ambiguities: Vec::new(),
            summary: StreamSummary::default(),
            last_index: None,
            last_ref: None,
            last_ts: None,
            last_seq: BTreeMap::new(),
            seq_present: None,
            first_instance: None,
            claims_unjudged,
            index,
            capture_meta: None,
            clear_steps: 0,
        }
    }

    /// A stream-level ambiguity: it taints every claim not yet judged.
    fn ambiguity(&mut self, r: Reason) {
        push_once(&mut self.stream_ambiguities, r);
    }

    /// Judges every claim whose observation point lies before the next event (index
    /// `next_index`, timestamp `next_ts`).
    fn snapshot_due(&mut self, next_index: u64, next_ts: Option<f64>) {
        if self.claims_unjudged == 0 {
            return;
        }
        // A claim is due once its observation point lies before the next event; the
        // index hands out each claim the first time it is due, in claim order.
        for ci in self.index.due(next_index, next_ts) {
            if self.claims.get(ci).is_some_and(|c| c.result.is_none()) {
                self.snapshot(ci, None);
            }
        }
    }

    /// Replays one event: the stream checks, then what it does to the blocks, then
    /// the predicate of every claim it touched.
    fn process(&mut self, d: Decoded) {
        let here = EventRef {
            index: d.index,
            line: d.line,
        };
        // Claims observed up to the previous event are complete; anything the order
        // checks find (a gap before this event) must taint the others.
        if let Some(last) = self.last_index {
            self.snapshot_due(last.saturating_add(1), None);
        }
        let selected = self.check_order(&d, here);
        self.snapshot_due(d.index, d.ts);
        // Another rank's or window's blocks are another cache: nothing about the
        // selected one (counted, then treated like another group's event).
        let mut other_group = !selected;
        if !selected {
            self.ignore_instance(d.rank, d.window);
        }
        for issue in &d.issues {
            let r = match issue {
                Issue::Missing(f) => Reason::MissingEventField {
                    event: here,
                    field: (*f).to_string(),
                },
                Issue::TokenCountMismatch { .. } => Reason::TokenCountMismatch { event: here },
                Issue::OtherKvCacheGroup { group, kind } => {
                    self.ignore_group(*group, kind.clone());
                    other_group = true;
                    continue;
                }
                Issue::JudgedGroupNotFullAttention(_) => Reason::OtherKvCacheGroup { event: here },
                Issue::UnknownTier(t) => Reason::UnknownTier {
                    event: here,
                    tier: t.clone(),
                },
            };
            self.ambiguity(r);
        }
        let mut dirty: BTreeSet<usize> = BTreeSet::new();
        // Another group's blocks are another cache: hybrid models keep one block table
        // per group, so its stores and removals say nothing about group 0's blocks.
        let event = if other_group {
            KvEvent::Created
        } else {
            d.event
        };
        match event {
            KvEvent::Created if other_group => {}
            KvEvent::Created => {
                self.summary.created += 1;
                if self.summary.events > 0 {
                    self.ambiguity(Reason::CacheRecreated { event: here });
                }
            }
            KvEvent::Stored {
                parent,
                blocks,
                block_size,
                lora_id,
                lora_name,
            } => {
                self.summary.stored += 1;
                self.check_identity(here, &parent, &blocks, block_size);
                let adapter_ok = self.adapter_ok(lora_id, lora_name.as_deref());
                let mut parent = parent;
                for b in blocks {
                    let h = b.hash.clone();
                    let origin = Origin {
                        here,
                        ts: d.ts,
                        adapter_ok,
                    };
                    self.store(parent.take(), b, origin, &mut dirty);
                    parent = Some(h);
                }
            }
            KvEvent::Removed { hashes, tier } => {
                self.summary.removed += 1;
                for h in hashes {
                    self.check_hash(here, &h);
                    self.remove(&h, tier.as_ref(), here, d.ts, &mut dirty);
                }
            }
            KvEvent::Updated {
                hash,
                cache_level,
                priority,
            } => {
                self.summary.updated += 1;
                self.check_hash(here, &hash);
                self.update(&hash, cache_level, priority, here, d.ts, &mut dirty);
            }
            KvEvent::Cleared => {
                self.summary.cleared += 1;
                self.clear(here, d.ts, &mut dirty);
            }
        }
        for ci in dirty {
            self.recompute(ci, here);
        }
        self.summary.events += 1;
        if self.summary.first_event.is_none() {
            self.summary.first_event = Some(here);
        }
        self.summary.last_event = Some(here);
        self.summary.peak_tracked_blocks = self
            .summary
            .peak_tracked_blocks
            .max(self.blocks.len() as u64);
        self.last_index = Some(d.index);
        self.last_ref = Some(here);
    }

    /// Replays one decoded line or capture frame: its batch-level checks first (even
    /// for an empty batch), then each of its events in order.
    pub(crate) fn feed(&mut self, decoded: DecodedLine) {
        if let Some(b) = decoded.batch {
            self.batch(b);
        }
        for d in decoded.events {
            self.process(d);
        }
    }

    /// A capture frame the recorder dropped (larger than its cap): its events are
    /// unknown, so every claim not yet judged is ambiguous.
    pub(crate) fn frame_dropped(&mut self, event: EventRef) {
        self.ambiguity(Reason::DroppedFrame { event });
    }

    /// The operator-declared engine facts of a capture's header (`--meta`), read
    /// where the registry leaves a fact open (`kv_cache_report_mode`).
    pub(crate) fn set_capture_meta(&mut self, meta: BTreeMap<String, String>) {
        self.capture_meta = Some(meta);
    }
}
