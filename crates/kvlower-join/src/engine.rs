//! The join itself: replay the stream, keep the live block tree, and judge each claim at
//! its observation point.
//!
//! Memory holds one record per *live* block plus a tombstone for each removed block that
//! lies on a claim's chain (claims are few). A removed block that no claim needs is
//! forgotten, so a later store whose parent hash is unknown cannot be told apart from a
//! stream that started mid-way: when such a block's tokens match a non-first block of a
//! claim, that claim fails closed (`unjoinable_parent`) rather than being guessed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::BufRead;
use std::mem::{Discriminant, discriminant};
use std::num::NonZeroU32;
use std::ops::ControlFlow;
use std::path::Path;

use kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS;
use kvlower_fs::lines::Line;

use crate::blocks::{BlockRec, BlockTable, Copies, FoldState, ParentKey, TierId, TierSet};
use crate::error::JoinError;
use crate::events::{BatchMeta, BlockHash, Decoded, Decoder, Issue, KvEvent, StoredBlock, Tier};
use crate::registry::{
    AdapterIdentity, EventFormat, HashEncoding, Registry, StreamPoint, required_chunks,
};
use crate::report::{
    Change, ClaimResult, EventRef, IgnoredGroup, IgnoredInstance, JoinReport, PreconditionTally,
    REPORT_SCHEMA_VERSION, Reason, StatusCounts, StreamSummary, TierCoverage, Transition, Verdict,
};

/// What a repeated store of a known hash on the same tier means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repeat {
    /// Nothing new: the runtime de-duplicates (SGLang's radix tree, TensorRT-LLM).
    Same,
    /// One more physical copy (vLLM `incremental` reports, offload connectors' chunks).
    NewCopy,
    /// A new copy or a re-announced hit: the count becomes uncertain.
    Either,
}

/// The join's running state for one registered claim (same index as in the registry).
struct ClaimTrack {
    /// The token ids of each whole block the predicate requires, in prefix order
    /// (empty when the claim cannot be tracked: it then always has a reason).
    chunks: Vec<Vec<u32>>,
    /// The registration point: a relevant event before it makes the claim post hoc.
    registered_before: Option<StreamPoint>,
    /// The observation point the verdict is taken at (a pressure trial may override it).
    observe_at: Option<StreamPoint>,
    /// For each required block position, every stored hash that matched it so far.
    positions: Vec<Vec<BlockHash>>,
    /// Whether the predicate holds now: every required position has a live block.
    predicate_holds: bool,
    /// Where the current, unbroken materialization began.
    since: Option<EventRef>,
    /// Every change of `predicate_holds`, in stream order.
    transitions: Vec<Transition>,
    /// Reasons found in the stream that concern this claim only.
    reasons: Vec<Reason>,
    /// Retention priorities reported on the claim's blocks (TensorRT-LLM).
    priorities: BTreeSet<u32>,
    /// The verdict, once taken at the observation point (the claim is then frozen).
    result: Option<ClaimResult>,
}

/// Claims by what events look them up by (each list in claim order).
#[derive(Default)]
struct ClaimIndex {
    /// First required block's tokens → claims (sorted by tokens: a partial block's
    /// tokens find every first block they begin, as one range).
    first: BTreeMap<Vec<u32>, Vec<usize>>,
    /// A later required block's tokens → claims (each claim once).
    later: HashMap<Vec<u32>, Vec<usize>>,
    /// Claims observed at an event index, by that index; `due_at` of them are judged.
    by_index: Vec<(u64, usize)>,
    due_at: usize,
    /// Claims observed at a timestamp, by that timestamp; `due_ts` of them are judged.
    by_ts: Vec<(f64, usize)>,
    due_ts: usize,
}

impl ClaimIndex {
    fn new(claims: &[ClaimTrack]) -> ClaimIndex {
        let mut ix = ClaimIndex::default();
        for (ci, c) in claims.iter().enumerate() {
            if let Some(first) = c.chunks.first() {
                ix.first.entry(first.clone()).or_default().push(ci);
            }
            for ch in c.chunks.iter().skip(1) {
                // Claims are visited in order, so a repeat of this claim is the last.
                let list = ix.later.entry(ch.clone()).or_default();
                if list.last() != Some(&ci) {
                    list.push(ci);
                }
            }
            match c.observe_at {
                Some(StreamPoint::EventIndex(o)) => ix.by_index.push((o, ci)),
                Some(StreamPoint::Timestamp(t)) => ix.by_ts.push((t, ci)),
                None => {}
            }
        }
        ix.by_index.sort_unstable();
        ix.by_ts
            .sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        ix
    }

    /// The claims that become due before event `next_index` (timestamp `next_ts`), not
    /// returned before, in claim order: an index point `o < next_index`, a timestamp
    /// point `t < next_ts`.
    fn due(&mut self, next_index: u64, next_ts: Option<f64>) -> Vec<usize> {
        let mut due = Vec::new();
        while let Some(&(o, ci)) = self.by_index.get(self.due_at) {
            if o >= next_index {
                break;
            }
            due.push(ci);
            self.due_at += 1;
        }
        if let Some(ts) = next_ts {
            while let Some(&(t, ci)) = self.by_ts.get(self.due_ts) {
                if ts > t {
                    due.push(ci);
                    self.due_ts += 1;
                } else {
                    break;
                }
            }
        }
        due.sort_unstable();
        due
    }

