//! Checks a parsed descriptor against what the types cannot express: anchors
//! complete and naming real repository files, adapters at real depths, each
//! precondition belonging to its adapter's depth.
//!
//! These findings fail `kvlower check`; the judgment independently treats the
//! same defects as "unanchored" (fail closed), so a descriptor that bypasses
//! this module still cannot gain a label from them.

use kvlower_core::anchor_form::AnchorDefect;
use kvlower_core::descriptor::{Anchor, EvidenceItem};
use kvlower_core::environment::Environment;
use kvlower_core::judgment::EvidenceDepth;
use kvlower_core::{AnchorUse, Catalog, Depth, Descriptor, Status, anchor_counts};

use crate::diagnostic::{Code, Finding};

pub(crate) fn descriptor(
    file: &str,
    src: &str,
    d: &Descriptor,
    catalog: &Catalog,
    env: &dyn Environment,
    out: &mut Vec<Finding>,
) {
    let mut anchor_findings = Vec::new();
    let mut anchor = |path: String, a: &Anchor, use_: AnchorUse, supported: bool| {
        let defects = anchor_counts(catalog, a, use_, &d.runtime, env);
        // A placeholder says "nothing anchored yet"; that `kvlower new` points it
        // at the descriptor itself is part of the same placeholder, not a second
        // finding on the same item.
        let placeholder = defects.contains(&AnchorDefect::Placeholder);
        for defect in defects {
            if placeholder && defect == AnchorDefect::OwnFile {
                continue;
            }
            let Some(code) = defect.code(supported) else {
                continue;
            };
            let mut diag = Finding::new(code, file, defect.to_string())
                .at_path(path.clone())
                .located_in(src);
            let hint = defect.hint(a);
            if !hint.is_empty() {
                diag = diag.with_hint(hint);
            }
            anchor_findings.push(diag);
        }
    };
    let obligation_use = |e: &EvidenceItem, depth: EvidenceDepth| AnchorUse::Obligation {
        obligation: e.obligation,
        depth,
        scope: e.scope,
    };
    for (i, e) in d.native.iter().enumerate() {
        let use_ = obligation_use(e, EvidenceDepth::Native);
        let supported = e.status == Status::Supported;
        anchor(format!("native[{i}].anchor"), &e.anchor, use_, supported);
    }
    for (i, a) in d.atoms.iter().enumerate() {
        let use_ = AnchorUse::Atom { scope: a.scope };
        anchor(format!("atoms[{i}].anchor"), &a.anchor, use_, true);
    }
    for (i, s) in d.signals.iter().enumerate() {
        anchor(
            format!("signals[{i}].anchor"),
            &s.anchor,
            AnchorUse::Signal,
            true,
        );
    }
    for (ai, adapter) in d.adapters.iter().enumerate() {
        let depth = EvidenceDepth::Adapter(adapter.depth);
        for (i, e) in adapter.evidence.iter().enumerate() {
            let path = format!("adapters[{ai}].evidence[{i}].anchor");
            let supported = e.status == Status::Supported;
            anchor(path, &e.anchor, obligation_use(e, depth), supported);
        }
        for (p, a) in &adapter.preconditions {
            let use_ = AnchorUse::Precondition {
                precondition: *p,
                depth: adapter.depth,
            };
            anchor(format!("adapters[{ai}].preconditions.{p}"), a, use_, true);
        }
    }
    runtime_identity(file, src, d, out);
    runtime_review_and_components(file, src, d, env, out);
    modes_stated(file, src, d, out);
    let mut seen_depths = Vec::new();
    for (ai, adapter) in d.adapters.iter().enumerate() {
        let path = format!("adapters[{ai}]");
        if adapter.depth == Depth::None {
            out.push(
                Finding::new(
                    Code::AdapterAtNativeDepth,
                    file,
                    "an adapter cannot sit at depth `none`",
                )
                .at_path(format!("{path}.depth"))
                .located_in(src)
                .with_hint("move its evidence under `native:`, or give the adapter its real depth"),
            );
            continue;
        }
        if seen_depths.contains(&adapter.depth) {
            out.push(
                Finding::new(
                    Code::DuplicateAdapterDepth,
                    file,
                    format!("a second adapter at depth `{}`", adapter.depth),
                )
                .at_path(format!("{path}.depth"))
                .located_in(src)
                .with_hint("merge the adapters: one trust boundary per depth"),
            );
        }
        seen_depths.push(adapter.depth);
        // Every depth but `none` (skipped above) has rules; without them no
        // precondition belongs, so each listed one is reported (fail closed).
        let allowed: &[kvlower_core::Precondition] = match catalog.depth(adapter.depth) {
            Some(spec) => &spec.preconditions,
            None => &[],
        };
        for p in adapter
            .preconditions
            .keys()
            .filter(|p| !allowed.contains(p))
        {
            let names: Vec<String> = allowed.iter().map(ToString::to_string).collect();
            out.push(
                Finding::new(
                    Code::PreconditionWrongDepth,
                    file,
                    format!("`{p}` is not a precondition of depth `{}`", adapter.depth),
                )
                .at_path(format!("{path}.preconditions.{p}"))
                .located_in(src)
                .with_hint(format!("this depth's preconditions: {}", names.join(", "))),
            );
        }
    }
    out.extend(anchor_findings);
}

