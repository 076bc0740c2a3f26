//! A second, deliberately separate derivation of every row's label.
//!
//! Why: a checker that certifies itself proves little. This oracle re-derives
//! label, subtype and satisfied set from the parsed descriptor and the catalog
//! *data* (`CatalogDoc`) only. It does not call `kvlower_core::judgment`, nor
//! `Anchor::defects` or the `Catalog` helper methods, nor `Obligation::is_enforcement`:
//! anchor completeness, the enforcement set, the row depths and the label truth
//! table are written again here, in a different shape (a supply table per row
//! depth, then set arithmetic per mode). Disagreement with the checker on any
//! row is a finding of the independent-audit suite.
//!
//! Shared on purpose: the typed inputs (`Descriptor`, `CatalogDoc`, the vocab
//! enums) and the [`Environment`] that answers "does this repository file exist".

use std::collections::{BTreeMap, BTreeSet};

use kvlower_core::descriptor::{Adapter, Anchor, AnchorKind, EvidenceItem};
use kvlower_core::environment::RepoFile;
use kvlower_core::{
    Atom, CatalogDoc, Depth, Descriptor, Environment, Label, Mode, Obligation, Scope, Subtype,
};

/// What the oracle says about one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OracleRow {
    pub mode: Mode,
    pub depth: Depth,
    pub label: Label,
    pub subtype: Option<Subtype>,
    /// Obligations of O[m] some counting item supplies.
    pub satisfied: BTreeSet<Obligation>,
}

/// Obligations only enforcement can supply; a join may never supply them.
const ENFORCEMENT: [Obligation; 7] = [
    Obligation::ExplicitConflictAction,
    Obligation::VictimExclusionBeforeViolation,
    Obligation::BlockingClaimIds,
    Obligation::RestorationFailureOutcome,
    Obligation::ClaimDemotedBeforeLoss,
    Obligation::ClaimExpiredBoundary,
    Obligation::ClaimHarmAttribution,
];

/// Scopes that observed a running system.
const OBSERVED: [Scope; 6] = [
    Scope::LitmusTrace,
    Scope::RuntimeTrace,
    Scope::ConformanceTrace,
    Scope::ControlledPressure,
    Scope::FailureInjection,
    Scope::ArtifactGenerated,
];

fn observed(scope: Scope) -> bool {
    OBSERVED.contains(&scope)
}

fn filled(v: &Option<String>) -> bool {
    v.as_deref().is_some_and(kvlower_core::text::has_visible)
}

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
            // Events recording no `meta.runtime` are evidence of none (capture-format.md).
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

/// The ladder position of a supplier: native below every adapter depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Supplier {
    Native,
    At(Depth),
}

/// For one descriptor at one row depth: which obligations are supplied, from
/// where (every supplier, not just the first).
struct SupplyTable {
    supplied: BTreeMap<Obligation, BTreeSet<Supplier>>,
    atoms: BTreeSet<Atom>,
}

fn atoms_held(doc: &CatalogDoc, d: &Descriptor, env: &dyn Environment) -> BTreeSet<Atom> {
    d.atoms
        .iter()
        .filter(|a| observed(a.scope) && anchor_holds(doc, &a.anchor, Purpose::Atom, env))
        .map(|a| a.atom)
        .collect()
}

/// Whether a mode scope (empty = all modes) covers `mode`.
/// Whether a supported item's stated modes include `mode`: an item that states
/// none supports none (its silence is not "every mode").
fn covers(scope: &[Mode], mode: Mode) -> bool {
    scope.contains(&mode)
}

/// What the `missing` items of one evidence list deny, per obligation: `None`
/// when one of them covers every mode, else the union of their mode scopes.
/// Built once per list so that the contradiction test is linear.
fn denials(list: &[EvidenceItem]) -> BTreeMap<Obligation, Option<BTreeSet<Mode>>> {
    let mut denied: BTreeMap<Obligation, Option<BTreeSet<Mode>>> = BTreeMap::new();
    for other in list
        .iter()
        .filter(|o| o.status == kvlower_core::Status::Missing)
    {
        let entry = denied
            .entry(other.obligation)
            .or_insert_with(|| Some(BTreeSet::new()));
        match (entry.as_mut(), other.modes.is_empty()) {
            (Some(_), true) => *entry = None,
            (Some(set), false) => set.extend(other.modes.iter().copied()),
            (None, _) => {}
        }
    }
    denied
}

