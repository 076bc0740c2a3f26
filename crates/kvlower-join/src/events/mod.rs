//! Decoding one line of a runtime's KV event stream into typed events.
//!
//! Input is JSON Lines. vLLM and SGLang publish msgpack over ZMQ; the join reads the
//! same structures converted to JSON, one `EventBatch` per line, either bare or wrapped
//! as `{"seq": <ZMQ frame-2 sequence number>, "payload": <batch>}` so that sequence gaps
//! can be detected. Hashes that are msgpack `bin` (vLLM's `bytes` hashes) are expected as
//! JSON strings and treated as opaque. TensorRT-LLM lines hold one event object or one
//! list of event objects (one `get_kv_cache_events` poll).
//!
//! Field names and positional orders follow the runtimes' published event schemas, as
//! `docs/join.md` ("Formats") describes them:
//! vLLM `BlockStored[tag, block_hashes, parent_block_hash, token_ids, block_size,
//! lora_id, medium, lora_name, extra_keys, group_idx, ...]`, `BlockRemoved[tag,
//! block_hashes, medium, group_idx, ...]`, `AllBlocksCleared[tag]`; SGLang the first
//! six BlockStored fields then `medium`, `metadata`; TensorRT-LLM
//! `{event_id, data:{type, ...}, window_size, attention_dp_rank}`.
//!
//! A field the runtime's schema requires but cannot be parsed is a decode error (the
//! file is malformed). A field a join needs that the line leaves out is an [`Issue`]:
//! the engine turns it into `insufficient_evidence`, never into a guess.
//!
//! # Layout
//!
//! This module holds the typed events every decoder produces; its parts decode them:
//!
//! - `decoder`: the [`Decoder`], which takes one JSON line or one captured frame, reads
//!   its batch (sequence number, timestamp, rank) and numbers its events.
//! - `vllm`: vLLM's and SGLang's events (positional arrays or tagged maps).
//! - `trtllm`: TensorRT-LLM's event objects (one `get_kv_cache_events` poll).
//! - `fields`: the JSON paths decode errors name, and the readers of single fields
//!   (integers, strings, block hashes, token ids) the decoders share.

mod decoder;
mod fields;
mod trtllm;
mod vllm;

pub(crate) use vllm::kept_through_vllm_clear;

use serde::{Deserialize, Serialize};

pub(crate) use decoder::Decoder;
pub(crate) use vllm::{is_full_attention, split_tokens};

/// A block hash as published: an integer (TRT-LLM, SGLang, older vLLM) or opaque bytes.
/// An integer is kept as one: a negative one (`i64`) apart from the others (`u64`), so
/// each integer has one form and they order as integers do.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum BlockHash {
    Neg(i64),
    Int(u64),
    Bytes(Box<str>),
}

impl BlockHash {
    pub(crate) fn from_i64(i: i64) -> BlockHash {
        match u64::try_from(i) {
            Ok(u) => BlockHash::Int(u),
            Err(_) => BlockHash::Neg(i),
        }
    }

    pub fn encoding(&self) -> crate::ids::HashEncoding {
        match self {
            BlockHash::Neg(_) | BlockHash::Int(_) => crate::ids::HashEncoding::Int,
            BlockHash::Bytes(_) => crate::ids::HashEncoding::Bytes,
        }
    }
}