    /// Claims whose first required block begins with `tokens`, in claim order.
    fn first_starting_with(&self, tokens: &[u32]) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .first
            .range::<[u32], _>((
                std::ops::Bound::Included(tokens),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(tokens))
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        out.sort_unstable();
        out
    }
}

/// The cache instance an event belongs to, as far as the event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CacheInstance {
    /// Data-parallel rank (`attention_dp_rank`), when the event carries one.
    rank: Option<i64>,
    /// Attention window size, when the event carries one.
    window: Option<i64>,
    /// The publisher (capture rank): each endpoint is an engine's own cache, even
    /// when two engines report the same data-parallel rank.
    publisher: u16,
}

/// The event a stored block comes from, as every block of it shares.
#[derive(Debug, Clone, Copy)]
struct Origin {
    here: EventRef,
    /// The batch timestamp, when the format carries one.
    ts: Option<f64>,
    /// The event's adapter (LoRA) identity matches the registry's.
    adapter_ok: bool,
}

/// Options that change what is judged, not how.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct JoinOptions {
    /// Judge every claim at this point instead of its registered one (pressure trials).
    pub observe_at: Option<StreamPoint>,
}

struct Engine<'r> {
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
}

impl Engine<'_> {
    /// The id of tier `t`, interned on first sight.
    fn tier_id(&mut self, t: Tier) -> TierId {
        if let Some(id) = self.tier_ids.get(&t) {
            return *id;
        }
        let id = TierId::try_from(self.tier_names.len()).unwrap_or(TierId::MAX);
        self.tier_names.push(t.clone());
        self.tier_ids.insert(t, id);
        id
    }

    /// The id of tier `t`, if the stream named it before.
    fn find_tier(&self, t: &Tier) -> Option<TierId> {
        self.tier_ids.get(t).copied()
    }

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

    fn repeat(&self, tier: &Tier) -> Repeat {
        match (self.format, tier) {
            (EventFormat::Vllm, Tier::Medium(m)) if m == "GPU" => match self.report_mode() {
                Some("incremental") => Repeat::NewCopy,
                _ => Repeat::Either,
            },
            // Offload connectors announce a shared hash once per chunk and ask consumers
            // to reference-count (per hash and medium).
            (EventFormat::Vllm, Tier::Medium(_)) => Repeat::NewCopy,
            _ => Repeat::Same,
        }
    }
}

fn add_copy(tiers: &mut TierSet, t: TierId, priority: Option<u32>, r: Repeat) {
    match tiers.get_mut(t) {
        None => {
            tiers.insert(t, Copies::one(priority));
        }
        Some(c) => {
            c.priority = priority.or(c.priority);
            match r {
                Repeat::Same => {}
                Repeat::NewCopy => {
                    c.min = c.min.saturating_add(1);
                    c.max = c.max.saturating_add(1);
                }
                Repeat::Either => c.max = c.max.saturating_add(1),
            }
        }
    }
}

fn push_once(list: &mut Vec<Reason>, r: Reason) {
    let d: Discriminant<Reason> = discriminant(&r);
    if !list.iter().any(|x| discriminant(x) == d) {
        list.push(r);
    }
}

impl<'r> Engine<'r> {
    fn new(registry: &'r Registry, format: EventFormat, opts: JoinOptions) -> Engine<'r> {
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
            .map(|c| {
                let chunks: Vec<Vec<u32>> = required_chunks(c, id.block_size)
                    .map(|v| v.into_iter().map(<[u32]>::to_vec).collect())
                    .unwrap_or_default();
                let observe_at = opts.observe_at.or(c.observe_at);
                let mut reasons = Vec::new();
                if format == EventFormat::Trtllm {
                    if matches!(observe_at, Some(StreamPoint::Timestamp(_))) {
                        reasons.push(Reason::ObservationPointUnresolvable);
                    }
                    if matches!(c.registered_before, Some(StreamPoint::Timestamp(_))) {
                        reasons.push(Reason::RegistrationPointUnresolvable);
                    }
                }
                if let (Some(StreamPoint::EventIndex(reg)), Some(StreamPoint::EventIndex(obs))) =
                    (c.registered_before, observe_at)
                    && reg > obs
                {
                    reasons.push(Reason::RegisteredAfterObservationPoint);
                }
                ClaimTrack {
                    positions: vec![Vec::new(); chunks.len()],
                    chunks,
                    registered_before: c.registered_before,
                    observe_at,
                    predicate_holds: false,
                    since: None,
                    transitions: Vec::new(),
                    reasons,
                    priorities: BTreeSet::new(),
                    result: None,
                }
            })
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
        }
    }

    fn ambiguity(&mut self, r: Reason) {
        push_once(&mut self.stream_ambiguities, r);
    }

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
                let mut touched = Vec::new();
                for rec in self.blocks.values_mut() {
                    if !rec.tiers.is_empty() {
                        touched.extend(rec.claim_positions().iter().map(|&(c, _)| c));
                    }
                    rec.tiers.clear();
                }
                self.blocks.retain(|r| !r.claim_positions().is_empty());
                for c in touched {
                    self.relevant_event(c, here, d.ts);
                    dirty.insert(c);
                }
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

