//! The oracle's anchor rules ([`crate::oracle`]'s first half): whether an anchor backs
//! what it is asked to back, written again from the catalog data and docs/evidence.md,
//! without `Anchor::defects`: each kind's required and refused fields, a field's form,
//! and what a repository file must hold for each purpose.

use std::collections::BTreeSet;

use kvlower_core::descriptor::{Anchor, AnchorKind};
use kvlower_core::environment::RepoFile;
use kvlower_core::{CatalogDoc, Depth, Environment, Obligation};

use super::{ENFORCEMENT, filled};

/// What an anchor is asked to back, in the oracle's own terms.
#[derive(Debug, Clone, Copy)]
pub enum Purpose {
    /// An item supplying `obligation` from `at`, observed (a trace scope) or not.
    Item {
        obligation: Obligation,
        at: Option<Depth>,
        observed: bool,
    },
    /// An atom (always a run-time fact).
    Atom,
    /// An adapter precondition at `depth`.
    Precondition(Depth, kvlower_core::Precondition),
    /// A signal (a static fact suffices).
    Signal,
}

impl Purpose {
    fn run_time(self) -> bool {
        match self {
            Purpose::Item { observed, .. } => observed,
            Purpose::Atom | Purpose::Precondition(..) => true,
            Purpose::Signal => false,
        }
    }
}

/// Per kind: the fields it needs and the fields it may carry.
fn kind_rules(kind: AnchorKind) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        AnchorKind::Paper => (&["section"], &["section", "path"]),
        AnchorKind::PublicSource => (
            &["repository", "commit", "path"],
            &["repository", "commit", "path"],
        ),
        AnchorKind::DocsPage => (&["url", "retrieved"], &["url", "retrieved", "section"]),
        AnchorKind::RepoFile => (&["path"], &["path"]),
    }
}

fn field_ok(name: &str, value: &str, today: (i32, u32, u32)) -> bool {
    if kvlower_core::text::has_control(value) {
        return false;
    }
    match name {
        "commit" => (7..=40).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_hexdigit()),
        "repository" => {
            let parts: Vec<&str> = value.split('/').collect();
            parts.len() == 2
                && parts.iter().all(|p| {
                    !p.is_empty()
                        && *p != "."
                        && *p != ".."
                        && p.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                })
        }
        "url" => ["https://", "http://"].iter().any(|scheme| {
            value.strip_prefix(scheme).is_some_and(|rest| {
                !rest.is_empty()
                    && !rest.starts_with(['/', '?', '#'])
                    && !rest.contains(char::is_whitespace)
            })
        }),
        "retrieved" => kvlower_core::anchor_form::parse_iso_date(value).is_some_and(|d| d <= today),
        "path" => !value.starts_with(['/', '\\']) && !value.split(['/', '\\']).any(|s| s == ".."),
        _ => true,
    }
}

