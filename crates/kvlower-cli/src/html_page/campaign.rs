//! A committed gate campaign on the page: its scenarios, runs and controls, read
//! through the same confined, capped read as any anchored document.

use kvlower_core::environment::RepoFile;
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;

/// What a committed gate campaign names: its scenarios, runs and controls.
pub(super) struct CampaignView {
    held: bool,
    witnessed: Vec<kvlower_core::vocab::TraceGate>,
    scenarios: Vec<ScenarioView>,
}

/// A scenario of a campaign: its name, how many runs, and per gate whether it
/// must pass in every run (`true`) or in none (`false`).
type ScenarioView = (String, usize, Vec<(String, bool)>);

/// The campaign a repository file is, when `env` recognised it as one.
pub(super) fn campaign_view(
    repo: &Repository,
    env: &FsEnvironment,
    path: &str,
) -> Option<CampaignView> {
    use kvlower_core::environment::Environment as _;
    let RepoFile::CampaignDocument(facts) = env.repo_file(path) else {
        return None;
    };
    // Already resolved inside the root by the environment; read through the
    // same confined, capped read as any anchored document.
    let bytes = kvlower_fs::FileKind::JoinDocument
        .open()
        .within(&repo.root)
        .read(path)
        .ok()?;
    let doc: kvlower_trace::campaign_doc::CampaignDocument = serde_json::from_slice(&bytes).ok()?;
    Some(CampaignView {
        held: facts.held,
        witnessed: facts.witnessed,
        scenarios: doc
            .scenarios
            .iter()
            .map(|s| {
                let expect = s
                    .expect
                    .iter()
                    .map(|(g, x)| {
                        (
                            g.name().to_string(),
                            *x == kvlower_trace::campaign_doc::Expect::EveryRun,
                        )
                    })
                    .collect();
                (s.name.clone(), s.traces.len(), expect)
            })
            .collect(),
    })
}

impl CampaignView {
    /// `[runs, scenarios, held (0/1), witnessed, [[scenario, runs, every run, no run]]]`
    /// for the page's data block, each text through `s` (the shared strings);
    /// a scenario in which a witnessed gate must pass in no run is a control.
    pub(super) fn to_json(
        &self,
        s: &mut dyn FnMut(&str) -> serde_json::Value,
    ) -> serde_json::Value {
        let runs: usize = self.scenarios.iter().map(|x| x.1).sum();
        let witnessed: Vec<&str> = self.witnessed.iter().map(|g| g.name()).collect();
        let scenarios: Vec<serde_json::Value> = self
            .scenarios
            .iter()
            .map(|(name, n, expect)| {
                let every: Vec<&str> = expect
                    .iter()
                    .filter(|(_, e)| *e)
                    .map(|(g, _)| g.as_str())
                    .collect();
                let none: Vec<String> = expect
                    .iter()
                    .filter(|(_, e)| !*e)
                    .map(|(g, _)| {
                        if witnessed.contains(&g.as_str()) {
                            format!("{g} (control)")
                        } else {
                            g.clone()
                        }
                    })
                    .collect();
                serde_json::json!([s(name), n, s(&every.join(", ")), s(&none.join(", "))])
            })
            .collect();
        let w = if witnessed.is_empty() {
            "no gate".to_string()
        } else {
            witnessed.join(", ")
        };
        serde_json::json!([
            runs,
            self.scenarios.len(),
            u8::from(self.held),
            s(&w),
            scenarios
        ])
    }
}
