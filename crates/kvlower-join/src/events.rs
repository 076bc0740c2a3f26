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

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::EventFormat;

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
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tier::Medium(m) => write!(f, "medium {m}"),
            Tier::CacheLevel(l) => write!(f, "cache_level {l}"),
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

/// A JSON path inside a line, rendered only when a decode error names it (building
/// one `String` per field of every event cost more than the decoding itself).
pub(crate) trait JsonPath {
    fn render(&self) -> String;
}

impl JsonPath for str {
    fn render(&self) -> String {
        self.to_string()
    }
}

impl JsonPath for String {
    fn render(&self) -> String {
        self.clone()
    }
}

/// `base[pos]` for positional encodings, `base.name` for maps.
pub(crate) struct FieldPath<'a> {
    base: &'a str,
    name: &'a str,
    pos: Option<usize>,
}

impl JsonPath for FieldPath<'_> {
    fn render(&self) -> String {
        match self.pos {
            Some(p) => format!("{}[{p}]", self.base),
            None => format!("{}.{}", self.base, self.name),
        }
    }
}

/// Element `i` of the array at a path.
struct Indexed<'a, P: JsonPath + ?Sized>(&'a P, usize);

impl<P: JsonPath + ?Sized> JsonPath for Indexed<'_, P> {
    fn render(&self) -> String {
        format!("{}[{}]", self.0.render(), self.1)
    }
}

fn err(path: &(impl JsonPath + ?Sized), message: impl Into<String>) -> DecodeError {
    DecodeError {
        json_path: Some(path.render()),
        message: message.into(),
    }
}

/// Turns lines into events, numbering vLLM/SGLang events by position.
pub(crate) struct Decoder {
    format: EventFormat,
    next_ordinal: u64,
}

impl Decoder {
    pub fn new(format: EventFormat) -> Decoder {
        Decoder {
            format,
            next_ordinal: 0,
        }
    }

    pub fn format(&self) -> EventFormat {
        self.format
    }

    /// Hands out the next event index (a frame decoded outside this module).
    pub(crate) fn take_index(&mut self) -> u64 {
        let i = self.next_ordinal;
        self.next_ordinal = self.next_ordinal.saturating_add(1);
        i
    }

    /// The index the next decoded vLLM/SGLang event will get.
    pub fn next_index(&self) -> u64 {
        self.next_ordinal
    }

    /// Decodes one non-blank line.
    pub fn decode_line(&mut self, text: &str, line: u64) -> Result<DecodedLine, DecodeError> {
        let v: Value = serde_json::from_str(text).map_err(|e| DecodeError {
            json_path: None,
            message: format!("not JSON: {e}"),
        })?;
        match self.format {
            EventFormat::Vllm | EventFormat::Sglang => self.decode_batch_line(&v, line, None),
            // TensorRT-LLM's msgpack streaming path (Dynamo's publisher), written as
            // JSON Lines: vLLM-style batches, bare or wrapped `{"seq", "payload"}`.
            EventFormat::Trtllm if is_batch(&v) => self.decode_batch_line(&v, line, None),
            EventFormat::Trtllm => Ok(DecodedLine {
                batch: None,
                events: decode_trt_line(&v, line)?,
            }),
        }
    }

    /// Decodes one captured frame's payload (already turned from msgpack into a value);
    /// `seq` is the frame's sequence number and `stream` the publisher's rank.
    pub fn decode_frame(
        &mut self,
        v: &Value,
        frame: u64,
        seq: u64,
        stream: u16,
    ) -> Result<DecodedLine, DecodeError> {
        match self.format {
            EventFormat::Vllm | EventFormat::Sglang => {
                self.decode_batch_line(v, frame, Some((seq, stream)))
            }
            EventFormat::Trtllm => self.decode_trt_frame(v, frame, seq, stream),
        }
    }

