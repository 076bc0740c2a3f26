//! `check`'s warnings for inert evidence. The error findings about judged rows (a
//! positive row with a blank non-claim, or resting on cited evidence) are
//! `crate::validity`'s: `matrix` and `explain` stop on them too.

use kvlower_codes::Finding;
use kvlower_evidence::FsEnvironment;
use kvlower_load::{Repository, inert_warnings};

/// Warnings for every loaded descriptor's inert evidence (evidence the judgment
/// never counts; they change no label). Sorted with the other findings by `check`.
pub fn inert_warnings_of(repo: &Repository, env: &FsEnvironment) -> Vec<Finding> {
    use rayon::prelude::*;
    let per_descriptor: Vec<Vec<Finding>> = repo
        .descriptors
        .par_iter()
        .map(|d| inert_warnings(&repo.root, d, &repo.catalog, env))
        .collect();
    per_descriptor.into_iter().flatten().collect()
}
