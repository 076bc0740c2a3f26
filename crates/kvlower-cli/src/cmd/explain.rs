//! `kvlower explain <descriptor>`: for each row, the obligation-by-obligation
//! reasoning that decided its label.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kvlower_core::judgment::{Judgment, LabelReason};
use kvlower_core::{Depth, Descriptor, Mode, judge, row_depths};
use kvlower_evidence::FsEnvironment;
use kvlower_load::{load_catalog, load_descriptor};
use serde::Serialize;

use crate::Exit;
use crate::opening::stopped_by;
use crate::output::{Form, Outcome, Payload, ReportOptions, escape_control, md_cell, md_code};

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
    /// [default: the nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
    #[command(flatten)]
    pub report: ReportOptions,
}

fn parse_mode(s: &str) -> Result<Mode, String> {
    Mode::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Mode::ALL.iter().map(|m| m.name()).collect();
        unknown_name("mode", s, &names)
    })
}

fn parse_depth(s: &str) -> Result<Depth, String> {
    Depth::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Depth::ALL.iter().map(|d| d.name()).collect();
        unknown_name("depth", s, &names)
    })
}

/// "unknown mode `x`", with the closest name (as `check` suggests one) and the list.
fn unknown_name(what: &str, given: &str, names: &[&str]) -> String {
    let shown = crate::output::escape_control(given);
    let closest = names
        .iter()
        .map(|n| (strsim::jaro_winkler(given, n), *n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match closest {
        Some((_, name)) => format!(
            "unknown {what} `{shown}`; did you mean `{name}`? (expected one of: {})",
            names.join(", ")
        ),
        None => format!(
            "unknown {what} `{shown}`; expected one of: {}",
            names.join(", ")
        ),
    }
}

/// `explain`'s rows: the envelope's payload, its text for people (labels only with
/// `-q`), its Markdown.
#[derive(Debug)]
pub struct ExplainDocument {
    shown: String,
    descriptor: Descriptor,
    judgments: Vec<Judgment>,
    human: String,
}

impl Serialize for ExplainDocument {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        explain_payload(&self.shown, &self.descriptor, &self.judgments).serialize(s)
    }
}

impl Payload for ExplainDocument {
    fn human(&self) -> String {
        self.human.clone()
    }
    fn markdown(&self) -> String {
        explain_markdown(&self.shown, &self.descriptor, &self.judgments)
    }
}

pub fn run(args: &ExplainArgs, ctx: &crate::ctx::Ctx) -> anyhow::Result<Outcome<ExplainDocument>> {
    // A descriptor that does not exist is a wrong command line (exit 2), not a
    // finding in an input (exit 1).
    let missing = kvlower_fs::inspect::lstat(&args.descriptor)
        .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound);
    if missing {
        let message = format!(
            "no such descriptor: {} (give a path such as capabilities/<name>.yaml)",
            args.descriptor.display()
        );
        return Ok(Outcome::error("explain", Exit::Usage, &message));
    }
    let mut diagnostics = Vec::new();
    let catalog = load_catalog(&args.root, &mut diagnostics);
    let shown = args.descriptor.to_string_lossy().replace('\\', "/");
    // A descriptor of the repository (under its `capabilities/`) is read as `check` reads
    // it, confined to the root: a link out of it, a FIFO or an oversized file is refused
    // here too (invalid means one thing, crate::validity). Any other path is read as named.
    // Compared as absolute paths (lexically, no link followed): `explain
    // capabilities/x.yaml` from the root has root `.`, and `--root ../NAME` from inside
    // it keeps its `..` in an absolute path, so both are resolved first.
    let in_repo = std::path::absolute(&args.descriptor)
        .ok()
        .map(|p| lexically_normal(&p))
        .zip(
            std::path::absolute(&args.root)
                .ok()
                .map(|p| lexically_normal(&p)),
        )
        .and_then(|(descriptor, root)| {
            descriptor
                .strip_prefix(&root)
                .ok()
                .map(|rel| rel.to_string_lossy().replace('\\', "/"))
        })
        .filter(|rel| {
            rel.strip_prefix(kvlower_load::CAPABILITIES_DIR)
                .is_some_and(|rest| rest.starts_with('/'))
        });
    // A name `check` will not read (not UTF-8, control characters) is `check`'s finding.
    if let Some(rel) = &in_repo
        && let Ok((files, misnamed)) = kvlower_load::descriptor_files(&args.root)
        && !files.contains(rel)
        && !misnamed.is_empty()
        && (rel.chars().any(char::is_control) || args.descriptor.to_str().is_none())
    {
        let not_done = "nothing explained";
        return Ok(stopped_by("explain", Form::Report, misnamed, not_done));
    }
    let descriptor = catalog.as_ref().and_then(|catalog| {
        // The run's one environment (its `Ctx`), also the rows' below: what loading
        // re-ran is not re-run to judge.
        let env = ctx.env();
        match &in_repo {
            Some(rel) => load_descriptor(&args.root, rel, catalog, env, &mut diagnostics),
            None => load_descriptor(Path::new(""), &shown, catalog, env, &mut diagnostics),
        }
    });
    let (Some(catalog), Some(descriptor)) = (catalog, descriptor) else {
        let not_done = "nothing explained";
        return Ok(stopped_by("explain", Form::Report, diagnostics, not_done));
    };
    let env = ctx.env();
    // Invalid means one thing (crate::validity): a descriptor `check` counts invalid for
    // one of its judged rows (any row, not only those asked for) is labelled nowhere.
    let require_verified = match crate::config::load(&args.root) {
        Ok(config) => config.check.require_verified,
        Err(finding) => {
            let not_done = "nothing explained";
            return Ok(stopped_by(
                "explain",
                Form::Report,
                vec![*finding],
                not_done,
            ));
        }
    };
    let all_rows = kvlower_core::matrix::judge_descriptor(&catalog, &shown, &descriptor, env);
    let loaded = [kvlower_load::LoadedDescriptor {
        path: in_repo.clone().unwrap_or_else(|| shown.clone()),
        descriptor: descriptor.clone(),
    }];
    let root = if in_repo.is_some() {
        args.root.as_path()
    } else {
        Path::new("")
    };
    let mut invalid = crate::validity::row_findings(root, &all_rows, require_verified);
    invalid.extend(
        kvlower_load::acknowledge::apply(root, &loaded, Vec::new())
            .findings
            .into_iter()
            .filter(|d| !d.is_warning()),
    );
    drop(all_rows);
    if !invalid.is_empty() {
        let not_done = "nothing explained";
        return Ok(stopped_by("explain", Form::Report, invalid, not_done));
    }
    let judgments: Vec<Judgment> = Mode::ALL
        .iter()
        .filter(|m| args.mode.is_none_or(|want| want == **m))
        .flat_map(|&mode| {
            row_depths(&descriptor)
                .into_iter()
                .filter(|d| args.depth.is_none_or(|want| want == *d))
                .map(move |depth| (mode, depth))
        })
        .map(|(mode, depth)| judge(&catalog, &descriptor, mode, depth, env))
        .collect();
    if judgments.is_empty() {
        let message = format!(
            "{shown} has no row for that mode/depth (its depths: {})",
            row_depths(&descriptor)
                .iter()
                .map(|d| d.name())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return Ok(Outcome::error("explain", Exit::Usage, &message));
    }
    let summary = format!(
        "kvlower explain: {} row(s) of {}",
        judgments.len(),
        escape_control(&shown)
    );
    let color = args.report.color.enabled_for(crate::output::Stream::Stdout);
    let mut human = String::new();
    if args.report.quiet {
        for j in &judgments {
            let _ = writeln!(human, "{} @ {}: {}", j.mode, j.depth, paint_label(j, color));
        }
    } else {
        let changes = catalog.changes();
        if !changes.is_empty() {
            let _ = writeln!(
                human,
                "catalog: {} local change(s) from the built-in baseline (`kvlower catalog diff`):",
                changes.len()
            );
            for c in &changes {
                let _ = writeln!(human, "  {c}");
            }
        }
        let text = explain_human(&shown, &descriptor, &judgments);
        human.push_str(&paint_explanation(&text, &judgments, color));
        human.push_str(&campaigns_human(&catalog, &descriptor, env));
    }
    let document = ExplainDocument {
        shown,
        descriptor,
        judgments,
        human,
    };
    Ok(Outcome::done(
        "explain",
        Exit::Success,
        Form::Document,
        summary,
        document,
    ))
}

/// What each gate campaign the descriptor anchors rests on (docs/conformance.md): its
/// runs and scenarios, whether it holds (every run agrees with its engine truth), and
/// per gate the positives and the controls by kind against the catalog's minimums.
fn campaigns_human(catalog: &kvlower_core::Catalog, d: &Descriptor, env: &FsEnvironment) -> String {
    use kvlower_core::environment::{Environment, RepoFile};
    let mut paths = std::collections::BTreeSet::new();
    let anchors = d
        .native
        .iter()
        .map(|e| &e.anchor)
        .chain(d.adapters.iter().flat_map(|a| {
            a.preconditions
                .values()
                .chain(a.evidence.iter().map(|e| &e.anchor))
        }));
    for a in anchors {
        if a.kind == Some(kvlower_core::AnchorKind::RepoFile)
            && let Some(p) = &a.path
        {
            paths.insert(p.clone());
        }
    }
    let mut s = String::new();
    for path in paths {
        let RepoFile::CampaignDocument(facts) = env.repo_file(&path) else {
            continue;
        };
        let state = if facts.held {
            "holds: every run re-runs as its scenario states and agrees with the engine truth"
                .to_owned()
        } else {
            format!(
                "does not hold: {}",
                facts
                    .problem
                    .as_ref()
                    .map(|r| r.why.as_str())
                    .unwrap_or("(no reason recorded)")
            )
        };
        let _ = writeln!(
            s,
            "\ncampaign {}: {} runs in {} scenarios; {}",
            escape_control(&path),
            facts.runs,
            facts.scenarios,
            escape_control(&state)
        );
        let witnessed = kvlower_core::anchoring::campaign_witnessed(catalog, &facts);
        for (gate, counts) in &facts.gates {
            let rule = catalog.campaign_controls(*gate);
            let controls: Vec<String> = counts
                .controls
                .iter()
                .map(|(k, n)| {
                    let min = rule.and_then(|r| r.controls.get(k)).copied().unwrap_or(0);
                    // A kind the catalog requires counts only the runs showing its outcome.
                    let n = rule.filter(|r| r.controls.contains_key(k)).map_or(*n, |r| {
                        kvlower_core::anchoring::campaign_control_runs(r, counts, k)
                    });
                    format!("{k} {n}/{min}")
                })
                .collect();
            let _ = writeln!(
                s,
                "  {gate}: {}; positives {}/{}; controls: {}",
                if witnessed.contains(gate) {
                    "witnessed"
                } else {
                    "not witnessed"
                },
                counts.positives,
                rule.map_or_else(|| "-".to_owned(), |r| r.min_positive_runs.to_string()),
                if controls.is_empty() {
                    "none".to_owned()
                } else {
                    controls.join(", ")
                }
            );
            for m in kvlower_core::anchoring::campaign_gate_missing(catalog, &facts, *gate) {
                let _ = writeln!(s, "    missing: {}", escape_control(&m));
            }
        }
    }
    s
}

/// The label coloured by what it means: green positive, red rejected,
/// yellow approximate, dim unknown.
fn paint_label(j: &Judgment, color: bool) -> String {
    let text = label_text(j);
    if !color {
        return text;
    }
    let code = match j.label {
        kvlower_core::Label::NativeSound | kvlower_core::Label::SoundWithAdapter => "32",
        kvlower_core::Label::Rejected => "31",
        kvlower_core::Label::Approximate => "33",
        kvlower_core::Label::Unknown => "2",
    };
    format!("\x1b[1;{code}m{text}\x1b[0m")
}

/// Colours each row's header line (`mode @ depth: label`) of the explanation.
fn paint_explanation(text: &str, judgments: &[Judgment], color: bool) -> String {
    if !color {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16 * judgments.len());
    let mut rows = judgments.iter();
    let mut next = rows.next();
    for line in text.split_inclusive('\n') {
        match next {
            Some(j)
                if line.trim_end() == format!("{} @ {}: {}", j.mode, j.depth, label_text(j)) =>
            {
                out.push_str(&format!(
                    "{} @ {}: {}\n",
                    j.mode,
                    j.depth,
                    paint_label(j, true)
                ));
                next = rows.next();
            }
            _ => out.push_str(line),
        }
    }
    out
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
        "{}: {} {} ({} rows)",
        escape_control(path),
        escape_control(&d.runtime.name),
        escape_control(&d.runtime.version),
        judgments.len()
    );
    for j in judgments {
        let _ = writeln!(s, "\n{} @ {}: {}", j.mode, j.depth, label_text(j));
        let _ = writeln!(s, "  why: {}", j.reason);
        for f in &j.obligations {
            match &f.satisfied_by {
                Some(e) => {
                    let _ = writeln!(
                        s,
                        "  [x] {} ({}) <- {} [{}] {}",
                        f.obligation,
                        f.obligation.code(),
                        escape_control(&e.path),
                        e.depth,
                        escape_control(&e.anchor)
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
                    escape_control(&e.path),
                    e.depth,
                    escape_control(&reasons.join("; "))
                );
            }
        }
        for a in &j.atoms {
            match &a.anchored_by {
                Some(e) => {
                    let _ = writeln!(
                        s,
                        "  [x] atom {} <- {} {}",
                        a.atom,
                        escape_control(&e.path),
                        escape_control(&e.anchor)
                    );
                }
                None => {
                    let _ = writeln!(s, "  [ ] atom {}: not anchored to a trace", a.atom);
                }
            }
            for (e, defects) in &a.rejected {
                let reasons: Vec<String> = defects.iter().map(ToString::to_string).collect();
                let _ = writeln!(
                    s,
                    "        {}: {}",
                    escape_control(&e.path),
                    escape_control(&reasons.join("; "))
                );
            }
        }
        if !j.signals.is_empty() {
            let names: Vec<&str> = j.signals.iter().map(|x| x.name()).collect();
            let _ = writeln!(s, "  signals (satisfy nothing): {}", names.join(", "));
        }
        for p in &j.proposals {
            let what = format!("{} offered as {}", p.offered, j.mode);
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
        let _ = writeln!(
            s,
            "  non-claim: {}",
            escape_control(d.non_claims.for_mode(j.mode))
        );
    }
    s
}

fn explain_markdown(path: &str, d: &Descriptor, judgments: &[Judgment]) -> String {
    let mut s = format!(
        "### kvlower explain {}\n\n{} {}\n\n",
        md_code(path),
        md_cell(&d.runtime.name),
        md_cell(&d.runtime.version)
    );
    s.push_str("| mode | depth | label | why |\n|---|---|---|---|\n");
    for j in judgments {
        let _ = writeln!(
            s,
            "| {} | {} | **{}** | {} |",
            j.mode,
            j.depth,
            label_text(j),
            md_cell(&j.reason.to_string())
        );
    }
    s.push_str("\n<details><summary>obligation by obligation</summary>\n\n```text\n");
    s.push_str(&explain_human(path, d, judgments));
    s.push_str("```\n\n</details>\n");
    s
}

/// The `payload` of `explain --format json`: the descriptor and its rows.
fn explain_payload<'a>(
    path: &'a str,
    d: &'a Descriptor,
    judgments: &'a [Judgment],
) -> impl Serialize + 'a {
    #[derive(Serialize)]
    struct Row<'a> {
        reason_text: String,
        non_claim: &'a str,
        #[serde(flatten)]
        judgment: &'a Judgment,
    }
    #[derive(Serialize)]
    struct Payload<'a> {
        descriptor: &'a str,
        runtime: String,
        rows: Vec<Row<'a>>,
    }
    Payload {
        descriptor: path,
        runtime: format!("{} {}", d.runtime.name, d.runtime.version),
        rows: judgments
            .iter()
            .map(|j| Row {
                reason_text: j.reason.to_string(),
                non_claim: d.non_claims.for_mode(j.mode),
                judgment: j,
            })
            .collect(),
    }
}

/// `path` with its `.` components dropped and each `..` taking off the component before
/// it, without asking the file system: what decides whether a descriptor is read as one of
/// the repository's (confined, links refused), so a `..` can only make more paths count
/// as inside the root, never read one of its files unconfined.
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `/..` is `/`; a relative path's leading `..` is kept.
                if !out.pop() && !out.has_root() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}
