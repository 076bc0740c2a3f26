//! The context of one command run: what every step of the run shares (issue 50
//! item 5).
//!
//! Today that is the run's one file-system environment. Re-running committed
//! evidence (a campaign's traces, a join, a route) is cached per environment, so
//! loading the descriptors and judging their rows must ask the same one: when each
//! built its own, one `check` re-judged every trace, join and route twice
//! (`tests/tests/evidence_once.rs` counts the opens of one trace).

use std::path::Path;

use kvlower_evidence::FsEnvironment;

/// What a command run shares: build one per run, at the command's root.
pub struct Ctx {
    env: FsEnvironment,
}

impl Ctx {
    /// The context of a run whose repository root is `root`.
    pub fn new(root: &Path) -> Ctx {
        Ctx {
            env: FsEnvironment::new(root.to_path_buf()),
        }
    }

    /// The run's file-system environment: every load and judgment of the run asks it,
    /// so each anchored file is re-run once, whoever asks.
    pub fn env(&self) -> &FsEnvironment {
        &self.env
    }
}