    fn ignore_group(&mut self, group: i64, kind: Option<String>) {
        let list = &mut self.summary.ignored_groups;
        match list.iter_mut().find(|g| g.group_idx == group) {
            Some(g) => {
                g.events += 1;
                if g.kind.is_none() {
                    g.kind = kind;
                }
            }
            None => {
                list.push(IgnoredGroup {
                    group_idx: group,
                    kind,
                    events: 1,
                    why: "claims are judged on KV-cache group 0 (full attention); other groups' blocks are separate caches".into(),
                });
                list.sort_by_key(|g| g.group_idx);
            }
        }
    }

    /// Counts one event of a cache instance the registry did not select.
    fn ignore_instance(&mut self, rank: Option<i64>, window_size: Option<i64>) {
        let list = &mut self.summary.ignored_instances;
        match list
            .iter_mut()
            .find(|i| i.rank == rank && i.window_size == window_size)
        {
            Some(i) => i.events += 1,
            None => {
                list.push(IgnoredInstance {
                    rank,
                    window_size,
                    events: 1,
                });
                list.sort_by_key(|i| (i.rank, i.window_size));
            }
        }
    }

    /// Sequence numbers, timestamps and cache-instance keys (rank, window). Returns
    /// whether the event belongs to the cache instance the registry selects (always,
    /// when it selects none: then a second instance is an ambiguity).
    fn check_order(&mut self, d: &Decoded, here: EventRef) -> bool {
        match self.format {
            EventFormat::Trtllm => {
                self.summary.sequence_checked = true;
                if let Some(last) = self.last_index {
                    let expected = last.saturating_add(1);
                    if d.index != expected {
                        self.ambiguity(Reason::SequenceGap {
                            event: here,
                            expected,
                            found: d.index,
                        });
                    }
                }
            }
            // Batch-level checks (sequence numbers) run in `batch`, once per line.
            EventFormat::Vllm | EventFormat::Sglang => {}
        }
        let identity = &self.registry.cache_identity;
        let (want_rank, want_window) = (identity.data_parallel_rank, identity.window_size);
        if want_rank.is_some_and(|r| d.rank != Some(r))
            || want_window.is_some_and(|w| d.window != Some(w))
        {
            return false;
        }
        let instance = CacheInstance {
            rank: d.rank,
            window: d.window,
            publisher: d.stream,
        };
        match self.first_instance {
            None => self.first_instance = Some(instance),
            Some(first) if first != instance => {
                self.ambiguity(Reason::MixedCacheInstances { event: here })
            }
            Some(_) => {}
        }
        true
    }

    /// Sequence numbers and timestamps of one vLLM/SGLang batch, empty or not.
    fn batch(&mut self, b: BatchMeta) {
        let here = EventRef {
            index: b.first_index,
            line: b.line,
        };
        // Event-index claims observed before this batch are complete; a lost batch
        // found below may precede a timestamp observation point, so those wait.
        self.snapshot_due(b.first_index, None);
        let present = b.seq.is_some();
        match self.seq_present {
            None => self.seq_present = Some(present),
            Some(p) if p != present => {
                self.ambiguity(Reason::InconsistentSequenceNumbers { event: here })
            }
            Some(_) => {}
        }
        if let Some(seq) = b.seq {
            match self.last_seq.get(&b.stream) {
                Some(&last) => {
                    let expected = last.saturating_add(1);
                    if seq != expected {
                        self.ambiguity(Reason::SequenceGap {
                            event: here,
                            expected,
                            found: seq,
                        });
                    }
                }
                // Publishers number from 0 at engine start: a later first number means
                // the stream starts mid-way and the cache's initial state is unknown.
                None if seq > 0 => self.ambiguity(Reason::MissingInitialState {
                    event: here,
                    first_sequence: seq,
                }),
                None => {}
            }
            self.last_seq.insert(b.stream, seq);
        }
        self.summary.sequence_checked = self.seq_present == Some(true)
            && !self
                .stream_ambiguities
                .iter()
                .any(|r| matches!(r, Reason::InconsistentSequenceNumbers { .. }));
        if self.last_ts.is_some_and(|last| b.ts < last) {
            self.ambiguity(Reason::TimestampsNotMonotonic { event: here });
        }
        self.last_ts = Some(b.ts);
        self.snapshot_due(b.first_index, Some(b.ts));
    }

    fn check_hash(&mut self, here: EventRef, h: &BlockHash) {
        if let Some(enc) = self.encoding
            && h.encoding() != enc
        {
            self.ambiguity(Reason::HashDomainMismatch { event: here });
        }
    }

    fn check_identity(
        &mut self,
        here: EventRef,
        parent: &Option<BlockHash>,
        blocks: &[StoredBlock],
        block_size: Option<u64>,
    ) {
        if let Some(p) = parent {
            self.check_hash(here, p);
        }
        for b in blocks {
            self.check_hash(here, &b.hash);
        }
        let Some(expected) = self.block_size.map(|b| u64::from(b.get())) else {
            return;
        };
        let carries_tokens = blocks.iter().any(|b| !b.tokens.is_empty());
        match block_size {
            // vLLM/SGLang name the block size; hash-only stores may carry 0.
            Some(bs) if carries_tokens && bs != expected => {
                self.ambiguity(Reason::BlockSizeMismatch {
                    event: here,
                    observed: bs,
                    expected,
                });
            }
            Some(_) => {}
            // TRT-LLM: each block's token count is its size. A block longer than the
            // registry's block size breaks the identity; a partial block (stored
            // routinely by storeBlocksForReuse) only concerns the claims whose prefix it
            // would complete (see `store`).
            None => {
                if let Some(b) = blocks.iter().find(|b| b.tokens.len() as u64 > expected) {
                    self.ambiguity(Reason::BlockSizeMismatch {
                        event: here,
                        observed: b.tokens.len() as u64,
                        expected,
                    });
                }
            }
        }
    }

