//! The page's one data block: everything a cell's drill-down shows, as JSON
//! in a `<script type="application/json">` element that the page's script
//! turns into the panel only when a cell is opened (docs/report.md).
//!
//! Why a data block and not markup: the drill-down of every (descriptor,
//! mode) written out as HTML was ~50 KB a descriptor, so a 2,000-descriptor
//! repository's page passed the size `check` reads back. Here every string
//! is stored once (`s`, the shared strings), and so is every evidence item
//! (`e`), campaign (`c`) and row (`r`) — the copies of a descriptor share
//! their rows — and each descriptor (`d`) is a few indices.
//!
//! Inert by construction: the block is JSON, and every `<`, `>` and `&` in it
//! is written `\u003c`, `\u003e`, `\u0026`, so no text a descriptor brings
//! can end the element; the script reads it with `JSON.parse` and builds the
//! panel with `textContent` and `setAttribute` only. A link (`href`) is in the
//! block only when [`public_source_url`], [`repo_file_href`] or [`docs_url`]
//! made it.
//!
//! Deterministic: each table lists its entries in first-use order.

use std::collections::{BTreeMap, HashMap};

use kvlower_core::judgment::{EvidenceRef, Judgment, LabelReason};
use kvlower_core::matrix::judge_descriptor;
use kvlower_core::{AnchorKind, Descriptor, Grade, Mode};
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;
use serde_json::{Value, json};

use super::campaign::{CampaignView, campaign_view};
use super::grid::{Line, version_text};
use super::links::{anchor_at, carriers_at};
use super::{docs_url, public_source_url, repo_file_href};

/// A table of values stored once each, referred to by position.
#[derive(Default)]
struct Table {
    index: HashMap<String, usize>,
    list: Vec<String>,
}

impl Table {
    /// The position of `text` (its JSON), added at the end when new.
    fn id(&mut self, text: String) -> usize {
        if let Some(&i) = self.index.get(&text) {
            return i;
        }
        let i = self.list.len();
        self.index.insert(text.clone(), i);
        self.list.push(text);
        i
    }
}

/// The tables the page's data block holds, filled one descriptor at a time.
#[derive(Default)]
struct Data {
    strings: Table,
    evidence: Table,
    campaigns: Table,
    rows: Table,
    descriptors: Vec<String>,
}

impl Data {
    fn s(&mut self, text: &str) -> Value {
        let json = Value::String(text.to_string()).to_string();
        Value::from(self.strings.id(json))
    }

    /// A string or `-1` for none.
    fn opt(&mut self, text: Option<&str>) -> Value {
        match text {
            Some(t) if !t.is_empty() => self.s(t),
            _ => Value::from(-1),
        }
    }
}

