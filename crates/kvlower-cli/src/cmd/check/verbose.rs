//! `check -v`: the root as given and resolved, then the catalog and every descriptor
//! read (lines for stderr).

use kvlower_load::{MODES_PATH, Repository};

/// `check -v`, before loading: the root, as given and resolved.
pub fn verbose_root(root: &std::path::Path) -> String {
    let resolved = kvlower_fs::inspect::resolved(root).map_or_else(
        |_| "does not resolve".to_string(),
        |p| p.display().to_string(),
    );
    format!(
        "kvlower check: root {} ({})\n",
        crate::output::escape_control(&root.display().to_string()),
        crate::output::escape_control(&resolved)
    )
}

/// `check -v`, once loaded: the catalog and every descriptor read.
pub fn check_inputs(repo: &Repository) -> String {
    let mut text = format!("kvlower check: read catalog {MODES_PATH}\n");
    for d in &repo.descriptors {
        text.push_str(&format!(
            "kvlower check: read descriptor {}\n",
            crate::output::escape_control(&d.path)
        ));
    }
    text.push_str(&format!(
        "kvlower check: {} descriptor(s) loaded\n",
        repo.descriptors.len()
    ));
    text
}
