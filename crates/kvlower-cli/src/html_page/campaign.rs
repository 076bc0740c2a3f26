//! A committed gate campaign on the page: its scenarios, runs and controls, read
//! through the same confined, capped read as any anchored document.

use kvlower_core::environment::RepoFile;
use kvlower_evidence::FsEnvironment;
use kvlower_load::Repository;

use super::esc;

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

pub(super) fn write_campaign(c: &CampaignView, out: &mut dyn std::fmt::Write) -> std::fmt::Result {
    let runs: usize = c.scenarios.iter().map(|s| s.1).sum();
    let witnessed: Vec<&str> = c.witnessed.iter().map(|g| g.name()).collect();
    write!(
        out,
        "<details class=\"campaign\"><summary>gate campaign: {runs} runs in {} scenarios; {}; witnesses {}</summary><table><thead><tr><th scope=\"col\">scenario</th><th scope=\"col\">runs</th><th scope=\"col\">passes in every run</th><th scope=\"col\">passes in no run</th></tr></thead><tbody>",
        c.scenarios.len(),
        if c.held {
            "re-run by check: holds"
        } else {
            "re-run by check: does NOT hold"
        },
        if witnessed.is_empty() {
            "no gate".to_string()
        } else {
            witnessed.join(", ")
        }
    )?;
    for (name, n, expect) in &c.scenarios {
        let every: Vec<&str> = expect
            .iter()
            .filter(|(_, e)| *e)
            .map(|(g, _)| g.as_str())
            .collect();
        // A control: a scenario in which a witnessed gate must pass in no run.
        let none: Vec<String> = expect
            .iter()
            .filter(|(_, e)| !*e)
            .map(|(g, _)| {
                if witnessed.contains(&g.as_str()) {
                    format!("{} (control)", esc(g))
                } else {
                    esc(g)
                }
            })
            .collect();
        write!(
            out,
            "<tr><td>{}</td><td>{n}</td><td>{}</td><td>{}</td></tr>",
            esc(name),
            esc(&every.join(", ")),
            none.join(", ")
        )?;
    }
    out.write_str("</tbody></table></details>")
}
