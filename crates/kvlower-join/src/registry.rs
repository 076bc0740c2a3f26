//! The pre-registered claim registry: what the join is asked to judge.
//!
//! The registry is written *before* the run (that is the whole point of Table 5's
//! "external accepted-claim registry"). It is read into typed values here; anything the
//! join needs but the registry leaves out does not become an error, it becomes a
//! [`Reason`] that keeps the claim at `insufficient_evidence`. Only input that cannot be
//! read at all (bad YAML, a predicate other than `leading_prefix_at_least`, an unreadable
//! token map) is an error.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::JoinError;
pub use crate::ids::{ClaimId, EventFormat, HashEncoding, ObjectId};
use crate::reason::Reason;

/// The registry format version this crate reads.
pub const REGISTRY_SCHEMA_VERSION: u32 = 1;

/// A point in the event stream: an event index, or a batch timestamp.
///
/// Event index = TensorRT-LLM's `event_id`; for vLLM and SGLang (whose payloads carry
/// no event id) the 0-based position of the event in the file, counting the events of
/// every batch in order.
///
/// Written `{event_index: N}` or `{timestamp: T}` (exactly one key).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawPoint", into = "RawPoint")]
pub enum StreamPoint {
    EventIndex(u64),
    Timestamp(f64),
}

/// The on-disk shape of a [`StreamPoint`] (YAML has no tag-free enum maps in serde_yaml).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_index: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    timestamp: Option<f64>,
}

impl TryFrom<RawPoint> for StreamPoint {
    type Error = String;

    fn try_from(r: RawPoint) -> Result<Self, String> {
        match (r.event_index, r.timestamp) {
            (Some(i), None) => Ok(StreamPoint::EventIndex(i)),
            (None, Some(t)) if t.is_finite() => Ok(StreamPoint::Timestamp(t)),
            (None, Some(_)) => Err("timestamp must be a finite number".into()),
            _ => Err("a stream point is exactly one of {event_index: N} or {timestamp: T}".into()),
        }
    }
}

impl From<StreamPoint> for RawPoint {
    fn from(p: StreamPoint) -> RawPoint {
        match p {
            StreamPoint::EventIndex(i) => RawPoint {
                event_index: Some(i),
                timestamp: None,
            },
            StreamPoint::Timestamp(t) => RawPoint {
                event_index: None,
                timestamp: Some(t),
            },
        }
    }
}

impl fmt::Display for StreamPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamPoint::EventIndex(i) => write!(f, "event {i}"),
            StreamPoint::Timestamp(t) => write!(f, "ts {t}"),
        }
    }
}

/// The one materialization predicate the join evaluates.
///
/// `k` counts **tokens** (the paper's `leading_prefix_at_least(17)` with a 16-token
/// block is not a block count). Because runtimes store and report only whole blocks,
/// the predicate holds when the leading `ceil(k / block_size)` blocks of the claim's
/// tokens are resident.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Predicate {
    LeadingPrefixAtLeast { tokens: NonZeroU32 },
}

impl Predicate {
    /// Tokens the predicate asks for.
    pub fn tokens(self) -> u32 {
        match self {
            Predicate::LeadingPrefixAtLeast { tokens } => tokens.get(),
        }
    }

    /// Whole blocks that must be resident for the predicate to hold.
    pub fn required_blocks(self, block_size: NonZeroU32) -> u32 {
        self.tokens().div_ceil(block_size.get())
    }
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "leading_prefix_at_least({})", self.tokens())
    }
}

impl From<Predicate> for String {
    fn from(p: Predicate) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for Predicate {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        let s = s.trim();
        let Some(arg) = s
            .strip_prefix("leading_prefix_at_least(")
            .and_then(|rest| rest.strip_suffix(')'))
        else {
            return Err(format!(
                "unsupported predicate `{s}`: the join evaluates only `leading_prefix_at_least(k)` (k in tokens)"
            ));
        };
        let arg = arg.trim();
        let arg = arg.strip_suffix("tokens").map(str::trim).unwrap_or(arg);
        if arg.ends_with("blocks") || arg.ends_with("block") {
            return Err(format!(
                "`{s}`: k counts tokens, not blocks; write leading_prefix_at_least(<tokens>)"
            ));
        }
        let k: u32 = arg
            .parse()
            .map_err(|_| format!("`{s}`: k must be a positive integer number of tokens"))?;
        let tokens = NonZeroU32::new(k).ok_or_else(|| format!("`{s}`: k must be at least 1"))?;
        Ok(Predicate::LeadingPrefixAtLeast { tokens })
    }
}

