//! `kvlower explain <descriptor>`: for each row, the obligation-by-obligation
//! reasoning that decided its label.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use kvlower_core::judgment::{Judgment, LabelReason, Offered};
use kvlower_core::{Depth, Descriptor, Mode, judge, row_depths};
use kvlower_load::{FsEnvironment, load_catalog, load_descriptor};
use serde::Serialize;

use crate::Exit;
use crate::output::{Format, ReportOptions, report};
use crate::results::{SCHEMA_VERSION, reason_sentence, to_json};

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The descriptor to explain (e.g. capabilities/vllm_patched.yaml)
    pub descriptor: PathBuf,
    /// Only rows of this mode
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Only rows at this depth
    #[arg(long, value_parser = parse_depth)]
    pub depth: Option<Depth>,
    /// Repository root holding modes/modes.yaml (and the files repo_file anchors name)
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    #[command(flatten)]
    pub report: ReportOptions,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    Mode::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
        format!("unknown mode `{s}`; expected one of: {}", names.join(", "))
    })
}

fn parse_depth(s: &str) -> Result<Depth, String> {
    Depth::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Depth::ALL.iter().map(|d| d.name()).collect();
        format!("unknown depth `{s}`; expected one of: {}", names.join(", "))
    })
}

pub fn run(args: &ExplainArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let mut diagnostics = Vec::new();
    let catalog = load_catalog(&args.root, &mut diagnostics);
    let shown = args.descriptor.to_string_lossy().replace('\\', "/");
    let descriptor = catalog.as_ref().and_then(|catalog| {
        let env = FsEnvironment::new(args.root.clone());
        load_descriptor(Path::new(""), &shown, catalog, &env, &mut diagnostics)
    });
    let (Some(catalog), Some(descriptor)) = (catalog, descriptor) else {
        diagnostics.sort();
        let summary = format!(
            "kvlower explain: {} finding(s); nothing explained",
            diagnostics.len()
        );
        report(&args.report, "explain", &diagnostics, &summary, out, err)?;
        return Ok(Exit::Findings);
    };
    let env = FsEnvironment::new(args.root.clone());
    let judgments: Vec<Judgment> = Mode::ALL
        .iter()
        .filter(|m| args.mode.is_none_or(|want| want == **m))
        .flat_map(|&mode| {
            row_depths(&descriptor)
                .into_iter()
                .filter(|d| args.depth.is_none_or(|want| want == *d))
                .map(move |depth| (mode, depth))
        })
        .map(|(mode, depth)| judge(&catalog, &descriptor, mode, depth, &env))
        .collect();
    if judgments.is_empty() {
        writeln!(
            err,
            "error: {shown} has no row for that mode/depth (its depths: {})",
            row_depths(&descriptor)
                .iter()
                .map(|d| d.name())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
        return Ok(Exit::Usage);
    }
    match args.report.format {
        Format::Json => write!(out, "{}", explain_json(&shown, &descriptor, &judgments))?,
        Format::Markdown => write!(out, "{}", explain_markdown(&shown, &descriptor, &judgments))?,
        Format::Human | Format::Github => {
            if args.report.quiet {
                for j in &judgments {
                    writeln!(out, "{} @ {}: {}", j.mode, j.depth, label_text(j))?;
                }
            } else {
                write!(out, "{}", explain_human(&shown, &descriptor, &judgments))?;
            }
        }
    }
    Ok(Exit::Success)
}

fn label_text(j: &Judgment) -> String {
    let grade = j.grade.map(|g| format!(", {g}")).unwrap_or_default();
    match j.subtype {
        Some(s) => format!("{} ({s}{grade})", j.label),
        None if grade.is_empty() => j.label.to_string(),
        None => format!("{} ({})", j.label, &grade[2..]),
    }
}

/// The human explanation of every row: what satisfied each obligation, or
/// why each candidate did not count.
pub fn explain_human(path: &str, d: &Descriptor, judgments: &[Judgment]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{path}: {} {} ({} rows)",
        d.runtime.name,
        d.runtime.version,
        judgments.len()
    );
    for j in judgments {
        let _ = writeln!(s, "\n{} @ {}: {}", j.mode, j.depth, label_text(j));
        let _ = writeln!(s, "  why: {}", reason_sentence(&j.reason));
        for f in &j.obligations {
            match &f.satisfied_by {
                Some(e) => {
                    let _ = writeln!(
                        s,
                        "  [x] {} ({}) <- {} [{}] {}",
                        f.obligation,
                        f.obligation.code(),
                        e.path,
                        e.depth,
                        e.anchor
                    );
                    for r in &f.also_satisfied_by {
                        let _ = writeln!(
                            s,
                            "        also supplied by {} [{}] {} (redundant)",
                            r.path, r.depth, r.anchor
                        );
                    }
                }
                None if f.rejected.is_empty() => {
                    let _ = writeln!(
                        s,
                        "  [ ] {} ({}): no evidence item names it",
                        f.obligation,
                        f.obligation.code()
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "  [ ] {} ({}): no candidate counts",
                        f.obligation,
                        f.obligation.code()
                    );
                }
            }
            for (e, defeats) in &f.rejected {
                let reasons: Vec<String> = defeats.iter().map(ToString::to_string).collect();
                let _ = writeln!(
                    s,
                    "        {} [{}]: {}",
                    e.path,
                    e.depth,
                    reasons.join("; ")
                );
            }
        }
        for a in &j.atoms {
            match &a.anchored_by {
                Some(e) => {
                    let _ = writeln!(s, "  [x] atom {} <- {} {}", a.atom, e.path, e.anchor);
                }
                None => {
                    let _ = writeln!(s, "  [ ] atom {}: not anchored to a trace", a.atom);
                }
            }
            for (e, defects) in &a.rejected {
                let reasons: Vec<String> = defects.iter().map(ToString::to_string).collect();
                let _ = writeln!(s, "        {}: {}", e.path, reasons.join("; "));
            }
        }
        if !j.signals.is_empty() {
            let names: Vec<&str> = j.signals.iter().map(|x| x.name()).collect();
            let _ = writeln!(s, "  signals (satisfy nothing): {}", names.join(", "));
        }
        for p in &j.proposals {
            let what = match p.offered {
                Offered::Primitive { primitive } => format!("`{primitive}` offered as {}", j.mode),
                Offered::AdapterEnforcement {
                    adapter_depth,
                    obligation,
                } => {
                    format!("{adapter_depth} adapter claims `{obligation}`")
                }
            };
            match &p.forbidden_because {
                Some(why) => {
                    let _ = writeln!(
                        s,
                        "  proposal {}: {what}: forbidden lowering: {why}",
                        p.path
                    );
                }
                None => {
                    let _ = writeln!(s, "  proposal {}: {what}", p.path);
                }
            }
        }
        if matches!(j.reason, LabelReason::ProposalLacksEnforcement { .. }) {
            let _ = writeln!(
                s,
                "  (a proposal without the mode's enforcement-critical obligations is a misrepresentation)"
            );
        }
        let _ = writeln!(s, "  non-claim: {}", d.non_claims.for_mode(j.mode));
    }
    s
}