    fn decode_batch_line(
        &mut self,
        v: &Value,
        line: u64,
        frame: Option<(u64, u16)>,
    ) -> Result<DecodedLine, DecodeError> {
        let (seq, batch, base) = match v {
            _ if frame.is_some() => (frame.map(|f| f.0), v, "$".to_string()),
            Value::Object(m) if m.contains_key("payload") => {
                let seq = match m.get("seq") {
                    Some(s) => Some(
                        s.as_u64()
                            .ok_or_else(|| err("$.seq", "seq must be a non-negative integer"))?,
                    ),
                    None => None,
                };
                let payload = m
                    .get("payload")
                    .ok_or_else(|| err("$", "missing payload"))?;
                (seq, payload, "$.payload".to_string())
            }
            _ => (None, v, "$".to_string()),
        };
        let (ts, events, rank, events_path) = match (self.format, batch) {
            (EventFormat::Vllm, Value::Object(m)) => {
                let ts = m
                    .get("ts")
                    .ok_or_else(|| err(&base, "EventBatch has no `ts`"))?;
                let ts = ts
                    .as_f64()
                    .ok_or_else(|| err(&format!("{base}.ts"), "ts must be a number"))?;
                let events = m
                    .get("events")
                    .ok_or_else(|| err(&base, "EventBatch has no `events`"))?;
                let rank = opt_i64(
                    m.get("data_parallel_rank"),
                    &format!("{base}.data_parallel_rank"),
                )?;
                (ts, events, rank, format!("{base}.events"))
            }
            (_, Value::Array(a)) => {
                if a.len() < 2 || a.len() > 3 {
                    return Err(err(
                        &base,
                        format!(
                            "EventBatch array must be [ts, events] or [ts, events, dp_rank], got {} elements",
                            a.len()
                        ),
                    ));
                }
                let ts = a[0]
                    .as_f64()
                    .ok_or_else(|| err(&format!("{base}[0]"), "ts must be a number"))?;
                let rank = opt_i64(a.get(2), &format!("{base}[2]"))?;
                (ts, &a[1], rank, format!("{base}[1]"))
            }
            (EventFormat::Sglang, _) => {
                return Err(err(
                    &base,
                    "SGLang EventBatch must be a positional array [ts, events, attn_dp_rank]",
                ));
            }
            _ => {
                return Err(err(
                    &base,
                    "EventBatch must be a map {ts, events, data_parallel_rank} or an array [ts, events, dp_rank]",
                ));
            }
        };
        let events = events
            .as_array()
            .ok_or_else(|| err(&events_path, "events must be an array"))?;
        let batch = BatchMeta {
            line,
            seq,
            ts,
            first_index: self.next_ordinal,
            stream: frame.map_or(0, |f| f.1),
        };
        let mut out = Vec::with_capacity(events.len());
        for (i, ev) in events.iter().enumerate() {
            let path = format!("{events_path}[{i}]");
            let mut issues = Vec::new();
            let mut event = match self.format {
                EventFormat::Sglang => decode_sglang_event(ev, &path, &mut issues)?,
                _ => decode_vllm_event(ev, &path, &mut issues)?,
            };
            if matches!(self.format, EventFormat::Trtllm | EventFormat::Sglang) {
                adapter_unknown_without_lora(&mut event);
            }
            out.push(Decoded {
                index: self.next_ordinal,
                line,
                ts: Some(ts),
                seq,
                rank,
                window: None,
                stream: batch.stream,
                event,
                issues,
            });
            self.next_ordinal = self.next_ordinal.saturating_add(1);
        }
        Ok(DecodedLine {
            batch: Some(batch),
            events: out,
        })
    }
}

impl Decoder {
    /// TensorRT-LLM's streaming publisher sends vLLM-style batches `[ts, events, rank]`
    /// (events maps tagged `type`); a frame holding TensorRT-LLM JSON-shaped events
    /// (`{event_id, data, ...}`, one or a list) is read as a poll.
    fn decode_trt_frame(
        &mut self,
        v: &Value,
        frame: u64,
        seq: u64,
        stream: u16,
    ) -> Result<DecodedLine, DecodeError> {
        match v {
            Value::Array(a) if a.first().is_some_and(Value::is_number) => {
                self.decode_batch_line(v, frame, Some((seq, stream)))
            }
            _ => {
                let mut events = decode_trt_line(v, frame)?;
                for e in &mut events {
                    e.stream = stream;
                }
                Ok(DecodedLine {
                    batch: None,
                    events,
                })
            }
        }
    }
}

/// A vLLM-style batch line: a positional `[ts, events, rank]` or a `{"seq", "payload"}`
/// wrapper (a TensorRT-LLM poll is an object or a list of objects).
fn is_batch(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.contains_key("payload"),
        Value::Array(a) => a.first().is_some_and(Value::is_number),
        _ => false,
    }
}

/// A store naming no adapter says nothing about it on two paths, so the block's adapter
/// is unknown (`unknown_block_adapter` unless the registry says `lora_enabled: false`):
/// TensorRT-LLM's streaming frames are built from its JSON events, which carry no
/// `lora_id` (Dynamo's publisher reads `data.get("lora_id", 0)` and writes `null`); and
/// SGLang's emitter (`sglang/srt/mem_cache/events.py`, 0.5.18 to 0.5.23) always
/// publishes `lora_id=None`, naming a LoRA request's adapter only in `lora_name` (from
/// 0.5.23, and only when it can resolve it).
fn adapter_unknown_without_lora(event: &mut KvEvent) {
    if let KvEvent::Stored {
        blocks,
        lora_id: None,
        lora_name: None,
        ..
    } = event
    {
        for b in blocks {
            b.adapter_unknown = true;
        }
    }
}