/// The token-hash domain: the runtime's hash function (named) and its encoding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HashDomain {
    pub name: String,
    pub encoding: HashEncoding,
}

/// The runtime that produced the events (kind is checked against `--format`), as
/// a join or routing document records it: a document anchors only a descriptor
/// whose `runtime.identity` is exactly these components (docs/join.md, "Runtime
/// identity").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    pub kind: EventFormat,
    /// The engine's exact release or commit (`0.32.0`), nothing else.
    pub version: String,
    /// The local patch the engine ran with, if any, named as its descriptor names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// What else ran in the deployment (a router in front of the engine): a
    /// document of vLLM behind Dynamo is not evidence of vLLM alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<kvlower_core::identity::RuntimeComponent>,
}

impl RuntimeIdentity {
    /// Every component, as the core compares them.
    pub fn recorded(&self) -> kvlower_core::identity::RecordedRuntime {
        let engine = kvlower_core::identity::RecordedComponent {
            kind: self.kind.to_string(),
            version: self.version.clone(),
            patch: self.patch.clone(),
        };
        let others = self
            .with
            .iter()
            .map(|c| kvlower_core::identity::RecordedComponent {
                kind: c.kind.to_string(),
                version: c.version.clone(),
                patch: c.patch.clone(),
            });
        kvlower_core::identity::RecordedRuntime {
            components: std::iter::once(engine).chain(others).collect(),
        }
    }
}

/// The LoRA adapter the claim's KV was computed with, or the base model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AdapterIdentity {
    BaseModel,
    Lora {
        #[serde(default)]
        lora_id: Option<i64>,
        #[serde(default)]
        lora_name: Option<String>,
    },
}

/// Fixed cache identity (Table 5). Every field is optional on input so that a missing
/// one becomes a reason on every claim rather than a parse error.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheIdentity {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub tokenizer: Option<String>,
    #[serde(default)]
    pub hash_domain: Option<HashDomain>,
    #[serde(default)]
    pub runtime: Option<RuntimeIdentity>,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub adapter: Option<AdapterIdentity>,
    #[serde(default)]
    pub block_size: Option<NonZeroU32>,
    /// vLLM's `kv_cache_report_mode` for the run (`incremental`: a repeated
    /// `BlockStored` is a new physical copy; `full`: it may be a re-announced hit).
    /// Optional: a capture header's `--meta kv_cache_report_mode=` supplies it too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_cache_report_mode: Option<String>,
    /// The cache salt the claim's requests carried (vLLM's first-block extra key,
    /// SGLang/TensorRT-LLM `cache_salt`): a salted root block matches a claim only when
    /// its salt is this one (docs/join.md, "Extra hash inputs and cache salts").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_salt: Option<String>,
    /// Whether the engine ran with LoRA adapters enabled. Some events name no adapter —
    /// TensorRT-LLM's JSON serializer leaves `lora_id` out, its streaming frames and
    /// SGLang before 0.5.23 publish none — so such a block's adapter is unknown: only
    /// `false` (the engine served the base model alone) lets it materialize a
    /// base-model claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora_enabled: Option<bool>,
    /// The data-parallel rank whose cache the claims live in. Each rank is its own
    /// cache (and publisher): with several in one stream, the join judges this one and
    /// counts the others as ignored; left out, a second rank is an ambiguity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_parallel_rank: Option<i64>,
    /// TensorRT-LLM's attention window size (`window_size`) whose blocks the claims
    /// are judged on. With variable sliding windows (VSWA) one event counter carries
    /// several windows' pools: the join judges this one and counts the others as
    /// ignored; left out, a second window size is an ambiguity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_size: Option<i64>,
}

