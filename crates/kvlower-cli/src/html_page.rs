//! `results/lowering-matrix.html`: the lowering matrix as one self-contained
//! static page (docs/report.md), kept when `kvlower.toml` sets
//! `results.html_report`.
//!
//! A grid, runtime × mode, each cell the best label of that mode over the
//! descriptor's row depths (the README table's rule: greatest label, a tie
//! keeps the shallowest depth), coloured and marked by a shape and its text;
//! each cell links to its rows by depth with what `kvlower explain` prints for
//! them: the reason, every obligation with the evidence that satisfied it or
//! every candidate and why it did not count, the atoms, signals, proposals and
//! the non-claim.
//!
//! Built by string building only. Every string that comes from a descriptor
//! (or any input) goes through [`esc`]; ids, classes and data attributes are
//! made from indices and the closed vocabularies only; links are built only
//! from anchor fields that pass [`public_source_url`] / [`repo_file_href`] /
//! [`docs_url`]. The page carries a Content-Security-Policy that lets no
//! request out and runs only the one script whose SHA-256 it names, so even
//! markup that escaped escaping could not load or run anything.
//!
//! Deterministic: rows in the matrix's order, no timestamps, no absolute
//! paths (links to repository files are relative to `results/`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kvlower_core::judgment::{Judgment, LabelReason};
use kvlower_core::matrix::{MatrixRow, judge_descriptor};
use kvlower_core::{AnchorKind, Depth, Descriptor, Label, Mode};
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;

mod campaign;
mod digest;
mod links;

use campaign::{CampaignView, campaign_view, write_campaign};
use digest::sha256_base64;
use links::anchor_at;
pub use links::{docs_url, esc, public_source_url, repo_file_href};

/// The page, relative to the repository root.
pub const REPORT_HTML: &str = "results/lowering-matrix.html";

/// The label's shape: the cell is readable without colour.
fn shape(label: Label) -> &'static str {
    match label {
        Label::NativeSound => "●",
        Label::SoundWithAdapter => "◆",
        Label::Rejected => "✕",
        Label::Approximate => "≈",
        Label::Unknown => "?",
    }
}

/// The label's class (also its name: the closed vocabulary).
fn label_class(label: Label) -> &'static str {
    label.name()
}

/// One cell of the grid: the best row of a (descriptor, mode).
#[derive(Debug, Clone)]
struct Cell {
    label: Label,
    depth: Depth,
    subtype: Option<kvlower_core::Subtype>,
    grade: Option<kvlower_core::Grade>,
}

/// One line of the grid: a descriptor and its best cell per mode.
struct Line<'a> {
    path: &'a str,
    descriptor: &'a Descriptor,
    rows: usize,
    cells: BTreeMap<Mode, Cell>,
}

/// The grid's lines from the judged rows (grouped by descriptor, each mode's
/// depths in ladder order): the greatest label, a tie keeping the shallowest.
fn lines<'a>(rows: &[MatrixRow<'a>]) -> Vec<Line<'a>> {
    let mut lines: Vec<Line<'a>> = Vec::new();
    for row in rows {
        if lines.last().is_none_or(|l| l.path != row.descriptor_path) {
            lines.push(Line {
                path: row.descriptor_path,
                descriptor: row.descriptor,
                rows: 0,
                cells: BTreeMap::new(),
            });
        }
        let j = &row.judgment;
        let cell = Cell {
            label: j.label,
            depth: j.depth,
            subtype: j.subtype,
            grade: j.grade,
        };
        if let Some(line) = lines.last_mut() {
            line.rows += 1;
            let entry = line.cells.entry(j.mode).or_insert_with(|| cell.clone());
            if cell.label > entry.label {
                *entry = cell;
            }
        }
    }
    lines
}

/// The distinct runtime kinds of a descriptor's identity, in order.
fn kinds(d: &Descriptor) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for c in &d.runtime.identity {
        if !kinds.contains(&c.kind.name()) {
            kinds.push(c.kind.name());
        }
    }
    kinds
}

