//! The form an anchor must have before it can count for anything, and its defects:
//! which fields each kind needs and allows, well-formed commits, dates and paper
//! sections, no self reference, no placeholder. Kept apart from the data types in `descriptor.rs` so a
//! reader finds the format there and the rules here; whether a well-formed anchor
//! *counts* for a use is [`crate::anchoring::anchor_counts`].

use serde::Serialize;

use crate::descriptor::{Anchor, AnchorKind};
use crate::vocab::{Depth, Scope, TraceGate};

/// Message, finding code and hint of each defect, in one place.
mod diagnosis;

/// Why an anchor does not anchor anything.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case", tag = "defect", content = "field")]
pub enum AnchorDefect {
    /// No `kind`.
    NoKind,
    /// A field the kind needs is missing or has no visible character.
    MissingField(&'static str),
    /// A field that belongs to another anchor kind.
    FieldNotForKind(&'static str),
    /// A field holding a control character (newline, escape, …).
    ControlCharacter(&'static str),
    /// `commit` is not a hexadecimal commit id of at least 7 digits.
    NotACommit,
    /// `repository` is not `owner/name`.
    NotOwnerName,
    /// `url` is not an `http(s)://` URL.
    NotAUrl,
    /// `retrieved` is not an ISO date (`YYYY-MM-DD`).
    NotADate,
    /// `retrieved` is later than today.
    DateInFuture,
    /// A paper anchor whose `section` cites no section, table or appendix the
    /// paper has (sections 1–14, 6.1–6.3, 8.1–8.4; Tables 1–11; Appendix A).
    UnknownPaperSection,
    /// `note` is blank: an anchor says what it shows.
    NoNote,
    /// `note` is the scaffold's placeholder (or a bare TODO): nothing was anchored yet.
    Placeholder,
    /// A path that is absolute or climbs out of its root.
    PathNotRelative,
    /// Trace-scoped evidence whose anchor does not state it keeps event order.
    TraceOrderNotPreserved,
    /// Trace-scoped evidence whose anchor does not state it keeps claim scope.
    TraceClaimScopeNotPreserved,
    /// A `repo_file` anchor naming a file that is not in the repository.
    RepoFileMissing,
    /// A `repo_file` anchor refused before opening: outside the repository
    /// after links, not a regular file, or too large.
    RepoFileRefused,
    /// A `repo_file` anchor naming one of kvlower's own inputs or outputs
    /// (a descriptor, the catalog, a result): nothing can be its own evidence.
    OwnFile,
    /// A repository file backing run-time evidence that `check` cannot re-run:
    /// a trace needs a claimed `verdict`, or the file must be a join document.
    NotReRunnable,
    /// A claimed gate verdict on an anchor that is not a `repo_file` trace.
    VerdictNeedsRepoFile,
    /// The claimed gate verdict is a failing one (`pass: false`): it supports nothing.
    VerdictIsAFailure,
    /// The claimed gate does not witness this obligation (catalog `trace_gates`).
    GateDoesNotWitness { gate: TraceGate },
    /// Re-running the gate on the anchored trace does not give the claimed verdict.
    TraceVerdictDisagrees,
    /// Re-running an anchored gate campaign does not give what it states (a trace
    /// missing, malformed, of another runtime, an expectation that fails, or a verdict
    /// the engine's truth contradicts); the reason names the first problem found, and
    /// carries its own hint when whoever found it has one.
    CampaignDoesNotHold(Reason),
    /// A gate campaign used for what none of its witnessed gates witnesses (or for
    /// an atom, which a campaign does not observe).
    CampaignDoesNotWitness,
    /// The environment cannot re-run the gate, so a claimed verdict is unverified.
    TraceVerdictUnverified,
    /// A documentation page is not a trace: it cannot anchor run-time evidence.
    DocsPageIsNotATrace,
    /// A committed join evidence document whose join did not hold: a precondition
    /// not met, an unsequenced stream, or no claim materialized without ambiguity.
    JoinEvidenceInsufficient,
    /// A committed join evidence document that re-running the join on its
    /// registry and event file does not reproduce.
    JoinEvidenceDisagrees,
    /// A join document whose registry identity is patched, on an anchor whose
    /// `source_files` do not name exactly the patch files its capture header records
    /// (none named, a file missing or with another digest, a digest left unnamed, or
    /// events without a header); the reason names the file or the problem.
    JoinPatchFilesDisagree(Reason),
    /// A join document whose events record no runtime identity of their own (JSON
    /// Lines, or a capture header without `meta.runtime`): its registry alone names the
    /// runtime, so it is no evidence of any (mapped to `anchor-other-runtime`).
    JoinEventsRecordNoRuntime,
    /// A join document used at another depth than the one it records.
    JoinDocumentWrongDepth { recorded: Depth },
    /// A join document used for what a join cannot witness (an enforcement
    /// obligation, an atom, a precondition that did not hold).
    JoinDocumentDoesNotWitness,
    /// A committed routing gate document that re-running the gate on its trace
    /// and registry does not reproduce.
    RoutingEvidenceDisagrees,
    /// A committed routing gate document whose gate did not hold: a `routing_hook`
    /// precondition failed for some claim, or it records another depth.
    RoutingEvidenceInsufficient,
    /// A routing gate document used at another depth than the one it records.
    RoutingDocumentWrongDepth { recorded: Depth },
    /// A routing gate document used for what it did not witness (an obligation not
    /// every claim passed, one `routing_hook` cannot supply, an atom, a precondition
    /// that did not hold).
    RoutingDocumentDoesNotWitness,
    /// Evidence (a join or routing document, a gate trace) whose recorded runtime
    /// identity is not exactly the descriptor's `runtime.identity`: another kind,
    /// version or patch, none recorded, or one that does not decode.
    EvidenceOfAnotherRuntime,
    /// Run-time scope on an anchor that cannot carry it: a docs page is
    /// documentation, a public source naming source code is source inspection.
    ScopeBeyondAnchor { most: Scope },
}

/// Why a re-run piece of evidence does not hold, as the crate that found it says it: its
/// message (`why`) and, when that crate has one, the hint of the reason's own type (a
/// gate campaign's `CampaignProblem`, a join's `IdentityProblem`). kvlower-core names
/// neither type (they depend on it), so kvlower-evidence fills this from them; a reason
/// core finds itself has no hint of its own (`None`), and the defect's generic hint
/// stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Reason {
    /// The message: the words the finding prints after the defect's own.
    pub why: String,
    /// What to do about this reason in particular.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl Reason {
    /// A reason without a hint of its own.
    pub fn new(why: impl Into<String>) -> Reason {
        Reason {
            why: why.into(),
            hint: None,
        }
    }

    /// A reason with its own hint.
    pub fn with_hint(why: impl Into<String>, hint: impl Into<String>) -> Reason {
        Reason {
            why: why.into(),
            hint: Some(hint.into()),
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.why)
    }
}

/// Top-level directories holding kvlower's own inputs and outputs: a file
/// there is never evidence for a descriptor.
pub const OWN_DIRS: [&str; 5] = [
    "capabilities",
    "modes",
    "results",
    "schemas",
    "bad_lowering",
];

/// Notes that say nothing was anchored yet (the scaffold writes the first).
fn is_placeholder(note: &str) -> bool {
    // Case-insensitive without copying the note: notes are long and asked often.
    let n = note.trim();
    let word = n.trim_end_matches(['.', '!', ':']);
    n.get(..11)
        .is_some_and(|p| p.eq_ignore_ascii_case("placeholder"))
        || ["todo", "tbd", "fixme", "xxx", "n/a", "-", "?"]
            .iter()
            .any(|w| word.eq_ignore_ascii_case(w))
}

/// Whether a repository-relative path names something under [`OWN_DIRS`].
pub fn is_own_path(path: &str) -> bool {
    path.split(['/', '\\'])
        .find(|seg| !seg.is_empty() && *seg != ".")
        .is_some_and(|first| OWN_DIRS.contains(&first))
}

fn is_owner_name(s: &str) -> bool {
    let ok = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    matches!(s.split_once('/'), Some((owner, name)) if ok(owner) && ok(name))
}

fn is_url(s: &str) -> bool {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !r.chars().any(char::is_whitespace)
    })
}