    fn adapter_ok(&self, lora_id: Option<i64>, lora_name: Option<&str>) -> bool {
        match &self.registry.cache_identity.adapter {
            None => true, // already a missing-field reason on every claim
            Some(AdapterIdentity::BaseModel) => lora_id.is_none() && lora_name.is_none(),
            Some(AdapterIdentity::Lora {
                lora_id: want_id,
                lora_name: want_name,
            }) => {
                let id_ok = match want_id {
                    Some(w) => lora_id == Some(*w),
                    None => true,
                };
                let name_ok = match want_name {
                    Some(w) => lora_name == Some(w.as_str()),
                    None => true,
                };
                (lora_id.is_some() || lora_name.is_some()) && id_ok && name_ok
            }
        }
    }

    /// A claim-relevant event: it must come after the claim's registration.
    fn relevant_event(&mut self, ci: usize, here: EventRef, ts: Option<f64>) {
        let Some(c) = self.claims.get_mut(ci) else {
            return;
        };
        let post_hoc = match c.registered_before {
            Some(StreamPoint::EventIndex(r)) => here.index < r,
            Some(StreamPoint::Timestamp(t)) => ts.is_some_and(|ts| ts < t),
            None => false,
        };
        if post_hoc {
            push_once(&mut c.reasons, Reason::PostHocClaim { event: here });
        }
    }

    fn claim_reason(&mut self, ci: usize, r: Reason) {
        if let Some(c) = self.claims.get_mut(ci) {
            push_once(&mut c.reasons, r);
        }
    }

    /// Records one stored block (a new one, a copy of a known one, or an opaque
    /// record learning its tokens) and marks the claims it touches `dirty`.
    fn store(
        &mut self,
        parent: Option<BlockHash>,
        b: StoredBlock,
        origin: Origin,
        dirty: &mut BTreeSet<usize>,
    ) {
        match self.blocks.get(&b.hash) {
            Some(rec) => {
                let conflict = match &rec.tokens {
                    Some(t) => {
                        !b.tokens.is_empty()
                            && (**t != *b.tokens || !ParentKey::is(&rec.parent, &parent))
                    }
                    None => false,
                };
                if conflict {
                    self.ambiguity(Reason::ConflictingBlockContent { event: origin.here });
                } else {
                    self.store_known(parent, b, origin, dirty);
                }
            }
            None if b.tokens.is_empty() => {
                // Hash only: kept so that a later removal or child is known, never joined.
                let tiers = match b.tier {
                    Some(t) => TierSet::single(self.tier_id(t), Copies::one(b.priority)),
                    None => TierSet::Empty,
                };
                self.blocks
                    .insert(b.hash, BlockRec::new(parent, None, tiers, Vec::new()));
            }
            None => self.store_new(parent, b, origin, dirty),
        }
    }

    /// A store of a hash the stream already holds, with agreeing content: one more
    /// copy (or none, per [`Engine::repeat`]), or the tokens of an opaque record.
    fn store_known(
        &mut self,
        parent: Option<BlockHash>,
        b: StoredBlock,
        origin: Origin,
        dirty: &mut BTreeSet<usize>,
    ) {
        let hash = b.hash.clone();
        let Some(rec) = self.blocks.get(&hash) else {
            return;
        };
        let upgrade = rec.tokens.is_none() && !b.tokens.is_empty();
        let claims_touched = rec.claim_positions().to_vec();
        if let Some(t) = b.tier.clone() {
            let r = self.repeat(&t);
            let t = self.tier_id(t);
            if let Some(rec) = self.blocks.get_mut(&hash) {
                add_copy(&mut rec.tiers, t, b.priority, r);
            }
        }
        if upgrade {
            // An opaque (hash-only) record learns its tokens: join it now, keeping
            // the copies it already had.
            let old = self.blocks.remove(&hash);
            self.store(parent, b, origin, dirty);
            if let (Some(old), Some(new)) = (old, self.blocks.get_mut(&hash)) {
                for (t, c) in old.tiers.iter() {
                    if new.tiers.get_mut(t).is_none() {
                        new.tiers.insert(t, *c);
                    }
                }
            }
            return;
        }
        for (ci, _) in claims_touched {
            self.relevant_event(ci, origin.here, origin.ts);
            if let (Some(p), Some(c)) = (b.priority, self.claims.get_mut(ci)) {
                c.priorities.insert(p);
            }
            dirty.insert(ci);
        }
    }

