//! The lowering matrix: every descriptor × every mode × (none + each
//! represented adapter depth), in a deterministic order.

use crate::catalog::Catalog;
use crate::descriptor::Descriptor;
use crate::environment::Environment;
use crate::judgment::{Anchored, Judgment, judge_anchored, row_depths};
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
        rows.extend(judge_descriptor(catalog, path, descriptor, env));
    }
    rows
}

/// The rows of one descriptor, in [`judge_all`]'s order (mode order, then the
/// depth ladder), each anchor of it judged once for all of them.
pub fn judge_descriptor<'a>(
    catalog: &Catalog,
    path: &'a str,
    descriptor: &'a Descriptor,
    env: &dyn Environment,
) -> Vec<MatrixRow<'a>> {
    let anchored = Anchored::new(catalog, descriptor, env);
    let depths = row_depths(descriptor);
    let mut rows = Vec::with_capacity(Mode::ALL.len() * depths.len());
    for &mode in Mode::ALL {
        for &depth in &depths {
            rows.push(MatrixRow {
                descriptor_path: path,
                descriptor,
                judgment: judge_anchored(catalog, &anchored, mode, depth),
            });
        }
    }
    rows
}
