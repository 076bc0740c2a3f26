//! What each [`AnchorDefect`] says, in one place (issue 50 item 4): its message
//! (`Display`), the finding code `kvlower check` reports it under ([`AnchorDefect::code`],
//! `None` for a defect that is judged, not reported) and its hint ([`AnchorDefect::hint`]).
//! A new variant gets all three here, or this file does not compile.

use kvlower_codes::Code;

use super::{AnchorDefect, Reason};
use crate::descriptor::Anchor;

impl std::fmt::Display for AnchorDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnchorDefect::NoKind => f.write_str("anchor has no `kind`"),
            AnchorDefect::MissingField(field) => write!(f, "anchor lacks `{field}`"),
            AnchorDefect::FieldNotForKind(field) => {
                write!(f, "anchor field `{field}` does not belong to this anchor kind")
            }
            AnchorDefect::ControlCharacter(field) => {
                write!(f, "anchor `{field}` contains a control character")
            }
            AnchorDefect::NotACommit => {
                f.write_str("anchor `commit` is not a hexadecimal commit id (7 to 40 digits)")
            }
            AnchorDefect::NotOwnerName => {
                f.write_str("anchor `repository` is not `owner/name`")
            }
            AnchorDefect::NotAUrl => f.write_str("anchor `url` is not an http(s):// URL"),
            AnchorDefect::NotADate => {
                f.write_str("anchor `retrieved` is not an ISO date (YYYY-MM-DD)")
            }
            AnchorDefect::DateInFuture => f.write_str("anchor `retrieved` is in the future"),
            AnchorDefect::UnknownPaperSection => f.write_str(
                "anchor `section` cites no section of the paper (§1–§14, §6.1–§6.3, §8.1–§8.4, Table 1–11, Appendix A)",
            ),
            AnchorDefect::NoNote => f.write_str("anchor has no `note` saying what it shows"),
            AnchorDefect::Placeholder => f.write_str(
                "anchor `note` is a placeholder: nothing has been anchored yet",
            ),
            AnchorDefect::PathNotRelative => {
                f.write_str("anchor `path` must be relative and stay inside its root")
            }
            AnchorDefect::TraceOrderNotPreserved => {
                f.write_str("trace anchor does not state `preserves_order: true`")
            }
            AnchorDefect::TraceClaimScopeNotPreserved => {
                f.write_str("trace anchor does not state `preserves_claim_scope: true`")
            }
            AnchorDefect::RepoFileMissing => f.write_str("anchored file is not in the repository"),
            AnchorDefect::RepoFileRefused => f.write_str(
                "anchored file refused: it resolves outside the repository, is not a regular file, or is too large",
            ),
            AnchorDefect::OwnFile => f.write_str(
                "anchored file is one of kvlower's own inputs or outputs (capabilities/, modes/, results/, schemas/, bad_lowering/), not evidence",
            ),
            AnchorDefect::NotReRunnable => f.write_str(
                "a repository file backing run-time evidence must be re-runnable: a trace with a claimed `verdict`, a join evidence document, or a routing gate document",
            ),
            AnchorDefect::VerdictNeedsRepoFile => {
                f.write_str("a claimed gate `verdict` needs a `repo_file` trace anchor")
            }
            AnchorDefect::VerdictIsAFailure => {
                f.write_str("the anchored gate verdict is a failure (`pass: false`)")
            }
            AnchorDefect::GateDoesNotWitness { gate } => {
                write!(f, "gate {gate} does not witness this obligation")
            }
            AnchorDefect::TraceVerdictDisagrees => f.write_str(
                "re-running the gate on the anchored trace does not give the claimed verdict",
            ),
            AnchorDefect::CampaignDoesNotHold(why) => write!(
                f,
                "re-running the anchored gate campaign does not give what it states: {why}"
            ),
            AnchorDefect::CampaignDoesNotWitness => f.write_str(
                "the gate campaign witnesses no gate that witnesses this (a gate counts when some scenario passes it in every run and some control scenario in none)",
            ),
            AnchorDefect::TraceVerdictUnverified => {
                f.write_str("the claimed gate verdict could not be re-run")
            }
            AnchorDefect::JoinEvidenceDisagrees => f.write_str(
                "re-running the join on the document's registry and event file does not reproduce it",
            ),
            AnchorDefect::JoinPatchFilesDisagree(why) => write!(
                f,
                "the join document's runtime is patched, and the anchor's `source_files` are not the patch files its capture recorded: {why}"
            ),
            AnchorDefect::JoinEventsRecordNoRuntime => f.write_str(
                "the join document's events record no runtime identity (JSON Lines, or a capture header without `meta.runtime`): only its registry names the runtime, so it anchors nothing",
            ),
            AnchorDefect::DocsPageIsNotATrace => {
                f.write_str("a documentation page cannot anchor run-time (trace-scoped) evidence")
            }
            AnchorDefect::JoinEvidenceInsufficient => f.write_str(
                "the anchored join evidence does not hold: a precondition unmet, an unsequenced stream, or no unambiguous materialized claim",
            ),
            AnchorDefect::JoinDocumentWrongDepth { recorded } => write!(
                f,
                "the join document records depth {recorded}; it cannot anchor evidence at another depth"
            ),
            AnchorDefect::EvidenceOfAnotherRuntime => f.write_str(
                "the evidence records another runtime than this descriptor's `runtime.identity` (or none, or one that cannot be decoded): it must record exactly the same kinds, versions and patches",
            ),
            AnchorDefect::JoinDocumentDoesNotWitness => f.write_str(
                "a join document does not witness this (catalog `join_documents`: telemetry obligations and the preconditions that held)",
            ),
            AnchorDefect::RoutingEvidenceDisagrees => f.write_str(
                "re-running the routing gate on the document's trace and registry does not reproduce it",
            ),
            AnchorDefect::RoutingEvidenceInsufficient => f.write_str(
                "the anchored routing gate document does not hold: a routing_hook precondition failed for some claim",
            ),
            AnchorDefect::RoutingDocumentWrongDepth { recorded } => write!(
                f,
                "the routing gate document records depth {recorded}; it cannot anchor evidence at another depth"
            ),
            AnchorDefect::ScopeBeyondAnchor { most } => write!(
                f,
                "this anchor can show at most `{most}` scope: a docs page is documentation, a public source file that is not a published trace or result is source inspection"
            ),
            AnchorDefect::RoutingDocumentDoesNotWitness => f.write_str(
                "a routing gate document does not witness this (only routing_hook obligations every claim passed, and the preconditions that held)",
            ),
        }
    }
}

