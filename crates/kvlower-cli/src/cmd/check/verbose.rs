//! `check -v`: the root as given and resolved, then the catalog and every descriptor
//! read.

use std::io::Write;

use kvlower_load::{MODES_PATH, Repository};

/// `check -v`, before loading: the root, as given and resolved.
pub fn verbose_root(root: &std::path::Path, err: &mut dyn Write) -> std::io::Result<()> {
    let resolved = kvlower_fs::inspect::resolved(root).map_or_else(
        |_| "does not resolve".to_string(),
        |p| p.display().to_string(),
    );
    writeln!(
        err,
        "kvlower check: root {} ({})",
        crate::output::escape_control(&root.display().to_string()),
        crate::output::escape_control(&resolved)
    )
}

/// `check -v`, once loaded: the catalog and every descriptor read.
pub fn check_inputs(repo: &Repository, err: &mut dyn Write) -> std::io::Result<()> {
    writeln!(err, "kvlower check: read catalog {MODES_PATH}")?;
    for d in &repo.descriptors {
        writeln!(
            err,
            "kvlower check: read descriptor {}",
            crate::output::escape_control(&d.path)
        )?;
    }
    writeln!(
        err,
        "kvlower check: {} descriptor(s) loaded",
        repo.descriptors.len()
    )
}
