//! The join's live-block table, kept compact: memory follows live blocks, so each
//! one's record is what the join's memory is made of (issue 26).
//!
//! - Records live in one slab (`Vec`), reused through a free list; the hash index maps
//!   a block hash to its slot (4 bytes), not to the record.
//! - Integer hashes that fit a `u64` (every runtime's, in practice) are kept beside their
//!   slots (`keys`, 8 bytes a slot) and indexed by a table of bare slots (4-byte buckets,
//!   `hashbrown::HashTable`, compared through `keys`): a map from the hash to the slot
//!   spent 16 bytes a bucket (the `u32` padded to the `u64`'s alignment), and at a load
//!   factor between 7/16 and 7/8 that was 18–37 bytes per live block where this is
//!   5–11 (docs/join.md, "Memory"). Negative and bytes hashes are indexed by the whole
//!   hash.
//! - A record's tiers are interned ids with their copy counts, one inline (the common
//!   case: a block on one medium) and more on the heap; its claim positions (rare) a
//!   thin box.
//! - Its tokens are a span (start, length: 8 bytes) of one arena of tokens shared by
//!   every record, not a boxed slice of their own: a box cost 16 bytes in the record and
//!   an allocation with its allocator header and rounding (32 bytes for a 4-token block,
//!   80 for a 16-token one). The spans of removed records are counted and the arena is
//!   rewritten, live spans only, once they are most of it, so it stays within twice the
//!   live tokens plus a constant whatever the churn.
//! - The index hashes with a seeded folded multiply (the default SipHash cost as much
//!   as the rest of an event): still seeded per run, so a stream cannot choose
//!   collisions it has not seen.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};

use crate::events::BlockHash;

/// A seeded folded-multiply hasher for block hashes (already well mixed by the runtime).
#[derive(Clone, Copy)]
pub(crate) struct FoldState(u64);

impl FoldState {
    pub(crate) fn new() -> FoldState {
        FoldState(
            std::collections::hash_map::RandomState::new().hash_one(0x006b_766c_6f77_6572_u64),
        )
    }
}

impl Default for FoldState {
    fn default() -> FoldState {
        FoldState::new()
    }
}

impl BuildHasher for FoldState {
    type Hasher = FoldHasher;
    fn build_hasher(&self) -> FoldHasher {
        FoldHasher(self.0)
    }
}

pub(crate) struct FoldHasher(u64);

const MULT: u64 = 0x9e37_79b9_7f4a_7c15;

impl Hasher for FoldHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }
    fn write_u64(&mut self, v: u64) {
        let m = u128::from(self.0 ^ v) * u128::from(MULT);
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// An interned tier (the engine's tier table).
pub(crate) type TierId = u32;

type TierCopies = (TierId, Copies);

/// How many physical copies of one hash a tier holds, as an interval: vLLM does not
/// de-duplicate cached blocks, and under `kv_cache_report_mode=full` (or an unknown
/// mode) a repeated `BlockStored` may be a new copy or a re-announced hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Copies {
    pub priority: Option<u32>,
    pub min: u32,
    pub max: u32,
}

impl Copies {
    pub(crate) fn one(priority: Option<u32>) -> Copies {
        Copies {
            priority,
            min: 1,
            max: 1,
        }
    }
}

/// The tiers holding a copy of one block (a map from tier to copies, unordered: the
/// report orders tiers itself).
#[derive(Debug, Clone, Default)]
pub(crate) enum TierSet {
    #[default]
    Empty,
    One(TierId, Copies),
    // A thin (8-byte) pointer: the rare block on several tiers pays the extra box.
    #[expect(
        clippy::box_collection,
        reason = "a thin (8-byte) pointer: the rare case pays the extra box"
    )]
    Many(Box<Vec<(TierId, Copies)>>),
}

