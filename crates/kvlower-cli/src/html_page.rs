//! `results/lowering-matrix.html`: the lowering matrix as one self-contained
//! static page (docs/report.md), kept when `kvlower.toml` sets
//! `results.html_report`.
//!
//! A compact grid, runtime × mode, grouped by runtime ([`grid`]): each cell
//! the best label of that mode over the descriptor's row depths (the README
//! table's rule: greatest label, a tie keeps the shallowest depth), as a
//! shape, a colour, a grade mark or an obligation count, and a text
//! alternative. Each cell has a stable anchor (`#cell=STEM/MODE`) that opens
//! its rows by depth with what `kvlower explain` prints for them, built by the
//! page's script from one compact data block ([`data`]) only when opened.
//!
//! Built by string building only. Every string that comes from a descriptor
//! (or any input) goes through [`esc`] in markup and [`data::script_safe`] in
//! the data block; ids, classes and data attributes are made from indices,
//! percent-encoded file names and the closed vocabularies only; links are
//! built only from anchor fields that pass [`public_source_url`] /
//! [`repo_file_href`] / [`docs_url`]. The page carries a
//! Content-Security-Policy that lets no request out and runs only the one
//! script whose SHA-256 it names, so even markup that escaped escaping could
//! not load or run anything.
//!
//! Deterministic: rows in the matrix's order within a runtime, no timestamps,
//! no absolute paths (links to repository files are relative to `results/`).

use kvlower_core::matrix::MatrixRow;
use kvlower_core::{Label, Mode};
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;

mod campaign;
mod data;
mod digest;
mod grid;
mod links;
mod reproduced;

use digest::sha256_base64;
pub(crate) use links::carriers_at;
pub use links::{docs_url, esc, public_source_url, repo_file_href};
pub use reproduced::{Manifest, Manifests, Reproduced, Reproduction, evidence_folder, manifest_of};

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

/// A mode in one line (paper §3): what a runtime must do for a claim in it.
/// Shown in the grid's header on hover and focus, and in the legend.
fn mode_meaning(mode: Mode) -> &'static str {
    match mode {
        Mode::BestEffort => {
            "the runtime tells whether a registered claim's KV is materialized; nothing is protected"
        }
        Mode::SoftPriority => {
            "a claim's priority measurably changes what is evicted first under pressure"
        }
        Mode::HardProtected => {
            "an accepted claim's KV is not evicted; a conflict gets an explicit action naming the blocking claims"
        }
        Mode::Demotable => "an accepted claim is demoted, visibly, before its KV is lost",
        Mode::Expiring => {
            "an accepted claim's responsibility ends at an explicit boundary before later loss"
        }
        Mode::Offloadable => {
            "an accepted claim's KV is offloaded and restored, and a failed restore is a claim-scoped outcome"
        }
        Mode::RoutedReuse => {
            "a router attributes route cost, placement and later reuse to the claim"
        }
    }
}