/// Renders the page into `out`. `rows` is the matrix as `kvlower matrix`
/// judged it (for the grid); each descriptor is judged again, in full, through
/// `env` (whose re-runs are cached) for what `explain` shows, one descriptor
/// at a time, so the page never holds every defeat of every row at once.
pub fn write_report(
    repo: &Repository,
    rows: &[MatrixRow<'_>],
    env: &FsEnvironment,
    out: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    let lines = lines(rows);
    // The hash covers the script element's exact text (the line break included).
    let script_hash = sha256_base64(&format!("\n{SCRIPT}"));
    out.write_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; img-src data:; base-uri 'none'; form-action 'none'\">"
    )?;
    out.write_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")?;
    out.write_str("<meta name=\"generator\" content=\"kvlower matrix\">\n")?;
    out.write_str("<title>kvlower lowering matrix</title>\n<style>\n")?;
    out.write_str(STYLE)?;
    out.write_str("</style>\n</head>\n<body>\n")?;
    out.write_str("<a class=\"skip\" href=\"#grid\">Skip to the grid</a>\n<header>\n<h1>Lowering matrix</h1>\n")?;
    let counts: Vec<String> = Label::ALL
        .iter()
        .rev()
        .map(|l| {
            let n = rows.iter().filter(|r| r.judgment.label == *l).count();
            format!(
                "<li class=\"count lab-{c}\"><span class=\"shape\" aria-hidden=\"true\">{s}</span> {n} {c}</li>",
                c = label_class(*l),
                s = shape(*l)
            )
        })
        .collect();
    let verified = rows
        .iter()
        .filter(|r| r.judgment.grade == Some(kvlower_core::Grade::Verified))
        .count();
    let cited = rows
        .iter()
        .filter(|r| r.judgment.grade == Some(kvlower_core::Grade::Cited))
        .count();
    writeln!(
        out,
        "<p class=\"lede\">{} runtimes × {} modes, {} rows by adapter depth. Generated by <code>kvlower matrix</code> from <code>modes/modes.yaml</code> and <code>capabilities/*.yaml</code>; do not edit. Positive rows: {verified} <strong>verified</strong> (every anchor re-run by <code>kvlower check</code> from files committed here), {cited} <strong>cited</strong>.</p>\n<ul class=\"counts\" aria-label=\"Rows by label\">{}</ul>",
        lines.len(),
        Mode::ALL.len(),
        rows.len(),
        counts.join("")
    )?;
    // What `results/lowering-matrix.json` pins as `local_changes` (a leaf module:
    // the page does not depend on the results module that lists it).
    let changes: Vec<String> = repo
        .catalog
        .changes()
        .iter()
        .map(ToString::to_string)
        .collect();
    if changes.is_empty() {
        out.write_str("<p class=\"lede\">Catalog: <code>modes/modes.yaml</code> equals the built-in baseline.</p>\n")?;
    } else {
        writeln!(
            out,
            "<p class=\"lede\">Catalog: <code>modes/modes.yaml</code> has {} local change(s) from the built-in baseline: {}.</p>",
            changes.len(),
            esc(&changes.join("; "))
        )?;
    }
    out.write_str(LEGEND)?;
    out.write_str("</header>\n<main>\n")?;
    write_toolbar(&lines, out)?;
    write_grid(&lines, out)?;
    out.write_str("<p class=\"hint\">Each cell is the best label of that mode over the runtime's row depths (<code>native_sound</code> &gt; <code>sound_with_adapter</code> &gt; <code>rejected</code> &gt; <code>approximate</code> &gt; <code>unknown</code>; a tie keeps the shallowest depth). Open a cell (click, or Tab / arrow keys and Enter) for its rows by depth and the evidence behind each obligation. A positive label means every obligation is supported by curated, anchored evidence at the stated depth; it does not certify unaudited runtime paths.</p>\n")?;
    out.write_str("<div id=\"details\">\n")?;
    let mut campaigns: BTreeMap<String, Option<CampaignView>> = BTreeMap::new();
    for (di, line) in lines.iter().enumerate() {
        let judged = judge_descriptor(&repo.catalog, line.path, line.descriptor, env);
        for &mode in Mode::ALL {
            let judgments: Vec<&Judgment> = judged
                .iter()
                .map(|r| &r.judgment)
                .filter(|j| j.mode == mode)
                .collect();
            write_detail(repo, env, di, line, mode, &judgments, &mut campaigns, out)?;
        }
    }
    out.write_str("</div>\n</main>\n<footer><p>kvlower: fail-closed lowering of resident KV claims onto LLM serving runtimes. The same rows as <a href=\"lowering-matrix.md\"><code>results/lowering-matrix.md</code></a> and <a href=\"lowering-matrix.json\"><code>results/lowering-matrix.json</code></a>; <code>kvlower explain DESCRIPTOR</code> prints a cell's rows in a terminal.</p></footer>\n")?;
    writeln!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>")
}

