//! Checks a parsed descriptor against what the types cannot express: anchors
//! complete and naming real repository files, adapters at real depths, each
//! precondition belonging to its adapter's depth.
//!
//! These findings fail `kvlower check`; the judgment independently treats the
//! same defects as "unanchored" (fail closed), so a descriptor that bypasses
//! this module still cannot gain a label from them.

use kvlower_core::descriptor::{Anchor, AnchorDefect, Environment, anchor_defects};
use kvlower_core::{Catalog, Depth, Descriptor};

use crate::diagnostic::{Code, Diagnostic};

pub(crate) fn descriptor(
    file: &str,
    src: &str,
    d: &Descriptor,
    catalog: &Catalog,
    env: &dyn Environment,
    out: &mut Vec<Diagnostic>,
) {
    let mut anchor_findings = Vec::new();
    let mut anchor = |path: String, a: &Anchor| {
        for defect in anchor_defects(a, None, env) {
            let code = match defect {
                AnchorDefect::RepoFileMissing => Code::AnchorFileMissing,
                AnchorDefect::TraceVerdictDisagrees
                | AnchorDefect::TraceVerdictUnverified
                | AnchorDefect::JoinEvidenceDisagrees
                | AnchorDefect::JoinEvidenceInsufficient => Code::AnchorVerdictDisagrees,
                _ => Code::AnchorIncomplete,
            };
            let hint = match defect {
                AnchorDefect::NoKind => {
                    "set `kind` to paper, public_source, docs_page or repo_file"
                }
                AnchorDefect::MissingField(_) => {
                    "paper needs `section`; public_source needs `repository`, `commit`, `path`; docs_page needs `url`, `retrieved`; repo_file needs `path`"
                }
                AnchorDefect::NotACommit => "use the full or abbreviated hexadecimal commit id",
                AnchorDefect::NoNote => "say in `note` what the anchored source shows",
                AnchorDefect::PathNotRelative => {
                    "write the path relative to the repository (or artifact) root"
                }
                AnchorDefect::RepoFileMissing => {
                    "commit the file, or anchor to the public source or paper section instead"
                }
                AnchorDefect::VerdictNeedsRepoFile => {
                    "a verdict can only be re-checked on a trace committed here"
                }
                AnchorDefect::TraceVerdictDisagrees | AnchorDefect::TraceVerdictUnverified => {
                    "run `kvlower gate <path>` to see what the trace supports, and fix the verdict or the trace"
                }
                AnchorDefect::JoinEvidenceDisagrees => {
                    "regenerate it with `kvlower join --output json` from the repository root and commit it"
                }
                AnchorDefect::JoinEvidenceInsufficient => {
                    "anchor only a join whose preconditions all hold, whose stream is sequenced, and with a materialized claim"
                }
                AnchorDefect::DocsPageIsNotATrace => {
                    "anchor run-time evidence to the trace or the paper section instead"
                }
                AnchorDefect::TraceOrderNotPreserved
                | AnchorDefect::TraceClaimScopeNotPreserved => "",
            };
            // Name the missing file: the reader should not have to find the anchor first.
            let message = match (&defect, a.path.as_deref()) {
                (AnchorDefect::RepoFileMissing, Some(p)) => {
                    let shown: String = p.chars().take(200).collect();
                    format!("anchored file `{shown}` is not in the repository")
                }
                _ => defect.to_string(),
            };
            let mut diag = Diagnostic::new(code, file, message)
                .at_path(path.clone())
                .located_in(src);
            if !hint.is_empty() {
                diag = diag.with_hint(hint);
            }
            anchor_findings.push(diag);
        }
    };
    for (i, e) in d.native.iter().enumerate() {
        anchor(format!("native[{i}].anchor"), &e.anchor);
    }
    for (i, a) in d.atoms.iter().enumerate() {
        anchor(format!("atoms[{i}].anchor"), &a.anchor);
    }
    for (i, s) in d.signals.iter().enumerate() {
        anchor(format!("signals[{i}].anchor"), &s.anchor);
    }
    let mut seen_depths = Vec::new();
    for (ai, adapter) in d.adapters.iter().enumerate() {
        let path = format!("adapters[{ai}]");
        for (i, e) in adapter.evidence.iter().enumerate() {
            anchor(format!("{path}.evidence[{i}].anchor"), &e.anchor);
        }
        for (p, a) in &adapter.preconditions {
            anchor(format!("{path}.preconditions.{p}"), a);
        }
        if adapter.depth == Depth::None {
            out.push(
                Diagnostic::new(
                    Code::AdapterAtNativeDepth,
                    file,
                    "an adapter cannot sit at depth `none`",
                )
                .at_path(format!("{path}.depth"))
                .located_in(src)
                .with_hint("move its evidence under `native:`, or give the adapter its real depth"),
            );
            continue;
        }
        if seen_depths.contains(&adapter.depth) {
            out.push(
                Diagnostic::new(
                    Code::DuplicateAdapterDepth,
                    file,
                    format!("a second adapter at depth `{}`", adapter.depth),
                )
                .at_path(format!("{path}.depth"))
                .located_in(src)
                .with_hint("merge the adapters: one trust boundary per depth"),
            );
        }
        seen_depths.push(adapter.depth);
        let allowed = catalog
            .depth(adapter.depth)
            .map(|s| s.preconditions.clone())
            .unwrap_or_default();
        for p in adapter
            .preconditions
            .keys()
            .filter(|p| !allowed.contains(p))
        {
            let names: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            out.push(
                Diagnostic::new(
                    Code::PreconditionWrongDepth,
                    file,
                    format!("`{p}` is not a precondition of depth `{}`", adapter.depth),
                )
                .at_path(format!("{path}.preconditions.{p}"))
                .located_in(src)
                .with_hint(format!("this depth's preconditions: {}", names.join(", "))),
            );
        }
    }
    out.extend(anchor_findings);
}
