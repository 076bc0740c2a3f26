//! The lowering matrix: every descriptor × every mode × (none + each
//! represented adapter depth), in a deterministic order.

use crate::catalog::Catalog;
use crate::descriptor::Descriptor;
use crate::environment::Environment;
use crate::judgment::{Judgment, judge, row_depths};
use crate::vocab::Mode;

/// One row: which descriptor, and its judgment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MatrixRow<'a> {
    /// The descriptor's path relative to the repository root.
    pub descriptor_path: &'a str,
    pub descriptor: &'a Descriptor,
    pub judgment: Judgment,
}

/// Judges every row of every descriptor. `descriptors` is sorted by path by
/// the caller; rows follow it, then mode order, then the depth ladder.
pub fn judge_all<'a>(
    catalog: &Catalog,
    descriptors: impl IntoIterator<Item = (&'a str, &'a Descriptor)>,
    env: &dyn Environment,
) -> Vec<MatrixRow<'a>> {
    let mut rows = Vec::new();
    for (path, descriptor) in descriptors {
        for &mode in Mode::ALL {
            for depth in row_depths(descriptor) {
                rows.push(MatrixRow {
                    descriptor_path: path,
                    descriptor,
                    judgment: judge(catalog, descriptor, mode, depth, env),
                });
            }
        }
    }
    rows
}