/// vLLM names a group's cache spec on its stores; full attention is the kind a
/// leading-prefix claim is judged on (sliding-window and Mamba groups keep no prefix).
pub(crate) fn is_full_attention(kind: &str) -> bool {
    let k = kind.to_ascii_lowercase();
    k.contains("full") && !k.contains("sliding") && !k.contains("mamba")
}

fn opt_i64(v: Option<&Value>, path: &(impl JsonPath + ?Sized)) -> Result<Option<i64>, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .map(Some)
            .ok_or_else(|| err(path, "expected an integer or null")),
    }
}

fn opt_str(
    v: Option<&Value>,
    path: &(impl JsonPath + ?Sized),
) -> Result<Option<String>, DecodeError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(err(path, "expected a string or null")),
    }
}

fn hash(v: &Value, path: &(impl JsonPath + ?Sized)) -> Result<BlockHash, DecodeError> {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(BlockHash::from_i64(i))
            } else if let Some(u) = n.as_u64() {
                Ok(BlockHash::Int(u))
            } else {
                Err(err(path, "block hash must be an integer within 64 bits"))
            }
        }
        Value::String(s) => Ok(BlockHash::Bytes(s.as_str().into())),
        _ => Err(err(
            path,
            "block hash must be an integer or a (bytes) string",
        )),
    }
}

fn opt_hash(v: &Value, path: &(impl JsonPath + ?Sized)) -> Result<Option<BlockHash>, DecodeError> {
    match v {
        Value::Null => Ok(None),
        v => hash(v, path).map(Some),
    }
}

fn hashes(v: &Value, path: &(impl JsonPath + ?Sized)) -> Result<Vec<BlockHash>, DecodeError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(path, "block_hashes must be an array"))?;
    a.iter()
        .enumerate()
        .map(|(i, h)| hash(h, &Indexed(path, i)))
        .collect()
}

fn token_ids(v: &Value, path: &(impl JsonPath + ?Sized)) -> Result<Vec<u32>, DecodeError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(path, "token_ids must be an array"))?;
    a.iter()
        .enumerate()
        .map(|(i, t)| {
            t.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(|| err(&Indexed(path, i), "token id must be a u32"))
        })
        .collect()
}

/// The fields of a vLLM/SGLang `BlockStored`, by name, whatever the encoding.
struct StoredFields<'a> {
    block_hashes: Option<&'a Value>,
    parent_block_hash: Option<&'a Value>,
    token_ids: Option<&'a Value>,
    block_size: Option<&'a Value>,
    lora_id: Option<&'a Value>,
    medium: Option<&'a Value>,
    lora_name: Option<&'a Value>,
    extra_keys: Option<&'a Value>,
    group_idx: Option<&'a Value>,
    metadata: Option<&'a Value>,
    cache_salt: Option<&'a Value>,
    /// vLLM >= 0.32: tokens beyond the block that its hash also covers.
    lookahead_token_ids: Option<&'a Value>,
    mm_keys: Option<&'a Value>,
    /// TensorRT-LLM streaming (Dynamo's publisher): one entry per block, `null` or the
    /// block's multimodal objects.
    block_mm_infos: Option<&'a Value>,
    kv_cache_spec_kind: Option<&'a Value>,
}

/// The positional `BlockStored` fields vLLM's array encoding and SGLang share:
/// `[tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium?, ...]`.
/// Each encoding fills in its own trailing fields.
fn positional_stored<'a>(a: &'a [Value], path: &str) -> Result<StoredFields<'a>, DecodeError> {
    if a.len() < 6 {
        return Err(err(
            path,
            format!(
                "BlockStored array needs at least [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id], got {} elements",
                a.len()
            ),
        ));
    }
    Ok(StoredFields {
        block_hashes: a.get(1),
        parent_block_hash: a.get(2),
        token_ids: a.get(3),
        block_size: a.get(4),
        lora_id: a.get(5),
        medium: a.get(6),
        lora_name: None,
        extra_keys: None,
        group_idx: None,
        metadata: None,
        cache_salt: None,
        lookahead_token_ids: None,
        mm_keys: None,
        block_mm_infos: None,
        kv_cache_spec_kind: None,
    })
}

/// Field name → positional JSON path, or `.name` for maps.
fn field_path<'a>(base: &'a str, name: &'a str, pos: Option<usize>) -> FieldPath<'a> {
    FieldPath { base, name, pos }
}