fn explain_markdown(path: &str, d: &Descriptor, judgments: &[Judgment]) -> String {
    let mut s = format!(
        "### kvlower explain `{path}`\n\n{} {}\n\n",
        d.runtime.name, d.runtime.version
    );
    s.push_str("| mode | depth | label | why |\n|---|---|---|---|\n");
    for j in judgments {
        let _ = writeln!(
            s,
            "| {} | {} | **{}** | {} |",
            j.mode,
            j.depth,
            label_text(j),
            reason_sentence(&j.reason)
        );
    }
    s.push_str("\n<details><summary>obligation by obligation</summary>\n\n```text\n");
    s.push_str(&explain_human(path, d, judgments));
    s.push_str("```\n\n</details>\n");
    s
}

fn explain_json(path: &str, d: &Descriptor, judgments: &[Judgment]) -> String {
    #[derive(Serialize)]
    struct Row<'a> {
        reason_text: String,
        non_claim: &'a str,
        #[serde(flatten)]
        judgment: &'a Judgment,
    }
    #[derive(Serialize)]
    struct Doc<'a> {
        schema_version: u32,
        descriptor: &'a str,
        runtime: String,
        rows: Vec<Row<'a>>,
    }
    to_json(&Doc {
        schema_version: SCHEMA_VERSION,
        descriptor: path,
        runtime: format!("{} {}", d.runtime.name, d.runtime.version),
        rows: judgments
            .iter()
            .map(|j| Row {
                reason_text: reason_sentence(&j.reason),
                non_claim: d.non_claims.for_mode(j.mode),
                judgment: j,
            })
            .collect(),
    })
}
