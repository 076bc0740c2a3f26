//! The [`Decoder`]: one JSON line or one captured frame → its batch and its events.

use serde_json::Value;

use super::fields::{err, opt_i64};
use super::trtllm::decode_trt_line;
use super::vllm::{decode_sglang_event, decode_vllm_event};
use super::{BatchMeta, DecodeError, Decoded, DecodedLine, KvEvent};
use crate::ids::EventFormat;

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
        // One parse that also refuses a repeated key: serde_json alone keeps the last of
        // two equal keys (`"ownership":"lmcache","ownership":"kvcr"` would read as KVCR),
        // so a repeated key hides a value and the line is malformed, as a capture's msgpack
        // map with one already is. The visitor's only data error is that refusal.
        let v: Value = match serde_json::from_str::<StrictValue>(text) {
            Ok(StrictValue(v)) => v,
            Err(e) if e.is_data() => {
                return Err(DecodeError {
                    json_path: None,
                    message: format!("a key is repeated in one object: {e}"),
                });
            }
            Err(e) => {
                return Err(DecodeError {
                    json_path: None,
                    message: format!("not JSON: {e}"),
                });
            }
        };
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

/// A JSON value in which no object repeats a key (compared after escapes are decoded), at
/// any depth, built in the same pass that checks it; the same check as
/// `kvlower_trace::strict_json` (which this crate does not depend on). serde_json's
/// recursion limit bounds the depth. The value is the one `serde_json::Value` would give.
struct StrictValue(Value);

impl<'de> serde::Deserialize<'de> for StrictValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictValueVisitor)
    }
}

struct StrictValueVisitor;

impl<'de> serde::de::Visitor<'de> for StrictValueVisitor {
    type Value = StrictValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(b)))
    }
    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(n)))
    }
    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::from(n)))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<StrictValue, E> {
        // As serde_json's own `Value` does: a non-finite float (never JSON) is null.
        Ok(StrictValue(
            serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number),
        ))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(s.to_owned())))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(s)))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<StrictValue, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(StrictValue(v)) = seq.next_element::<StrictValue>()? {
            items.push(v);
        }
        Ok(StrictValue(Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<StrictValue, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "the key `{key}` is repeated"
                )));
            }
            let StrictValue(v) = map.next_value::<StrictValue>()?;
            object.insert(key, v);
        }
        Ok(StrictValue(Value::Object(object)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::StoredBlock;

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