/// What one block's vLLM `extra_keys` entry adds to its hash beyond the tokens.
#[derive(Debug, Clone, PartialEq)]
enum ExtraKeys {
    /// Nothing, or only the event's own LoRA name (checked through the adapter).
    None,
    /// A root block's cache salt.
    Salt(String),
    /// Anything the registry cannot declare: multimodal ids, embedding hashes, a salt
    /// on a block that is not the request's first.
    Unverified,
}

fn vllm_extra_keys(k: &Value, lora_name: Option<&str>, first_block: bool) -> ExtraKeys {
    let keys: &[Value] = match k {
        Value::Null => return ExtraKeys::None,
        Value::Array(a) => a,
        _ => return ExtraKeys::Unverified,
    };
    // `lora_extra_keys` come first and hold exactly the adapter's name when there is one;
    // extra keys that do not start with the event's own adapter are inconsistent.
    let rest = match lora_name {
        None => keys,
        Some(lora) if keys.first().and_then(Value::as_str) == Some(lora) => &keys[1..],
        Some(_) => return ExtraKeys::Unverified,
    };
    match rest {
        [] => ExtraKeys::None,
        [Value::String(s)] if first_block && !s.is_empty() => ExtraKeys::Salt(s.clone()),
        _ => ExtraKeys::Unverified,
    }
}

/// A store's tokens, one list per block (each empty when they do not split evenly:
/// a [`Issue::TokenCountMismatch`] is recorded).
pub(crate) fn split_tokens(
    tokens: &[u32],
    blocks: usize,
    block_size: Option<u64>,
    issues: &mut Vec<Issue>,
) -> Vec<Vec<u32>> {
    let n = blocks as u64;
    if tokens.is_empty() {
        return vec![Vec::new(); blocks];
    }
    let bs = block_size.unwrap_or(0);
    if bs == 0 || tokens.len() as u64 != n.saturating_mul(bs) {
        issues.push(Issue::TokenCountMismatch {
            tokens: tokens.len() as u64,
            blocks: n,
            block_size: bs,
        });
        vec![Vec::new(); blocks]
    } else {
        tokens.chunks(bs as usize).map(<[u32]>::to_vec).collect()
    }
}

