//! vLLM's and SGLang's events: positional arrays or maps tagged `type`, with vLLM's
//! field names (SGLang shares the first six `BlockStored` fields).

use serde_json::Value;

use super::fields::{err, field_path, hashes, opt_hash, opt_i64, opt_str, token_ids};
use super::{DecodeError, Issue, KvEvent, StoredBlock, Tier};

/// vLLM names a group's cache spec on its stores; full attention is the kind a
/// leading-prefix claim is judged on (sliding-window and Mamba groups keep no prefix).
pub(crate) fn is_full_attention(kind: &str) -> bool {
    let k = kind.to_ascii_lowercase();
    k.contains("full") && !k.contains("sliding") && !k.contains("mamba")
}

/// The secondary offload tiers whose `ownership` the join knows, with the media each
/// publishes. vLLM 0.32.0's wheel sets `ownership` in one place: the KVCR tier
/// (`vllm/v1/kv_offload/tiering/kvcr/manager.py`, `_record_inventory`: `ownership="kvcr"`,
/// medium `CPU` for KVCR's local DRAM, `STORAGE` for its G3 disk tier).
const KNOWN_OWNERSHIP: &[(&str, &[&str])] = &[("kvcr", &["CPU", "STORAGE"])];

/// The secondary tiers whose copies survive vLLM's `AllBlocksCleared`: only an owner the
/// wheel documents as never reset by a connector reset. vLLM 0.32.0's
/// `Scheduler.reset_prefix_cache(reset_running_requests, reset_connector)`
/// (`vllm/v1/core/sched/scheduler.py`) publishes `AllBlocksCleared` from the device's pool
/// (`vllm/v1/core/block_pool.py`, `reset_prefix_cache`) and then, with `reset_connector`,
/// resets the connector: `TieringOffloadingManager.reset_cache`
/// (`vllm/v1/kv_offload/tiering/manager.py`, lines 935-947 of the wheel) resets the
/// primary tier (medium with no ownership) with no event at all, and "Secondary tiers are
/// intentionally not reset: persistent stores (FS, network) keep their data across
/// resets". The stream cannot tell whether the primary tier was reset, so its copies (and
/// those of any owner not listed here) are lost at the clear; KVCR's (ownership `kvcr`, a
/// secondary tier) are kept.
const RESET_PERSISTENT_OWNERSHIP: &[&str] = &["kvcr"];

/// Whether a copy on `tier` is still held after vLLM's `AllBlocksCleared`: a known
/// secondary tier (ownership and medium as [`KNOWN_OWNERSHIP`] lists them) whose owner is
/// reset-persistent ([`RESET_PERSISTENT_OWNERSHIP`]). The device, vLLM's own primary tier
/// (a medium with no ownership: reset silently or not at all), an unknown owner and any
/// other tier lose their copies (fail closed).
pub(crate) fn kept_through_vllm_clear(tier: &Tier) -> bool {
    let Tier::OwnedMedium { medium, ownership } = tier else {
        return false;
    };
    RESET_PERSISTENT_OWNERSHIP.contains(&ownership.as_str())
        && KNOWN_OWNERSHIP
            .iter()
            .any(|(o, media)| o == ownership && media.contains(&medium.as_str()))
}

/// The tier a vLLM store or removal names: its medium (absent = `GPU`, the core block
/// pool), and the secondary tier's `ownership` when it has one. An ownership the join
/// does not know, or one on a medium that tier never publishes (the device's own pool
/// never carries one), keeps the event on a tier of its own, never merged with
/// another, and records [`Issue::UnknownTier`] (the stream then fails closed).
fn event_tier(medium: Option<String>, ownership: Option<String>, issues: &mut Vec<Issue>) -> Tier {
    let medium = medium.unwrap_or_else(|| "GPU".to_string());
    let Some(ownership) = ownership else {
        return Tier::Medium(medium);
    };
    let known = KNOWN_OWNERSHIP
        .iter()
        .any(|(o, media)| *o == ownership && media.contains(&medium.as_str()));
    if !known {
        issues.push(Issue::UnknownTier(format!(
            "medium {medium}, ownership {ownership:?}"
        )));
    }
    Tier::OwnedMedium { medium, ownership }
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
    /// vLLM >= 0.32: the secondary offload tier that published the event.
    ownership: Option<&'a Value>,
    /// vLLM >= 0.32: where the copy lives; vLLM 0.32.0's KVCR manager never sets it, so a
    /// non-null one is a shape the join does not know ([`unknown_locality`]).
    locality: Option<&'a Value>,
}