impl CacheIdentity {
    /// Names of the fields the registry left out, in declaration order.
    pub fn missing_fields(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        let blank = |s: &Option<String>| s.as_deref().is_none_or(|s| s.trim().is_empty());
        if blank(&self.model) {
            missing.push("model");
        }
        if blank(&self.tokenizer) {
            missing.push("tokenizer");
        }
        if self
            .hash_domain
            .as_ref()
            .is_none_or(|h| h.name.trim().is_empty())
        {
            missing.push("hash_domain");
        }
        if self
            .runtime
            .as_ref()
            .is_none_or(|r| r.version.trim().is_empty())
        {
            missing.push("runtime");
        }
        if blank(&self.namespace) {
            missing.push("namespace");
        }
        if self.adapter.is_none() {
            missing.push("adapter");
        }
        if self.block_size.is_none() {
            missing.push("block_size");
        }
        missing
    }
}

/// A reference into a token-map file (tokenizer output saved before the run).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenMapRef {
    /// Path of the JSON token map, relative to the registry file.
    pub file: String,
    /// Entry name inside the map.
    pub key: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegistry {
    schema_version: u32,
    #[serde(default)]
    cache_identity: CacheIdentity,
    claims: Vec<RawClaim>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    claim_id: ClaimId,
    #[serde(default)]
    reusable_object_id: Option<ObjectId>,
    #[serde(default)]
    request_ids: Vec<String>,
    #[serde(default)]
    token_ids: Option<Vec<u32>>,
    #[serde(default)]
    token_map: Option<TokenMapRef>,
    #[serde(default)]
    predicate: Option<Predicate>,
    #[serde(default)]
    registered_before: Option<StreamPoint>,
    #[serde(default)]
    observe_at: Option<StreamPoint>,
}

/// A token map file: `{"tokenizer": "...", "entries": {"<key>": [token ids]}}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenMapFile {
    tokenizer: String,
    entries: BTreeMap<String, Vec<u32>>,
}

/// One registered claim, typed. Registry-level problems are already in `reasons`.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub id: ClaimId,
    pub object: Option<ObjectId>,
    pub tokens: Option<Vec<u32>>,
    pub predicate: Option<Predicate>,
    pub registered_before: Option<StreamPoint>,
    pub observe_at: Option<StreamPoint>,
    /// Why this claim cannot be judged whatever the events say.
    pub reasons: Vec<Reason>,
}

/// The typed registry.
#[derive(Debug, Clone, PartialEq)]
pub struct Registry {
    pub cache_identity: CacheIdentity,
    pub claims: Vec<Claim>,
}

impl Registry {
    /// Reads the registry at `path` (token maps resolve relative to its folder).
    pub fn load(path: &Path) -> Result<Registry, JoinError> {
        let src = crate::input::files::read_text(path, kvlower_fs::FileKind::Registry)?;
        Registry::parse(&src, path)
    }