/// Writes the data block's JSON (escaped for an HTML `<script>` element).
/// Each descriptor is judged again, in full, through `env` — what `kvlower
/// explain` prints — [`JUDGED_AHEAD`] at a time on the pool, written in order.
pub(super) fn write_data(
    repo: &Repository,
    env: &FsEnvironment,
    lines: &[Line<'_>],
    head: Value,
    out: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    use rayon::prelude::*;
    let mut data = Data::default();
    let mut campaigns: BTreeMap<String, Option<CampaignView>> = BTreeMap::new();
    // Judging is most of the page's time and needs nothing from the tables, so a
    // batch of descriptors is judged on the pool, then written in order (the tables
    // fill in first-use order, so the bytes are the same for any pool size). A batch
    // at a time: only its judgments are held, not every row's defeats at once.
    let batches = lines.chunks(JUDGED_AHEAD);
    for batch in batches {
        let judged: Vec<_> = batch
            .par_iter()
            .map(|line| judge_descriptor(&repo.catalog, line.path, line.descriptor, env))
            .collect();
        for (line, judged) in batch.iter().zip(judged) {
            write_descriptor(&mut data, &mut campaigns, repo, env, line, &judged);
        }
    }
    let mut text = String::from("{\"head\":");
    text.push_str(&head.to_string());
    for (key, list) in [
        ("s", &data.strings.list),
        ("e", &data.evidence.list),
        ("c", &data.campaigns.list),
        ("r", &data.rows.list),
        ("d", &data.descriptors),
    ] {
        text.push_str(",\n\"");
        text.push_str(key);
        text.push_str("\":[");
        for (i, v) in list.iter().enumerate() {
            if i > 0 {
                text.push_str(if key == "s" { "," } else { ",\n" });
            }
            text.push_str(v);
        }
        text.push(']');
    }
    text.push('}');
    out.write_str(&script_safe(&text))
}

/// How many descriptors the page judges ahead on the pool before writing them.
const JUDGED_AHEAD: usize = 64;

/// One descriptor's entry of the data block, from its rows judged in full.
fn write_descriptor(
    data: &mut Data,
    campaigns: &mut BTreeMap<String, Option<CampaignView>>,
    repo: &Repository,
    env: &FsEnvironment,
    line: &Line<'_>,
    judged: &[kvlower_core::matrix::MatrixRow<'_>],
) {
    let mut cells = Vec::new();
    let mut nonclaims = Vec::new();
    let mut best = Vec::new();
    for &mode in Mode::ALL {
        let judgments: Vec<&Judgment> = judged
            .iter()
            .map(|r| &r.judgment)
            .filter(|j| j.mode == mode)
            .collect();
        // The cell's row: the greatest label, a tie keeping the shallowest.
        let mut at: Option<usize> = None;
        for (i, j) in judgments.iter().enumerate() {
            if at.is_none_or(|b| judgments.get(b).is_some_and(|x| j.label > x.label)) {
                at = Some(i);
            }
        }
        best.push(at.map_or(Value::from(-1), Value::from));
        let ids: Vec<Value> = judgments
            .iter()
            .map(|j| {
                let row = row(data, repo, env, line.descriptor, j, campaigns);
                Value::from(data.rows.id(row.to_string()))
            })
            .collect();
        cells.push(Value::Array(ids));
        let nc = line.descriptor.non_claims.for_mode(mode);
        nonclaims.push(data.s(nc));
    }
    let d = descriptor(data, line, cells, nonclaims, best);
    data.descriptors.push(d.to_string());
}

/// JSON text that cannot end a `<script>` element or open a comment in it:
/// `<`, `>` and `&` occur in JSON only inside strings, where `\u003c` is the
/// same character to `JSON.parse`.
pub(super) fn script_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c => out.push(c),
        }
    }
    out
}