    /// A new block with tokens: joined to every claim chain it extends.
    fn store_new(
        &mut self,
        parent: Option<BlockHash>,
        b: StoredBlock,
        origin: Origin,
        dirty: &mut BTreeSet<usize>,
    ) {
        let here = origin.here;
        let tiers = match b.tier.clone() {
            Some(t) => TierSet::single(self.tier_id(t), Copies::one(b.priority)),
            None => TierSet::Empty,
        };
        if self.format == EventFormat::Trtllm
            && let Some(bs) = self.block_size
            && !b.tokens.is_empty()
            && (b.tokens.len() as u64) < u64::from(bs.get())
        {
            self.partial_block(&parent, &b.tokens, here);
        }
        let claim_positions = self.chain_positions(parent.as_ref(), &b, here);
        for &(ci, pos) in &claim_positions {
            self.join_block(ci, pos, &b, origin);
            dirty.insert(ci);
        }
        self.blocks.insert(
            b.hash,
            BlockRec::new(parent, Some(b.tokens), tiers, claim_positions),
        );
    }

    /// Where a new block extends a claim's chain: (claim, position) pairs. A block
    /// whose parent the stream never showed with tokens cannot be placed; a claim it
    /// would fit gets `UnjoinableParent`.
    fn chain_positions(
        &mut self,
        parent: Option<&BlockHash>,
        b: &StoredBlock,
        here: EventRef,
    ) -> Vec<(usize, usize)> {
        let mut claim_positions = Vec::new();
        match parent {
            // A root block salted otherwise than the registry declares (or unsalted when
            // it declares a salt) heads another cache namespace: the claim's requests
            // hash to different blocks, so neither it nor its chain can be the claim's
            // (docs/join.md "Extra hash inputs").
            None if b.salt != self.registry.cache_identity.cache_salt => {}
            None => {
                if let Some(cis) = self.index.first.get(b.tokens.as_slice()) {
                    claim_positions.extend(cis.iter().map(|&ci| (ci, 0)));
                }
            }
            Some(ph) => match self.blocks.get(ph) {
                Some(prec) if prec.tokens.is_some() => {
                    for &(ci, i) in prec.claim_positions() {
                        if self
                            .claims
                            .get(ci)
                            .and_then(|c| c.chunks.get(i + 1))
                            .is_some_and(|ch| *ch == b.tokens)
                        {
                            claim_positions.push((ci, i + 1));
                        }
                    }
                }
                _ => {
                    let hits: Vec<usize> = self
                        .index
                        .later
                        .get(b.tokens.as_slice())
                        .cloned()
                        .unwrap_or_default();
                    for ci in hits {
                        self.claim_reason(ci, Reason::UnjoinableParent { event: here });
                    }
                }
            },
        }
        claim_positions
    }

    /// Joins a new block to claim `ci` at `pos`: the identity checks a matching
    /// block must pass, then its hash, priority and the event itself.
    fn join_block(&mut self, ci: usize, pos: usize, b: &StoredBlock, origin: Origin) {
        let here = origin.here;
        if !origin.adapter_ok {
            self.claim_reason(ci, Reason::AdapterMismatch { event: here });
        }
        if b.adapter_unknown && self.registry.cache_identity.lora_enabled != Some(false) {
            self.claim_reason(ci, Reason::UnknownBlockAdapter { event: here });
        }
        let salt_mismatch = b.salt.is_some() && b.salt != self.registry.cache_identity.cache_salt;
        if b.extra_hash_inputs || salt_mismatch {
            self.claim_reason(ci, Reason::UnverifiedExtraHashInputs { event: here });
        }
        let dup = self
            .claims
            .get(ci)
            .and_then(|c| c.positions.get(pos))
            .is_some_and(|p| p.iter().any(|h| *h != b.hash));
        if dup {
            self.claim_reason(
                ci,
                Reason::DuplicateBlockAtPosition {
                    event: here,
                    position: pos as u64,
                },
            );
        }
        if let Some(c) = self.claims.get_mut(ci) {
            if let Some(p) = c.positions.get_mut(pos) {
                p.push(b.hash.clone());
            }
            if let Some(p) = b.priority {
                c.priorities.insert(p);
            }
        }
        self.relevant_event(ci, here, origin.ts);
    }

    /// A partial TensorRT-LLM block: it can never be a claim's full block, but a claim
    /// whose block at this position begins with its tokens cannot be judged from it.
    fn partial_block(&mut self, parent: &Option<BlockHash>, tokens: &[u32], here: EventRef) {
        let expected = self.block_size.map_or(0, |b| u64::from(b.get()));
        let positions: Vec<(usize, usize)> = match parent {
            // Only the claims whose first block begins with these tokens can be hit.
            None => self
                .index
                .first_starting_with(tokens)
                .into_iter()
                .map(|ci| (ci, 0))
                .collect(),
            Some(ph) => self
                .blocks
                .get(ph)
                .map(|p| {
                    p.claim_positions()
                        .iter()
                        .map(|&(ci, i)| (ci, i + 1))
                        .collect()
                })
                .unwrap_or_default(),
        };
        for (ci, pos) in positions {
            let hit = self
                .claims
                .get(ci)
                .and_then(|c| c.chunks.get(pos))
                .is_some_and(|ch| ch.starts_with(tokens));
            if hit {
                self.claim_reason(
                    ci,
                    Reason::BlockSizeMismatch {
                        event: here,
                        observed: tokens.len() as u64,
                        expected,
                    },
                );
            }
        }
    }

