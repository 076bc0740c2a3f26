//! What each block event does to the live-block table ([`crate::blocks`]) and to the
//! claims' chains: a store adds a copy or joins a new block to every chain it
//! extends, a removal or update changes copies, and a clear empties every tier. A
//! block that cannot be placed, or that changes a block the stream never showed,
//! fails closed rather than being guessed.

use std::collections::BTreeSet;

use super::Engine;
use crate::blocks::{BlockRec, Copies, ParentKey, TierId, TierSet};
use crate::document::{EventRef, Reason};
use crate::events::{BlockHash, StoredBlock, Tier, kept_through_vllm_clear};
use crate::registry::EventFormat;

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

/// The event a stored block comes from, as every block of it shares.
#[derive(Debug, Clone, Copy)]
pub(super) struct Origin {
    pub(super) here: EventRef,
    /// The batch timestamp, when the format carries one.
    pub(super) ts: Option<f64>,
    /// The event's adapter (LoRA) identity matches the registry's.
    pub(super) adapter_ok: bool,
}

/// One more store of a hash on tier `t`: a first copy there, or whatever a repeat
/// `r` means for the copies it already has.
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

impl Engine<'_> {
    /// What a repeated store of a known hash on `tier` means for this runtime.
    fn repeat(&self, tier: &Tier) -> Repeat {
        match (self.format, tier) {
            (EventFormat::Vllm, Tier::Medium(m)) if m == "GPU" => match self.report_mode() {
                Some("incremental") => Repeat::NewCopy,
                _ => Repeat::Either,
            },
            // Offload connectors announce a shared hash once per chunk and ask consumers
            // to reference-count (per hash and medium); a secondary tier's events
            // (ownership) are published with `removal_expected` (vLLM 0.32
            // `OffloadingEvent`): one removal for every store, per hash and tier.
            (EventFormat::Vllm, Tier::Medium(_) | Tier::OwnedMedium { .. }) => Repeat::NewCopy,
            _ => Repeat::Same,
        }
    }

    /// Records one stored block (a new one, a copy of a known one, or an opaque
    /// record learning its tokens) and marks the claims it touches `dirty`.
    pub(super) fn store(
        &mut self,
        parent: Option<BlockHash>,
        b: StoredBlock,
        origin: Origin,
        dirty: &mut BTreeSet<usize>,
    ) {
        match self.blocks.get(&b.hash) {
            Some(rec) => {
                let conflict = match self.blocks.tokens(rec) {
                    Some(t) => {
                        !b.tokens.is_empty()
                            && (*t != *b.tokens || !ParentKey::is(&rec.parent, &parent))
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
                let tiers = match b.tier.and_then(|t| self.tier_id(t, origin.here)) {
                    Some(t) => TierSet::single(t, Copies::one(b.priority)),
                    None => TierSet::Empty,
                };
                self.blocks
                    .insert(b.hash, BlockRec::new(parent, tiers, Vec::new()), None);
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
        let upgrade = !rec.has_tokens() && !b.tokens.is_empty();
        let claims_touched = rec.claim_positions().to_vec();
        if let Some(t) = b.tier.clone() {
            let r = self.repeat(&t);
            if let Some(t) = self.tier_id(t, origin.here)
                && let Some(rec) = self.blocks.get_mut(&hash)
            {
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
        let tiers = match b.tier.clone().and_then(|t| self.tier_id(t, here)) {
            Some(t) => TierSet::single(t, Copies::one(b.priority)),
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
            BlockRec::new(parent, tiers, claim_positions),
            Some(b.tokens),
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
                Some(prec) if prec.has_tokens() => {
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

    /// A removal of `h` from `tier` (every tier when `None`): one copy fewer, and a
    /// removal of a block or copy the stream never showed is an ambiguity.
    pub(super) fn remove(
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

    /// A TensorRT-LLM update of `h`: a move between cache levels or a new priority;
    /// an update of a block or an old value the stream never showed is an ambiguity.
    pub(super) fn update(
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
                self.tier_id(Tier::CacheLevel(new), here),
            )
        });
        let Some(rec) = self.blocks.get_mut(h) else {
            self.ambiguity(Reason::UnknownBlockUpdated { event: here });
            return;
        };
        let mut ok = !rec.tiers.is_empty();
        if let Some((old, new)) = levels {
            // A new level beyond the stream's tier cap is already `unknown_tier`; the
            // copy leaves its old level either way.
            match (old.and_then(|old| rec.tiers.remove(old)), new) {
                (Some(p), Some(new)) => {
                    rec.tiers.insert(new, p);
                }
                (Some(_), None) => {}
                (None, _) => ok = false,
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

    /// `AllBlocksCleared`: every block leaves every tier, except on vLLM, where copies
    /// on a reset-persistent secondary tier (KVCR: ownership `kvcr`) are kept and every
    /// other tier's are lost: the device's (vLLM 0.32.0 publishes the event from its
    /// block pool, `vllm/v1/core/block_pool.py`, `reset_prefix_cache`) and the primary
    /// tier's, which a connector reset empties without any event
    /// (`TieringOffloadingManager.reset_cache`; see [`kept_through_vllm_clear`]). The
    /// stream cannot tell whether the connector was reset, so the primary tier's copies
    /// are never counted past the clear (fail closed). Each claim holding a cleared copy
    /// is re-judged; only the records claims still need or a tier still holds are kept.
    pub(super) fn clear(&mut self, here: EventRef, ts: Option<f64>, dirty: &mut BTreeSet<usize>) {
        // Whether each interned tier keeps its copies (vLLM), or `None`: no tier does
        // (SGLang). Computed once per clear (at most `MAX_TIERS` entries); each record
        // then looks only at its own copies, so a clear costs the copies held, never
        // records × tiers.
        let kept: Option<Vec<bool>> = (self.format == EventFormat::Vllm).then(|| {
            self.tier_names
                .iter()
                .map(kept_through_vllm_clear)
                .collect()
        });
        let mut touched = Vec::new();
        let mut steps: u64 = 0;
        for rec in self.blocks.values_mut() {
            steps = steps.saturating_add(1 + rec.tiers.len() as u64);
            let cleared = match &kept {
                None => {
                    let had = !rec.tiers.is_empty();
                    rec.tiers.clear();
                    had
                }
                Some(kept) => rec
                    .tiers
                    .retain(|t| kept.get(t as usize).copied().unwrap_or(false)),
            };
            if cleared {
                touched.extend(rec.claim_positions().iter().map(|&(c, _)| c));
            }
        }
        self.clear_steps = self.clear_steps.saturating_add(steps);
        self.blocks
            .retain(|r| !r.claim_positions().is_empty() || !r.tiers.is_empty());
        for c in touched {
            self.relevant_event(c, here, ts);
            dirty.insert(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{Engine, JoinOptions, MAX_TIERS};
    use crate::events::Decoder;
    use crate::registry::{EventFormat, Registry};

    /// Red-team H2: KVCR's copies survive every vLLM clear, and each new medium string
    /// was a new tier, so a clear cost records × tiers (50 clears over 20k KVCR blocks
    /// and 20k media: minutes). Now the tier table stops at `MAX_TIERS` and a clear costs
    /// one step per record plus one per copy it holds.
    #[test]
    fn a_clear_costs_the_copies_held_not_records_times_tiers() {
        let registry = Registry::parse(
            "schema_version: 1\ncache_identity:\n  model: synthetic/m\n  tokenizer: synthetic/t\n  hash_domain: {name: synthetic, encoding: int}\n  runtime: {kind: vllm, version: \"0.32.0\"}\n  namespace: default\n  adapter: {kind: base_model}\n  block_size: 2\n  kv_cache_report_mode: incremental\nclaims:\n  - claim_id: a\n    reusable_object_id: prompt-a\n    token_ids: [1, 2]\n    predicate: leading_prefix_at_least(2)\n    registered_before: {event_index: 0}\n",
            Path::new("registry.yaml"),
        )
        .unwrap();
        let mut engine = Engine::new(&registry, EventFormat::Vllm, JoinOptions::default());
        let mut decoder = Decoder::new(EventFormat::Vllm);
        let n: u64 = 20_000;
        let clears: u64 = 50;
        let mut line = 0u64;
        let mut feed = |engine: &mut Engine<'_>, events: String| {
            line += 1;
            let text = format!(
                r#"{{"seq":{},"payload":{{"ts":{}.0,"events":[{events}],"data_parallel_rank":0}}}}"#,
                line - 1,
                line
            );
            engine.feed(decoder.decode_line(&text, line).unwrap());
        };
        for i in 0..n {
            // One KVCR block (kept through every clear) and one block on a medium of its
            // own (a new tier each, were there no cap).
            feed(
                &mut engine,
                format!(
                    r#"{{"type":"BlockStored","block_hashes":[{}],"parent_block_hash":null,"token_ids":[{},{}],"block_size":2,"lora_id":null,"medium":"CPU","ownership":"kvcr"}},{{"type":"BlockStored","block_hashes":[{}],"parent_block_hash":null,"token_ids":[{},{}],"block_size":2,"lora_id":null,"medium":"M{i}"}}"#,
                    1_000_000 + i,
                    10 + 2 * i,
                    11 + 2 * i,
                    5_000_000 + i,
                    900_000 + 2 * i,
                    900_001 + 2 * i
                ),
            );
        }
        assert!(
            engine.tier_names.len() <= MAX_TIERS,
            "{}",
            engine.tier_names.len()
        );
        for _ in 0..clears {
            feed(&mut engine, r#"{"type":"AllBlocksCleared"}"#.to_string());
        }
        // Each clear looks at each surviving record once and at its one copy: the KVCR
        // records, plus (first clear only) the capped media's records.
        let bound = clears * 2 * (n + MAX_TIERS as u64) + 2 * 2 * n;
        assert!(
            engine.clear_steps <= bound,
            "{} steps > {bound}",
            engine.clear_steps
        );
    }
}