impl TierSet {
    pub(crate) fn single(t: TierId, c: Copies) -> TierSet {
        TierSet::One(t, c)
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            TierSet::Empty => true,
            TierSet::One(..) => false,
            TierSet::Many(v) => v.is_empty(),
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = TierSet::Empty;
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (TierId, &Copies)> {
        let (one, many): (Option<(TierId, &Copies)>, &[TierCopies]) = match self {
            TierSet::Empty => (None, &[]),
            TierSet::One(t, c) => (Some((*t, c)), &[]),
            TierSet::Many(v) => (None, v.as_slice()),
        };
        one.into_iter().chain(many.iter().map(|(t, c)| (*t, c)))
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Copies> {
        let (one, many): (Option<&mut Copies>, &mut [TierCopies]) = match self {
            TierSet::Empty => (None, &mut []),
            TierSet::One(_, c) => (Some(c), &mut []),
            TierSet::Many(v) => (None, v.as_mut_slice()),
        };
        one.into_iter().chain(many.iter_mut().map(|(_, c)| c))
    }

    pub(crate) fn get_mut(&mut self, t: TierId) -> Option<&mut Copies> {
        match self {
            TierSet::Empty => None,
            TierSet::One(u, c) => (*u == t).then_some(c),
            TierSet::Many(v) => v.iter_mut().find(|(u, _)| *u == t).map(|(_, c)| c),
        }
    }

    /// Sets `t`'s copies (replacing any).
    pub(crate) fn insert(&mut self, t: TierId, c: Copies) {
        if let Some(old) = self.get_mut(t) {
            *old = c;
            return;
        }
        match std::mem::take(self) {
            TierSet::Empty => *self = TierSet::One(t, c),
            TierSet::One(u, d) => *self = TierSet::Many(Box::new(vec![(u, d), (t, c)])),
            TierSet::Many(mut v) => {
                v.push((t, c));
                *self = TierSet::Many(v);
            }
        }
    }

    /// Keeps the tiers `keep` says to keep; whether any was dropped. Costs this
    /// record's own copies, whatever the number of tiers the stream named.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(TierId) -> bool) -> bool {
        match self {
            TierSet::Empty => false,
            TierSet::One(t, _) => {
                if keep(*t) {
                    false
                } else {
                    *self = TierSet::Empty;
                    true
                }
            }
            TierSet::Many(v) => {
                let before = v.len();
                v.retain(|(t, _)| keep(*t));
                let dropped = v.len() != before;
                if v.is_empty() {
                    *self = TierSet::Empty;
                }
                dropped
            }
        }
    }

    /// How many tiers hold a copy.
    pub(crate) fn len(&self) -> usize {
        match self {
            TierSet::Empty => 0,
            TierSet::One(..) => 1,
            TierSet::Many(v) => v.len(),
        }
    }

    pub(crate) fn remove(&mut self, t: TierId) -> Option<Copies> {
        match self {
            TierSet::Empty => None,
            TierSet::One(u, c) if *u == t => {
                let c = *c;
                *self = TierSet::Empty;
                Some(c)
            }
            TierSet::One(..) => None,
            TierSet::Many(v) => {
                let i = v.iter().position(|(u, _)| *u == t)?;
                let (_, c) = v.remove(i);
                if v.is_empty() {
                    *self = TierSet::Empty;
                }
                Some(c)
            }
        }
    }
}

/// A block's parent hash, compact: an integer parent inline, any other boxed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ParentKey {
    Int(u64),
    Other(Box<BlockHash>),
}

impl ParentKey {
    pub(crate) fn of(h: Option<BlockHash>) -> Option<ParentKey> {
        h.map(|h| match h {
            BlockHash::Int(i) => ParentKey::Int(i),
            other => ParentKey::Other(Box::new(other)),
        })
    }

    pub(crate) fn is(this: &Option<ParentKey>, h: &Option<BlockHash>) -> bool {
        match (this, h) {
            (None, None) => true,
            (Some(ParentKey::Int(a)), Some(BlockHash::Int(b))) => a == b,
            (Some(ParentKey::Other(a)), Some(b)) => **a == *b,
            _ => false,
        }
    }
}

/// Where a record's tokens lie in its table's arena; [`Span::NONE`] for a record
/// without tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