    fn remove(
        &mut self,
        h: &BlockHash,
        tier: Option<&Tier>,
        here: EventRef,
        ts: Option<f64>,
        dirty: &mut BTreeSet<usize>,
    ) {
        let tier: Option<Option<TierId>> = tier.map(|t| self.find_tier(t));
        let Some(rec) = self.blocks.get_mut(h) else {
            self.ambiguity(Reason::UnknownBlockRemoved { event: here });
            return;
        };
        let known = match tier {
            None => {
                let had = !rec.tiers.is_empty();
                rec.tiers.clear();
                had
            }
            Some(None) => false,
            Some(Some(t)) => match rec.tiers.get_mut(t) {
                None => false,
                Some(c) => {
                    c.min = c.min.saturating_sub(1);
                    c.max = c.max.saturating_sub(1);
                    if c.max == 0 {
                        rec.tiers.remove(t);
                    }
                    true
                }
            },
        };
        let claims_touched: Vec<usize> = rec.claim_positions().iter().map(|&(c, _)| c).collect();
        let forget = rec.tiers.is_empty() && rec.claim_positions().is_empty();
        if forget {
            self.blocks.remove(h);
        }
        if !known {
            self.ambiguity(Reason::UnknownBlockRemoved { event: here });
        }
        for ci in claims_touched {
            self.relevant_event(ci, here, ts);
            dirty.insert(ci);
        }
    }

    fn update(
        &mut self,
        h: &BlockHash,
        cache_level: Option<(u32, u32)>,
        priority: Option<(u32, u32)>,
        here: EventRef,
        ts: Option<f64>,
        dirty: &mut BTreeSet<usize>,
    ) {
        let levels = cache_level.map(|(old, new)| {
            (
                self.find_tier(&Tier::CacheLevel(old)),
                self.tier_id(Tier::CacheLevel(new)),
            )
        });
        let Some(rec) = self.blocks.get_mut(h) else {
            self.ambiguity(Reason::UnknownBlockUpdated { event: here });
            return;
        };
        let mut ok = !rec.tiers.is_empty();
        if let Some((old, new)) = levels {
            match old.and_then(|old| rec.tiers.remove(old)) {
                Some(p) => {
                    rec.tiers.insert(new, p);
                }
                None => ok = false,
            }
        }
        if let Some((old, new)) = priority {
            for c in rec.tiers.values_mut() {
                if c.priority.is_some_and(|p| p != old) {
                    ok = false;
                }
                c.priority = Some(new);
            }
        }
        let claims_touched: Vec<usize> = rec.claim_positions().iter().map(|&(c, _)| c).collect();
        if !ok {
            self.ambiguity(Reason::UnknownBlockUpdated { event: here });
        }
        for ci in claims_touched {
            self.relevant_event(ci, here, ts);
            dirty.insert(ci);
        }
    }

    /// At least one copy is certainly resident.
    fn live(&self, h: &BlockHash) -> bool {
        self.blocks
            .get(h)
            .is_some_and(|r| r.tiers.iter().any(|(_, c)| c.min > 0))
    }

    /// No copy is certainly resident, but one may be (an uncertain copy count).
    fn maybe_live(&self, h: &BlockHash) -> bool {
        !self.live(h) && self.blocks.get(h).is_some_and(|r| !r.tiers.is_empty())
    }

    /// Whether the claim's verdict hangs on an uncertain copy count: a required
    /// position no copy certainly holds, but one may.
    fn uncertain_position(&self, ci: usize) -> bool {
        self.claims.get(ci).is_some_and(|c| {
            c.positions
                .iter()
                .any(|p| !p.iter().any(|h| self.live(h)) && p.iter().any(|h| self.maybe_live(h)))
        })
    }

    fn held_prefix(&self, ci: usize) -> usize {
        self.claims.get(ci).map_or(0, |c| {
            c.positions
                .iter()
                .take_while(|p| p.iter().any(|h| self.live(h)))
                .count()
        })
    }

    fn recompute(&mut self, ci: usize, here: EventRef) {
        let held = match self.claims.get(ci) {
            Some(c) if !c.chunks.is_empty() => self.held_prefix(ci) == c.chunks.len(),
            _ => false,
        };
        let Some(c) = self.claims.get_mut(ci) else {
            return;
        };
        if c.result.is_some() || held == c.predicate_holds {
            return;
        }
        c.predicate_holds = held;
        c.transitions.push(Transition {
            event: here,
            change: if held {
                Change::Materialized
            } else {
                Change::Lost
            },
        });
        if held {
            c.since = Some(here);
        }
    }

    fn tiers(&self, ci: usize) -> Vec<TierCoverage> {
        let mut by: BTreeMap<Tier, u64> = BTreeMap::new();
        if let Some(c) = self.claims.get(ci) {
            for p in &c.positions {
                let mut at: BTreeSet<&Tier> = BTreeSet::new();
                for h in p {
                    if let Some(r) = self.blocks.get(h) {
                        at.extend(
                            r.tiers
                                .iter()
                                .filter(|(_, c)| c.min > 0)
                                .filter_map(|(t, _)| self.tier_name(t)),
                        );
                    }
                }
                for t in at {
                    *by.entry(t.clone()).or_default() += 1;
                }
            }
        }
        by.into_iter()
            .map(|(tier, blocks)| TierCoverage { tier, blocks })
            .collect()
    }