/// The version of kvlower that wrote the page (shown on it; the page is
/// regenerated, and stale, when it changes).
const KVLOWER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Renders the page into `out`. `rows` is the matrix as `kvlower matrix`
/// judged it (for the grid); each descriptor is judged again, in full, through
/// `env` (whose re-runs are cached) for what `explain` shows, one descriptor
/// at a time, into the page's data block. `manifests` says which evidence
/// folders CI re-runs live ([`Manifests::read`]).
pub fn write_report(
    repo: &Repository,
    rows: &[MatrixRow<'_>],
    env: &FsEnvironment,
    manifests: &Manifests,
    out: &mut dyn std::fmt::Write,
) -> std::fmt::Result {
    let lines = grid::lines(rows, manifests);
    // The hash covers the script element's exact text (the line break included).
    let script_hash = sha256_base64(&format!("\n{SCRIPT}"));
    out.write_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")?;
    writeln!(
        out,
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{script_hash}'; img-src data:; base-uri 'none'; form-action 'none'\">"
    )?;
    out.write_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")?;
    out.write_str("<meta name=\"color-scheme\" content=\"light dark\">\n")?;
    writeln!(
        out,
        "<meta name=\"generator\" content=\"kvlower {KVLOWER_VERSION} matrix\">"
    )?;
    // What a screenshot of the page records (docs/report.md): the page's look is
    // its stylesheet and script, so a picture taken before either changed is stale.
    writeln!(
        out,
        "<meta name=\"kvlower-page-design\" content=\"{}\">",
        design_digest()
    )?;
    out.write_str("<title>kvlower lowering matrix</title>\n<style>\n")?;
    out.write_str(STYLE)?;
    out.write_str("</style>\n</head>\n<body>\n")?;
    out.write_str("<a class=\"skip\" href=\"#grid\">Skip to the grid</a>\n<header class=\"top\">\n<h1>Lowering matrix</h1>\n")?;
    let verified = rows
        .iter()
        .filter(|r| r.judgment.grade == Some(kvlower_core::Grade::Verified))
        .count();
    let cited = rows
        .iter()
        .filter(|r| r.judgment.grade == Some(kvlower_core::Grade::Cited))
        .count();
    let (mut every, mut on_cpus) = (0, 0);
    for r in rows {
        match manifests
            .of_row(r.descriptor, &r.judgment)
            .map(|x| x.reproduced)
        {
            Some(Reproduced::EveryLanding) => every += 1,
            Some(Reproduced::OnCpusWithFlags) => on_cpus += 1,
            _ => {}
        }
    }
    let digest = repo.catalog.digest();
    writeln!(
        out,
        "<p class=\"lede\">{} runtimes × {} modes, {} rows by adapter depth; positive rows {verified} <strong>verified</strong> (every anchor re-run by <code>kvlower check</code> from files committed here; {every} of them also <strong>reproduced by CI on every landing</strong>, {on_cpus} only on machines whose CPU has their manifest's <code>cpu_flags</code>, the rest checked from committed files only), {cited} <strong>cited</strong>. Generated by <code>kvlower matrix</code> from <code>modes/modes.yaml</code>, <code>capabilities/*.yaml</code> and the evidence folders' <code>reproduce.json</code>; do not edit.</p>",
        lines.len(),
        Mode::ALL.len(),
        rows.len(),
    )?;
    let changes: Vec<String> = repo
        .catalog
        .changes()
        .iter()
        .map(ToString::to_string)
        .collect();
    let catalog = if changes.is_empty() {
        "equals the built-in baseline".to_string()
    } else {
        format!(
            "has {} local change(s) from the built-in baseline: {}",
            changes.len(),
            esc(&changes.join("; "))
        )
    };
    writeln!(
        out,
        "<p class=\"stamp\" id=\"stamp\">kvlower <span id=\"kv-version\">{KVLOWER_VERSION}</span> · catalog digest <code id=\"catalog-digest\" title=\"SHA-256 of modes/modes.yaml as judged\">{digest}</code> · <code>modes/modes.yaml</code> {catalog}</p>",
    )?;
    write_legend(out)?;
    out.write_str("</header>\n<main>\n")?;
    write_toolbar(&lines, out)?;
    out.write_str("<noscript><p class=\"hint\">The cells' rows and evidence are built by the page's script; without it, <code>kvlower explain DESCRIPTOR</code> prints them.</p></noscript>\n")?;
    grid::write_grid(&lines, out)?;
    out.write_str("<p class=\"hint\">Each cell is the best label of that mode over the runtime's row depths (<code>native_sound</code> &gt; <code>sound_with_adapter</code> &gt; <code>rejected</code> &gt; <code>approximate</code> &gt; <code>unknown</code>; a tie keeps the shallowest depth). A positive label means every obligation is supported by curated, anchored evidence at the stated depth; it does not certify unaudited runtime paths.</p>\n")?;
    out.write_str("<aside id=\"panel\" class=\"panel\" role=\"dialog\" aria-labelledby=\"panel-title\" tabindex=\"-1\" hidden></aside>\n</main>\n")?;
    out.write_str("<footer><p>kvlower: fail-closed lowering of resident KV claims onto LLM serving runtimes. The same rows as <a href=\"lowering-matrix.md\"><code>results/lowering-matrix.md</code></a> and <a href=\"lowering-matrix.json\"><code>results/lowering-matrix.json</code></a>; <code>kvlower explain DESCRIPTOR</code> prints a cell's rows in a terminal.</p></footer>\n")?;
    out.write_str("<script type=\"application/json\" id=\"data\">")?;
    let head = serde_json::json!({
        "version": KVLOWER_VERSION,
        "digest": digest,
        "modes": Mode::ALL.iter().map(|m| m.name()).collect::<Vec<_>>(),
        "labels": Label::ALL.iter().map(|l| l.name()).collect::<Vec<_>>(),
        "shapes": Label::ALL.iter().map(|l| shape(*l)).collect::<Vec<_>>(),
    });
    data::write_data(repo, env, manifests, &lines, head, out)?;
    out.write_str("</script>\n")?;
    writeln!(out, "<script>\n{SCRIPT}</script>\n</body>\n</html>")
}

fn write_toolbar(lines: &[grid::Line<'_>], out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    let mut all_kinds: Vec<&'static str> = Vec::new();
    for line in lines {
        for k in grid::kinds(line.descriptor) {
            if !all_kinds.contains(&k) {
                all_kinds.push(k);
            }
        }
    }
    all_kinds.sort_unstable();
    out.write_str("<form class=\"toolbar\" id=\"filters\" role=\"search\" aria-label=\"Search and filter the grid\">\n")?;
    out.write_str("<label class=\"q\">Search <input type=\"search\" id=\"f-q\" placeholder=\"runtime, version or file\" autocomplete=\"off\" spellcheck=\"false\"></label>\n")?;
    out.write_str("<label>Kind <select id=\"f-kind\"><option value=\"\">any</option>")?;
    for k in &all_kinds {
        write!(out, "<option value=\"{k}\">{k}</option>")?;
    }
    out.write_str(
        "</select></label>\n<label>Mode <select id=\"f-mode\"><option value=\"\">any</option>",
    )?;
    for m in Mode::ALL {
        write!(out, "<option value=\"{0}\">{0}</option>", m.name())?;
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
    out.write_str("</select></label>\n<label>Grade <select id=\"f-grade\"><option value=\"\">any</option><option value=\"verified\">✓ verified</option><option value=\"cited\">❝ cited</option><option value=\"none\">none (not positive)</option></select></label>\n")?;
    out.write_str("<button type=\"reset\" id=\"f-reset\">Clear</button>\n<output id=\"f-status\" aria-live=\"polite\"></output>\n</form>\n")
}

fn write_legend(out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    out.write_str("<details class=\"legend\" open><summary>Legend: labels, grades and modes</summary>\n<ul class=\"labels\" aria-label=\"Labels\">")?;
    for (label, what) in [
        (
            Label::NativeSound,
            "the unmodified runtime supplies every obligation",
        ),
        (
            Label::SoundWithAdapter,
            "with an adapter or patch at the row's depth",
        ),
        (
            Label::Rejected,
            "offered as the mode, and a forbidden or unenforced lowering",
        ),
        (
            Label::Approximate,
            "signals make it plausible, obligations are missing",
        ),
        (
            Label::Unknown,
            "obligations missing, nothing related exercised",
        ),
    ] {
        write!(
            out,
            "<li class=\"l-{c}\"><span class=\"sh\" aria-hidden=\"true\">{s}</span> <b>{c}</b>: {what}</li>",
            c = label_class(label),
            s = shape(label)
        )?;
    }
    out.write_str("<li><span class=\"gm v\">✓</span> <b>verified</b>: every anchor re-run by <code>kvlower check</code></li><li><span class=\"gm v rp\">✓↻</span> <b>reproduced by CI on every landing</b>: every evidence folder the row rests on has a <code>reproduce.json</code> that CI re-runs live; <span class=\"gm v rp cpu\">✓↻*</span> only on machines whose CPU has the manifest's <code>cpu_flags</code> (elsewhere CI names it as not reproduced); <span class=\"gm v\">✓</span> alone: checked from committed files only</li><li><span class=\"gm c\">❝</span> <b>cited</b>: rests on a cited source</li><li><span class=\"n\">3/4</span> a cell that is not positive: obligations of the mode its best row has, of all</li></ul>\n<dl class=\"modes\" aria-label=\"Modes\">")?;
    for (mi, m) in Mode::ALL.iter().enumerate() {
        write!(
            out,
            "<div><dt><code>{n}</code> <span class=\"abbr\">({a})</span></dt><dd>{t}</dd></div>",
            n = m.name(),
            a = grid::MODE_ABBR.get(mi).copied().unwrap_or("?"),
            t = mode_meaning(*m)
        )?;
    }
    out.write_str("</dl>\n</details>\n")
}

/// SHA-256 (base64) of the page's stylesheet and script: what the committed
/// screenshots of the page record, and the test that keeps them fresh compares.
pub fn design_digest() -> String {
    sha256_base64(&format!("{STYLE}\n{SCRIPT}"))
}

const STYLE: &str = include_str!("html_page/page.css");
/// The page's one script: the grid (filters, search, sorting, groups, keys,
/// the URL's state) and the panel built from the data block.
const SCRIPT: &str = concat!(
    include_str!("html_page/grid.js"),
    include_str!("html_page/panel.js")
);