/// vLLM 0.32's `locality` (BlockStored field 12, BlockRemoved field 4): no publisher in
/// the 0.32.0 wheel sets it (KVCR's `_record_inventory` leaves it `None`), and the join
/// cannot tell what a copy elsewhere (`"REMOTE"`) holds for this cache, so a non-null one
/// records [`Issue::UnknownTier`] (the stream then fails closed) rather than being read
/// as the medium's local copy.
fn unknown_locality(locality: Option<&Value>, issues: &mut Vec<Issue>) {
    if let Some(v) = locality.filter(|v| !v.is_null()) {
        issues.push(Issue::UnknownTier(format!("locality {v}")));
    }
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
        ownership: None,
        locality: None,
    })
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
    let ownership = opt_str(f.ownership, &p("ownership", 13))?;
    unknown_locality(f.locality, issues);
    let tier = event_tier(medium, ownership, issues);
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
    (locality, ownership): (Option<&Value>, Option<&Value>),
    path: &str,
    positional: bool,
    issues: &mut Vec<Issue>,
) -> Result<KvEvent, DecodeError> {
    let p = |name: &'static str, pos: usize| field_path(path, name, positional.then_some(pos));
    let v = block_hashes.ok_or_else(|| err(path, "BlockRemoved has no block_hashes"))?;
    let hashes = hashes(v, &p("block_hashes", 1))?;
    let medium = opt_str(medium, &p("medium", 2))?;
    let ownership = opt_str(ownership, &p("ownership", 5))?;
    unknown_locality(locality, issues);
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
        tier: Some(event_tier(medium, ownership, issues)),
    })
}

pub(super) fn decode_vllm_event(
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
                        locality: a.get(12),
                        ownership: a.get(13),
                        ..positional_stored(a, path)?
                    };
                    build_stored(f, path, true, issues)
                }
                "BlockRemoved" => decode_removed(
                    a.get(1),
                    a.get(2),
                    a.get(3),
                    (a.get(4), a.get(5)),
                    path,
                    true,
                    issues,
                ),
                // As in the map form below: vLLM's AllBlocksCleared has no fields, so any
                // non-null element after the tag (a medium, an ownership, a locality)
                // names a scope the join cannot tell it clears.
                "AllBlocksCleared" => {
                    for (i, v) in a.iter().enumerate().skip(1) {
                        if !v.is_null() {
                            issues.push(Issue::UnknownTier(format!(
                                "AllBlocksCleared field {i} {v}"
                            )));
                        }
                    }
                    Ok(KvEvent::Cleared)
                }
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
                        ownership: m.get("ownership"),
                        locality: m.get("locality"),
                    };
                    build_stored(f, path, false, issues)
                }
                "BlockRemoved" => decode_removed(
                    m.get("block_hashes"),
                    m.get("medium"),
                    m.get("group_idx"),
                    (m.get("locality"), m.get("ownership")),
                    path,
                    false,
                    issues,
                ),
                // vLLM's AllBlocksCleared has no fields (the device's block pool publishes
                // it; the join keeps only reset-persistent secondary tiers' copies through
                // it): any non-null key other than `type` (an ownership, a medium, a
                // locality, ...) would name a scope the join cannot tell it clears.
                "AllBlocksCleared" => {
                    for (key, v) in m.iter().filter(|(k, v)| *k != "type" && !v.is_null()) {
                        issues.push(Issue::UnknownTier(format!("AllBlocksCleared {key} {v}")));
                    }
                    Ok(KvEvent::Cleared)
                }
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

pub(super) fn decode_sglang_event(
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
        "BlockRemoved" => {
            decode_removed(a.get(1), a.get(2), None, (None, None), path, true, issues)
        }
        "AllBlocksCleared" => Ok(KvEvent::Cleared),
        other => Err(err(
            &format!("{path}[0]"),
            format!("unknown event tag `{other}`"),
        )),
    }
}
