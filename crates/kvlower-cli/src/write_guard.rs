//! What every writing command checks before it writes a byte (docs/files.md):
//!
//! - **No write through a link.** A component the command creates or writes into
//!   (`kvlower.toml`, `modes/`, `capabilities/`, `schemas/`, `results/`) that is a
//!   symbolic link is `write-through-link`: writing there would write wherever the link
//!   points, outside the reviewed repository (issue 42, item 3).
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
        .map(|link| {
            Finding::new(
                Code::WriteThroughLink,
                link.clone(),
                format!("`{link}` is a symbolic link; kvlower {command} never writes through one"),
            )
            .with_hint("replace the link with a real directory (or remove it); nothing was written")
        })
        .collect()
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

/// Everything [`links`] and [`oversized`] find for a generated set under `root`.
pub fn generated_set(root: &Path, command: &str, files: &[GeneratedFile]) -> Vec<Finding> {
    let mut targets: Vec<&str> = crate::layout::GENERATED_DIRS.to_vec();
    targets.extend(files.iter().map(|f| f.path));
    let mut findings = links(root, command, &targets);
    findings.extend(oversized(files));
    findings
}
