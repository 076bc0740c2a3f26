//! The evidence document a join produces (its human rendering is `kvlower_cli::human`).
//!
//! The JSON form is what a descriptor's `telemetry_join` evidence anchors to; `kvlower
//! check` can re-run the join on the committed event file and compare with `==`, so every
//! collection here is sorted and no path is absolutized.

use serde::{Deserialize, Serialize};

use crate::events::Tier;
pub use crate::ids::EventRef;
use crate::ids::{ClaimId, EventFormat, ObjectId};
pub use crate::reason::{Precondition, Reason};
use crate::registry::{CacheIdentity, StreamPoint};

/// Version of the evidence-document layout.
pub const REPORT_SCHEMA_VERSION: u32 = 1;

/// How many of the claim's required blocks are resident at one tier.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct TierCoverage {
    pub tier: Tier,
    pub blocks: u64,
}

kvlower_codes::names! {
    /// The verdict on one claim at its observation point. Only `insufficient_evidence`
    /// carries reasons, and it never says what the join would otherwise have concluded.
    #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(tag = "status")]
    pub enum Verdict {
        /// The predicate held at the observation point.
        Materialized {
            /// Where the current (unbroken) materialization began.
            since: EventRef,
            /// Residency of the required blocks at the observation point, by tier.
            tiers: Vec<TierCoverage>,
        } = "materialized",
        /// The predicate never held up to the observation point (e.g. a partial prefix).
        NotMaterialized {
            matched_prefix_tokens: u64,
            required_tokens: u64,
        } = "not_materialized",
        /// The predicate held, then stopped holding before the observation point.
        Lost {
            materialized_at: EventRef,
            lost_at: EventRef,
        } = "lost",
        InsufficientEvidence {
            reasons: Vec<Reason>,
        } = "insufficient_evidence",
    }
}

impl Verdict {
    /// The verdict's name (the JSON `status` tag).
    pub fn status(&self) -> &'static str {
        self.as_str()
    }
}

/// A change of the predicate's truth, in stream order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Materialized,
    Lost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Transition {
    pub event: EventRef,
    pub change: Change,
}

/// One claim's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimResult {
    pub claim_id: ClaimId,
    pub reusable_object_id: Option<ObjectId>,
    /// The predicate as registered (`leading_prefix_at_least(k)`, k in tokens).
    pub predicate: Option<String>,
    pub observation_point: Option<StreamPoint>,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// Predicate changes up to the observation point (empty when insufficient).
    pub transitions: Vec<Transition>,
    /// Retention priorities the runtime reported on the claim's blocks (TRT-LLM only).
    pub observed_priorities: Vec<u32>,
}

/// Counts about the stream, for the reader and for anchoring.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamSummary {
    pub lines: u64,
    pub events: u64,
    pub stored: u64,
    pub removed: u64,
    pub updated: u64,
    pub cleared: u64,
    pub created: u64,
    pub first_event: Option<EventRef>,
    pub last_event: Option<EventRef>,
    /// Whether the stream carried sequence numbers the join could check for gaps
    /// (TRT-LLM event_id, or a `seq` envelope on vLLM/SGLang lines).
    pub sequence_checked: bool,
    /// Most block records held at once (live blocks plus claim tombstones).
    pub peak_tracked_blocks: u64,
    /// Stream-level ambiguities (each taints claims observed at or after it).
    pub ambiguities: Vec<Reason>,
    /// KV-cache groups whose events were not joined (hybrid models): claims are judged
    /// on group 0, the full-attention group. Absent when every event was group 0.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_groups: Vec<IgnoredGroup>,
    /// Events of cache instances (data-parallel ranks, attention windows) other than
    /// the one the registry selects. Absent when every event was of that instance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignored_instances: Vec<IgnoredInstance>,
}

/// A cache instance (rank, window) the registry did not select, and how many of its
/// events the join left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredInstance {
    /// Its data-parallel rank, as the events name it (`None`: not named).
    pub rank: Option<i64>,
    /// Its attention window size (TensorRT-LLM), as the events name it.
    pub window_size: Option<i64>,
    pub events: u64,
}