/// Where a block copy lives: vLLM/SGLang `medium`, or TensorRT-LLM `cache_level`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// vLLM/SGLang storage medium (`GPU`, `CPU`, `CPU_PINNED`, ...). An absent medium
    /// is read as `GPU`: the core block pool is the only publisher without one.
    Medium(String),
    /// TensorRT-LLM cache level: 0 = primary (GPU), 1 = secondary (host).
    CacheLevel(u32),
    /// A vLLM (>= 0.32) secondary offload tier's store: its `medium` and the tier's
    /// `ownership` (KVCR's local DRAM: medium `CPU`, ownership `kvcr`). Another tier
    /// than the same medium without ownership (vLLM's own CPU primary tier): a copy
    /// in one is never a copy in the other.
    OwnedMedium { medium: String, ownership: String },
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tier::Medium(m) => write!(f, "medium {m}"),
            Tier::CacheLevel(l) => write!(f, "cache_level {l}"),
            Tier::OwnedMedium { medium, ownership } => {
                write!(f, "medium {medium}, ownership {ownership}")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StoredBlock {
    pub hash: BlockHash,
    /// Empty for hash-only stores (vLLM offload connectors publish `token_ids=[]`).
    pub tokens: Vec<u32>,
    /// `None` when the line leaves the cache level out (an [`Issue`] is recorded).
    pub tier: Option<Tier>,
    pub priority: Option<u32>,
    /// Extra keys, metadata, multimodal keys or salts the runtime folds into the hash;
    /// the join cannot verify them against the registry's namespace.
    pub extra_hash_inputs: bool,
    /// The cache salt folded into the hash (SGLang `cache_salt`/`metadata`, TensorRT-LLM
    /// `cache_salt`); the engine compares it with the registry's.
    pub salt: Option<String>,
    /// The block names no adapter at all (TensorRT-LLM JSON leaves `lora_id` out).
    pub adapter_unknown: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum KvEvent {
    Stored {
        /// `None` = root; `Some(None)` never occurs: a missing parent is an [`Issue`].
        parent: Option<BlockHash>,
        blocks: Vec<StoredBlock>,
        /// vLLM/SGLang `block_size` (TRT-LLM has none: each block's token count is used).
        block_size: Option<u64>,
        lora_id: Option<i64>,
        lora_name: Option<String>,
    },
    Removed {
        hashes: Vec<BlockHash>,
        /// `None` = every tier (TRT-LLM `removed` means gone from the reuse tree).
        tier: Option<Tier>,
    },
    Updated {
        hash: BlockHash,
        cache_level: Option<(u32, u32)>,
        priority: Option<(u32, u32)>,
    },
    Cleared,
    Created,
}

/// Something a join needs that the event does not supply unambiguously.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Issue {
    Missing(&'static str),
    TokenCountMismatch {
        tokens: u64,
        blocks: u64,
        block_size: u64,
    },
    /// An event of a KV-cache group other than group 0 (hybrid models): not joined.
    OtherKvCacheGroup {
        group: i64,
        kind: Option<String>,
    },
    /// Group 0 declares a cache-spec kind that is not full attention.
    JudgedGroupNotFullAttention(String),
    /// A tier the join cannot place: an `ownership` it does not know, one on an event
    /// that never carries one (a device-medium event, `AllBlocksCleared`), or an
    /// `AllBlocksCleared` scoped by a medium (vLLM 0.32's carries no field).
    UnknownTier(String),
}

/// One decoded event with its place in the stream.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decoded {
    pub index: u64,
    pub line: u64,
    pub ts: Option<f64>,
    pub seq: Option<u64>,
    /// DP rank (vLLM/SGLang batch) or TRT-LLM `attention_dp_rank`.
    pub rank: Option<i64>,
    /// TRT-LLM `window_size`.
    pub window: Option<i64>,
    /// The publisher it came from (the capture's rank, one per endpoint; 0 for
    /// JSON Lines): two publishers are two caches, whatever ranks they report.
    pub stream: u16,
    pub event: KvEvent,
    pub issues: Vec<Issue>,
}

/// Batch-level facts of a vLLM/SGLang line (checked once per line, even when empty).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct BatchMeta {
    pub line: u64,
    pub seq: Option<u64>,
    pub ts: f64,
    /// Index the batch's first event has (or would have, if the batch is empty).
    pub first_index: u64,
    /// Which publisher's sequence `seq` belongs to (capture rank; 0 for JSON Lines).
    pub stream: u16,
}

/// One decoded line.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecodedLine {
    pub batch: Option<BatchMeta>,
    pub events: Vec<Decoded>,
}

/// A malformed line: where (JSON path inside the line) and what.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DecodeError {
    pub json_path: Option<String>,
    pub message: String,
}