impl AnchorDefect {
    /// The finding code of this defect, or `None` when it is not a finding.
    /// Which anchor defects are findings. Defects that only say the evidence does
    /// not count *for this use* (a failing verdict, a gate or join document that
    /// does not witness the obligation, trace flags) are judged, not reported:
    /// an honest `missing` item may rest on a failing trace.
    pub fn code(&self, supported: bool) -> Option<Code> {
        match self {
            AnchorDefect::NoKind
            | AnchorDefect::MissingField(_)
            | AnchorDefect::FieldNotForKind(_)
            | AnchorDefect::ControlCharacter(_)
            | AnchorDefect::NotACommit
            | AnchorDefect::NotOwnerName
            | AnchorDefect::NotAUrl
            | AnchorDefect::NotADate
            | AnchorDefect::DateInFuture
            | AnchorDefect::UnknownPaperSection
            | AnchorDefect::NoNote
            | AnchorDefect::PathNotRelative
            | AnchorDefect::VerdictNeedsRepoFile => Some(Code::AnchorIncomplete),
            AnchorDefect::Placeholder => Some(Code::AnchorPlaceholder),
            AnchorDefect::OwnFile => Some(Code::AnchorSelfReference),
            AnchorDefect::RepoFileMissing => Some(Code::AnchorFileMissing),
            AnchorDefect::RepoFileRefused => Some(Code::AnchorRefused),
            // Mis-scoped whatever the item claims: another runtime's run is no evidence here.
            AnchorDefect::EvidenceOfAnotherRuntime => Some(Code::AnchorOtherRuntime),
            // Events recording no runtime are evidence of none: like a trace without a header.
            AnchorDefect::JoinEventsRecordNoRuntime => Some(Code::AnchorOtherRuntime),
            // A self-declared scope is refused whatever the status: the anchor bounds it.
            AnchorDefect::ScopeBeyondAnchor { .. } => Some(Code::AnchorScopeBeyondKind),
            // Only for `supported` evidence: a `missing` or `partial` item may
            // honestly rest on a file nothing re-runs.
            AnchorDefect::NotReRunnable => supported.then_some(Code::AnchorNotRerunnable),
            AnchorDefect::TraceVerdictDisagrees
            | AnchorDefect::TraceVerdictUnverified
            | AnchorDefect::JoinEvidenceDisagrees
            | AnchorDefect::JoinPatchFilesDisagree(_)
            | AnchorDefect::JoinEvidenceInsufficient
            | AnchorDefect::RoutingEvidenceDisagrees
            | AnchorDefect::RoutingEvidenceInsufficient
            | AnchorDefect::CampaignDoesNotHold(_) => Some(Code::AnchorVerdictDisagrees),
            AnchorDefect::TraceOrderNotPreserved
            | AnchorDefect::TraceClaimScopeNotPreserved
            | AnchorDefect::DocsPageIsNotATrace
            | AnchorDefect::VerdictIsAFailure
            | AnchorDefect::GateDoesNotWitness { .. }
            | AnchorDefect::JoinDocumentWrongDepth { .. }
            | AnchorDefect::JoinDocumentDoesNotWitness
            | AnchorDefect::RoutingDocumentWrongDepth { .. }
            | AnchorDefect::RoutingDocumentDoesNotWitness
            | AnchorDefect::CampaignDoesNotWitness => None,
        }
    }