fn build_stored(
    f: StoredFields<'_>,
    path: &str,
    positional: bool,
    issues: &mut Vec<Issue>,
) -> Result<KvEvent, DecodeError> {
    let p = |name: &'static str, pos: usize| field_path(path, name, positional.then_some(pos));
    let block_hashes = f
        .block_hashes
        .ok_or_else(|| err(path, "BlockStored has no block_hashes"))?;
    let hashes = hashes(block_hashes, &p("block_hashes", 1))?;
    let parent = match f.parent_block_hash {
        Some(v) => opt_hash(v, &p("parent_block_hash", 2))?,
        None => {
            issues.push(Issue::Missing("parent_block_hash"));
            None
        }
    };
    let tokens = match f.token_ids {
        Some(v) => token_ids(v, &p("token_ids", 3))?,
        None => {
            issues.push(Issue::Missing("token_ids"));
            Vec::new()
        }
    };
    let block_size = match f.block_size {
        Some(v) => Some(v.as_u64().ok_or_else(|| {
            err(
                &p("block_size", 4),
                "block_size must be a non-negative integer",
            )
        })?),
        None => {
            issues.push(Issue::Missing("block_size"));
            None
        }
    };
    let lora_id = opt_i64(f.lora_id, &p("lora_id", 5))?;
    let medium = opt_str(f.medium, &p("medium", 6))?;
    let lora_name = opt_str(f.lora_name, &p("lora_name", 7))?;
    // vLLM builds a block's extra keys as `lora + multimodal + cache_salt + prompt
    // embeds`, the salt only on the request's first block (vLLM
    // `generate_block_hash_extra_keys`; docs/join.md "Extra hash inputs"). The event's
    // own LoRA name is checked through the adapter identity; on a root block, one bare
    // string after it is the request's cache salt, which the engine compares with the
    // registry's; anything else (multimodal ids, embedding hashes, a second string)
    // cannot be checked against the registry.
    let root = parent.is_none();
    let extra: Vec<ExtraKeys> = match f.extra_keys {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(i, k)| vllm_extra_keys(k, lora_name.as_deref(), root && i == 0))
            .collect(),
        Some(_) => {
            return Err(err(
                &p("extra_keys", 8),
                "extra_keys must be an array or null",
            ));
        }
    };
    let kind = opt_str(f.kv_cache_spec_kind, &p("kv_cache_spec_kind", 10))?;
    match opt_i64(f.group_idx, &p("group_idx", 9))? {
        Some(g) if g != 0 => issues.push(Issue::OtherKvCacheGroup { group: g, kind }),
        _ => {
            if let Some(k) = kind
                && !is_full_attention(&k)
            {
                issues.push(Issue::JudgedGroupNotFullAttention(k));
            }
        }
    }
    let nonempty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Object(m)) => !m.is_empty(),
        Some(_) => true,
    };
    // SGLang <= 0.5.18 stores a salted block's `{"cache_salt": ...}` as metadata.
    let mut salt = opt_str(f.cache_salt, &p("cache_salt", 7))?.filter(|s| !s.is_empty());
    let mut metadata = false;
    match f.metadata {
        None | Some(Value::Null) => {}
        Some(Value::Object(m))
            if m.len() == 1 && m.get("cache_salt").is_some_and(Value::is_string) =>
        {
            salt = m
                .get("cache_salt")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        Some(_) => metadata = true,
    }
    let metadata = metadata || nonempty(f.lookahead_token_ids) || nonempty(f.mm_keys);
    // A block's multimodal inputs are folded into its hash; the registry cannot declare
    // them. Per block when the list has one entry per block, else for every block.
    let block_count = hashes.len();
    let mm_block = |i: usize| match f.block_mm_infos {
        None | Some(Value::Null) => false,
        Some(Value::Array(a)) if a.len() == block_count => !a[i].is_null(),
        Some(other) => nonempty(Some(other)),
    };
    let tier = Tier::Medium(medium.unwrap_or_else(|| "GPU".to_string()));
    let split = split_tokens(&tokens, hashes.len(), block_size, issues);
    let blocks = hashes
        .into_iter()
        .zip(split)
        .enumerate()
        .map(|(i, (hash, tokens))| {
            let mm = mm_block(i);
            let keys = extra.get(i).cloned().unwrap_or(ExtraKeys::None);
            let (unverified, salt) = match (keys, &salt) {
                (ExtraKeys::None, s) => (false, s.clone()),
                (ExtraKeys::Salt(k), None) => (false, Some(k)),
                // The same salt twice (an event field and the extra keys) is one salt.
                (ExtraKeys::Salt(k), Some(s)) if k == *s => (false, Some(k)),
                (ExtraKeys::Salt(_) | ExtraKeys::Unverified, s) => (true, s.clone()),
            };
            StoredBlock {
                hash,
                tokens,
                tier: Some(tier.clone()),
                priority: None,
                extra_hash_inputs: metadata || unverified || mm,
                salt,
                adapter_unknown: false,
            }
        })
        .collect();
    Ok(KvEvent::Stored {
        parent,
        blocks,
        block_size,
        lora_id,
        lora_name,
    })
}

fn decode_removed(
    block_hashes: Option<&Value>,
    medium: Option<&Value>,
    group_idx: Option<&Value>,
    path: &str,
    positional: bool,
    issues: &mut Vec<Issue>,
) -> Result<KvEvent, DecodeError> {
    let p = |name: &'static str, pos: usize| field_path(path, name, positional.then_some(pos));
    let v = block_hashes.ok_or_else(|| err(path, "BlockRemoved has no block_hashes"))?;
    let hashes = hashes(v, &p("block_hashes", 1))?;
    let medium = opt_str(medium, &p("medium", 2))?;
    if let Some(g) = opt_i64(group_idx, &p("group_idx", 3))?
        && g != 0
    {
        issues.push(Issue::OtherKvCacheGroup {
            group: g,
            kind: None,
        });
    }
    Ok(KvEvent::Removed {
        hashes,
        tier: Some(Tier::Medium(medium.unwrap_or_else(|| "GPU".to_string()))),
    })
}