/// A KV-cache group the join left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoredGroup {
    pub group_idx: i64,
    /// The cache-spec kind its stores declared (vLLM `kv_cache_spec_kind`), if any.
    pub kind: Option<String>,
    pub events: u64,
    /// Why: a leading-prefix claim is judged on the full-attention group only.
    pub why: String,
}

/// How many claims meet one precondition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreconditionTally {
    /// One of the model's `telemetry_join` preconditions; a document naming any other
    /// is refused when read back.
    #[serde(deserialize_with = "crate::reason::deserialize_join_precondition")]
    pub precondition: Precondition,
    /// `met/total` claims.
    pub claims: String,
    pub held: bool,
}

/// The evidence document of one join.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JoinReport {
    pub schema_version: u32,
    /// Always `telemetry_join`: a reconstruction of observations, never enforcement.
    pub depth: String,
    pub registry: String,
    pub events: String,
    pub format: EventFormat,
    pub cache_identity: CacheIdentity,
    pub stream: StreamSummary,
    pub claims: Vec<ClaimResult>,
    pub preconditions: Vec<PreconditionTally>,
    pub summary: StatusCounts,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCounts {
    pub materialized: u64,
    pub not_materialized: u64,
    pub lost: u64,
    pub insufficient_evidence: u64,
}

impl JoinReport {
    /// The join's own half of "a join document anchors only if…" (`docs/join.md`, "When
    /// a join document can anchor evidence", rule 2): the stream was `sequence_checked`
    /// (a gap would have been seen) with no stream-level ambiguity, and some claim is
    /// `materialized` while none is `insufficient_evidence`. The catalog's half (every
    /// precondition of the recorded depth held) is core's (`anchoring`), read through
    /// [`JoinReport::held_preconditions`].
    pub fn stream_sound(&self) -> bool {
        let materialized = self
            .claims
            .iter()
            .any(|c| matches!(c.verdict, Verdict::Materialized { .. }));
        let insufficient = self
            .claims
            .iter()
            .any(|c| matches!(c.verdict, Verdict::InsufficientEvidence { .. }));
        self.stream.sequence_checked
            && self.stream.ambiguities.is_empty()
            && materialized
            && !insufficient
    }

    /// The preconditions the document reports as held, in the model's vocabulary.
    pub fn held_preconditions(&self) -> impl Iterator<Item = kvlower_core::Precondition> + '_ {
        self.preconditions
            .iter()
            .filter(|p| p.held)
            .map(|p| p.precondition)
    }

    /// The claim result for `id`, if registered.
    pub fn claim(&self, id: &str) -> Option<&ClaimResult> {
        self.claims.iter().find(|c| c.claim_id.0 == id)
    }
}