    fn snapshot(&mut self, ci: usize, extra: Option<Reason>) {
        let Some(claim) = self.registry.claims.get(ci) else {
            return;
        };
        let uncertain = self
            .uncertain_position(ci)
            .then(|| Reason::UncertainCopyCount {
                kv_cache_report_mode: self.report_mode().map(str::to_string),
            });
        let mut reasons: Vec<Reason> = Vec::new();
        for r in claim
            .reasons
            .iter()
            .chain(&self.registry_reasons)
            .chain(
                self.claims
                    .get(ci)
                    .map(|c| c.reasons.as_slice())
                    .unwrap_or(&[]),
            )
            .chain(&self.stream_ambiguities)
            .cloned()
            .chain(extra)
            .chain(uncertain)
        {
            if !reasons.contains(&r) {
                reasons.push(r);
            }
        }
        reasons.sort();
        let tiers = self.tiers(ci);
        let matched = self.held_prefix(ci) as u64;
        let Some(c) = self.claims.get_mut(ci) else {
            return;
        };
        let bs = self.block_size.map_or(0, |b| u64::from(b.get()));
        let verdict = if !reasons.is_empty() || c.chunks.is_empty() {
            if reasons.is_empty() {
                // Unreachable by construction (an untracked claim always has a reason);
                // kept so the join can never fall through to a positive verdict.
                reasons.push(Reason::MissingTokenIds);
            }
            Verdict::InsufficientEvidence { reasons }
        } else if c.predicate_holds {
            Verdict::Materialized {
                since: c.since.unwrap_or(EventRef { index: 0, line: 0 }),
                tiers,
            }
        } else if let Some(lost) = c
            .transitions
            .iter()
            .rev()
            .find(|t| t.change == Change::Lost)
        {
            let materialized_at = c
                .transitions
                .iter()
                .rev()
                .find(|t| t.change == Change::Materialized && t.event <= lost.event)
                .map_or(lost.event, |t| t.event);
            Verdict::Lost {
                materialized_at,
                lost_at: lost.event,
            }
        } else {
            Verdict::NotMaterialized {
                matched_prefix_tokens: matched * bs,
                required_tokens: claim.predicate.map_or(0, |p| u64::from(p.tokens())),
            }
        };
        let insufficient = matches!(verdict, Verdict::InsufficientEvidence { .. });
        c.result = Some(ClaimResult {
            claim_id: claim.id.clone(),
            reusable_object_id: claim.object.clone(),
            predicate: claim.predicate.map(|p| p.to_string()),
            observation_point: c.observe_at,
            verdict,
            transitions: if insufficient {
                Vec::new()
            } else {
                c.transitions.clone()
            },
            observed_priorities: c.priorities.iter().copied().collect(),
        });
        self.claims_unjudged = self.claims_unjudged.saturating_sub(1);
    }

    fn finish(mut self, registry_label: String, events_label: String) -> JoinReport {
        for ci in 0..self.claims.len() {
            if self.claims[ci].result.is_some() {
                continue;
            }
            let beyond = match self.claims[ci].observe_at {
                Some(StreamPoint::EventIndex(o)) => self.last_index.is_none_or(|l| l < o),
                // TRT-LLM has no timestamps: already `observation_point_unresolvable`.
                Some(StreamPoint::Timestamp(_)) if self.format == EventFormat::Trtllm => false,
                Some(StreamPoint::Timestamp(t)) => self.last_ts.is_none_or(|l| l < t),
                None => false,
            };
            let extra = beyond.then_some(Reason::ObservationPointBeyondStream {
                last_event: self.last_ref,
            });
            self.snapshot(ci, extra);
        }
        let mut claims: Vec<ClaimResult> =
            self.claims.into_iter().filter_map(|c| c.result).collect();
        claims.sort_by(|a, b| a.claim_id.cmp(&b.claim_id));
        let mut summary = StatusCounts::default();
        for c in &claims {
            match c.verdict {
                Verdict::Materialized { .. } => summary.materialized += 1,
                Verdict::NotMaterialized { .. } => summary.not_materialized += 1,
                Verdict::Lost { .. } => summary.lost += 1,
                Verdict::InsufficientEvidence { .. } => summary.insufficient_evidence += 1,
            }
        }
        let total = claims.len();
        let preconditions = TELEMETRY_JOIN_PRECONDITIONS
            .iter()
            .map(|&p| {
                let met = claims
                    .iter()
                    .filter(|c| match &c.verdict {
                        Verdict::InsufficientEvidence { reasons } => {
                            !reasons.iter().any(|r| r.precondition() == p)
                        }
                        _ => true,
                    })
                    .count();
                PreconditionTally {
                    precondition: p,
                    claims: format!("{met}/{total}"),
                    held: total > 0 && met == total,
                }
            })
            .collect();
        let mut stream = self.summary;
        stream.ambiguities = self.stream_ambiguities;
        stream.ambiguities.sort();
        JoinReport {
            schema_version: REPORT_SCHEMA_VERSION,
            depth: "telemetry_join".into(),
            registry: registry_label,
            events: events_label,
            format: self.format,
            cache_identity: self.registry.cache_identity.clone(),
            stream,
            claims,
            preconditions,
            summary,
        }
    }
}

/// Joins `registry` to the events read from `events` (JSON Lines, see [`crate::events`]).
///
/// `registry_path` and `events_path` only label the report and the errors; they are
/// recorded exactly as given.
/// The longest event line the join reads (one event batch), its `\n` not counted;
/// longer lines are malformed.
pub const MAX_EVENT_LINE_BYTES: usize = 16 * 1024 * 1024;

