//! What every writing command checks before it writes a byte (docs/files.md):
//!
//! - **No write through a link.** A component the command creates or writes into
//!   (`kvlower.toml`, `modes/`, `capabilities/`, `schemas/`, `results/`) that is a
//!   symbolic link is `write-through-link`: writing there would write wherever the link
//!   points, outside the reviewed repository (issue 42, item 3). So is a link at a
//!   staging name a write goes through before its rename (a generated file's
//!   `.kvlower-stage.` twin, the journal and its stage): the write would stop half-way
//!   with an uncoded error instead.
//! - **No file its reader refuses.** A generated file larger than the cap `check` reads
//!   it back with is `file-too-large` at write time, the code `check` would give it: a
//!   writer never produces what its reader refuses (issue 42, item 7).
//!
//! Both are findings, not errors, so each command reports them in its own format; any
//! finding means nothing is written.

use std::path::Path;

use kvlower_codes::{Code, Finding};

use crate::generated::GeneratedFile;

/// One `write-through-link` finding per link among the leading parts of `targets`
/// (paths relative to `root`; `root` itself is the caller's choice and not looked at).
/// The finding says what the link is (to a directory, to a file, to nothing) and its
/// hint what to put there instead: a hint to make a directory where a file belongs
/// would send the user the wrong way.
pub fn links(root: &Path, command: &str, targets: &[&str]) -> Vec<Finding> {
    let mut found: Vec<String> = Vec::new();
    for target in targets {
        if let Some(link) = kvlower_fs::write::first_link(root, target)
            && !found.contains(&link)
        {
            found.push(link);
        }
    }
    found
        .into_iter()
        .map(|link| link_finding(root, command, &link))
        .collect()
}

/// The `write-through-link` finding of the link `root/link`.
fn link_finding(root: &Path, command: &str, link: &str) -> Finding {
    // What the link points at (followed once, for the words only: nothing is opened).
    let (what, hint) = match kvlower_fs::inspect::stat(&root.join(link)) {
        Ok(meta) if meta.is_dir() => (
            "to a directory",
            "replace the link with a real directory (or remove it); nothing was written",
        ),
        Ok(_) => (
            "to a file",
            "replace the link with a real file (or remove it); nothing was written",
        ),
        Err(_) => (
            "to nothing (dangling, or a loop of links)",
            "remove the link; nothing was written",
        ),
    };
    Finding::new(
        Code::WriteThroughLink,
        link.to_string(),
        format!("`{link}` is a symbolic link {what}; kvlower {command} never writes through one"),
    )
    .with_hint(hint)
}

/// Every staging name [`crate::layout::write_set`] writes through before its renames:
/// each file's stage (`results/.kvlower-stage.NAME`), the journal and the journal's own
/// stage. A link at one would make the write fail half-way with an uncoded "File
/// exists" (the stage is created new, so nothing is written through it), or read and
/// rename through the journal: each is refused up front with the code instead.
fn staging_names(files: &[GeneratedFile]) -> Vec<String> {
    let mut names: Vec<String> = files
        .iter()
        .map(|f| crate::layout::stage_path(f.path))
        .collect();
    names.push(crate::layout::JOURNAL.to_string());
    names.push(crate::layout::stage_path(crate::layout::JOURNAL));
    names
}

/// The kind `check` reads a generated file back as (its cap is the write cap).
pub fn read_back_kind(path: &str) -> kvlower_fs::FileKind {
    if path == crate::readme::README {
        kvlower_fs::FileKind::Readme
    } else {
        kvlower_fs::FileKind::Result
    }
}

/// One `file-too-large` finding per generated file larger than the cap it is read back
/// with.
pub fn oversized(files: &[GeneratedFile]) -> Vec<Finding> {
    files
        .iter()
        .filter_map(|file| {
            let kind = read_back_kind(file.path);
            let len = file.contents.len() as u64;
            (len > kind.cap()).then(|| {
                kvlower_fs::Refusal::TooLarge {
                    path: file.path.to_string(),
                    kind,
                    cap: kind.cap(),
                }
                .finding(file.path)
                .with_hint(format!(
                    "the generated file would be {len} bytes, and `kvlower check` reads it back with a {}-byte cap: nothing was written (docs/files.md)",
                    kind.cap()
                ))
            })
        })
        .collect()
}

/// Everything [`links`] and [`oversized`] find for a generated set under `root`,
/// staging names included ([`staging_names`]).
pub fn generated_set(root: &Path, command: &str, files: &[GeneratedFile]) -> Vec<Finding> {
    let staging = staging_names(files);
    let mut targets: Vec<&str> = crate::layout::GENERATED_DIRS.to_vec();
    targets.extend(files.iter().map(|f| f.path));
    targets.extend(staging.iter().map(String::as_str));
    let mut findings = links(root, command, &targets);
    findings.extend(oversized(files));
    findings
}