    /// Parses registry text; `path` names it in errors and anchors token-map paths.
    pub fn parse(src: &str, path: &Path) -> Result<Registry, JoinError> {
        let raw: RawRegistry = kvlower_yaml::from_str(src).map_err(|e| JoinError::yaml(path, e))?;
        if raw.schema_version != REGISTRY_SCHEMA_VERSION {
            return Err(JoinError::Registry {
                path: path.to_path_buf(),
                location: None,
                yaml_path: "schema_version".into(),
                message: format!(
                    "unsupported schema_version {} (this kvlower reads {REGISTRY_SCHEMA_VERSION})",
                    raw.schema_version
                ),
            });
        }
        // A capture header records one `patch`, the engine's: a patch on a `with`
        // component could never be checked against what ran (docs/capture-format.md).
        let with = raw
            .cache_identity
            .runtime
            .as_ref()
            .map_or(&[][..], |r| &r.with[..]);
        if let Some((i, c)) = with.iter().enumerate().find(|(_, c)| c.patch.is_some()) {
            return Err(JoinError::Registry {
                path: path.to_path_buf(),
                location: None,
                yaml_path: format!("cache_identity.runtime.with[{i}].patch"),
                message: format!(
                    "the `with` component {} {} carries a patch: a capture header records only the engine's `patch`, so a patch on a `with` component is refused",
                    c.kind.name(),
                    c.version
                ),
            });
        }
        let mut maps: BTreeMap<PathBuf, TokenMapFile> = BTreeMap::new();
        let mut claims = Vec::with_capacity(raw.claims.len());
        for rc in raw.claims {
            let mut reasons = Vec::new();
            let tokens = match (rc.token_ids, rc.token_map) {
                (Some(_), Some(_)) => {
                    reasons.push(Reason::AmbiguousTokenSource);
                    None
                }
                (None, None) => {
                    reasons.push(Reason::MissingTokenIds);
                    None
                }
                (Some(t), None) => Some(t),
                (None, Some(r)) => {
                    let map_path = crate::input::files::confine(path, &r.file)?;
                    if !maps.contains_key(&map_path) {
                        let map = load_token_map(&map_path)?;
                        maps.insert(map_path.clone(), map);
                    }
                    match maps.get(&map_path) {
                        Some(map) => {
                            let registry_tok = raw.cache_identity.tokenizer.as_deref();
                            if registry_tok.is_some_and(|t| t != map.tokenizer) {
                                reasons.push(Reason::TokenMapTokenizerMismatch {
                                    token_map: map.tokenizer.clone(),
                                    registry: registry_tok.unwrap_or_default().to_string(),
                                });
                            }
                            match map.entries.get(&r.key) {
                                Some(t) => Some(t.clone()),
                                None => {
                                    reasons.push(Reason::MissingTokenIds);
                                    None
                                }
                            }
                        }
                        None => None,
                    }
                }
            };
            if tokens.as_ref().is_some_and(Vec::is_empty) {
                reasons.push(Reason::MissingTokenIds);
            }
            if rc
                .reusable_object_id
                .as_ref()
                .is_none_or(|o| o.0.trim().is_empty())
            {
                reasons.push(Reason::MissingReusableObjectId);
            }
            if rc.predicate.is_none() {
                reasons.push(Reason::MissingPredicate);
            }
            if rc.registered_before.is_none() {
                reasons.push(Reason::MissingRegistrationPoint);
            }
            if rc.observe_at.is_none() {
                reasons.push(Reason::MissingObservationPoint);
            }
            if rc.claim_id.0.trim().is_empty() {
                reasons.push(Reason::UnstableClaimId);
            }
            if let Some(req) = rc.request_ids.iter().find(|r| **r == rc.claim_id.0) {
                reasons.push(Reason::ClaimIdIsRequestId {
                    request_id: req.clone(),
                });
            }
            if let (Some(StreamPoint::EventIndex(reg)), Some(StreamPoint::EventIndex(obs))) =
                (rc.registered_before, rc.observe_at)
                && reg > obs
            {
                reasons.push(Reason::RegisteredAfterObservationPoint);
            }
            if let (Some(StreamPoint::Timestamp(reg)), Some(StreamPoint::Timestamp(obs))) =
                (rc.registered_before, rc.observe_at)
                && reg > obs
            {
                reasons.push(Reason::RegisteredAfterObservationPoint);
            }
            claims.push(Claim {
                id: rc.claim_id,
                object: rc.reusable_object_id,
                tokens,
                predicate: rc.predicate,
                registered_before: rc.registered_before,
                observe_at: rc.observe_at,
                reasons,
            });
        }
        let mut registry = Registry {
            cache_identity: raw.cache_identity,
            claims,
        };
        registry.cross_claim_checks();
        Ok(registry)
    }

