//! TensorRT-LLM's event objects: `{event_id, data:{type, ...}, window_size,
//! attention_dp_rank}`, one per object of a `get_kv_cache_events` poll.

use serde_json::Value;

use super::fields::{err, hash, hashes, opt_hash, opt_i64};
use super::{DecodeError, Decoded, Issue, KvEvent, StoredBlock, Tier};

pub(super) fn decode_trt_line(v: &Value, line: u64) -> Result<Vec<Decoded>, DecodeError> {
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
