//! The join's live-block table, kept compact: memory follows live blocks, so each
//! one's record is what the join's memory is made of (issue 26).
//!
//! - Records live in one slab (`Vec`), reused through a free list; the hash index maps
//!   a block hash to its slot (4 bytes), not to the record.
//! - Integer hashes that fit a `u64` (every runtime's, in practice) are indexed by the
//!   integer itself (16-byte buckets); negative and bytes hashes by the whole hash.
//! - A record's tiers are interned ids with their copy counts, one inline (the common
//!   case: a block on one medium) and more on the heap; its tokens are a boxed slice;
//!   its claim positions (rare) a thin box.
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

/// One block record: a live block, or a claim-relevant tombstone (no tiers).
#[derive(Debug, Clone)]
pub(crate) struct BlockRec {
    pub parent: Option<ParentKey>,
    /// `None` for hash-only stores of a block the join never saw with tokens.
    pub tokens: Option<Box<[u32]>>,
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
    pub(crate) fn new(
        parent: Option<BlockHash>,
        tokens: Option<Vec<u32>>,
        tiers: TierSet,
        claim_positions: Vec<(usize, usize)>,
    ) -> BlockRec {
        BlockRec {
            parent: ParentKey::of(parent),
            tokens: tokens.map(Vec::into_boxed_slice),
            tiers,
            positions: (!claim_positions.is_empty()).then(|| Box::new(claim_positions)),
        }
    }

    pub(crate) fn claim_positions(&self) -> &[(usize, usize)] {
        self.positions.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// Live blocks (and claim tombstones) by hash.
#[derive(Default)]
pub(crate) struct BlockTable {
    ints: HashMap<u64, u32, FoldState>,
    others: HashMap<BlockHash, u32, FoldState>,
    slab: Vec<Option<BlockRec>>,
    free: Vec<u32>,
}

impl BlockTable {
    fn slot(&self, h: &BlockHash) -> Option<u32> {
        match h {
            BlockHash::Int(i) => self.ints.get(i).copied(),
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

    /// Inserts or replaces the record of `h`.
    pub(crate) fn insert(&mut self, h: BlockHash, rec: BlockRec) {
        if let Some(s) = self.slot(&h)
            && let Some(slot) = self.slab.get_mut(s as usize)
        {
            *slot = Some(rec);
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
                s
            }
        };
        match h {
            BlockHash::Int(i) => {
                self.ints.insert(i, s);
            }
            other => {
                self.others.insert(other, s);
            }
        }
    }

    pub(crate) fn remove(&mut self, h: &BlockHash) -> Option<BlockRec> {
        let s = match h {
            BlockHash::Int(i) => self.ints.remove(i),
            other => self.others.remove(other),
        }?;
        let rec = self.slab.get_mut(s as usize)?.take();
        self.free.push(s);
        rec
    }

    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut BlockRec> {
        self.slab.iter_mut().filter_map(Option::as_mut)
    }

    /// Keeps only the records `keep` accepts.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&BlockRec) -> bool) {
        let slab = &mut self.slab;
        let free = &mut self.free;
        let mut drop_slot = |s: &u32| -> bool {
            match slab.get_mut(*s as usize) {
                Some(slot) if slot.as_ref().is_some_and(&mut keep) => true,
                Some(slot) => {
                    *slot = None;
                    free.push(*s);
                    false
                }
                None => false,
            }
        };
        self.ints.retain(|_, s| drop_slot(s));
        self.others.retain(|_, s| drop_slot(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_and_hashes_of_every_kind_are_kept_apart() {
        let mut t = BlockTable::default();
        let rec = |n: u32| BlockRec::new(None, Some(vec![n]), TierSet::Empty, Vec::new());
        t.insert(BlockHash::Int(1), rec(1));
        t.insert(BlockHash::Neg(-1), rec(2));
        t.insert(BlockHash::Bytes("01".into()), rec(3));
        assert_eq!(t.len(), 3);
        assert_eq!(
            t.get(&BlockHash::Neg(-1)).and_then(|r| r.tokens.clone()),
            Some(vec![2].into())
        );
        assert!(t.remove(&BlockHash::Int(1)).is_some());
        assert!(t.get(&BlockHash::Int(1)).is_none());
        t.insert(BlockHash::Int(7), rec(7));
        assert_eq!(t.slab.len(), 3);
        t.retain(|r| r.tokens.as_deref() != Some(&[7]));
        assert_eq!(t.len(), 2);
        assert!(t.get(&BlockHash::Int(7)).is_none());
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