pub fn join_reader<R: BufRead>(
    registry: &Registry,
    registry_path: &Path,
    events: R,
    events_path: &Path,
    format: EventFormat,
) -> Result<JoinReport, JoinError> {
    join_reader_with(
        registry,
        registry_path,
        events,
        events_path,
        format,
        JoinOptions::default(),
    )
}

pub(crate) fn join_reader_with<R: BufRead>(
    registry: &Registry,
    registry_path: &Path,
    events: R,
    events_path: &Path,
    format: EventFormat,
    opts: JoinOptions,
) -> Result<JoinReport, JoinError> {
    let mut engine = Engine::new(registry, format, opts);
    let mut decoder = Decoder::new(format);
    let mut events = events;
    let first = events
        .fill_buf()
        .map_err(|e| crate::input::stream_error(events_path, e))?;
    if first.first() == Some(&kvlower_capture::MAGIC[0]) {
        return join_capture(engine, decoder, events, registry_path, events_path);
    }
    let mut line: u64 = 0;
    let mut failed: Option<JoinError> = None;
    let event_error = |line: u64, json_path: Option<String>, message: String| JoinError::Event {
        path: events_path.to_path_buf(),
        line,
        json_path,
        message,
    };
    // The one line reader (shared with the trace gate): a hostile line cannot exhaust
    // memory, and the first malformed line stops the join.
    kvlower_fs::lines::for_each_line(&mut events, MAX_EVENT_LINE_BYTES, u64::MAX, |l| {
        line += 1;
        let bytes = match l {
            Line::Text(bytes) => bytes,
            Line::TooLong => {
                let message = format!("line longer than {MAX_EVENT_LINE_BYTES} bytes");
                failed = Some(event_error(line, None, message));
                return ControlFlow::Break(());
            }
        };
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                failed = Some(event_error(line, None, format!("not UTF-8: {e}")));
                return ControlFlow::Break(());
            }
        };
        if text.trim().is_empty() {
            return ControlFlow::Continue(());
        }
        match decoder.decode_line(text, line) {
            Ok(decoded) => {
                if let Some(b) = decoded.batch {
                    engine.batch(b);
                }
                for d in decoded.events {
                    engine.process(d);
                }
                ControlFlow::Continue(())
            }
            Err(e) => {
                failed = Some(event_error(line, e.json_path, e.message));
                ControlFlow::Break(())
            }
        }
    })
    .map_err(|e| crate::input::stream_error(events_path, e))?;
    if let Some(e) = failed {
        return Err(e);
    }
    engine.summary.lines = line;
    Ok(engine.finish(
        registry_path.display().to_string(),
        events_path.display().to_string(),
    ))
}

/// Replays a capture file (`kvlower capture`): frame by frame, each frame's payload
/// decoded from msgpack. An event's `line` is its frame's number (1-based).
fn join_capture<R: BufRead>(
    mut engine: Engine<'_>,
    mut decoder: Decoder,
    events: R,
    registry_path: &Path,
    events_path: &Path,
) -> Result<JoinReport, JoinError> {
    let bad = |frame: u64, json_path: Option<String>, message: String| JoinError::Event {
        path: events_path.to_path_buf(),
        line: frame,
        json_path,
        message,
    };
    let cap = |e: kvlower_capture::CaptureError| JoinError::Capture {
        path: events_path.to_path_buf(),
        message: e.to_string(),
    };
    let mut rd = kvlower_capture::CaptureReader::new(events).map_err(cap)?;
    engine.capture_meta = Some(rd.header().meta.clone());
    let mut frame: u64 = 0;
    while let Some(rec) = rd.next_record().map_err(cap)? {
        frame += 1;
        match rec {
            kvlower_capture::Record::Frame { rank, parts, .. } => {
                let f = kvlower_capture::event_frame(&parts)
                    .map_err(|m| bad(frame, None, format!("frame {frame}: {m}")))?;
                // vLLM's usual shape decodes typed, straight from the bytes; any other
                // payload (and every error) goes through the generic decoder.
                let typed = match decoder.format() {
                    EventFormat::Vllm => crate::typed::vllm_batch(f.payload),
                    _ => None,
                };
                if let Some(raw) = typed {
                    let decoded = crate::typed::decode(&mut decoder, raw, frame, f.seq, rank);
                    if let Some(b) = decoded.batch {
                        engine.batch(b);
                    }
                    for d in decoded.events {
                        engine.process(d);
                    }
                    continue;
                }
                let v = crate::msgpack::decode(f.payload)
                    .map_err(|m| bad(frame, None, format!("payload is not msgpack: {m}")))?;
                let decoded = decoder
                    .decode_frame(&v, frame, f.seq, rank)
                    .map_err(|e| bad(frame, e.json_path, e.message))?;
                if let Some(b) = decoded.batch {
                    engine.batch(b);
                }
                for d in decoded.events {
                    engine.process(d);
                }
            }
            kvlower_capture::Record::Dropped { .. } => {
                let event = EventRef {
                    index: decoder.next_index(),
                    line: frame,
                };
                engine.ambiguity(Reason::DroppedFrame { event });
            }
        }
    }
    engine.summary.lines = frame;
    Ok(engine.finish(
        registry_path.display().to_string(),
        events_path.display().to_string(),
    ))
}