/// Whether a paper anchor's `section` cites only parts the paper has, and at
/// least one: `§6.1`, `§9 Table 9`, `§8.3-§8.4`, `Appendix A`. Why: an anchor
/// names something that exists; "§99" or "see paper" names nothing.
pub fn paper_section_known(section: &str) -> bool {
    const SECTIONS: [&str; 21] = [
        "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", "13", "14", "6.1", "6.2",
        "6.3", "8.1", "8.2", "8.3", "8.4",
    ];
    let mut cited = 0;
    let mut ok = true;
    // The leading `1.2.`-style number of `rest`, without its trailing dot. Borrowed,
    // not collected: `check` asks this for every paper anchor of every row.
    fn number(rest: &str) -> &str {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        rest[..end].trim_end_matches('.')
    }
    for (i, _) in section.match_indices('§') {
        let id = number(&section[i + '§'.len_utf8()..]);
        cited += 1;
        ok &= !id.is_empty() && SECTIONS.contains(&id);
    }
    // Words found by their first letter (a char search) rather than a substring
    // searcher, which costs a setup per call.
    for (i, _) in section.match_indices(['T', 'A']) {
        let rest = &section[i..];
        if let Some(after) = rest.strip_prefix("Table ") {
            cited += 1;
            ok &= number(after)
                .parse::<u32>()
                .is_ok_and(|n| (1..=11).contains(&n));
        } else if let Some(after) = rest.strip_prefix("Appendix ") {
            cited += 1;
            ok &= after.starts_with('A');
        }
    }
    ok && cited > 0
}

