//! The identifiers the registry, the event decoder and the report share: claim and
//! object ids, the event format and hash encoding, and an event's position.
//!
//! A leaf module (it needs nothing else of the crate), so that `events`, `registry`,
//! `reason` and `report` can all use these without depending on one another.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A claim id: the name of the retention promise, never a backend request id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClaimId(pub String);

impl fmt::Display for ClaimId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The reusable KV object a claim names (e.g. "the system prompt of agent X").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ObjectId(pub String);

/// Which runtime's event stream is being joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventFormat {
    /// vLLM `EventBatch` (map or positional-array encoding), one batch per line.
    Vllm,
    /// SGLang `EventBatch` (positional-array encoding), one batch per line.
    Sglang,
    /// TensorRT-LLM `get_kv_cache_events` JSON, one event or one list of events per line.
    Trtllm,
}

impl fmt::Display for EventFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EventFormat::Vllm => "vllm",
            EventFormat::Sglang => "sglang",
            EventFormat::Trtllm => "trtllm",
        })
    }
}

/// How block hashes are encoded on the wire (vLLM's `ExternalBlockHash = bytes | int`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HashEncoding {
    Int,
    Bytes,
}

/// An event by its index (TRT-LLM `event_id`, else position) and its file line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct EventRef {
    pub index: u64,
    pub line: u64,
}

impl fmt::Display for EventRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "event {} (line {})", self.index, self.line)
    }
}