impl Span {
    /// A hash-only store of a block the join never saw with tokens.
    const NONE: Span = Span {
        start: 0,
        len: u32::MAX,
    };

    fn range(self) -> Option<std::ops::Range<usize>> {
        (self != Span::NONE).then(|| {
            let start = self.start as usize;
            start..start.saturating_add(self.len as usize)
        })
    }
}

/// One block record: a live block, or a claim-relevant tombstone (no tiers).
#[derive(Debug, Clone)]
pub(crate) struct BlockRec {
    pub parent: Option<ParentKey>,
    /// Its tokens in the table's arena ([`BlockTable::tokens`]); none for hash-only
    /// stores of a block the join never saw with tokens.
    tokens: Span,
    /// Tiers holding a copy: how many copies, and the priority reported when stored.
    pub tiers: TierSet,
    /// Where this block matches a claim's chain: (index of the claim in the registry,
    /// 0-based block position along its leading prefix). `None` for a block no claim
    /// needs (almost every block).
    // A thin (8-byte) pointer: `None` for almost every block.
    #[expect(
        clippy::box_collection,
        reason = "a thin (8-byte) pointer: the rare case pays the extra box"
    )]
    positions: Option<Box<Vec<(usize, usize)>>>,
}

impl BlockRec {
    /// A record without tokens yet: [`BlockTable::insert`] stores them.
    pub(crate) fn new(
        parent: Option<BlockHash>,
        tiers: TierSet,
        claim_positions: Vec<(usize, usize)>,
    ) -> BlockRec {
        BlockRec {
            parent: ParentKey::of(parent),
            tokens: Span::NONE,
            tiers,
            positions: (!claim_positions.is_empty()).then(|| Box::new(claim_positions)),
        }
    }

    /// Whether the join saw this block's tokens.
    pub(crate) fn has_tokens(&self) -> bool {
        self.tokens != Span::NONE
    }