/// A runtime is named: name and version have a visible character and no
/// control character (a blank identity could carry a positive row for nobody).
fn runtime_identity(file: &str, src: &str, d: &Descriptor, out: &mut Vec<Finding>) {
    let mut names: Vec<(String, &str)> = vec![
        ("runtime.name".into(), d.runtime.name.as_str()),
        ("runtime.version".into(), d.runtime.version.as_str()),
    ];
    for (ai, a) in d.adapters.iter().enumerate() {
        names.push((format!("adapters[{ai}].name"), a.name.as_str()));
    }
    // What carries an obligation (`carried_by`) is shown as a name on the matrix
    // page and in its JSON: named like the runtime, or not at all.
    for (ni, e) in d.native.iter().enumerate() {
        for (ci, c) in e.carried_by.iter().enumerate() {
            names.push((format!("native[{ni}].carried_by[{ci}]"), c.as_str()));
        }
    }
    for (ai, a) in d.adapters.iter().enumerate() {
        for (ei, e) in a.evidence.iter().enumerate() {
            for (ci, c) in e.carried_by.iter().enumerate() {
                names.push((
                    format!("adapters[{ai}].evidence[{ei}].carried_by[{ci}]"),
                    c.as_str(),
                ));
            }
        }
    }
    for (path, value) in names {
        if !kvlower_core::text::has_visible(value) {
            out.push(
                Finding::new(Code::BlankValue, file, format!("`{path}` is blank"))
                    .at_path(path.clone())
                    .located_in(src)
                    .with_hint("name it with visible characters; invisible ones (U+200B, U+FEFF, NBSP) do not count"),
            );
        } else if kvlower_core::text::has_control(value) {
            out.push(
                Finding::new(
                    Code::ControlCharacter,
                    file,
                    format!("`{path}` contains a control character"),
                )
                .at_path(path.clone())
                .located_in(src)
                .with_hint("remove newlines, tabs and escape characters from the name"),
            );
        }
    }
}

/// `runtime.reviewed` is a real date, not in the future; `runtime.identity`
/// names each kind once, with a version (and patch) that decodes. Why findings
/// and not only a failed match: an identity that can never match is a descriptor
/// whose re-run evidence silently stops counting.
fn runtime_review_and_components(
    file: &str,
    src: &str,
    d: &Descriptor,
    env: &dyn Environment,
    out: &mut Vec<Finding>,
) {
    let reviewed = d.runtime.reviewed.as_str();
    match kvlower_core::anchor_form::parse_iso_date(reviewed) {
        None => out.push(
            Finding::new(
                Code::InvalidReviewDate,
                file,
                format!("`runtime.reviewed` is not an ISO date: `{reviewed}`"),
            )
            .at_path("runtime.reviewed")
            .located_in(src)
            .with_hint("write the date you last checked this descriptor against the runtime's sources, as YYYY-MM-DD"),
        ),
        Some(date) if date > env.today() => out.push(
            Finding::new(
                Code::InvalidReviewDate,
                file,
                format!("`runtime.reviewed` is in the future: `{reviewed}`"),
            )
            .at_path("runtime.reviewed")
            .located_in(src)
            .with_hint("a review date is the day the review happened"),
        ),
        Some(_) => {}
    }
    if d.runtime.identity.is_empty() {
        out.push(
            Finding::new(
                Code::InvalidRuntimeIdentity,
                file,
                "`runtime.identity` lists no component",
            )
            .at_path("runtime.identity")
            .located_in(src)
            .with_hint("list what runs, e.g. `identity: [{kind: vllm, version: 0.32.0}]`"),
        );
    }
    let mut kinds = Vec::new();
    for (i, c) in d.runtime.identity.iter().enumerate() {
        let at = format!("runtime.identity[{i}]");
        if kinds.contains(&c.kind) {
            out.push(
                Finding::new(
                    Code::InvalidRuntimeIdentity,
                    file,
                    format!("`{}` is named twice in `runtime.identity`", c.kind),
                )
                .at_path(format!("{at}.kind"))
                .located_in(src)
                .with_hint("one component per kind: a descriptor describes one build"),
            );
        }
        kinds.push(c.kind);
        if kvlower_core::identity::normalize_version(&c.version).is_none() {
            out.push(
                Finding::new(
                    Code::InvalidRuntimeIdentity,
                    file,
                    format!("`{at}.version` is not an exact version"),
                )
                .at_path(format!("{at}.version"))
                .located_in(src)
                .with_hint("write one release or commit in plain ASCII (`0.32.0`, `1.3.0rc14`, `06cff70502`): no spaces, no words"),
            );
        }
        if c.patch
            .as_deref()
            .is_some_and(|p| kvlower_core::identity::normalize_patch(p).is_none())
        {
            out.push(
                Finding::new(
                    Code::InvalidRuntimeIdentity,
                    file,
                    format!("`{at}.patch` is not a plain patch name"),
                )
                .at_path(format!("{at}.patch"))
                .located_in(src)
                .with_hint("name the patch in plain ASCII (letters, digits, `._+-/@`), exactly as its evidence records it"),
            );
        }
    }
}

/// A `supported` item names the modes whose paths it exercised (or `all`): left
/// out, the judgment gives it no mode, and this finding says why.
fn modes_stated(file: &str, src: &str, d: &Descriptor, out: &mut Vec<Finding>) {
    let lists = std::iter::once(("native".to_string(), &d.native)).chain(
        d.adapters
            .iter()
            .enumerate()
            .map(|(ai, a)| (format!("adapters[{ai}].evidence"), &a.evidence)),
    );
    for (list, items) in lists {
        for (i, e) in items.iter().enumerate() {
            if e.status == Status::Supported && e.modes.is_empty() {
                out.push(
                    Finding::new(
                        Code::ModesNotStated,
                        file,
                        format!("`supported` evidence for `{}` names no mode", e.obligation),
                    )
                    .at_path(format!("{list}[{i}]"))
                    .located_in(src)
                    .with_hint("add `modes: [...]` with the modes whose path this evidence exercised, or `modes: all`"),
                );
            }
        }
    }
}