fn decode_vllm_event(
    v: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Result<KvEvent, DecodeError> {
    match v {
        Value::Array(a) => {
            let tag = a
                .first()
                .and_then(Value::as_str)
                .ok_or_else(|| err(&format!("{path}[0]"), "event tag must be a string"))?;
            match tag {
                "BlockStored" => {
                    let f = StoredFields {
                        lora_name: a.get(7),
                        extra_keys: a.get(8),
                        group_idx: a.get(9),
                        kv_cache_spec_kind: a.get(10),
                        ..positional_stored(a, path)?
                    };
                    build_stored(f, path, true, issues)
                }
                "BlockRemoved" => decode_removed(a.get(1), a.get(2), a.get(3), path, true, issues),
                "AllBlocksCleared" => Ok(KvEvent::Cleared),
                other => Err(err(
                    &format!("{path}[0]"),
                    format!("unknown event tag `{other}`"),
                )),
            }
        }
        Value::Object(m) => {
            let tag = m
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| err(path, "event map has no string `type` tag"))?;
            match tag {
                "BlockStored" => {
                    let f = StoredFields {
                        block_hashes: m.get("block_hashes"),
                        parent_block_hash: m.get("parent_block_hash"),
                        token_ids: m.get("token_ids"),
                        block_size: m.get("block_size"),
                        lora_id: m.get("lora_id"),
                        medium: m.get("medium"),
                        lora_name: m.get("lora_name"),
                        extra_keys: m.get("extra_keys"),
                        group_idx: m.get("group_idx"),
                        metadata: None,
                        cache_salt: m.get("cache_salt"),
                        lookahead_token_ids: m.get("lookahead_token_ids"),
                        mm_keys: m.get("mm_keys"),
                        block_mm_infos: m.get("block_mm_infos"),
                        kv_cache_spec_kind: m.get("kv_cache_spec_kind"),
                    };
                    build_stored(f, path, false, issues)
                }
                "BlockRemoved" => decode_removed(
                    m.get("block_hashes"),
                    m.get("medium"),
                    m.get("group_idx"),
                    path,
                    false,
                    issues,
                ),
                "AllBlocksCleared" => Ok(KvEvent::Cleared),
                other => Err(err(
                    &format!("{path}.type"),
                    format!("unknown event tag `{other}`"),
                )),
            }
        }
        _ => Err(err(
            path,
            "event must be an array [tag, ...] or a map {type, ...}",
        )),
    }
}

fn decode_sglang_event(
    v: &Value,
    path: &str,
    issues: &mut Vec<Issue>,
) -> Result<KvEvent, DecodeError> {
    // SGLang >= 0.5.20 tags events as maps with vLLM's field names (plus cache_salt,
    // session_id, lora_name); older releases use positional arrays.
    if v.is_object() {
        return decode_vllm_event(v, path, issues);
    }
    let a = v.as_array().ok_or_else(|| {
        err(
            path,
            "SGLang events are arrays [tag, ...] or maps {type, ...}",
        )
    })?;
    let tag = a
        .first()
        .and_then(Value::as_str)
        .ok_or_else(|| err(&format!("{path}[0]"), "event tag must be a string"))?;
    match tag {
        "BlockStored" => {
            let f = StoredFields {
                metadata: a.get(7),
                ..positional_stored(a, path)?
            };
            build_stored(f, path, true, issues)
        }
        "BlockRemoved" => decode_removed(a.get(1), a.get(2), None, path, true, issues),
        "AllBlocksCleared" => Ok(KvEvent::Cleared),
        other => Err(err(
            &format!("{path}[0]"),
            format!("unknown event tag `{other}`"),
        )),
    }
}

fn decode_trt_line(v: &Value, line: u64) -> Result<Vec<Decoded>, DecodeError> {
    match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, e)| decode_trt_event(e, &format!("$[{i}]"), line))
            .collect(),
        Value::Object(_) => Ok(vec![decode_trt_event(v, "$", line)?]),
        _ => Err(err(
            "$",
            "a TensorRT-LLM line is one event object or a list of them",
        )),
    }
}

fn u32_field(
    m: &serde_json::Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<u32>, DecodeError> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|x| u32::try_from(x).ok())
            .map(Some)
            .ok_or_else(|| err(&format!("{path}.{name}"), "expected a non-negative integer")),
    }
}

fn diff(v: Option<&Value>, path: &str) -> Result<Option<(u32, u32)>, DecodeError> {
    let m = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(m)) => m,
        Some(_) => return Err(err(path, "expected an event_diff object or null")),
    };
    let old = u32_field(m, "old_value", path)?;
    let new = u32_field(m, "new_value", path)?;
    match (old, new) {
        (Some(o), Some(n)) => Ok(Some((o, n))),
        _ => Err(err(path, "event_diff needs old_value and new_value")),
    }
}