    /// Checks that need every claim: unique ids, single owner per claimed block, and
    /// predicates the claim's whole blocks can satisfy.
    fn cross_claim_checks(&mut self) {
        let mut seen: BTreeMap<ClaimId, usize> = BTreeMap::new();
        for c in &self.claims {
            *seen.entry(c.id.clone()).or_default() += 1;
        }
        let block_size = self.cache_identity.block_size;
        let required: Vec<Option<Vec<&[u32]>>> = self
            .claims
            .iter()
            .map(|c| required_chunks(c, block_size))
            .collect();
        let mut extra: Vec<Vec<Reason>> = vec![Vec::new(); self.claims.len()];
        for (i, c) in self.claims.iter().enumerate() {
            if seen.get(&c.id).copied().unwrap_or(0) > 1 {
                extra[i].push(Reason::DuplicateClaimId);
            }
            if let (Some(bs), Some(p), Some(t)) = (block_size, c.predicate, c.tokens.as_ref()) {
                let full = (t.len() as u64) / u64::from(bs.get());
                let need = u64::from(p.required_blocks(bs));
                if need > full {
                    extra[i].push(Reason::PredicateExceedsClaimedBlocks {
                        required_blocks: need,
                        full_blocks: full,
                    });
                }
            }
        }
        // Two claims whose required prefixes share leading blocks claim the same KV
        // blocks; with different object ids their owner is ambiguous. Indexed by first
        // block (not every pair: issue 21 item 8), each claim's others in registry order.
        let mut by_first: HashMap<&[u32], Vec<usize>> = HashMap::new();
        for (i, r) in required.iter().enumerate() {
            if let Some(first) = r.as_ref().and_then(|r| r.first()) {
                by_first.entry(first).or_default().push(i);
            }
        }
        for bucket in by_first.values() {
            let object = |k: usize| {
                bucket
                    .get(k)
                    .and_then(|&j| self.claims.get(j))
                    .map(|c| &c.object)
            };
            // skip[k]: the first position after k whose object differs from k's, so a
            // claim's walk over its bucket steps over runs of its own object in one go
            // (the walk costs at most twice what it pushes).
            let mut skip = vec![bucket.len(); bucket.len()];
            for k in (0..bucket.len().saturating_sub(1)).rev() {
                skip[k] = if object(k + 1) != object(k) {
                    k + 1
                } else {
                    skip[k + 1]
                };
            }
            for &i in bucket {
                let Some(own) = self.claims.get(i).map(|c| &c.object) else {
                    continue;
                };
                let mut k = 0;
                while let Some(&j) = bucket.get(k) {
                    match self.claims.get(j) {
                        Some(o) if o.object != *own => {
                            if let Some(e) = extra.get_mut(i) {
                                e.push(Reason::DuplicateBlockOwner {
                                    other_claim: o.id.clone(),
                                });
                            }
                            k += 1;
                        }
                        _ => k = skip.get(k).copied().unwrap_or(bucket.len()),
                    }
                }
            }
        }
        for (c, mut r) in self.claims.iter_mut().zip(extra) {
            c.reasons.append(&mut r);
        }
    }
}

/// The claim's leading full-block chunks that its predicate needs, when computable.
pub(crate) fn required_chunks(c: &Claim, block_size: Option<NonZeroU32>) -> Option<Vec<&[u32]>> {
    let bs = block_size?;
    let p = c.predicate?;
    let tokens = c.tokens.as_ref()?;
    let need = p.required_blocks(bs) as usize;
    let chunks: Vec<&[u32]> = tokens.chunks_exact(bs.get() as usize).take(need).collect();
    (chunks.len() == need).then_some(chunks)
}

fn load_token_map(path: &Path) -> Result<TokenMapFile, JoinError> {
    let src = crate::input::files::read_text(path, kvlower_fs::FileKind::TokenMap)?;
    serde_json::from_str(&src).map_err(|e| JoinError::TokenMap {
        path: path.to_path_buf(),
        line: e.line(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicate_parses_tokens_and_rejects_others() {
        let p = Predicate::try_from("leading_prefix_at_least(17)".to_string()).unwrap();
        assert_eq!(p.tokens(), 17);
        assert_eq!(p.required_blocks(NonZeroU32::new(16).unwrap()), 2);
        assert_eq!(
            Predicate::try_from("leading_prefix_at_least( 8 tokens )".to_string())
                .unwrap()
                .tokens(),
            8
        );
        for bad in [
            "leading_prefix_at_least(0)",
            "leading_prefix_at_least(2 blocks)",
            "leading_prefix_at_least(x)",
            "exact_prefix(4)",
            "leading_prefix_at_least(4",
        ] {
            assert!(Predicate::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }
}
