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

use crate::truth::TruthRun;
use crate::{CampaignProblem as P, TraceReport};

/// Why claim id `claim` of run `run` cannot bind the run to its truth: it is empty or holds
/// a character a reader cannot see (white space, a control, a format or default-ignorable
/// character: `kvlower_core::text::BLANK`). The only normalisation is JSON's own string
/// decoding.
fn claim_id_problem(run: &str, claim: &str) -> Option<P> {
    let (run, claim) = (run.to_owned(), claim.to_owned());
    if claim.is_empty() {
        Some(P::ClaimIdEmpty { run, claim })
    } else if claim.chars().any(kvlower_core::text::is_blank_char) {
        Some(P::ClaimIdInvisible { run, claim })
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
) -> Result<(), P> {
    let traced = trace_claims(report);
    let also = run.also_named.iter().map(String::as_str);
    for claim in traced
        .iter()
        .copied()
        .chain(run.claims())
        .chain(also.clone())
    {
        if let Some(problem) = claim_id_problem(&run.run, claim) {
            return Err(problem);
        }
    }
    let named: BTreeSet<&str> = run.claims().collect();
    if named != traced {
        let only = |a: &BTreeSet<&str>, b: &BTreeSet<&str>| {
            a.difference(b).map(|c| (*c).to_owned()).collect()
        };
        return Err(P::ClaimsDiffer {
            run: run.run.clone(),
            path: path.to_owned(),
            only_trace: only(&traced, &named),
            only_truth: only(&named, &traced),
        });
    }
    // Every claim id the run's truth names, its injector's targets included: another run's
    // claim named as a control's wrong claim would make one claim the subject of two runs.
    for claim in run.claims().chain(also) {
        if let Some(first) = owners.insert(claim, run.run.as_str()) {
            return Err(P::ClaimNamedByTwoRuns {
                claim: claim.to_owned(),
                first: first.to_owned(),
                run: run.run.clone(),
            });
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
) -> Result<Vec<(String, String)>, P> {
    if recorder.files.is_empty() || recorder.files.len() > 64 {
        return Err(P::RecorderFilesCount);
    }
    let judged: BTreeSet<_> = source_files
        .iter()
        .filter_map(|f| files.identify(f))
        .collect();
    let mut ids = BTreeSet::new();
    let mut read = Vec::with_capacity(recorder.files.len());
    for path in &recorder.files {
        if !crate::campaign_files::relative(path) || files.is_own_file(path) {
            return Err(P::RecorderFileNotRepoFile { path: path.clone() });
        }
        let id = files
            .identify(path)
            .ok_or_else(|| P::RecorderFileUnreadable { path: path.clone() })?;
        if !ids.insert(id) {
            return Err(P::RecorderFileListedTwice { path: path.clone() });
        }
        if judged.contains(&id) {
            return Err(P::RecorderIsJudged { path: path.clone() });
        }
        let bytes = files
            .read(path)
            .ok_or_else(|| P::RecorderFileUnreadable { path: path.clone() })?;
        read.push((path.as_str(), bytes));
    }
    let digest = crate::campaign_files::source_digest(read.iter().map(|(p, b)| (*p, b.as_slice())));
    if digest != recorder.sha256 {
        return Err(P::RecorderDigestChanged {
            digest,
            recorded: recorder.sha256.clone(),
        });
    }
    Ok(read
        .iter()
        .map(|(p, b)| ((*p).to_owned(), kvlower_core::catalog::sha256_hex(b)))
        .collect())
}
