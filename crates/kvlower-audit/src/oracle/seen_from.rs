//! The environment as the oracle's rows see it ([`crate::oracle`]): evidence recorded
//! on another runtime counts as absent.

use std::collections::BTreeSet;

use kvlower_core::environment::RepoFile;
use kvlower_core::{Descriptor, Environment};

/// The environment as seen from one descriptor: an evidence document recorded on
/// another runtime is as good as absent. Written here on its own terms (the
/// checker's rule is `kvlower_core::anchoring::recorded_runtime_fits`).
pub(super) struct SeenFrom<'a> {
    pub(super) env: &'a dyn Environment,
    pub(super) d: &'a Descriptor,
}

impl SeenFrom<'_> {
    /// The evidence records exactly the descriptor's components: the same kinds
    /// (known names, not `other`), versions (ASCII `[0-9A-Za-z][0-9A-Za-z._+-]*`,
    /// compared case-blind, a `v` before a digit ignored) and patches.
    fn is_ours(&self, recorded: Option<&kvlower_core::identity::RecordedRuntime>) -> bool {
        fn version(v: &str) -> Option<String> {
            let b = v.as_bytes();
            let first_ok = b.first().is_some_and(u8::is_ascii_alphanumeric);
            let rest_ok = b
                .iter()
                .all(|c| c.is_ascii_alphanumeric() || b"._+-".contains(c));
            if !(first_ok && rest_ok) {
                return None;
            }
            let v = v.to_ascii_lowercase();
            Some(match v.strip_prefix('v') {
                Some(r) if r.bytes().next().is_some_and(|c| c.is_ascii_digit()) => r.to_string(),
                _ => v,
            })
        }
        fn patch(p: &Option<String>) -> Option<Option<String>> {
            match p {
                None => Some(None),
                Some(p) => {
                    let b = p.as_bytes();
                    let ok = b.first().is_some_and(u8::is_ascii_alphanumeric)
                        && b.iter()
                            .all(|c| c.is_ascii_alphanumeric() || b"._+-/@".contains(c));
                    ok.then(|| Some(p.to_ascii_lowercase()))
                }
            }
        }
        let Some(r) = recorded else {
            return false;
        };
        let mut mine = BTreeSet::new();
        for c in &self.d.runtime.identity {
            let kind = c.kind.name();
            let (Some(v), Some(p)) = (version(&c.version), patch(&c.patch)) else {
                return false;
            };
            if kind == "other" {
                return false;
            }
            mine.insert((kind.to_string(), v, p));
        }
        let mut theirs = BTreeSet::new();
        for c in &r.components {
            let known = kvlower_core::identity::RuntimeKind::ALL
                .iter()
                .any(|k| k.name() == c.kind);
            let (Some(v), Some(p)) = (version(&c.version), patch(&c.patch)) else {
                return false;
            };
            if !known || c.kind == "other" {
                return false;
            }
            theirs.insert((c.kind.clone(), v, p));
        }
        !mine.is_empty() && mine == theirs
    }
}

impl Environment for SeenFrom<'_> {
    fn repo_file(&self, path: &str) -> RepoFile {
        match self.env.repo_file(path) {
            RepoFile::JoinDocument(f) if !self.is_ours(f.runtime.as_ref()) => RepoFile::Missing,
            RepoFile::RoutingDocument(f) if !self.is_ours(f.runtime.as_ref()) => RepoFile::Missing,
            RepoFile::CampaignDocument(f) if !self.is_ours(f.runtime.as_ref()) => RepoFile::Missing,
            other => other,
        }
    }

    fn trace_verdict(
        &self,
        path: &str,
        verdict: &kvlower_core::descriptor::ClaimedVerdict,
    ) -> kvlower_core::environment::TraceVerdictFacts {
        let mut facts = self.env.trace_verdict(path, verdict);
        if facts.defect.is_none() && !self.is_ours(facts.runtime.as_ref()) {
            facts.defect = Some(kvlower_core::anchor_form::AnchorDefect::TraceVerdictDisagrees);
        }
        facts
    }

    fn today(&self) -> (i32, u32, u32) {
        self.env.today()
    }

    fn repo_file_sha256(&self, path: &str) -> Result<String, String> {
        self.env.repo_file_sha256(path)
    }
}