/// `[path, name, version text, identity, source, reviewed, note, cited-because,
///   [non-claim per mode], [[row ids] per mode], [best row position per mode], kinds]`.
fn descriptor(
    data: &mut Data,
    line: &Line<'_>,
    cells: Vec<Value>,
    nonclaims: Vec<Value>,
    best: Vec<Value>,
) -> Value {
    let d = line.descriptor;
    let r = &d.runtime;
    let identity: Vec<String> = r
        .identity
        .iter()
        .map(|c| {
            let mut s = format!("{} {}", c.kind, c.version);
            if let Some(p) = &c.patch {
                s.push_str(" + patch ");
                s.push_str(p);
            }
            s
        })
        .collect();
    let source = serde_json::to_value(r.source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let href = repo_file_href(line.path);
    json!([
        data.s(line.path),
        data.s(&r.name),
        data.s(&version_text(d)),
        data.s(&identity.join(", ")),
        data.s(&source),
        data.s(&r.reviewed),
        data.opt(Some(&r.note)),
        data.opt(d.allow_cited_positives.as_deref()),
        nonclaims,
        cells,
        best,
        data.opt(href.as_deref()),
    ])
}

/// `[label, depth, subtype|-1, grade (0 none, 1 cited, 2 verified), reason,
///   [obligation], [atom], [signal], [proposal], proposal-lacks-enforcement]`,
/// an obligation `[name, code, evidence|-1, [also], [[candidate, why]]]`, an atom
/// `[name, evidence|-1, [[candidate, why]]]`, a proposal `[path, what, forbidden|-1]`.
fn row(
    data: &mut Data,
    repo: &Repository,
    env: &FsEnvironment,
    d: &Descriptor,
    j: &Judgment,
    campaigns: &mut BTreeMap<String, Option<CampaignView>>,
) -> Value {
    let mut ev = |data: &mut Data, e: &EvidenceRef| -> Value {
        Value::from(evidence(data, repo, env, d, e, campaigns))
    };
    let mut obligations = Vec::new();
    for f in &j.obligations {
        let o = f.obligation;
        let sat = match &f.satisfied_by {
            Some(e) => ev(data, e),
            None => Value::from(-1),
        };
        let also: Vec<Value> = f.also_satisfied_by.iter().map(|e| ev(data, e)).collect();
        let rejected: Vec<Value> = f
            .rejected
            .iter()
            .map(|(e, defeats)| {
                let why: Vec<String> = defeats.iter().map(ToString::to_string).collect();
                json!([ev(data, e), data.s(&why.join("; "))])
            })
            .collect();
        obligations.push(json!([
            data.s(o.name()),
            data.s(o.code()),
            sat,
            also,
            rejected
        ]));
    }
    let mut atoms = Vec::new();
    for a in &j.atoms {
        let by = match &a.anchored_by {
            Some(e) => ev(data, e),
            None => Value::from(-1),
        };
        let rejected: Vec<Value> = a
            .rejected
            .iter()
            .map(|(e, defects)| {
                let why: Vec<String> = defects.iter().map(ToString::to_string).collect();
                json!([ev(data, e), data.s(&why.join("; "))])
            })
            .collect();
        atoms.push(json!([data.s(a.atom.name()), by, rejected]));
    }
    let signals: Vec<Value> = j.signals.iter().map(|x| data.s(x.name())).collect();
    let proposals: Vec<Value> = j
        .proposals
        .iter()
        .map(|p| {
            let what = format!("{} offered as {}", p.offered, j.mode);
            json!([
                data.s(&p.path),
                data.s(&what),
                data.opt(p.forbidden_because.as_deref())
            ])
        })
        .collect();
    let subtype = j.subtype.map(|s| s.to_string());
    let grade = match j.grade {
        None => 0,
        Some(Grade::Cited) => 1,
        Some(Grade::Verified) => 2,
    };
    json!([
        j.label.index(),
        data.s(&j.depth.to_string()),
        data.opt(subtype.as_deref()),
        grade,
        data.s(&j.reason.to_string()),
        obligations,
        atoms,
        signals,
        proposals,
        u8::from(matches!(
            j.reason,
            LabelReason::ProposalLacksEnforcement { .. }
        )),
    ])
}

/// `[path, depth, anchor, anchor kind, href|-1, re-run (0/1), note|-1, campaign|-1,
///   [carried by]]`: one piece of evidence, its anchor a link where the anchor allows.
fn evidence(
    data: &mut Data,
    repo: &Repository,
    env: &FsEnvironment,
    d: &Descriptor,
    e: &EvidenceRef,
    campaigns: &mut BTreeMap<String, Option<CampaignView>>,
) -> usize {
    let anchor = anchor_at(d, &e.path);
    let (kind_text, href) = match anchor.and_then(|a| a.kind.map(|k| (a, k))) {
        Some((a, AnchorKind::PublicSource)) => ("public source", public_source_url(a)),
        Some((a, AnchorKind::RepoFile)) => (
            "repository file",
            a.path.as_deref().and_then(repo_file_href),
        ),
        Some((a, AnchorKind::DocsPage)) => (
            "docs page",
            a.url.as_deref().and_then(docs_url).map(str::to_string),
        ),
        Some((_, AnchorKind::Paper)) => ("paper", None),
        None => ("anchor", None),
    };
    let campaign = anchor
        .filter(|a| a.kind == Some(AnchorKind::RepoFile))
        .and_then(|a| a.path.as_deref())
        .and_then(|path| {
            campaigns
                .entry(path.to_string())
                .or_insert_with(|| campaign_view(repo, env, path))
                .as_ref()
                .map(|c| c.to_json(&mut |s: &str| data.s(s)))
        })
        .map_or(Value::from(-1), |c| {
            Value::from(data.campaigns.id(c.to_string()))
        });
    let carried: Vec<Value> = carriers_at(d, &e.path).iter().map(|c| data.s(c)).collect();
    let v = json!([
        data.s(&e.path),
        data.s(&e.depth.to_string()),
        data.s(&e.anchor),
        data.s(kind_text),
        data.opt(href.as_deref()),
        u8::from(e.rerun),
        data.opt(anchor.map(|a| a.note.as_str())),
        campaign,
        carried,
    ]);
    data.evidence.id(v.to_string())
}