/// `reason_name (field: value, ...)` — the snake_case tag with its details.
pub fn describe_reason(r: &Reason) -> String {
    let v = serde_json::to_value(r).unwrap_or_default();
    let name = r.as_str().to_owned();
    let mut details = Vec::new();
    if let Some(m) = v.as_object() {
        for (k, val) in m {
            if k == "reason" {
                continue;
            }
            let rendered = match val {
                serde_json::Value::Object(o)
                    if o.contains_key("index") && o.contains_key("line") =>
                {
                    format!(
                        "event {} line {}",
                        o.get("index").cloned().unwrap_or_default(),
                        o.get("line").cloned().unwrap_or_default()
                    )
                }
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            details.push(format!("{k}: {rendered}"));
        }
    }
    if details.is_empty() {
        name
    } else {
        format!("{name} ({})", details.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A join document's preconditions are the model's `telemetry_join` ones under
    /// their model names, and reading one back refuses any other of the model's
    /// preconditions: a drift here would make `check` miss (or invent) a held one.
    #[test]
    fn tallied_preconditions_are_the_models_telemetry_join_ones() {
        use kvlower_core::catalog::TELEMETRY_JOIN_PRECONDITIONS;
        for p in TELEMETRY_JOIN_PRECONDITIONS {
            let tally = PreconditionTally {
                precondition: p,
                claims: "1/1".into(),
                held: true,
            };
            let json = serde_json::to_value(&tally).unwrap_or_default();
            assert_eq!(json["precondition"], p.name(), "{json}");
            let back: Result<PreconditionTally, _> = serde_json::from_value(json);
            assert_eq!(back.ok(), Some(tally));
        }
        for &p in kvlower_core::Precondition::ALL {
            if TELEMETRY_JOIN_PRECONDITIONS.contains(&p) {
                continue;
            }
            let json = serde_json::json!({"precondition": p.name(), "claims": "1/1", "held": true});
            let back: Result<PreconditionTally, _> = serde_json::from_value(json);
            assert!(back.is_err(), "{p} is not a telemetry_join precondition");
        }
    }

    fn report_with(verdicts: Vec<Verdict>, sequence_checked: bool) -> JoinReport {
        JoinReport {
            schema_version: REPORT_SCHEMA_VERSION,
            depth: "telemetry_join".into(),
            registry: "registry.yaml".into(),
            events: "events.jsonl".into(),
            format: EventFormat::Trtllm,
            cache_identity: CacheIdentity::default(),
            stream: StreamSummary {
                sequence_checked,
                ..StreamSummary::default()
            },
            claims: verdicts
                .into_iter()
                .enumerate()
                .map(|(i, verdict)| ClaimResult {
                    claim_id: ClaimId(format!("claim-{i}")),
                    reusable_object_id: None,
                    predicate: None,
                    observation_point: None,
                    verdict,
                    transitions: Vec::new(),
                    observed_priorities: Vec::new(),
                })
                .collect(),
            preconditions: Vec::new(),
            summary: StatusCounts::default(),
        }
    }

    /// The join's half of the anchoring rule, clause by clause: each missing
    /// clause alone makes the document unsound.
    #[test]
    fn a_join_document_is_stream_sound_only_with_every_clause() {
        let materialized = || Verdict::Materialized {
            since: EventRef { index: 0, line: 1 },
            tiers: Vec::new(),
        };
        let insufficient = || Verdict::InsufficientEvidence {
            reasons: vec![Reason::MissingPredicate],
        };
        let not_materialized = || Verdict::NotMaterialized {
            matched_prefix_tokens: 0,
            required_tokens: 1,
        };
        assert!(report_with(vec![materialized(), not_materialized()], true).stream_sound());
        // No sequence numbers: a gap could have gone unseen.
        assert!(!report_with(vec![materialized()], false).stream_sound());
        // No claim materialized.
        assert!(!report_with(vec![not_materialized()], true).stream_sound());
        assert!(!report_with(Vec::new(), true).stream_sound());
        // One claim insufficient taints the document.
        assert!(!report_with(vec![materialized(), insufficient()], true).stream_sound());
        // A stream-level ambiguity.
        let mut ambiguous = report_with(vec![materialized()], true);
        ambiguous.stream.ambiguities.push(Reason::DroppedFrame {
            event: EventRef { index: 0, line: 1 },
        });
        assert!(!ambiguous.stream_sound());
    }

    /// A reason's name is its JSON tag, for a unit and a struct variant.
    #[test]
    fn reason_names_are_the_json_tags() {
        let event = EventRef { index: 3, line: 4 };
        for r in [
            Reason::MissingRegistrationPoint,
            Reason::SequenceGap {
                event,
                expected: 1,
                found: 2,
            },
            Reason::UncertainCopyCount {
                kv_cache_report_mode: None,
            },
        ] {
            let json = serde_json::to_value(&r).unwrap_or_default();
            assert_eq!(json["reason"], r.as_str(), "{json}");
            assert_eq!(r.name(), r.as_str());
        }
    }
}
