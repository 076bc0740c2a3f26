//! What binds one run's engine truth to that run (docs/conformance.md, "Every run is judged
//! by its own truth").
//!
//! Why: agreement (`campaign_doc::agree`) compares the verdicts of the claims the truth
//! names. A control run whose truth names *another* claim (the trace's id with an invisible
//! character appended, or another run's claim) was then compared with nothing: its trace
//! fails the gate, the truth's stray claim fails it too, and the run counted toward its
//! control kind's minimum with no truth about it at all. A run is judged by truth about
//! its own claims, or not at all.

use std::collections::{BTreeMap, BTreeSet};

use crate::TraceReport;
use crate::truth::TruthRun;

/// Why a claim id cannot bind a run to its truth: it is empty or holds a character a reader
/// cannot see (white space, a control, a format or default-ignorable character:
/// `kvlower_core::text::BLANK`). The only normalisation is JSON's own string decoding.
fn claim_id_problem(claim: &str) -> Option<&'static str> {
    if claim.is_empty() {
        Some("is empty")
    } else if claim.chars().any(kvlower_core::text::is_blank_char) {
        Some("holds an invisible character (white space, a control or a format character)")
    } else {
        None
    }
}

/// The claim ids of a trace's rows (the unclaimed row has none).
fn trace_claims(report: &TraceReport) -> BTreeSet<&str> {
    report
        .claims
        .iter()
        .filter_map(|c| c.claim_id.as_deref())
        .collect()
}

/// Every check that binds one run to its truth run: the set of claim ids of the trace
/// equals the set the truth run names, byte for byte, none invisible; and no claim id is
/// named by two truth runs (`owners`: claim id → the truth run that named it first).
pub(crate) fn bind_run<'a>(
    path: &str,
    run: &'a TruthRun,
    report: &TraceReport,
    owners: &mut BTreeMap<&'a str, &'a str>,
) -> Result<(), String> {
    let traced = trace_claims(report);
    let also = run.also_named.iter().map(String::as_str);
    for claim in traced
        .iter()
        .copied()
        .chain(run.claims())
        .chain(also.clone())
    {
        if let Some(why) = claim_id_problem(claim) {
            return Err(format!(
                "run `{}`: claim id {claim:?} {why}: it cannot bind the run to its truth",
                run.run
            ));
        }
    }
    let named: BTreeSet<&str> = run.claims().collect();
    if named != traced {
        let only_trace: Vec<&str> = traced.difference(&named).copied().collect();
        let only_truth: Vec<&str> = named.difference(&traced).copied().collect();
        return Err(format!(
            "run `{}`: the trace `{path}` names the claims {only_trace:?} its truth does not, and its truth names {only_truth:?} the trace does not: a run is judged by truth about its own claims",
            run.run
        ));
    }
    // Every claim id the run's truth names, its injector's targets included: another run's
    // claim named as a control's wrong claim would make one claim the subject of two runs.
    for claim in run.claims().chain(also) {
        if let Some(first) = owners.insert(claim, run.run.as_str()) {
            return Err(format!(
                "claim `{claim}` is named by two truth runs (`{first}` and `{}`): a claim belongs to one run",
                run.run
            ));
        }
    }
    Ok(())
}

/// The judging code that wrote the truth (docs/conformance.md, "Pinned judging code"): a listed,
/// readable repository file outside kvlower's own directories, each once, none of them
/// judged code (in `source.files`), and the digest the truth records recomputed from their
/// bytes now. Returns each file with the SHA-256 of its bytes, for the catalog's pins
/// (which the judgment, holding the catalog, compares).
pub(crate) fn check_recorder(
    recorder: &crate::truth::RecorderRef,
    source_files: &[String],
    files: &dyn crate::campaign_files::CampaignFiles,
) -> Result<Vec<(String, String)>, String> {
    if recorder.files.is_empty() || recorder.files.len() > 64 {
        return Err("the truth's `recorder.files` lists no file (or too many)".into());
    }
    let judged: BTreeSet<_> = source_files
        .iter()
        .filter_map(|f| files.identify(f))
        .collect();
    let mut ids = BTreeSet::new();
    let mut read = Vec::with_capacity(recorder.files.len());
    for path in &recorder.files {
        if !crate::campaign_files::relative(path) || files.is_own_file(path) {
            return Err(format!(
                "recorder file `{path}` is not a repository file outside kvlower's own directories"
            ));
        }
        let id = files
            .identify(path)
            .ok_or_else(|| format!("recorder file `{path}` cannot be read"))?;
        if !ids.insert(id) {
            return Err(format!("recorder file `{path}` is listed twice"));
        }
        if judged.contains(&id) {
            return Err(format!(
                "recorder file `{path}` is also judged code (in `source.files`): the judge is not the judged"
            ));
        }
        let bytes = files
            .read(path)
            .ok_or_else(|| format!("recorder file `{path}` cannot be read"))?;
        read.push((path.as_str(), bytes));
    }
    let digest = crate::campaign_files::source_digest(read.iter().map(|(p, b)| (*p, b.as_slice())));
    if digest != recorder.sha256 {
        return Err(format!(
            "the digest of the recorder's files is {digest}, the truth records {}: the judging code changed since the campaign ran",
            recorder.sha256
        ));
    }
    Ok(read
        .iter()
        .map(|(p, b)| ((*p).to_owned(), kvlower_core::catalog::sha256_hex(b)))
        .collect())
}
