//! The refusal is a variant, not words (issue 50 item 4): each test builds a refused
//! input and names the reason the campaign gives; and every reason has a code of the
//! table and a hint.

use std::io::BufRead;

use serde_json::json;

use super::CampaignProblem as P;
use crate::campaign_doc::{CampaignDocument, CampaignFiles, FileId, source_digest};

/// An in-memory repository: path → bytes (identity: the path's index).
struct Files(Vec<(&'static str, &'static [u8])>);

impl CampaignFiles for Files {
    fn identify(&self, path: &str) -> Option<FileId> {
        let i = self.0.iter().position(|(p, _)| *p == path)?;
        Some((0, u64::try_from(i).ok()?))
    }
    fn open_trace(&self, path: &str) -> Option<Box<dyn BufRead + '_>> {
        let bytes = self.0.iter().find(|(p, _)| *p == path)?.1;
        Some(Box::new(bytes))
    }
    fn read(&self, path: &str) -> Option<Vec<u8>> {
        Some(self.0.iter().find(|(p, _)| *p == path)?.1.to_vec())
    }
    fn is_own_file(&self, path: &str) -> bool {
        path.starts_with("results/")
    }
    fn is_dir(&self, _: &str) -> bool {
        false
    }
}

/// A version-2 document naming `patch.py` with digest `sha`, and one scenario.
fn doc(sha: &str) -> serde_json::Value {
    json!({
        "kind": "kvlower-gate-campaign",
        "schema_version": 2,
        "runtime": [{"kind": "vllm", "version": "0.32.0"}],
        "truth": {"path": "truth.json", "sha256": "00"},
        "source": {"files": ["patch.py"], "sha256": sha},
        "scenarios": [{"name": "s", "traces": ["t.jsonl"], "expect": {"connector_observation": "every_run"}}]
    })
}

fn problem(value: serde_json::Value, files: &Files) -> Option<P> {
    let doc: CampaignDocument = serde_json::from_value(value).expect("a campaign document");
    let outcome = doc.rerun(files);
    assert_eq!(outcome.held, outcome.problem.is_none());
    outcome.problem
}

fn patch_digest() -> String {
    source_digest([("patch.py", b"x = 1\n".as_slice())])
}

#[test]
fn a_version_1_document_is_refused_as_one() {
    let mut d = doc("00");
    d["schema_version"] = json!(1);
    assert_eq!(problem(d, &Files(vec![])), Some(P::NotVersion2));
}

#[test]
fn a_document_without_a_runtime_is_refused_as_one() {
    let mut d = doc("00");
    d["runtime"] = json!([]);
    assert_eq!(problem(d, &Files(vec![])), Some(P::NoRuntime));
}

#[test]
fn a_missing_source_file_is_an_unreadable_source_file() {
    let got = problem(doc("00"), &Files(vec![]));
    assert_eq!(
        got,
        Some(P::SourceFileUnreadable {
            path: "patch.py".into()
        })
    );
}

#[test]
fn an_edited_source_file_is_a_changed_digest() {
    let got = problem(doc("00"), &Files(vec![("patch.py", b"x = 2\n")]));
    assert!(
        matches!(&got, Some(P::SourceDigestChanged { recorded, .. }) if recorded == "00"),
        "{got:?}"
    );
}

#[test]
fn a_source_file_in_kvlowers_own_directories_is_refused_as_one() {
    let mut d = doc("00");
    d["source"]["files"] = json!(["results/x.py"]);
    let got = problem(d, &Files(vec![("results/x.py", b"")]));
    assert_eq!(
        got,
        Some(P::SourceFileNotRepoFile {
            path: "results/x.py".into()
        })
    );
}

#[test]
fn a_truth_edited_without_its_digest_is_a_differing_truth_digest() {
    let files = Files(vec![("patch.py", b"x = 1\n"), ("truth.json", b"{}")]);
    let got = problem(doc(&patch_digest()), &files);
    assert!(
        matches!(&got, Some(P::TruthDigestDiffers { path, .. }) if path == "truth.json"),
        "{got:?}"
    );
}

#[test]
fn a_truth_of_another_schema_or_with_a_repeated_key_is_named_so() {
    let other = br#"{"schema": "other/1"}"#;
    assert!(matches!(
        crate::truth::read_truth(other),
        Err(P::TruthMalformed { .. } | P::TruthSchema { .. })
    ));
    let repeated = br#"{"schema": "a", "schema": "b"}"#;
    assert!(matches!(
        crate::truth::read_truth(repeated),
        Err(P::TruthMalformed { .. })
    ));
}