fn write_toolbar(lines: &[Line<'_>], out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    let mut all_kinds: Vec<&'static str> = Vec::new();
    for line in lines {
        for k in kinds(line.descriptor) {
            if !all_kinds.contains(&k) {
                all_kinds.push(k);
            }
        }
    }
    all_kinds.sort_unstable();
    out.write_str("<form class=\"toolbar\" id=\"filters\" aria-label=\"Filter the grid\">\n")?;
    out.write_str("<label>Runtime kind <select id=\"f-kind\"><option value=\"\">any</option>")?;
    for k in &all_kinds {
        write!(out, "<option value=\"{k}\">{k}</option>")?;
    }
    out.write_str(
        "</select></label>\n<label>Label <select id=\"f-label\"><option value=\"\">any</option>",
    )?;
    for l in Label::ALL.iter().rev() {
        write!(
            out,
            "<option value=\"{0}\">{1} {0}</option>",
            l.name(),
            shape(*l)
        )?;
    }
    out.write_str("</select></label>\n<label>Grade <select id=\"f-grade\"><option value=\"\">any</option><option value=\"verified\">verified</option><option value=\"cited\">cited</option><option value=\"none\">none (not positive)</option></select></label>\n")?;
    out.write_str("<button type=\"reset\" id=\"f-reset\">Clear</button>\n<output id=\"f-status\" aria-live=\"polite\"></output>\n</form>\n")
}

fn write_grid(lines: &[Line<'_>], out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    out.write_str("<div class=\"grid-wrap\">\n<table id=\"grid\" class=\"grid\">\n<caption>Best label per runtime and mode</caption>\n<thead>\n<tr>")?;
    out.write_str("<th scope=\"col\" aria-sort=\"none\"><button type=\"button\" data-sort=\"runtime\">Runtime</button></th>")?;
    out.write_str("<th scope=\"col\" aria-sort=\"none\"><button type=\"button\" data-sort=\"kind\">Kind</button></th>")?;
    out.write_str("<th scope=\"col\" aria-sort=\"none\"><button type=\"button\" data-sort=\"reviewed\">Reviewed</button></th>")?;
    for mode in Mode::ALL {
        write!(
            out,
            "<th scope=\"col\" class=\"mode\" aria-sort=\"none\"><button type=\"button\" data-sort=\"{m}\">{m}</button></th>",
            m = mode.name()
        )?;
    }
    out.write_str("</tr>\n</thead>\n<tbody>\n")?;
    for (di, line) in lines.iter().enumerate() {
        let r = &line.descriptor.runtime;
        let kinds = kinds(line.descriptor);
        write!(
            out,
            "<tr id=\"rt-{di}\" data-index=\"{di}\" data-kinds=\"{}\"><th scope=\"row\" class=\"runtime\"><span class=\"name\">{}</span> <span class=\"version\" title=\"{v}\">{v}</span><br><code class=\"path\">{}</code></th><td class=\"kind\">{}</td><td class=\"reviewed\">{}</td>",
            kinds.join(" "),
            esc(&r.name),
            esc(line.path.strip_prefix("capabilities/").unwrap_or(line.path)),
            kinds.join(" + "),
            esc(&r.reviewed),
            v = esc(&r.version),
        )?;
        for mode in Mode::ALL {
            let m = mode.name();
            let Some(cell) = line.cells.get(mode) else {
                write!(
                    out,
                    "<td class=\"cell empty\" data-mode=\"{m}\" data-label=\"\" data-grade=\"none\" data-rank=\"-1\">—</td>"
                )?;
                continue;
            };
            let grade = cell.grade.map_or("none", |g| g.name());
            // Rank: label first, then verified over cited over none.
            let rank = cell.label.index() * 3
                + match cell.grade {
                    Some(kvlower_core::Grade::Verified) => 2,
                    Some(kvlower_core::Grade::Cited) => 1,
                    None => 0,
                };
            let mut aria = format!("{} {m}: {}", r.name, cell.label.name());
            if let Some(s) = cell.subtype {
                let _ = write!(aria, ", {s}");
            }
            if let Some(g) = cell.grade {
                let _ = write!(aria, ", {g}");
            }
            let _ = write!(aria, ", best at depth {}", cell.depth);
            write!(
                out,
                "<td class=\"cell lab-{c}\" data-mode=\"{m}\" data-label=\"{c}\" data-grade=\"{grade}\" data-rank=\"{rank}\"><a id=\"cell-{di}-{m}\" href=\"#d-{di}-{m}\" aria-label=\"{aria}\"><span class=\"shape\" aria-hidden=\"true\">{s}</span> <span class=\"lab\">{c}</span>",
                c = label_class(cell.label),
                s = shape(cell.label),
                aria = esc(&aria),
            )?;
            if let Some(st) = cell.subtype {
                write!(out, "<span class=\"sub\">{st}</span>")?;
            }
            match cell.grade {
                Some(kvlower_core::Grade::Verified) => {
                    out.write_str("<span class=\"grade verified\">✓ verified</span>")?;
                }
                Some(kvlower_core::Grade::Cited) => {
                    out.write_str("<span class=\"grade cited\">❝ cited</span>")?;
                }
                None => {}
            }
            out.write_str("</a></td>")?;
        }
        out.write_str("</tr>\n")?;
    }
    out.write_str("</tbody>\n</table>\n</div>\n")
}

#[expect(
    clippy::too_many_arguments,
    reason = "one detail section needs the repository, the environment, its place and the campaign cache"
)]
fn write_detail(
    repo: &Repository,
    env: &FsEnvironment,
    di: usize,
    line: &Line<'_>,
    mode: Mode,
    judgments: &[&Judgment],
    campaigns: &mut BTreeMap<String, Option<CampaignView>>,
    out: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    let d = line.descriptor;
    let r = &d.runtime;
    let m = mode.name();
    write!(
        out,
        "<section class=\"detail\" id=\"d-{di}-{m}\" data-index=\"{di}\" data-mode=\"{m}\" aria-labelledby=\"h-{di}-{m}\" tabindex=\"-1\">\n<a class=\"close\" href=\"#cell-{di}-{m}\" aria-label=\"Close, back to the grid\">×</a>\n<h2 id=\"h-{di}-{m}\">{} {} <span class=\"at\">·</span> <code>{m}</code></h2>\n",
        esc(&r.name),
        esc(&r.version)
    )?;
    let identity: Vec<String> = r
        .identity
        .iter()
        .map(|c| {
            let mut s = format!("{} {}", c.kind, c.version);
            if let Some(p) = &c.patch {
                let _ = write!(s, " + patch {p}");
            }
            esc(&s)
        })
        .collect();
    let descriptor_link = match repo_file_href(line.path) {
        Some(href) => format!(
            "<a href=\"{}\"><code>{}</code></a>",
            esc(&href),
            esc(line.path)
        ),
        None => format!("<code>{}</code>", esc(line.path)),
    };
    let source = serde_json::to_value(r.source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    writeln!(
        out,
        "<p class=\"meta\">Descriptor {descriptor_link} · identity {} · read from {} · <strong>reviewed {}</strong> · <a class=\"back\" href=\"#cell-{di}-{m}\">back to the grid</a></p>",
        identity.join(", "),
        esc(&source),
        esc(&r.reviewed)
    )?;
    if !r.note.is_empty() {
        writeln!(out, "<p class=\"note\">{}</p>", esc(&r.note))?;
    }
    writeln!(
        out,
        "<p class=\"nonclaim\"><strong>Non-claim.</strong> {}</p>",
        esc(d.non_claims.for_mode(mode))
    )?;
    if let Some(why) = &d.allow_cited_positives
        && judgments
            .iter()
            .any(|j| j.grade == Some(kvlower_core::Grade::Cited))
    {
        writeln!(
            out,
            "<p class=\"note\"><strong>Cited positives allowed because:</strong> {}</p>",
            esc(why)
        )?;
    }
    let best = line.cells.get(&mode).map(|c| c.depth);
    out.write_str("<nav class=\"depths\" aria-label=\"Rows by depth\"><ol>")?;
    for j in judgments {
        write!(
            out,
            "<li><a href=\"#r-{di}-{m}-{depth}\"><span class=\"badge lab-{c}\"><span class=\"shape\" aria-hidden=\"true\">{s}</span> {c}</span> {depth}{g}</a>{b}</li>",
            depth = j.depth,
            c = label_class(j.label),
            s = shape(j.label),
            g = j.grade.map(|g| format!(" · {g}")).unwrap_or_default(),
            b = if best == Some(j.depth) {
                " <span class=\"bestmark\">← the cell</span>"
            } else {
                ""
            },
        )?;
    }
    out.write_str("</ol></nav>\n")?;
    for j in judgments {
        write_row(repo, env, di, d, j, best == Some(j.depth), campaigns, out)?;
    }
    out.write_str("</section>\n")
}

fn label_text(j: &Judgment) -> String {
    let mut detail: Vec<String> = Vec::new();
    if let Some(s) = j.subtype {
        detail.push(s.to_string());
    }
    if let Some(g) = j.grade {
        detail.push(g.to_string());
    }
    if detail.is_empty() {
        j.label.to_string()
    } else {
        format!("{} ({})", j.label, detail.join(", "))
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "one row needs the repository, the environment, its place and the campaign cache"
)]
fn write_row(
    repo: &Repository,
    env: &FsEnvironment,
    di: usize,
    d: &Descriptor,
    j: &Judgment,
    best: bool,
    campaigns: &mut BTreeMap<String, Option<CampaignView>>,
    out: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    let grade = j.grade.map_or("none", |g| g.name());
    write!(
        out,
        "<article class=\"row lab-{c}\" id=\"r-{di}-{mode}-{depth}\" data-depth=\"{depth}\" data-label=\"{c}\" data-grade=\"{grade}\"{b}>\n<h3><span class=\"badge lab-{c}\"><span class=\"shape\" aria-hidden=\"true\">{s}</span> {text}</span> at depth <code>{depth}</code>{best}</h3>\n<p class=\"why\"><strong>Why:</strong> {why}</p>\n<ul class=\"obligations\">\n",
        c = label_class(j.label),
        s = shape(j.label),
        depth = j.depth,
        mode = j.mode,
        text = esc(&label_text(j)),
        b = if best { " data-best=\"true\"" } else { "" },
        best = if best {
            " <span class=\"bestmark\">(the cell's row)</span>"
        } else {
            ""
        },
        why = esc(&j.reason.to_string()),
    )?;
    let mut shown = std::collections::BTreeSet::new();
    for f in &j.obligations {
        let o = f.obligation;
        match &f.satisfied_by {
            Some(e) => {
                write!(
                    out,
                    "<li class=\"ob ok\" data-obligation=\"{o}\"><span class=\"mark\" aria-label=\"satisfied\">✓</span> <span class=\"oname\">{o}</span> <span class=\"code\">({code})</span> ← ",
                    code = o.code()
                )?;
                write_evidence(repo, env, d, e, true, &mut shown, campaigns, out)?;
                for r in &f.also_satisfied_by {
                    out.write_str("<div class=\"also\">also supplied by ")?;
                    write_evidence(repo, env, d, r, false, &mut shown, campaigns, out)?;
                    out.write_str(" (redundant)</div>")?;
                }
            }
            None => {
                let what = if f.rejected.is_empty() {
                    "no evidence item names it"
                } else {
                    "no candidate counts"
                };
                write!(
                    out,
                    "<li class=\"ob no\" data-obligation=\"{o}\"><span class=\"mark\" aria-label=\"not satisfied\">✗</span> <span class=\"oname\">{o}</span> <span class=\"code\">({code})</span>: {what}",
                    code = o.code()
                )?;
            }
        }
        if !f.rejected.is_empty() {
            out.write_str("<ul class=\"candidates\">")?;
            for (e, defeats) in &f.rejected {
                let reasons: Vec<String> = defeats.iter().map(ToString::to_string).collect();
                out.write_str("<li class=\"candidate\">")?;
                write_evidence(repo, env, d, e, false, &mut shown, campaigns, out)?;
                write!(
                    out,
                    ": <span class=\"defeat\">{}</span></li>",
                    esc(&reasons.join("; "))
                )?;
            }
            out.write_str("</ul>")?;
        }
        out.write_str("</li>\n")?;
    }
    for a in &j.atoms {
        match &a.anchored_by {
            Some(e) => {
                write!(
                    out,
                    "<li class=\"ob ok atom\" data-atom=\"{}\"><span class=\"mark\" aria-label=\"anchored\">✓</span> atom <span class=\"oname\">{}</span> ← ",
                    a.atom, a.atom
                )?;
                write_evidence(repo, env, d, e, true, &mut shown, campaigns, out)?;
            }
            None => {
                write!(
                    out,
                    "<li class=\"ob no atom\" data-atom=\"{}\"><span class=\"mark\" aria-label=\"not anchored\">✗</span> atom <span class=\"oname\">{}</span>: not anchored to a trace",
                    a.atom, a.atom
                )?;
            }
        }
        if !a.rejected.is_empty() {
            out.write_str("<ul class=\"candidates\">")?;
            for (e, defects) in &a.rejected {
                let reasons: Vec<String> = defects.iter().map(ToString::to_string).collect();
                out.write_str("<li class=\"candidate\">")?;
                write_evidence(repo, env, d, e, false, &mut shown, campaigns, out)?;
                write!(
                    out,
                    ": <span class=\"defeat\">{}</span></li>",
                    esc(&reasons.join("; "))
                )?;
            }
            out.write_str("</ul>")?;
        }
        out.write_str("</li>\n")?;
    }
    out.write_str("</ul>\n")?;
    if !j.signals.is_empty() {
        let names: Vec<&str> = j.signals.iter().map(|x| x.name()).collect();
        writeln!(
            out,
            "<p class=\"signals\"><strong>Signals</strong> (satisfy nothing): {}</p>",
            names.join(", ")
        )?;
    }
    for p in &j.proposals {
        let what = format!("{} offered as {}", p.offered, j.mode);
        match &p.forbidden_because {
            Some(why) => writeln!(
                out,
                "<p class=\"proposal\"><strong>Proposal</strong> <code>{}</code>: {}: forbidden lowering: {}</p>",
                esc(&p.path),
                esc(&what),
                esc(why)
            )?,
            None => writeln!(
                out,
                "<p class=\"proposal\"><strong>Proposal</strong> <code>{}</code>: {}</p>",
                esc(&p.path),
                esc(&what)
            )?,
        }
    }
    if matches!(j.reason, LabelReason::ProposalLacksEnforcement { .. }) {
        out.write_str("<p class=\"proposal\">(a proposal without the mode's enforcement-critical obligations is a misrepresentation)</p>\n")?;
    }
    out.write_str("</article>\n")
}

/// One piece of evidence: its YAML path, depth, anchor (as a link where the
/// anchor allows one), whether `check` re-ran it, and, when `full` (evidence
/// that counted), what the anchor says it shows and for a gate campaign its
/// scenarios, runs and controls — once per row (`shown`), then "as above".
#[expect(
    clippy::too_many_arguments,
    reason = "one evidence item needs the repository, the environment, the row's anchors shown and the campaign cache"
)]
fn write_evidence(
    repo: &Repository,
    env: &FsEnvironment,
    d: &Descriptor,
    e: &kvlower_core::judgment::EvidenceRef,
    full: bool,
    shown: &mut std::collections::BTreeSet<String>,
    campaigns: &mut BTreeMap<String, Option<CampaignView>>,
    out: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    write!(
        out,
        "<span class=\"ev\"><code class=\"item\">{}</code> <span class=\"depth\">[{}]</span> ",
        esc(&e.path),
        e.depth
    )?;
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
    write!(out, "<span class=\"akind\">{kind_text}</span> ")?;
    match href {
        Some(href) => write!(
            out,
            "<a class=\"anchor\" href=\"{}\" rel=\"noopener noreferrer\">{}</a>",
            esc(&href),
            esc(&e.anchor)
        )?,
        None => write!(out, "<span class=\"anchor\">{}</span>", esc(&e.anchor))?,
    }
    if e.rerun {
        out.write_str(" <span class=\"rerun\">✓ re-run by check</span>")?;
    } else {
        out.write_str(" <span class=\"cited-ev\">cited</span>")?;
    }
    if !full {
        return out.write_str("</span>");
    }
    if !shown.insert(e.anchor.clone()) {
        return out.write_str("<span class=\"anote\">(the anchor above)</span></span>");
    }
    if let Some(a) = anchor
        && !a.note.is_empty()
    {
        write!(out, "<span class=\"anote\">{}</span>", esc(&a.note))?;
    }
    if let Some(a) = anchor
        && a.kind == Some(AnchorKind::RepoFile)
        && let Some(path) = a.path.as_deref()
    {
        let view = campaigns
            .entry(path.to_string())
            .or_insert_with(|| campaign_view(repo, env, path));
        if let Some(c) = view {
            write_campaign(c, out)?;
        }
    }
    out.write_str("</span>")
}

