//! Acknowledged warnings: `acknowledge: [{code, path, reason}]` in a descriptor
//! (docs/descriptor-format.md, "Acknowledged warnings").
//!
//! An entry acknowledges the warnings of its own descriptor with exactly its
//! code and YAML path. Like `#[expect]`, an entry that matches no warning is a
//! warning itself (`unused-acknowledgement`). Fail closed: an entry naming an
//! unknown code or an error's code, or giving no reason in words, acknowledges
//! nothing and is an error (`invalid-acknowledgement`); an error is never hidden.

use std::path::Path;

use kvlower_codes::{Code, Finding, Severity};

use crate::{LoadedDescriptor, read_source, yaml};

/// What [`apply`] did with the findings of a run.
#[derive(Debug, Default)]
pub struct Acknowledged {
    /// The findings that stand: every error, every warning not acknowledged, and
    /// the findings about the acknowledgements themselves.
    pub findings: Vec<Finding>,
    /// The warnings an acknowledgement matched, each with its reason in its hint.
    pub acknowledged: Vec<Finding>,
}

/// Applies every loaded descriptor's `acknowledge:` entries to `findings`.
pub fn apply(
    root: &Path,
    descriptors: &[LoadedDescriptor],
    findings: Vec<Finding>,
) -> Acknowledged {
    let mut out = Acknowledged {
        findings,
        acknowledged: Vec::new(),
    };
    for loaded in descriptors {
        let entries = &loaded.descriptor.acknowledge;
        if entries.is_empty() {
            continue;
        }
        let mut ignored = Vec::new();
        let src = read_source(root, &loaded.path, &mut ignored);
        let structure = src.as_deref().and_then(|s| yaml::structure(s).ok());
        let locate = |d: Finding| {
            let location = structure.as_ref().and_then(|s| s.location_of(&d.yaml_path));
            let mut d = d;
            d.location = location;
            match &src {
                Some(src) => d.located_in(src),
                None => d,
            }
        };
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("acknowledge[{i}]");
            let code = Code::from_name(entry.code.trim());
            let invalid = match code {
                None => Some((
                    format!("{at}.code"),
                    format!("`{}` is not a diagnostic code", crate::diagnostic::excerpt(&entry.code, crate::diagnostic::VALUE_MAX_CHARS)),
                    "name a warning's code exactly as `check` prints it (`kvlower codes` lists them)".to_string(),
                )),
                Some(code) if code.severity() == Severity::Error => Some((
                    format!("{at}.code"),
                    format!("`{code}` is an error, and an error cannot be acknowledged"),
                    "fix the finding; only warnings (marked in `kvlower codes`) can be acknowledged".to_string(),
                )),
                Some(Code::UnusedAcknowledgement) => Some((
                    format!("{at}.code"),
                    "an unused acknowledgement cannot itself be acknowledged".to_string(),
                    "remove the acknowledgement that matches nothing".to_string(),
                )),
                Some(_) if !kvlower_core::text::has_visible(&entry.reason) => Some((
                    format!("{at}.reason"),
                    "the acknowledgement gives no reason".to_string(),
                    "say in words why the warning is right to stay; reviewers read it".to_string(),
                )),
                Some(_) => None,
            };
            if let Some((path, message, hint)) = invalid {
                out.findings.push(locate(
                    Finding::new(Code::InvalidAcknowledgement, loaded.path.clone(), message)
                        .at_path(path)
                        .with_hint(hint),
                ));
                continue;
            }
            let Some(code) = code else { continue };
            let wanted = |d: &Finding| {
                d.is_warning()
                    && d.file == loaded.path
                    && d.code == code
                    && d.yaml_path == entry.path.trim()
            };
            let (matched, rest): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut out.findings)
                .into_iter()
                .partition(wanted);
            out.findings = rest;
            if matched.is_empty() {
                out.findings.push(locate(
                    Finding::new(
                        Code::UnusedAcknowledgement,
                        loaded.path.clone(),
                        format!(
                            "acknowledges `{code}` at `{}`, but `check` reports no such warning",
                            crate::diagnostic::excerpt(&entry.path, crate::diagnostic::VALUE_MAX_CHARS)
                        ),
                    )
                    .at_path(at)
                    .with_hint(nearest_warning(&out.findings, &loaded.path, code, entry.path.trim())
                        .map_or_else(
                            || "remove the entry, or correct its `code` and `path` to a warning `check` prints".to_string(),
                            |(c, p)| format!("did you mean `code: {c}`, `path: {p}`? (the nearest warning `check` prints in this file)"),
                        )),
                ));
            }
            out.acknowledged.extend(matched.into_iter().map(|mut d| {
                d.hint = Some(format!("acknowledged: {}", entry.reason.trim()));
                d
            }));
        }
    }
    out.findings.sort();
    out.acknowledged.sort();
    out
}

/// The warning of `file` an acknowledgement of `code` at `path` most likely meant: the
/// same code at a path above or below it (`native[1]` for `native[1].scope`), else another
/// code at the same path, else the same code at the first path that has it.
fn nearest_warning(
    findings: &[Finding],
    file: &str,
    code: Code,
    path: &str,
) -> Option<(Code, String)> {
    let warnings: Vec<&Finding> = findings
        .iter()
        .filter(|d| d.is_warning() && d.file == file && d.code != Code::UnusedAcknowledgement)
        .collect();
    let related = |p: &str| {
        crate::yaml::is_at_or_below(p, path) && !path.is_empty()
            || crate::yaml::is_at_or_below(path, p) && !p.is_empty()
    };
    warnings
        .iter()
        .find(|d| d.code == code && related(&d.yaml_path))
        .or_else(|| warnings.iter().find(|d| d.yaml_path == path))
        .or_else(|| warnings.iter().find(|d| d.code == code))
        .map(|d| (d.code, d.yaml_path.clone()))
}