#[test]
fn an_import_outside_the_digest_is_named_so() {
    let files = Files(vec![("a.py", b"import b\n"), ("b.py", b"")]);
    let got = crate::import_closure::check_closure(&["a.py"], &[], &files);
    assert_eq!(
        got,
        Err(P::ImportOutsideDigest {
            path: "a.py".into(),
            file: "b.py".into()
        })
    );
}

/// One of every variant: the `match` has no wildcard, so a new variant does not compile
/// until it is listed here too.
fn every_variant() -> Vec<P> {
    let s = String::new;
    let all = vec![
        P::DocumentMalformed { why: s() },
        P::NotVersion2,
        P::NoRuntime,
        P::TooManyScenarios {
            max_scenarios: 1,
            max_traces: 1,
        },
        P::NoSourceDigest,
        P::SourceFilesCount,
        P::SourceFileNotRepoFile { path: s() },
        P::SourceFileUnreadable { path: s() },
        P::SourceFileListedTwice { path: s() },
        P::SourceDigestChanged {
            digest: s(),
            recorded: s(),
        },
        P::NoTruth,
        P::TruthNotRepoFile { path: s() },
        P::TruthUnreadable { path: s() },
        P::TruthDigestDiffers {
            path: s(),
            sha: s(),
            recorded: s(),
        },
        P::TruthMalformed { why: s() },
        P::TruthSchema {
            schema: s(),
            expected: "",
        },
        P::TruthBlockSizeZero,
        P::TruthNoClaimPrefix,
        P::TruthOtherRuntime,
        P::TruthOtherSourceDigest,
        P::TruthRunKeysMalformed { why: s() },
        P::TruthRunListedTwice { run: s() },
        P::TruthRunMalformed { run: s(), why: s() },
        P::InjectedClaimsWithoutMisbehaviour { run: s() },
        P::EngineOutcomeDiffers {
            run: s(),
            recorded: s(),
            shown: "",
        },
        P::InTruthRun {
            run: s(),
            problem: Box::new(P::FootprintZero),
        },
        P::BlockDigestMalformed {
            request: s(),
            field: "",
            value: s(),
        },
        P::OutputLengthsDiffer { request: s() },
        P::DigestListNotPerBlock {
            list: s(),
            entries: 1,
            footprint: 2,
        },
        P::DigestListMalformed {
            list: s(),
            value: s(),
        },
        P::SlotRunMalformed { why: s() },
        P::SlotRunNamesNoClaim,
        P::SlotPrefixZero { claim: s() },
        P::SlotClaimListedTwice { claim: s() },
        P::ClaimListedTwiceInClaims { claim: s() },
        P::ClaimRequestsNotOne { count: 0 },
        P::StepsNotIncreasing,
        P::FootprintZero,
        P::FinishReasonDiffers {
            request: s(),
            client: None,
            engine: None,
        },
        P::ErrorWithoutFailedBlock { request: s() },
        P::ServedWithoutLoadJob {
            request: s(),
            tokens: 0,
        },
        P::ClaimRequestNotServed,
        P::RefusedYetServed {
            request: s(),
            external: 0,
            local: 0,
            num_cached: None,
        },
        P::ServedNotLastPrefill {
            request: s(),
            external: 0,
            local: None,
            want_external: 0,
            want_local: 0,
        },
        P::CachedNotLastPrefill {
            request: s(),
            cached: 0,
            want_local: 0,
            want_external: 0,
        },
        P::PinnedBlockEvictable {
            step: 0,
            pinned: 0,
            evictable: 0,
            device_cached: 0,
            host_tier: 0,
            footprint: 0,
        },
        P::ProbeServedBeyondHostTier {
            request: s(),
            tokens: 0,
            most_held: 0,
            load_blocks: 0,
        },
        P::FailedRestoreLeftTokens {
            status: 0,
            tokens: 0,
        },
        P::EraseFailed { status: 0 },
        P::FiringNamesAnotherClaim { claim: s() },
        P::FiringTargetsAnotherClaim {
            target: None,
            armed: None,
        },
        P::RecorderFilesCount,
        P::RecorderFileNotRepoFile { path: s() },
        P::RecorderFileUnreadable { path: s() },
        P::RecorderFileListedTwice { path: s() },
        P::RecorderIsJudged { path: s() },
        P::RecorderDigestChanged {
            digest: s(),
            recorded: s(),
        },
        P::ClosureFileUnreadable { path: s() },
        P::ClosureTooLarge,
        P::ClosureFileNotUtf8 { path: s() },
        P::ImportsUnreadable {
            path: s(),
            why: s(),
        },
        P::RelativeImportLeavesPackage { path: s() },
        P::ModuleUsedAsPackage {
            path: s(),
            name: s(),
            module: s(),
        },
        P::NoRepositoryModule {
            path: s(),
            name: s(),
            root: s(),
        },
        P::StarImportOfPackage {
            path: s(),
            module: s(),
        },
        P::ImportOutsideDigest {
            path: s(),
            file: s(),
        },
        P::LoadedNotRelative { path: s() },
        P::LoadedOutsideDigest { path: s() },
        P::TruthRunTraceUnreadable {
            run: s(),
            trace: s(),
        },
        P::TruthRunsShareATrace { run: s() },
        P::ScenarioEmpty { scenario: s() },
        P::TraceNotRepoFile { path: s() },
        P::TraceUnreadable { path: s() },
        P::TraceListedTwice { path: s() },
        P::TraceMalformed { path: s() },
        P::TraceOtherRuntime { path: s() },
        P::TraceOtherSourceDigest { path: s() },
        P::ClaimInTwoRuns {
            claim: s(),
            first: s(),
            path: s(),
        },
        P::TraceWithoutTruthRun { path: s() },
        P::ClaimIdEmpty {
            run: s(),
            claim: s(),
        },
        P::ClaimIdInvisible {
            run: s(),
            claim: s(),
        },
        P::ClaimsDiffer {
            run: s(),
            path: s(),
            only_trace: vec![],
            only_truth: vec![],
        },
        P::ClaimNamedByTwoRuns {
            claim: s(),
            first: s(),
            run: s(),
        },
        P::ExpectationUnmet {
            scenario: s(),
            path: s(),
            passes: true,
            gate: crate::TraceGate::ConnectorObservation,
        },
        P::TruthRunOfAnotherScenario {
            run: s(),
            scenario: s(),
            listed: s(),
        },
        P::VerdictDisagrees {
            run: s(),
            claim: s(),
            gate: crate::TraceGate::ConnectorObservation,
            passes: true,
            should_pass: false,
            fact: s(),
        },
        P::UnnamedClaimPasses {
            run: s(),
            claim: s(),
            gate: crate::TraceGate::ConnectorObservation,
        },
        P::RunMissingFromCampaign {
            truth_runs: 0,
            listed: 0,
        },
    ];
    // The guard: listing a variant above is what this match checks (no wildcard).
    for p in &all {
        match p {
            P::DocumentMalformed { .. }
            | P::NotVersion2
            | P::NoRuntime
            | P::TooManyScenarios { .. }
            | P::NoSourceDigest
            | P::SourceFilesCount
            | P::SourceFileNotRepoFile { .. }
            | P::SourceFileUnreadable { .. }
            | P::SourceFileListedTwice { .. }
            | P::SourceDigestChanged { .. }
            | P::NoTruth
            | P::TruthNotRepoFile { .. }
            | P::TruthUnreadable { .. }
            | P::TruthDigestDiffers { .. }
            | P::TruthMalformed { .. }
            | P::TruthSchema { .. }
            | P::TruthBlockSizeZero
            | P::TruthNoClaimPrefix
            | P::TruthOtherRuntime
            | P::TruthOtherSourceDigest
            | P::TruthRunKeysMalformed { .. }
            | P::TruthRunListedTwice { .. }
            | P::TruthRunMalformed { .. }
            | P::InjectedClaimsWithoutMisbehaviour { .. }
            | P::EngineOutcomeDiffers { .. }
            | P::InTruthRun { .. }
            | P::BlockDigestMalformed { .. }
            | P::OutputLengthsDiffer { .. }
            | P::DigestListNotPerBlock { .. }
            | P::DigestListMalformed { .. }
            | P::SlotRunMalformed { .. }
            | P::SlotRunNamesNoClaim
            | P::SlotPrefixZero { .. }
            | P::SlotClaimListedTwice { .. }
            | P::ClaimListedTwiceInClaims { .. }
            | P::ClaimRequestsNotOne { .. }
            | P::StepsNotIncreasing
            | P::FootprintZero
            | P::FinishReasonDiffers { .. }
            | P::ErrorWithoutFailedBlock { .. }
            | P::ServedWithoutLoadJob { .. }
            | P::ClaimRequestNotServed
            | P::RefusedYetServed { .. }
            | P::ServedNotLastPrefill { .. }
            | P::CachedNotLastPrefill { .. }
            | P::PinnedBlockEvictable { .. }
            | P::ProbeServedBeyondHostTier { .. }
            | P::FailedRestoreLeftTokens { .. }
            | P::EraseFailed { .. }
            | P::FiringNamesAnotherClaim { .. }
            | P::FiringTargetsAnotherClaim { .. }
            | P::RecorderFilesCount
            | P::RecorderFileNotRepoFile { .. }
            | P::RecorderFileUnreadable { .. }
            | P::RecorderFileListedTwice { .. }
            | P::RecorderIsJudged { .. }
            | P::RecorderDigestChanged { .. }
            | P::ClosureFileUnreadable { .. }
            | P::ClosureTooLarge
            | P::ClosureFileNotUtf8 { .. }
            | P::ImportsUnreadable { .. }
            | P::RelativeImportLeavesPackage { .. }
            | P::ModuleUsedAsPackage { .. }
            | P::NoRepositoryModule { .. }
            | P::StarImportOfPackage { .. }
            | P::ImportOutsideDigest { .. }
            | P::LoadedNotRelative { .. }
            | P::LoadedOutsideDigest { .. }
            | P::TruthRunTraceUnreadable { .. }
            | P::TruthRunsShareATrace { .. }
            | P::ScenarioEmpty { .. }
            | P::TraceNotRepoFile { .. }
            | P::TraceUnreadable { .. }
            | P::TraceListedTwice { .. }
            | P::TraceMalformed { .. }
            | P::TraceOtherRuntime { .. }
            | P::TraceOtherSourceDigest { .. }
            | P::ClaimInTwoRuns { .. }
            | P::TraceWithoutTruthRun { .. }
            | P::ClaimIdEmpty { .. }
            | P::ClaimIdInvisible { .. }
            | P::ClaimsDiffer { .. }
            | P::ClaimNamedByTwoRuns { .. }
            | P::ExpectationUnmet { .. }
            | P::TruthRunOfAnotherScenario { .. }
            | P::VerdictDisagrees { .. }
            | P::UnnamedClaimPasses { .. }
            | P::RunMissingFromCampaign { .. } => {}
        }
    }
    all
}

