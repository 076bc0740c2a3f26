//! The catalog pin of `results/lowering-matrix.json`: the matrix records the digest of
//! the catalog it was judged under, and `kvlower check` reports `catalog-mismatch` when
//! the catalog loaded now differs. Not a command of its own, so `check` needs no other
//! command's module for it.

use std::path::Path;

use kvlower_codes::{Code, Finding};
use kvlower_core::Catalog;

use crate::layout::PINNED_MATRIX;

/// `check`: a finding when the committed matrix was judged under another
/// catalog than the one loaded now (or records none).
pub fn pin_diagnostic(root: &Path, catalog: &Catalog) -> Option<Finding> {
    const MATRIX: &str = PINNED_MATRIX;
    // Through the one safe read: a FIFO or device here must not block `check`. A
    // refused or unreadable matrix is already a finding of the results comparison.
    let bytes = kvlower_fs::FileKind::Result
        .open()
        .within(root)
        .read(MATRIX)
        .ok()?;
    let recorded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.pointer("/catalog/digest")?.as_str().map(str::to_string));
    let now = catalog.digest();
    match recorded {
        Some(d) if d == now => None,
        recorded => Some(
            Finding::new(
                Code::CatalogMismatch,
                MATRIX,
                format!(
                    "the matrix was generated under catalog {}, but modes/modes.yaml is {}",
                    recorded.map_or("(none recorded)".to_string(), |d| short(&d)),
                    short(&now)
                ),
            )
            .at_path("catalog.digest")
            .with_hint("run `kvlower matrix` and commit the result"),
        ),
    }
}

/// A digest as `sha256:` and its first 16 hex digits.
pub fn short(digest: &str) -> String {
    format!("sha256:{}", digest.get(..16).unwrap_or(digest))
}