/// Whether an anchor anchors for `purpose`: its kind's fields, well formed and
/// no stray ones, a real note, trace flags for observed evidence, and — for a
/// repository file — what re-running it shows.
pub fn anchor_holds(doc: &CatalogDoc, a: &Anchor, purpose: Purpose, env: &dyn Environment) -> bool {
    let Some(kind) = a.kind else {
        return false;
    };
    let (needs, may) = kind_rules(kind);
    let fields = [
        ("repository", &a.repository),
        ("commit", &a.commit),
        ("path", &a.path),
        ("section", &a.section),
        ("url", &a.url),
        ("retrieved", &a.retrieved),
    ];
    let today = env.today();
    let fields_ok = fields.iter().all(|(name, v)| match v {
        None => !needs.contains(name),
        Some(value) => {
            may.contains(name)
                && (filled(v) || !needs.contains(name))
                && (!filled(v) || field_ok(name, value, today))
        }
    });
    // Shared primitive (like the date parser): the paper's table of contents.
    let section_ok = kind != AnchorKind::Paper
        || a.section.as_deref().is_none_or(|s| {
            !kvlower_core::text::has_visible(s) || kvlower_core::anchor_form::paper_section_known(s)
        });
    let note = a.note.trim().to_ascii_lowercase();
    let note_ok = filled(&Some(a.note.clone()))
        && !note.starts_with("placeholder")
        && !["todo", "tbd", "fixme", "xxx", "n/a", "-", "?"]
            .contains(&note.trim_end_matches(['.', '!', ':']));
    let observed_scope = matches!(
        purpose,
        Purpose::Item { observed: true, .. } | Purpose::Atom
    );
    let trace_ok = !observed_scope
        || (a.preserves_order && a.preserves_claim_scope && kind != AnchorKind::DocsPage);
    // A public source shows a run only when it is a published trace or result file.
    let published = a.path.as_deref().is_some_and(|p| {
        let lower = p.to_ascii_lowercase();
        [".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".log"]
            .iter()
            .any(|ext| lower.ends_with(ext))
    });
    let source_ok = !observed_scope || kind != AnchorKind::PublicSource || published;
    let verdict_ok = a.verdict.as_ref().is_none_or(|v| {
        let witnesses = match purpose {
            Purpose::Item { obligation, .. } => doc
                .trace_gates
                .get(&v.gate)
                .is_some_and(|w| w.contains(&obligation)),
            _ => true,
        };
        kind == AnchorKind::RepoFile && v.pass && witnesses
    });
    let file_ok = kind != AnchorKind::RepoFile
        || a.path
            .as_deref()
            .is_some_and(|p| repo_file_holds(doc, p, a, purpose, env));
    fields_ok && section_ok && note_ok && trace_ok && source_ok && verdict_ok && file_ok
}

/// What a repository file may back: never kvlower's own files; a join
/// document only telemetry obligations at its recorded depth (or preconditions
/// that held there), when it reproduces and held; any other file only static
/// facts, unless a claimed verdict re-runs.
fn repo_file_holds(
    doc: &CatalogDoc,
    path: &str,
    a: &Anchor,
    purpose: Purpose,
    env: &dyn Environment,
) -> bool {
    let first = path.split(['/', '\\']).find(|s| !s.is_empty() && *s != ".");
    if first.is_some_and(|f| {
        [
            "capabilities",
            "modes",
            "results",
            "schemas",
            "bad_lowering",
        ]
        .contains(&f)
    }) {
        return false;
    }
    match env.repo_file(path) {
        RepoFile::Missing | RepoFile::Refused { .. } | RepoFile::OwnFile => false,
        RepoFile::Plain => match &a.verdict {
            Some(v) => env.trace_verdict(path, v).defect.is_none(),
            None => !purpose.run_time(),
        },
        // A campaign that held backs what one of its witnessed gates witnesses,
        // any precondition or signal, never an atom, and never with a verdict.
        RepoFile::CampaignDocument(facts) => {
            let mut named = a.source_files.clone().unwrap_or_default();
            named.sort();
            let mut recorded = facts.source_files.clone();
            recorded.sort();
            facts.held
                && crate::oracle_campaign::recorder_pinned(doc, &facts.recorder)
                && a.verdict.is_none()
                && a.source_files.is_some()
                && named == recorded
                && match purpose {
                    Purpose::Item { obligation, .. } => facts.witnessed.iter().any(|g| {
                        doc.trace_gates
                            .get(g)
                            .is_some_and(|w| w.contains(&obligation))
                            && doc.campaign_controls.get(g).is_some_and(|rule| {
                                crate::oracle_campaign::runs_met(rule, facts.gates.get(g))
                            })
                    }),
                    Purpose::Atom => false,
                    Purpose::Precondition(..) | Purpose::Signal => true,
                }
        }
        RepoFile::JoinDocument(facts) => {
            let Some(recorded) = facts.depth else {
                return false;
            };
            let boundary = doc.depths.get(&recorded).is_some_and(|s| {
                !s.preconditions.is_empty()
                    && s.preconditions.iter().all(|p| facts.held.contains(p))
            });
            let fits = match purpose {
                Purpose::Item { obligation, at, .. } => {
                    at == Some(recorded)
                        && !ENFORCEMENT.contains(&obligation)
                        && doc
                            .depths
                            .get(&Depth::TelemetryJoin)
                            .is_some_and(|s| s.supplies.contains(&obligation))
                }
                Purpose::Precondition(depth, p) => depth == recorded && facts.held.contains(&p),
                Purpose::Atom => false,
                Purpose::Signal => true,
            };
            // A patched runtime's document backs nothing unless the anchor names exactly
            // the patch files its capture recorded, each recomputed from the repository
            // (docs/descriptor-format.md, `source_files`).
            let patch_files = match &facts.patch_digests {
                None => true,
                Some(Err(_)) => false,
                Some(Ok(recorded)) => a.source_files.as_ref().is_some_and(|files| {
                    !files.is_empty()
                        && files
                            .iter()
                            .map(|f| env.repo_file_sha256(f))
                            .collect::<Result<BTreeSet<String>, String>>()
                            .is_ok_and(|named| {
                                named == recorded.iter().cloned().collect::<BTreeSet<_>>()
                            })
                }),
            };
            // Events that record no runtime of their own (JSON Lines, a capture header
            // without `meta.runtime`) are evidence of no runtime (docs/capture-format.md).
            a.verdict.is_none()
                && facts.reproduces
                && facts.stream_sound
                && boundary
                && fits
                && patch_files
                && facts.events_runtime.is_some()
        }
        RepoFile::RoutingDocument(facts) => {
            // Written from docs/routing-trace.md, not from kvlower-core's anchoring:
            // a routing gate document records routing_hook, backs only what that depth
            // may supply and every claim passed, and only preconditions that held.
            let Some(recorded) = facts.depth else {
                return false;
            };
            let spec = doc.depths.get(&recorded);
            let boundary = recorded == Depth::RoutingHook
                && spec.is_some_and(|s| {
                    !s.preconditions.is_empty()
                        && s.preconditions.iter().all(|p| facts.held.contains(p))
                });
            let fits = match purpose {
                Purpose::Item { obligation, at, .. } => {
                    at == Some(recorded)
                        && !ENFORCEMENT.contains(&obligation)
                        && spec.is_some_and(|s| s.supplies.contains(&obligation))
                        && facts.witnessed.contains(&obligation)
                }
                Purpose::Precondition(depth, p) => depth == recorded && facts.held.contains(&p),
                Purpose::Atom => false,
                Purpose::Signal => true,
            };
            a.verdict.is_none() && facts.reproduces && boundary && fits
        }
    }
}