/// Parses `YYYY-MM-DD` into a comparable (year, month, day), checking the calendar.
pub fn parse_iso_date(s: &str) -> Option<(i32, u32, u32)> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    ((1..=days).contains(&d) && y >= 1970).then_some((i32::try_from(y).ok()?, m, d))
}

impl Anchor {
    /// Structural defects of this anchor, for evidence observed at `scope`
    /// (`None` for anchors of preconditions and signals). Empty means the
    /// anchor is well formed; whether it *counts* for a use is
    /// [`crate::anchoring::anchor_counts`].
    pub fn defects(&self, scope: Option<Scope>) -> Vec<AnchorDefect> {
        use crate::text::{has_control, has_visible};
        let mut defects = Vec::new();
        let fields: [(&'static str, &Option<String>); 6] = [
            ("repository", &self.repository),
            ("commit", &self.commit),
            ("path", &self.path),
            ("section", &self.section),
            ("url", &self.url),
            ("retrieved", &self.retrieved),
        ];
        let written = |v: &Option<String>| v.as_deref().is_some_and(has_visible);
        let allowed: &[&str] = self
            .kind
            .map_or(&AnchorKind::ALL_FIELDS[..], AnchorKind::allowed_fields);
        let required: &[&'static str] = self.kind.map_or(&[][..], AnchorKind::required_fields);
        if self.kind.is_none() {
            defects.push(AnchorDefect::NoKind);
        }
        for (name, value) in fields {
            if required.contains(&name) && !written(value) {
                defects.push(AnchorDefect::MissingField(name));
            }
            if value.is_some() && !allowed.contains(&name) {
                defects.push(AnchorDefect::FieldNotForKind(name));
            }
            if value.as_deref().is_some_and(has_control) {
                defects.push(AnchorDefect::ControlCharacter(name));
            }
        }
        if let Some(commit) = self.commit.as_deref().filter(|c| has_visible(c)) {
            let hex = commit.chars().all(|c| c.is_ascii_hexdigit());
            if !hex || !(7..=40).contains(&commit.len()) {
                defects.push(AnchorDefect::NotACommit);
            }
        }
        if self.kind == Some(AnchorKind::Paper)
            && let Some(section) = self.section.as_deref().filter(|s| has_visible(s))
            && !paper_section_known(section)
        {
            defects.push(AnchorDefect::UnknownPaperSection);
        }
        if let Some(repo) = self.repository.as_deref().filter(|r| has_visible(r))
            && !is_owner_name(repo)
        {
            defects.push(AnchorDefect::NotOwnerName);
        }
        if let Some(url) = self.url.as_deref().filter(|u| has_visible(u))
            && !is_url(url)
        {
            defects.push(AnchorDefect::NotAUrl);
        }
        if let Some(date) = self.retrieved.as_deref().filter(|d| has_visible(d))
            && parse_iso_date(date).is_none()
        {
            defects.push(AnchorDefect::NotADate);
        }
        if let Some(path) = self.path.as_deref() {
            if path.starts_with('/')
                || path.starts_with('\\')
                || path.split(['/', '\\']).any(|seg| seg == "..")
            {
                defects.push(AnchorDefect::PathNotRelative);
            }
            if self.kind == Some(AnchorKind::RepoFile) && is_own_path(path) {
                defects.push(AnchorDefect::OwnFile);
            }
        }
        if !has_visible(&self.note) {
            defects.push(AnchorDefect::NoNote);
        } else if is_placeholder(&self.note) {
            defects.push(AnchorDefect::Placeholder);
        }
        if self.verdict.is_some() && self.kind != Some(AnchorKind::RepoFile) {
            defects.push(AnchorDefect::VerdictNeedsRepoFile);
        }
        if let Some(files) = &self.source_files {
            if self.kind != Some(AnchorKind::RepoFile) {
                defects.push(AnchorDefect::FieldNotForKind("source_files"));
            }
            if files.iter().any(|f| has_control(f)) {
                defects.push(AnchorDefect::ControlCharacter("source_files"));
            }
        }
        if scope.is_some_and(Scope::is_runtime_observed) {
            if !self.preserves_order {
                defects.push(AnchorDefect::TraceOrderNotPreserved);
            }
            if !self.preserves_claim_scope {
                defects.push(AnchorDefect::TraceClaimScopeNotPreserved);
            }
            if self.kind == Some(AnchorKind::DocsPage) {
                defects.push(AnchorDefect::DocsPageIsNotATrace);
            }
        }
        if let Some(most) = scope.and_then(|s| self.scope_beyond_kind(s)) {
            defects.push(AnchorDefect::ScopeBeyondAnchor { most });
        }
        defects
    }

    /// The most an anchor of this kind can show, when `scope` claims more: a
    /// scope is the anchor's to bound, not the author's to declare. A docs page
    /// is documentation; a public source file is source inspection unless its
    /// path names a published result (`.json`, `.jsonl`, `.ndjson`, `.csv`,
    /// `.tsv`, `.log`: a trace or result table, as the paper's artifact
    /// publishes). A paper anchor may carry any scope (a result the paper
    /// reports); a repository file carries run-time scope only when re-run
    /// (`AnchorDefect::NotReRunnable`).
    fn scope_beyond_kind(&self, scope: Scope) -> Option<Scope> {
        match self.kind? {
            AnchorKind::DocsPage => (scope != Scope::DocsOnly).then_some(Scope::DocsOnly),
            AnchorKind::PublicSource => {
                let published_result = self.path.as_deref().is_some_and(|p| {
                    let ext = p.rsplit_once('.').map_or("", |(_, e)| e);
                    ["json", "jsonl", "ndjson", "csv", "tsv", "log"]
                        .iter()
                        .any(|r| ext.eq_ignore_ascii_case(r))
                });
                (scope.is_runtime_observed() && !published_result)
                    .then_some(Scope::SourceInspection)
            }
            AnchorKind::Paper | AnchorKind::RepoFile => None,
        }
    }

    /// A one-line, human-readable location of what the anchor names.
    pub fn target(&self) -> String {
        let s = |v: &Option<String>| v.clone().unwrap_or_default();
        match self.kind {
            Some(AnchorKind::Paper) => match &self.path {
                Some(p) if !p.is_empty() => {
                    format!("paper {} (artifact path {p})", s(&self.section))
                }
                _ => format!("paper {}", s(&self.section)),
            },
            Some(AnchorKind::PublicSource) => format!(
                "{}@{}:{}",
                s(&self.repository),
                s(&self.commit),
                s(&self.path)
            ),
            Some(AnchorKind::DocsPage) => {
                format!("{} (retrieved {})", s(&self.url), s(&self.retrieved))
            }
            Some(AnchorKind::RepoFile) => s(&self.path),
            None => "(no anchor kind)".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::paper_section_known;

    #[test]
    fn paper_sections_are_the_papers() {
        for ok in [
            "§6.1",
            "§9 Table 9 (x)",
            "§8.3-§8.4",
            "§7 and §12",
            "Appendix A",
            "Table 5",
        ] {
            assert!(paper_section_known(ok), "{ok}");
        }
        for bad in [
            "§99",
            "§6.9",
            "see the paper",
            "Table 12",
            "§",
            "Appendix B",
            "",
        ] {
            assert!(!paper_section_known(bad), "{bad}");
        }
    }
}
