//! The grid: one line per descriptor, grouped under its runtime (the first
//! component of `runtime.identity`), one compact cell per mode — the label's
//! shape and colour, the grade as a mark, and for a cell that is not
//! positive its obligation count (`3/4`) — each a link to its stable anchor
//! `#cell=STEM/MODE` (the descriptor file without `capabilities/` and
//! `.yaml`, so adding a descriptor moves no link).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use kvlower_core::matrix::MatrixRow;
use kvlower_core::{Depth, Descriptor, Grade, Label, Mode, Subtype};

use super::reproduced::{Manifests, Reproduced, Reproduction};
use super::{esc, label_class, mode_meaning, shape};

/// One cell of the grid: the best row of a (descriptor, mode).
#[derive(Debug, Clone)]
pub(super) struct Cell {
    pub(super) label: Label,
    pub(super) depth: Depth,
    pub(super) subtype: Option<Subtype>,
    pub(super) grade: Option<Grade>,
    /// The best row's satisfied obligations and its mode's bundle size.
    pub(super) satisfied: usize,
    pub(super) obligations: usize,
    /// A `verified` best row's reproduction by CI (from the committed manifests).
    pub(super) reproduction: Option<Reproduction>,
}

/// One line of the grid: a descriptor and its best cell per mode.
pub(super) struct Line<'a> {
    pub(super) path: &'a str,
    pub(super) descriptor: &'a Descriptor,
    pub(super) cells: BTreeMap<Mode, Cell>,
}

impl Line<'_> {
    /// The descriptor's stable name on the page: its path without
    /// `capabilities/` and `.yaml` (`vllm_cpu_0.32.0`).
    pub(super) fn stem(&self) -> &str {
        stem(self.path)
    }

    /// The runtime it is grouped under: the first identity component's kind.
    pub(super) fn group(&self) -> &'static str {
        self.descriptor
            .runtime
            .identity
            .first()
            .map_or("other", |c| c.kind.name())
    }
}

pub(super) fn stem(path: &str) -> &str {
    let p = path.strip_prefix("capabilities/").unwrap_or(path);
    p.strip_suffix(".yaml").unwrap_or(p)
}

/// A stem or mode as it goes into a `#cell=` link: unreserved characters and
/// `/` stay, every other byte is `%XX` (the script decodes it).
pub(super) fn hash_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The grid's lines from the judged rows (grouped by descriptor, each mode's
/// depths in ladder order): the greatest label, a tie keeping the shallowest;
/// then ordered by runtime group (a stable sort: by path within a group).
pub(super) fn lines<'a>(rows: &[MatrixRow<'a>], manifests: &Manifests) -> Vec<Line<'a>> {
    let mut lines: Vec<Line<'a>> = Vec::new();
    for row in rows {
        if lines.last().is_none_or(|l| l.path != row.descriptor_path) {
            lines.push(Line {
                path: row.descriptor_path,
                descriptor: row.descriptor,
                cells: BTreeMap::new(),
            });
        }
        let j = &row.judgment;
        let cell = Cell {
            label: j.label,
            depth: j.depth,
            subtype: j.subtype,
            grade: j.grade,
            satisfied: j.satisfied().count(),
            obligations: j.obligations.len(),
            reproduction: None,
        };
        if let Some(line) = lines.last_mut() {
            let better = line.cells.get(&j.mode).is_none_or(|e| cell.label > e.label);
            if better {
                let reproduction = manifests.of_row(row.descriptor, j);
                line.cells.insert(
                    j.mode,
                    Cell {
                        reproduction,
                        ..cell
                    },
                );
            }
        }
    }
    lines.sort_by(|a, b| a.group().cmp(b.group()));
    lines
}

/// The distinct runtime kinds of a descriptor's identity, in order.
pub(super) fn kinds(d: &Descriptor) -> Vec<&'static str> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for c in &d.runtime.identity {
        if !kinds.contains(&c.kind.name()) {
            kinds.push(c.kind.name());
        }
    }
    kinds
}

/// What the runtime is called on the page: its name, then its version — for a
/// composite runtime (more than one identity component) each component's own
/// version (`dynamo 1.6.1 + vllm 0.32.0`), never the first one's for all.
pub(super) fn version_text(d: &Descriptor) -> String {
    let r = &d.runtime;
    if r.identity.len() > 1 {
        let parts: Vec<String> = r
            .identity
            .iter()
            .map(|c| format!("{} {}", c.kind, c.version))
            .collect();
        parts.join(" + ")
    } else {
        r.version.clone()
    }
}

/// Rank of a cell for sorting: label first, then verified over cited.
fn rank(cell: &Cell) -> usize {
    cell.label.index() * 3
        + match cell.grade {
            Some(Grade::Verified) => 2,
            Some(Grade::Cited) => 1,
            None => 0,
        }
}