/// Whether a supported item counts for `mode`: its anchor holds, it was exercised
/// for the mode, a claimed verdict passes on a gate that witnesses the obligation,
/// and no `missing` item beside it (same list) says the opposite.
fn item_holds(
    doc: &CatalogDoc,
    item: &EvidenceItem,
    denied: &BTreeMap<Obligation, Option<BTreeSet<Mode>>>,
    at: Option<Depth>,
    mode: Mode,
    env: &dyn Environment,
) -> bool {
    let purpose = Purpose::Item {
        obligation: item.obligation,
        at,
        observed: observed(item.scope),
    };
    let contradicted = denied
        .get(&item.obligation)
        .is_some_and(|scope| match scope {
            None => true,
            Some(modes) => item.modes.is_empty() || item.modes.iter().any(|m| modes.contains(m)),
        });
    // Docs and source inspection never make a positive, native or adapter.
    item.status == kvlower_core::Status::Supported
        && observed(item.scope)
        && covers(&item.modes, mode)
        && !contradicted
        && anchor_holds(doc, &item.anchor, purpose, env)
}

/// Whether an adapter's item may supply its obligation at `row`.
fn adapter_may_supply(
    doc: &CatalogDoc,
    adapter: &Adapter,
    item: &EvidenceItem,
    row: Depth,
    atoms: &BTreeSet<Atom>,
    env: &dyn Environment,
) -> bool {
    let depth = adapter.depth;
    if depth > row || depth == Depth::None || !adapter.ambiguities.is_empty() {
        return false;
    }
    if depth == Depth::TelemetryJoin && ENFORCEMENT.contains(&item.obligation) {
        return false;
    }
    let Some(spec) = doc.depths.get(&depth) else {
        return false;
    };
    let allowed = spec.supplies_any || spec.supplies.contains(&item.obligation);
    let conditions = spec
        .conditional
        .get(&item.obligation)
        .is_none_or(|need| need.iter().all(|a| atoms.contains(a)));
    let boundary = spec.preconditions.iter().all(|p| {
        adapter
            .preconditions
            .get(p)
            .is_some_and(|a| anchor_holds(doc, a, Purpose::Precondition(depth, *p), env))
    });
    allowed && conditions && boundary
}

fn supply_table(
    doc: &CatalogDoc,
    d: &Descriptor,
    mode: Mode,
    row: Depth,
    env: &dyn Environment,
) -> SupplyTable {
    let atoms = atoms_held(doc, d, env);
    let mut supplied: BTreeMap<Obligation, BTreeSet<Supplier>> = BTreeMap::new();
    let native_denials = denials(&d.native);
    for item in d
        .native
        .iter()
        .filter(|i| item_holds(doc, i, &native_denials, None, mode, env))
    {
        supplied
            .entry(item.obligation)
            .or_default()
            .insert(Supplier::Native);
    }
    for adapter in &d.adapters {
        let adapter_denials = denials(&adapter.evidence);
        for item in adapter
            .evidence
            .iter()
            .filter(|i| item_holds(doc, i, &adapter_denials, Some(adapter.depth), mode, env))
        {
            if adapter_may_supply(doc, adapter, item, row, &atoms, env) {
                supplied
                    .entry(item.obligation)
                    .or_default()
                    .insert(Supplier::At(adapter.depth));
            }
        }
    }
    SupplyTable { supplied, atoms }
}

/// The depths a descriptor's rows are judged at: `none`, each adapter's depth
/// and each depth a proposal names.
pub fn oracle_row_depths(d: &Descriptor) -> Vec<Depth> {
    let set: BTreeSet<Depth> = std::iter::once(Depth::None)
        .chain(d.adapters.iter().map(|a| a.depth))
        .chain(d.proposals.iter().map(|p| p.depth))
        .collect();
    set.into_iter().collect()
}