#[test]
fn every_reason_has_a_code_of_the_table_a_hint_and_a_finding() {
    let all = every_variant();
    assert_eq!(all.len(), 88, "a variant added: list it in every_variant");
    for p in &all {
        assert!(kvlower_codes::Code::ALL.contains(&p.code()), "{p:?}");
        assert!(!p.hint().trim().is_empty(), "{p:?}");
        assert!(!p.to_string().is_empty(), "{p:?}");
        let f = p.finding("evidence/c/gate-campaign.json");
        assert_eq!((f.code, f.message), (p.code(), p.to_string()));
    }
}

/// The messages are the words the string refusals said (a sample, byte for byte).
#[test]
fn the_messages_are_the_strings_they_replace() {
    let gate = crate::TraceGate::ConnectorObservation;
    let cases = [
        (
            P::ExpectationUnmet {
                scenario: "s".into(),
                path: "t".into(),
                passes: false,
                gate,
            },
            format!("scenario `s`: `t` does not pass {gate}"),
        ),
        (
            P::VerdictDisagrees {
                run: "r".into(),
                claim: "c".into(),
                gate,
                passes: true,
                should_pass: false,
                fact: "f".into(),
            },
            format!("run `r`: c: {gate}: the trace passes, the engine's truth says it should not (f)"),
        ),
        (
            P::InTruthRun {
                run: "r".into(),
                problem: Box::new(P::FootprintZero),
            },
            "truth run `r`: claim_input.footprint_blocks is 0".into(),
        ),
        (
            P::ClaimIdInvisible {
                run: "r".into(),
                claim: "a\u{200b}".into(),
            },
            "run `r`: claim id \"a\\u{200b}\" holds an invisible character (white space, a control or a format character): it cannot bind the run to its truth".into(),
        ),
    ];
    for (p, want) in cases {
        assert_eq!(p.to_string(), want);
    }
}