pub(super) fn write_grid(lines: &[Line<'_>], out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    out.write_str("<table id=\"grid\" class=\"grid\">\n<caption class=\"sr\">Best label per runtime and mode; each cell opens its rows and evidence</caption>\n<colgroup><col class=\"c-rt\">")?;
    for _ in Mode::ALL {
        out.write_str("<col class=\"c-m\">")?;
    }
    out.write_str("</colgroup>\n<thead>\n<tr><th scope=\"col\" class=\"rt\" aria-sort=\"ascending\"><button type=\"button\" data-sort=\"runtime\">Runtime</button></th>")?;
    for (mi, mode) in Mode::ALL.iter().enumerate() {
        write!(
            out,
            "<th scope=\"col\" class=\"mode\" aria-sort=\"none\"><button type=\"button\" data-sort=\"{m}\" aria-describedby=\"mm-{m}\"><span class=\"full\">{w}</span><span class=\"abbr\" aria-hidden=\"true\">{a}</span></button><span class=\"tip\" role=\"tooltip\" id=\"mm-{m}\">{t}</span></th>",
            m = mode.name(),
            a = MODE_ABBR.get(mi).copied().unwrap_or("?"),
            t = mode_meaning(*mode),
            // A line may break after an underscore (`hard_protected`), not inside a word.
            w = mode.name().replace('_', "_<wbr>"),
        )?;
    }
    out.write_str("</tr>\n</thead>\n<tbody>\n")?;
    let mut group: Option<&str> = None;
    for (di, line) in lines.iter().enumerate() {
        let g = line.group();
        if group != Some(g) {
            group = Some(g);
            let n = lines.iter().filter(|l| l.group() == g).count();
            writeln!(
                out,
                "<tr class=\"grp\" data-g=\"{g}\"><th scope=\"rowgroup\" colspan=\"{c}\"><button type=\"button\" class=\"fold\" aria-expanded=\"true\" data-g=\"{g}\"><span class=\"tw\" aria-hidden=\"true\">▾</span> {g} <span class=\"count\">{n} descriptor{s}</span></button></th></tr>",
                c = Mode::ALL.len() + 1,
                s = if n == 1 { "" } else { "s" },
            )?;
        }
        write_line(di, line, out)?;
    }
    out.write_str("</tbody>\n</table>\n")
}

/// Two-letter mode names for the phone's narrow columns (the legend spells them).
pub(super) const MODE_ABBR: &[&str] = &["BE", "SP", "HP", "DM", "EX", "OF", "RR"];

fn write_line(di: usize, line: &Line<'_>, out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    let r = &line.descriptor.runtime;
    let stem = line.stem();
    write!(
        out,
        "<tr class=\"ln\" data-i=\"{di}\" data-g=\"{g}\" data-k=\"{k}\"><th scope=\"row\" class=\"rt\"><span class=\"name\">{name}</span> <span class=\"ver\">{ver}</span> <code class=\"path\">{path}</code></th>",
        g = line.group(),
        k = kinds(line.descriptor).join(" "),
        name = esc(&r.name),
        ver = esc(&version_text(line.descriptor)),
        path = esc(stem),
    )?;
    let href = hash_part(stem);
    for mode in Mode::ALL {
        let m = mode.name();
        let Some(cell) = line.cells.get(mode) else {
            write!(
                out,
                "<td class=\"x empty\" data-m=\"{m}\" data-l=\"\" data-gr=\"none\" data-r=\"-1\"><span class=\"sr\">{m}: no row</span>—</td>"
            )?;
            continue;
        };
        let c = label_class(cell.label);
        let grade = cell.grade.map_or("none", |g| g.name());
        // The text alternative: the glyph is never the only carrier of meaning
        // (also shown as the cell's tooltip by CSS, from this same attribute).
        let mut aria = format!("{m}: {c}");
        if let Some(s) = cell.subtype {
            let _ = write!(aria, " ({s})");
        }
        match cell.grade {
            Some(g) => {
                let _ = write!(aria, ", {g}");
                if let Some(r) = &cell.reproduction {
                    let _ = write!(aria, ", {}", r.phrase());
                }
            }
            None => {
                let _ = write!(
                    aria,
                    ", {} of {} obligations",
                    cell.satisfied, cell.obligations
                );
            }
        }
        let _ = write!(aria, ", depth {}", cell.depth);
        // The shape as the link's text, then one element for the grade mark or the
        // count: a 2,000-descriptor grid is 14,000 cells, and each element costs style
        // and layout (the link's `aria-label` is what a screen reader reads).
        let mark = match cell.grade {
            // `↻`: its evidence is re-run live by CI on every landing; `↻*`: only on
            // machines whose CPU has its manifest's `cpu_flags`; `✓` alone: checked
            // from committed files only (the legend says so).
            Some(Grade::Verified) => match cell.reproduction.as_ref().map(|r| &r.reproduced) {
                Some(Reproduced::EveryLanding) => {
                    "<i class=\"gm v rp\" aria-hidden=\"true\">✓↻</i>".to_string()
                }
                Some(Reproduced::OnCpusWithFlags) => {
                    "<i class=\"gm v rp cpu\" aria-hidden=\"true\">✓↻*</i>".to_string()
                }
                _ => "<i class=\"gm v\" aria-hidden=\"true\">✓</i>".to_string(),
            },
            Some(Grade::Cited) => "<i class=\"gm c\" aria-hidden=\"true\">❝</i>".to_string(),
            None => format!(
                "<i class=\"n\" aria-hidden=\"true\">{}/{}</i>",
                cell.satisfied, cell.obligations
            ),
        };
        // A verified cell names its reproduction (closed vocabulary) for the browser test.
        let rp = match cell.reproduction.as_ref().map(|r| &r.reproduced) {
            Some(Reproduced::EveryLanding) => " data-rp=\"every_landing\"",
            Some(Reproduced::OnCpusWithFlags) => " data-rp=\"on_cpus_with_flags\"",
            Some(Reproduced::CommittedFilesOnly) => " data-rp=\"committed_files_only\"",
            None => "",
        };
        write!(
            out,
            "<td class=\"x l-{c}\" data-m=\"{m}\" data-l=\"{c}\" data-gr=\"{grade}\" data-r=\"{rank}\"{rp}><a href=\"#cell={href}/{m}\" aria-label=\"{aria}\">{s}{mark}</a></td>",
            rank = rank(cell),
            s = shape(cell.label),
            aria = esc(&aria),
        )?;
    }
    out.write_str("</tr>\n")
}