/// Derives one row.
/// The environment as seen from one descriptor: an evidence document recorded on
/// another runtime is as good as absent. Written here on its own terms (the
/// checker's rule is `kvlower_core::anchoring::recorded_runtime_fits`).
struct SeenFrom<'a> {
    env: &'a dyn Environment,
    d: &'a Descriptor,
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

pub fn derive(
    doc: &CatalogDoc,
    d: &Descriptor,
    mode: Mode,
    row: Depth,
    env: &dyn Environment,
) -> OracleRow {
    let seen = SeenFrom { env, d };
    let env: &dyn Environment = &seen;
    let table = supply_table(doc, d, mode, row, env);
    let spec = doc.modes.get(&mode);
    let bundle: Vec<Obligation> = spec.map(|s| s.obligations.clone()).unwrap_or_default();
    let critical: BTreeSet<Obligation> = spec
        .map(|s| s.enforcement_critical.iter().copied().collect())
        .unwrap_or_default();
    let required_atoms: Vec<Atom> = spec.map(|s| s.required_atoms.clone()).unwrap_or_default();

    let satisfied: BTreeSet<Obligation> = bundle
        .iter()
        .copied()
        .filter(|o| table.supplied.contains_key(o))
        .collect();
    let missing: BTreeSet<Obligation> = bundle
        .iter()
        .copied()
        .filter(|o| !satisfied.contains(o))
        .collect();
    let atoms_complete = required_atoms.iter().all(|a| table.atoms.contains(a));
    let lower = missing.is_empty() && atoms_complete;
    let shallowest: Vec<Supplier> = bundle
        .iter()
        .filter_map(|o| table.supplied.get(o).and_then(|s| s.first().copied()))
        .collect();
    let natively = lower && shallowest.iter().all(|s| *s == Supplier::Native);

    let suggested = d.signals.iter().any(|s| {
        doc.signals
            .get(&s.signal)
            .is_some_and(|spec| spec.suggests.contains(&mode))
            && anchor_holds(doc, &s.anchor, Purpose::Signal, env)
    });
    let explicit: Vec<bool> = d
        .proposals
        .iter()
        .filter(|p| p.mode == mode && p.depth <= row)
        .map(|p| {
            doc.forbidden_lowerings
                .iter()
                .any(|f| f.primitive == p.primitive && f.mode == mode)
        })
        .collect();
    let adapter_offers = d.adapters.iter().any(|a| {
        a.depth <= row
            && a.evidence.iter().any(|e| {
                e.status == kvlower_core::Status::Supported && critical.contains(&e.obligation)
            })
    });
    let offered = !explicit.is_empty() || adapter_offers;
    let forbidden = explicit.iter().any(|f| *f);
    let lacks_enforcement = missing.iter().any(|o| critical.contains(o));

    let label = if natively {
        Label::NativeSound
    } else if lower {
        Label::SoundWithAdapter
    } else if forbidden || (offered && lacks_enforcement) {
        Label::Rejected
    } else if suggested {
        Label::Approximate
    } else {
        Label::Unknown
    };
    let subtype = (label == Label::SoundWithAdapter).then(|| {
        if shallowest.contains(&Supplier::At(Depth::BackendPatch)) {
            Subtype::BackendPatchWitness
        } else if !required_atoms.is_empty() {
            Subtype::AdapterPolicyControlledPressure
        } else if shallowest
            .iter()
            .all(|s| matches!(s, Supplier::Native | Supplier::At(Depth::TelemetryJoin)))
        {
            Subtype::AdapterObservational
        } else {
            Subtype::AdapterHookMechanism
        }
    });
    OracleRow {
        mode,
        depth: row,
        label,
        subtype,
        satisfied,
    }
}

/// Every row of one descriptor: modes in order, then row depths up the ladder.
pub fn derive_all(doc: &CatalogDoc, d: &Descriptor, env: &dyn Environment) -> Vec<OracleRow> {
    let depths = oracle_row_depths(d);
    Mode::ALL
        .iter()
        .flat_map(|&m| depths.iter().map(move |&a| (m, a)))
        .map(|(m, a)| derive(doc, d, m, a, env))
        .collect()
}