const LEGEND: &str = "<ul class=\"legend\" aria-label=\"Legend\">\
<li class=\"lab-native_sound\"><span class=\"shape\" aria-hidden=\"true\">●</span> <b>native_sound</b>: the unmodified runtime supplies every obligation</li>\
<li class=\"lab-sound_with_adapter\"><span class=\"shape\" aria-hidden=\"true\">◆</span> <b>sound_with_adapter</b>: with an adapter or patch at the row's depth</li>\
<li class=\"lab-rejected\"><span class=\"shape\" aria-hidden=\"true\">✕</span> <b>rejected</b>: offered as the mode, and a forbidden or unenforced lowering</li>\
<li class=\"lab-approximate\"><span class=\"shape\" aria-hidden=\"true\">≈</span> <b>approximate</b>: signals make it plausible, obligations are missing</li>\
<li class=\"lab-unknown\"><span class=\"shape\" aria-hidden=\"true\">?</span> <b>unknown</b>: obligations missing, nothing related exercised</li>\
<li class=\"grades\"><span class=\"grade verified\">✓ verified</span> every anchor re-run by <code>kvlower check</code> · <span class=\"grade cited\">❝ cited</span> rests on a cited source</li>\
</ul>\n";

const STYLE: &str = include_str!("html_page/page.css");
const SCRIPT: &str = include_str!("html_page/page.js");