    /// What to do about the defect of anchor `a` (empty: nothing to say, the defect is
    /// judged, not reported).
    pub fn hint(&self, a: &Anchor) -> String {
        let path = a.path.as_deref().unwrap_or("");
        match self {
        AnchorDefect::NoKind => "set `kind` to paper, public_source, docs_page or repo_file".into(),
        AnchorDefect::MissingField(_) => "paper needs `section`; public_source needs `repository`, `commit`, `path`; docs_page needs `url`, `retrieved`; repo_file needs `path` (a field of only invisible characters is blank)".into(),
        AnchorDefect::FieldNotForKind(_) => "paper: section, path; public_source: repository, commit, path; docs_page: url, retrieved, section; repo_file: path, verdict".into(),
        AnchorDefect::ControlCharacter(_) => "remove the control character (newline, tab, escape) from the field".into(),
        AnchorDefect::NotACommit => "use the full or abbreviated hexadecimal commit id".into(),
        AnchorDefect::NotOwnerName => "write the repository as `owner/name` (e.g. vllm-project/vllm), not a URL".into(),
        AnchorDefect::NotAUrl => "write the full URL with its scheme (https://...)".into(),
        AnchorDefect::NotADate | AnchorDefect::DateInFuture => "write the date the page was read, as YYYY-MM-DD".into(),
        AnchorDefect::NoNote => "say in `note` what the anchored source shows".into(),
        AnchorDefect::UnknownPaperSection => "cite the paper's section or table, e.g. `§6.1` or `§9 Table 9`".into(),
        AnchorDefect::Placeholder => "replace the placeholder with the source that shows this, or delete the item".into(),
        AnchorDefect::PathNotRelative => "write the path relative to the repository (or artifact) root".into(),
        AnchorDefect::RepoFileMissing => format!("`{path}` does not exist: commit the file, or anchor to the public source or paper section instead"),
        AnchorDefect::RepoFileRefused => format!("`{path}` must be a regular file inside the repository (after following links), within the size cap"),
        AnchorDefect::OwnFile => "anchor to the trace, join document or public source that shows the obligation".into(),
        AnchorDefect::EvidenceOfAnotherRuntime => format!("`{path}` records another runtime identity (or none): anchor this runtime's own evidence; `runtime.identity` must list exactly the kinds, versions and patches the evidence records"),
        AnchorDefect::JoinEventsRecordNoRuntime => format!("re-capture the events behind `{path}` with `kvlower capture --meta runtime=\"NAME VERSION[ + NAME VERSION]...\"` (docs/capture-format.md) and regenerate the join document"),
        AnchorDefect::ScopeBeyondAnchor { most } => format!("set `scope: {most}`, or anchor a committed trace with a verdict, a join or routing document, the paper's section, or a published result file"),
        AnchorDefect::NotReRunnable => format!("add `verdict: {{claim_id: ..., gate: ..., pass: true}}` if `{path}` is a trace (check re-runs `kvlower gate`), or anchor a `kvlower join --output json` or `kvlower route --format json` document"),
        AnchorDefect::VerdictNeedsRepoFile => "a verdict can only be re-checked on a trace committed here".into(),
        AnchorDefect::TraceVerdictDisagrees | AnchorDefect::TraceVerdictUnverified => format!("run `kvlower gate {path}` to see what the trace supports, and fix the verdict or the trace"),
        AnchorDefect::JoinEvidenceDisagrees => "regenerate it with `kvlower join --output json` from the repository root and commit it".into(),
        // The reason's own hint first, when the crate that found it has one.
        AnchorDefect::JoinPatchFilesDisagree(Reason { hint: Some(hint), .. }) => format!("{hint}; then name in the anchor's `source_files` exactly the patch files the capture behind `{path}` ran"),
        AnchorDefect::JoinPatchFilesDisagree(_) => format!("name in the anchor's `source_files` exactly the repository files of the patch the capture behind `{path}` ran (its header's `*patch_file_sha256` digests), unchanged since the capture"),
        AnchorDefect::JoinEvidenceInsufficient => "anchor only a join whose preconditions all hold, whose stream is sequenced, and with a materialized claim".into(),
        AnchorDefect::RoutingEvidenceDisagrees => "regenerate it with `kvlower route --trace T --format json` from the repository root and commit it".into(),
        AnchorDefect::RoutingEvidenceInsufficient => "anchor only a routing gate document whose routing_hook preconditions held for every claim".into(),
        AnchorDefect::TraceOrderNotPreserved
        | AnchorDefect::TraceClaimScopeNotPreserved
        | AnchorDefect::DocsPageIsNotATrace
        | AnchorDefect::VerdictIsAFailure
        | AnchorDefect::GateDoesNotWitness { .. }
        | AnchorDefect::JoinDocumentWrongDepth { .. }
        | AnchorDefect::JoinDocumentDoesNotWitness
        | AnchorDefect::RoutingDocumentWrongDepth { .. }
        | AnchorDefect::RoutingDocumentDoesNotWitness
        | AnchorDefect::CampaignDoesNotWitness => String::new(),
        AnchorDefect::CampaignDoesNotHold(Reason { hint: Some(hint), .. }) => format!("{hint}; then run `kvlower gate --campaign {path}`"),
        AnchorDefect::CampaignDoesNotHold(_) => format!("run `kvlower gate --campaign {path}`: every trace must be well formed, start with the document's runtime header and source digest, meet its scenario's expectations and agree with the engine truth (docs/conformance.md)"),
    }
    }
}