fn decode_trt_event(v: &Value, path: &str, line: u64) -> Result<Decoded, DecodeError> {
    let m = v.as_object().ok_or_else(|| {
        err(
            path,
            "event must be an object {event_id, data, window_size}",
        )
    })?;
    let index = m
        .get("event_id")
        .ok_or_else(|| err(path, "event has no event_id"))?
        .as_u64()
        .ok_or_else(|| {
            err(
                &format!("{path}.event_id"),
                "event_id must be a non-negative integer",
            )
        })?;
    let window = opt_i64(m.get("window_size"), &format!("{path}.window_size"))?;
    let rank = opt_i64(
        m.get("attention_dp_rank"),
        &format!("{path}.attention_dp_rank"),
    )?;
    let mut issues = Vec::new();
    if !m.contains_key("window_size") {
        issues.push(Issue::Missing("window_size"));
    }
    let dpath = format!("{path}.data");
    let data = m
        .get("data")
        .and_then(Value::as_object)
        .ok_or_else(|| err(&dpath, "data must be an object with a `type`"))?;
    let ty = data
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| err(&format!("{dpath}.type"), "data.type must be a string"))?;
    let event = match ty {
        "created" => KvEvent::Created,
        "stored" => decode_trt_stored(data, &dpath, &mut issues)?,
        "removed" => KvEvent::Removed {
            hashes: hashes(
                data.get("block_hashes")
                    .ok_or_else(|| err(&dpath, "removed has no block_hashes"))?,
                &format!("{dpath}.block_hashes"),
            )?,
            tier: None,
        },
        "updated" => KvEvent::Updated {
            hash: hash(
                data.get("block_hash")
                    .ok_or_else(|| err(&dpath, "updated has no block_hash"))?,
                &format!("{dpath}.block_hash"),
            )?,
            cache_level: diff(data.get("cache_level"), &format!("{dpath}.cache_level"))?,
            priority: diff(data.get("priority"), &format!("{dpath}.priority"))?,
        },
        other => {
            return Err(err(
                &format!("{dpath}.type"),
                format!(
                    "unknown event type `{other}` (expected created, stored, removed, updated)"
                ),
            ));
        }
    };
    Ok(Decoded {
        index,
        line,
        ts: None,
        seq: None,
        rank,
        window,
        // The caller sets the publisher of a capture frame.
        stream: 0,
        event,
        issues,
    })
}

/// A TensorRT-LLM `stored` event: its parent and its blocks, in order.
fn decode_trt_stored(
    data: &serde_json::Map<String, Value>,
    dpath: &str,
    issues: &mut Vec<Issue>,
) -> Result<KvEvent, DecodeError> {
    let parent = match data.get("parent_hash") {
        Some(p) => opt_hash(p, &format!("{dpath}.parent_hash"))?,
        None => {
            issues.push(Issue::Missing("parent_hash"));
            None
        }
    };
    let bpath = format!("{dpath}.blocks");
    let blocks = data
        .get("blocks")
        .and_then(Value::as_array)
        .ok_or_else(|| err(&bpath, "stored.blocks must be an array"))?;
    let mut out = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        out.push(decode_trt_block(b, &format!("{bpath}[{i}]"), issues)?);
    }
    Ok(KvEvent::Stored {
        parent,
        blocks: out,
        block_size: None,
        lora_id: None,
        lora_name: None,
    })
}

/// One TensorRT-LLM `stored_block`: hash, tokens, cache level, priority, and what its
/// hash folds in beyond the tokens.
fn decode_trt_block(
    b: &Value,
    bp: &str,
    issues: &mut Vec<Issue>,
) -> Result<StoredBlock, DecodeError> {
    let b = b
        .as_object()
        .ok_or_else(|| err(bp, "stored_block must be an object"))?;
    let hash = hash(
        b.get("block_hash")
            .ok_or_else(|| err(bp, "stored_block has no block_hash"))?,
        &format!("{bp}.block_hash"),
    )?;
    let (tokens, mut extra) = match b.get("tokens") {
        None => {
            issues.push(Issue::Missing("tokens"));
            (Vec::new(), false)
        }
        Some(t) => decode_trt_tokens(t, &format!("{bp}.tokens"))?,
    };
    let tier = match u32_field(b, "cache_level", bp)? {
        Some(l) => Some(Tier::CacheLevel(l)),
        None => {
            issues.push(Issue::Missing("cache_level"));
            None
        }
    };
    let priority = u32_field(b, "priority", bp)?;
    let nonempty = |k: &str| {
        b.get(k).is_some_and(|x| match x {
            Value::Null => false,
            Value::Array(a) => !a.is_empty(),
            Value::String(s) => !s.is_empty(),
            _ => true,
        })
    };
    if nonempty("mm_keys") || nonempty("lora_id") {
        extra = true;
    }
    let salt = match b.get("cache_salt") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            extra = true;
            None
        }
    };
    Ok(StoredBlock {
        hash,
        tokens,
        tier,
        priority,
        extra_hash_inputs: extra,
        salt,
        // TensorRT-LLM's JSON serializer leaves `lora_id` out (a TODO in
        // its KVCacheEventSerializer): the key's absence says nothing.
        adapter_unknown: !b.contains_key("lora_id"),
    })
}

