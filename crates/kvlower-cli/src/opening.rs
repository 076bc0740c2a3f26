//! The opening the commands that judge a repository share (issue 38, "one
//! `load_or_stop`"): load the repository; no descriptors → a usage error (exit 2);
//! invalid inputs → findings that stop the command (exit 1, or 2 when one says an
//! input could not be read). Each command says what it did not do ("nothing
//! written", "nothing explained"); the rest is here, once.

use std::path::{Path, PathBuf};

use kvlower_codes::Finding;
use kvlower_load::{LoadFailure, Repository};

use crate::Exit;
use crate::output::{Form, Outcome};

/// Why a command stops before it judges anything.
#[derive(Debug)]
pub enum Stop {
    /// No descriptor under the root: a wrong command line (exit 2).
    NoDescriptors(PathBuf),
    /// Findings in the inputs.
    Findings(Vec<Finding>),
}

impl Stop {
    /// The usage message of [`Stop::NoDescriptors`]: `no descriptors found in DIR`.
    pub fn no_descriptors(dir: &Path) -> String {
        format!("no descriptors found in {}", dir.display())
    }
}

/// What to do first where there is no descriptor: outside any repository (no
/// `kvlower.toml` or catalog at `root`, none found walking up) `kvlower init`, as `new`
/// says; in a repository, `kvlower new`.
pub fn first_step(root: &Path) -> &'static str {
    let marker = |p: &str| kvlower_fs::inspect::entry_exists(&root.join(p));
    if marker(crate::config::CONFIG_FILE) || marker(kvlower_load::MODES_PATH) {
        "write one with `kvlower new NAME --version V`"
    } else {
        "not a kvlower repository (no kvlower.toml or modes/modes.yaml here or above): \
         run `kvlower init` to make one, or pass --root"
    }
}

/// A load's result as the commands see it: the repository and its non-stopping
/// findings (warnings, stale acknowledgements), or why the command stops.
pub fn stop_on(
    loaded: Result<(Repository, Vec<Finding>), LoadFailure>,
) -> Result<(Repository, Vec<Finding>), Stop> {
    loaded.map_err(|failure| match failure {
        LoadFailure::NoDescriptors { dir } => Stop::NoDescriptors(dir),
        LoadFailure::Invalid(findings) => Stop::Findings(findings),
    })
}

/// Loads the repository at the run's root (every descriptor under `capabilities/`),
/// through the run's one environment ([`Ctx`](crate::ctx::Ctx)).
pub fn load_or_stop(ctx: &crate::ctx::Ctx) -> Result<(Repository, Vec<Finding>), Stop> {
    stop_on(kvlower_evidence::load_repository(ctx.env()))
}

/// The outcome of a stop for a command whose payload type is `P`: a usage error for
/// [`Stop::NoDescriptors`] ([`Outcome::error`]); the sorted findings as a stopped
/// outcome shown as `form`, summary `kvlower COMMAND: N finding(s); NOT_DONE`.
pub fn stopped<P>(command: &'static str, form: Form, stop: Stop, not_done: &str) -> Outcome<P> {
    match stop {
        Stop::NoDescriptors(dir) => {
            Outcome::error(command, Exit::Usage, &Stop::no_descriptors(&dir))
        }
        Stop::Findings(findings) => stopped_by(command, form, findings, not_done),
    }
}

/// The findings that stop a command, sorted, as its stopped outcome (summary
/// `kvlower COMMAND: N finding(s); NOT_DONE`).
pub fn stopped_by<P>(
    command: &'static str,
    form: Form,
    mut findings: Vec<Finding>,
    not_done: &str,
) -> Outcome<P> {
    findings.sort();
    Outcome::stopped(command, form, findings, &format!("; {not_done}"))
}