    pub(crate) fn claim_positions(&self) -> &[(usize, usize)] {
        self.positions.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// Live blocks (and claim tombstones) by hash.
#[derive(Default)]
pub(crate) struct BlockTable {
    /// The slots of the records of integer hashes, each found by `keys[slot]`.
    ints: hashbrown::HashTable<u32>,
    /// The integer hash of each slot's record (meaningful for the slots in `ints` only).
    keys: Vec<u64>,
    /// Hashes `ints` by the integer (the same seeded fold as `others`).
    state: FoldState,
    others: HashMap<BlockHash, u32, FoldState>,
    slab: Vec<Option<BlockRec>>,
    free: Vec<u32>,
    /// Every record's tokens, each record's a [`Span`] of it.
    arena: Vec<u32>,
    /// How many tokens of `arena` belong to no record any more.
    dead: usize,
}

/// Below this many dead tokens the arena is never rewritten (a rewrite costs the live
/// tokens; past this it costs at most what the removals since the last one did).
const MIN_DEAD_TOKENS: usize = 1 << 16;

impl BlockTable {
    fn int_slot(&self, i: u64) -> Option<u32> {
        let keys = &self.keys;
        self.ints
            .find(self.state.hash_one(i), |&s| {
                keys.get(s as usize).copied() == Some(i)
            })
            .copied()
    }

    fn slot(&self, h: &BlockHash) -> Option<u32> {
        match h {
            BlockHash::Int(i) => self.int_slot(*i),
            other => self.others.get(other).copied(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.ints.len() + self.others.len()
    }

    pub(crate) fn get(&self, h: &BlockHash) -> Option<&BlockRec> {
        let s = self.slot(h)?;
        self.slab.get(s as usize)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, h: &BlockHash) -> Option<&mut BlockRec> {
        let s = self.slot(h)?;
        self.slab.get_mut(s as usize)?.as_mut()
    }

    /// The tokens of `rec` (a record of this table); `None` when the join never saw them.
    pub(crate) fn tokens(&self, rec: &BlockRec) -> Option<&[u32]> {
        self.arena.get(rec.tokens.range()?)
    }

    /// `tokens` appended to the arena, as a span. More tokens than a `u32` can count
    /// cannot come from a capped input; were they there, the record would keep none
    /// (an opaque record, never joined: fail closed).
    fn store_tokens(&mut self, tokens: Option<Vec<u32>>) -> Span {
        let Some(tokens) = tokens else {
            return Span::NONE;
        };
        let start = u32::try_from(self.arena.len());
        let len = u32::try_from(tokens.len());
        match (start, len) {
            (Ok(start), Ok(len)) if len != u32::MAX && start.checked_add(len).is_some() => {
                self.arena.extend_from_slice(&tokens);
                Span { start, len }
            }
            _ => Span::NONE,
        }
    }

    /// Counts `span`'s tokens as dead, and rewrites the arena once most of it is.
    fn release(&mut self, span: Span) {
        if let Some(r) = span.range() {
            self.dead = self.dead.saturating_add(r.len());
        }
        if self.dead >= MIN_DEAD_TOKENS && self.dead.saturating_mul(2) > self.arena.len() {
            self.compact();
        }
    }

    /// The arena with the live records' tokens only, each record's span moved.
    fn compact(&mut self) {
        let mut fresh: Vec<u32> = Vec::with_capacity(self.arena.len().saturating_sub(self.dead));
        for rec in self.slab.iter_mut().flatten() {
            let Some(r) = rec.tokens.range() else {
                continue;
            };
            // Never past the old arena's length, which fitted a `u32`.
            let start = u32::try_from(fresh.len()).unwrap_or(u32::MAX);
            fresh.extend_from_slice(self.arena.get(r).unwrap_or_default());
            rec.tokens.start = start;
        }
        self.arena = fresh;
        self.dead = 0;
    }

    /// Inserts or replaces the record of `h`, with `tokens` when the join saw them.
    pub(crate) fn insert(&mut self, h: BlockHash, mut rec: BlockRec, tokens: Option<Vec<u32>>) {
        rec.tokens = self.store_tokens(tokens);
        if let Some(s) = self.slot(&h)
            && let Some(slot) = self.slab.get_mut(s as usize)
        {
            let old = slot.replace(rec).map(|r| r.tokens);
            if let Some(old) = old {
                self.release(old);
            }
            return;
        }
        let s = match self.free.pop() {
            Some(s) => {
                if let Some(slot) = self.slab.get_mut(s as usize) {
                    *slot = Some(rec);
                }
                s
            }
            None => {
                // More live blocks than u32 slots cannot come from a capped input.
                let s = u32::try_from(self.slab.len()).unwrap_or(u32::MAX);
                self.slab.push(Some(rec));
                self.keys.push(0);
                s
            }
        };
        match h {
            BlockHash::Int(i) => {
                if let Some(key) = self.keys.get_mut(s as usize) {
                    *key = i;
                }
                let (keys, state) = (&self.keys, self.state);
                self.ints.insert_unique(state.hash_one(i), s, |&t| {
                    state.hash_one(keys.get(t as usize).copied().unwrap_or(0))
                });
            }
            other => {
                self.others.insert(other, s);
            }
        }
    }

    pub(crate) fn remove(&mut self, h: &BlockHash) -> Option<BlockRec> {
        let s = match h {
            BlockHash::Int(i) => {
                let keys = &self.keys;
                let found = self
                    .ints
                    .find_entry(self.state.hash_one(*i), |&s| {
                        keys.get(s as usize).copied() == Some(*i)
                    })
                    .ok()?;
                Some(found.remove().0)
            }
            other => self.others.remove(other),
        }?;
        let rec = self.slab.get_mut(s as usize)?.take();
        self.free.push(s);
        if let Some(r) = &rec {
            self.release(r.tokens);
        }
        rec
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut BlockRec> {
        self.slab.iter_mut().filter_map(Option::as_mut)
    }

    /// Keeps only the records `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&BlockRec) -> bool) {
        let slab = &mut self.slab;
        let free = &mut self.free;
        let mut dead: Vec<Span> = Vec::new();
        let mut drop_slot = |s: &u32| -> bool {
            match slab.get_mut(*s as usize) {
                Some(slot) if slot.as_ref().is_some_and(&mut keep) => true,
                Some(slot) => {
                    if let Some(r) = slot.take() {
                        dead.push(r.tokens);
                    }
                    free.push(*s);
                    false
                }
                None => false,
            }
        };
        self.ints.retain(|s| drop_slot(s));
        self.others.retain(|_, s| drop_slot(s));
        for span in dead {
            self.release(span);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_hashes_of_every_kind_are_kept_apart() {
        let mut t = BlockTable::default();
        let rec = || BlockRec::new(None, TierSet::Empty, Vec::new());
        t.insert(BlockHash::Int(1), rec(), Some(vec![1]));
        t.insert(BlockHash::Neg(-1), rec(), Some(vec![2]));
        t.insert(BlockHash::Bytes("01".into()), rec(), Some(vec![3]));
        assert_eq!(t.len(), 3);
        let tokens =
            |t: &BlockTable, h: &BlockHash| t.get(h).and_then(|r| t.tokens(r)).map(<[u32]>::to_vec);
        assert_eq!(tokens(&t, &BlockHash::Neg(-1)), Some(vec![2]));
        assert!(t.remove(&BlockHash::Int(1)).is_some());
        assert!(t.get(&BlockHash::Int(1)).is_none());
        t.insert(BlockHash::Int(7), rec(), Some(vec![7]));
        assert_eq!(t.slab.len(), 3);
        // A record with no tokens is not one with none seen.
        t.insert(BlockHash::Int(8), rec(), None);
        t.insert(BlockHash::Int(9), rec(), Some(Vec::new()));
        assert_eq!(tokens(&t, &BlockHash::Int(8)), None);
        assert_eq!(tokens(&t, &BlockHash::Int(9)), Some(Vec::new()));
        t.insert(BlockHash::Int(8), rec(), None);
        let keep = |r: &BlockRec| r.tokens != Span { start: 3, len: 1 };
        t.retain(keep);
        assert_eq!(t.len(), 4);
        assert!(t.get(&BlockHash::Int(7)).is_none());
    }

    /// Churn through the arena: removed records' tokens are reclaimed (the arena stays
    /// near the live tokens), and every live record keeps exactly its own tokens across
    /// the rewrites.
    #[test]
    fn the_token_arena_is_rewritten_under_churn_and_keeps_every_live_span() {
        let mut t = BlockTable::default();
        let rec = || BlockRec::new(None, TierSet::Empty, Vec::new());
        let tokens_of =
            |i: u64| -> Vec<u32> { (0..(i % 5) as u32).map(|k| k + i as u32).collect() };
        for i in 0..200_000u64 {
            t.insert(BlockHash::Int(i), rec(), Some(tokens_of(i)));
            // Keep every 100th block; remove the rest one step later.
            if i > 0 && (i - 1) % 100 != 0 {
                assert!(t.remove(&BlockHash::Int(i - 1)).is_some());
            }
        }
        assert!(
            t.arena.len() <= 2 * MIN_DEAD_TOKENS + 4 * 2_001,
            "{}",
            t.arena.len()
        );
        for i in (0..200_000u64).step_by(100) {
            let got = t
                .get(&BlockHash::Int(i))
                .and_then(|r| t.tokens(r))
                .map(<[u32]>::to_vec);
            assert_eq!(got, Some(tokens_of(i)), "block {i}");
        }
    }

    #[test]
    fn tier_sets_grow_and_shrink() {
        let mut s = TierSet::default();
        s.insert(3, Copies::one(None));
        s.insert(5, Copies::one(Some(2)));
        s.insert(3, Copies::one(Some(1)));
        assert_eq!(s.iter().count(), 2);
        assert_eq!(s.get_mut(3).and_then(|c| c.priority), Some(1));
        assert!(s.remove(3).is_some());
        assert!(s.remove(5).is_some());
        assert!(s.is_empty());
    }
}