/// A block's `tokens` (`{type: unique_token, token_id, token_extra_id}`): the ids, and
/// whether any token carries a non-zero extra id (an input the join cannot verify).
fn decode_trt_tokens(t: &Value, tp: &str) -> Result<(Vec<u32>, bool), DecodeError> {
    let t = t
        .as_array()
        .ok_or_else(|| err(tp, "tokens must be an array"))?;
    let mut ids = Vec::with_capacity(t.len());
    let mut extra = false;
    for (j, tok) in t.iter().enumerate() {
        let jp = format!("{tp}[{j}]");
        let tok = tok.as_object().ok_or_else(|| {
            err(
                &jp,
                "token must be {type: unique_token, token_id, token_extra_id}",
            )
        })?;
        let id =
            u32_field(tok, "token_id", &jp)?.ok_or_else(|| err(&jp, "token has no token_id"))?;
        if u32_field(tok, "token_extra_id", &jp)?.is_some_and(|x| x != 0) {
            extra = true;
        }
        ids.push(id);
    }
    Ok((ids, extra))
}

impl BlockHash {
    pub fn encoding(&self) -> crate::ids::HashEncoding {
        match self {
            BlockHash::Neg(_) | BlockHash::Int(_) => crate::ids::HashEncoding::Int,
            BlockHash::Bytes(_) => crate::ids::HashEncoding::Bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stored event as Dynamo's TensorRT-LLM publisher frames it (two blocks, the
    /// second with a multimodal object), wrapped with its sequence number.
    const DYNAMO_LINE: &str = r#"{"seq":0,"payload":[1.0,[{"type":"BlockStored","block_hashes":[1,2],"parent_block_hash":null,"token_ids":[1,2,3,4],"block_size":2,"lora_id":null,"block_mm_infos":[null,{"mm_objects":[{"mm_hash":7,"offsets":[]}]}]}],0]}"#;

    /// The blocks of the line's payload decoded as a captured frame.
    fn stored_blocks(line: &str, format: EventFormat) -> Vec<StoredBlock> {
        let v: Value = serde_json::from_str(line).unwrap();
        let mut d = Decoder::new(format);
        let out = d.decode_frame(&v["payload"], 1, 0, 0).unwrap();
        match &out.events[0].event {
            KvEvent::Stored { blocks, .. } => blocks.clone(),
            other => panic!("expected a store, got {other:?}"),
        }
    }

    #[test]
    fn a_trtllm_json_line_may_hold_a_streaming_batch() {
        let mut d = Decoder::new(EventFormat::Trtllm);
        let out = d.decode_line(DYNAMO_LINE, 1).unwrap();
        assert_eq!(out.batch.map(|b| b.seq), Some(Some(0)));
        assert_eq!(out.events.len(), 1);
        // A poll (an object, or a list of objects) is still read as a poll.
        let poll = r#"[{"event_id":0,"data":{"type":"created"},"window_size":8}]"#;
        let out = d.decode_line(poll, 2).unwrap();
        assert!(out.batch.is_none());
        assert_eq!(out.events[0].event, KvEvent::Created);
    }

    #[test]
    fn block_mm_infos_mark_only_the_blocks_that_carry_one() {
        let b = stored_blocks(DYNAMO_LINE, EventFormat::Trtllm);
        assert_eq!(
            b.iter().map(|b| b.extra_hash_inputs).collect::<Vec<_>>(),
            [false, true]
        );
    }

    #[test]
    fn a_null_adapter_in_trtllm_streaming_is_unknown_but_in_vllm_is_the_base_model() {
        let trt = stored_blocks(DYNAMO_LINE, EventFormat::Trtllm);
        assert!(trt.iter().all(|b| b.adapter_unknown));
        let vllm = stored_blocks(DYNAMO_LINE, EventFormat::Vllm);
        assert!(vllm.iter().all(|b| !b.adapter_unknown));
    }

    #[test]
    fn an_sglang_store_names_its_adapter_only_by_lora_name() {
        let line = |extra: &str| {
            format!(
                r#"{{"seq":0,"payload":[1.0,[{{"type":"BlockStored","block_hashes":[1],"parent_block_hash":null,"token_ids":[1,2],"block_size":2,"lora_id":null,"medium":"GPU"{extra}}}],0]}}"#
            )
        };
        let unnamed = stored_blocks(&line(""), EventFormat::Sglang);
        assert!(
            unnamed[0].adapter_unknown,
            "lora_id is always None in SGLang"
        );
        let named = stored_blocks(&line(r#","lora_name":"a""#), EventFormat::Sglang);
        assert!(!named[0].adapter_unknown);
    }
}
