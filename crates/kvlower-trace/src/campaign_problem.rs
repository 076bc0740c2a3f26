//! Why a gate campaign does not hold: a [`CampaignProblem`], one variant per refusal
//! reason (issue 50 item 4).
//!
//! Why a type and not a string: every refusal once travelled as a `String` and ended as
//! one diagnostic code, so neither `explain` nor a test could name the reason, only grep
//! its words. Here, in one place, each reason has its message (the `#[error]` text, the
//! words the campaign's readers and tests have always seen), its finding code
//! ([`CampaignProblem::code`]) and its hint ([`CampaignProblem::hint`]). A new refusal
//! gets a variant here, or its check does not compile; `code` and `hint` list every
//! variant, so a new one must say both.
//!
//! A problem found inside one truth run is wrapped in [`CampaignProblem::InTruthRun`]
//! (`truth run `R`: ...`), as the string once was prefixed: the checks of one run
//! (`truth.rs`, `truth_slot.rs`, `truth/*.rs`) return the inner reason alone.

use kvlower_codes::{Code, Finding};

use crate::names::TraceGate;

/// Why a campaign does not hold (the first problem `check` found).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CampaignProblem {
    // The campaign document itself.
    #[error("the campaign document is malformed: {why}")]
    DocumentMalformed { why: String },
    #[error("not a version-2 kvlower-gate-campaign document (version 1 names no engine truth)")]
    NotVersion2,
    #[error("the document records no runtime")]
    NoRuntime,
    #[error("a campaign lists 1 to {max_scenarios} scenarios and at most {max_traces} traces")]
    TooManyScenarios {
        max_scenarios: usize,
        max_traces: usize,
    },

    // The judged source files (`source`).
    #[error("the document names no source digest")]
    NoSourceDigest,
    #[error("`source.files` lists no file (or too many)")]
    SourceFilesCount,
    #[error("source file `{path}` is not a repository file outside kvlower's own directories")]
    SourceFileNotRepoFile { path: String },
    #[error("source file `{path}` cannot be read")]
    SourceFileUnreadable { path: String },
    #[error("source file `{path}` is listed twice")]
    SourceFileListedTwice { path: String },
    #[error(
        "the source digest of the patch and recorder files is {digest}, the document records {recorded}: the source changed since the campaign ran"
    )]
    SourceDigestChanged { digest: String, recorded: String },

    // The engine-truth document.
    #[error("the document names no engine truth")]
    NoTruth,
    #[error("truth document `{path}` is not a repository file outside kvlower's own directories")]
    TruthNotRepoFile { path: String },
    #[error("truth document `{path}` cannot be read")]
    TruthUnreadable { path: String },
    #[error("truth document `{path}` has SHA-256 {sha}, the campaign records {recorded}")]
    TruthDigestDiffers {
        path: String,
        sha: String,
        recorded: String,
    },
    #[error("the truth document is malformed: {why}")]
    TruthMalformed { why: String },
    #[error("the truth document's schema is `{schema}`, not `{expected}`")]
    TruthSchema {
        schema: String,
        expected: &'static str,
    },
    #[error("the truth document's engine.block_size is 0")]
    TruthBlockSizeZero,
    #[error("the connector truth has no engine.claim_prefix_tokens > 0")]
    TruthNoClaimPrefix,
    #[error("the truth document records another runtime than the campaign")]
    TruthOtherRuntime,
    #[error("the truth document records another source digest than the campaign")]
    TruthOtherSourceDigest,
    #[error("a truth run is malformed: {why}")]
    TruthRunKeysMalformed { why: String },
    #[error("truth run `{run}` is listed twice")]
    TruthRunListedTwice { run: String },
    #[error("truth run `{run}` is malformed: {why}")]
    TruthRunMalformed { run: String, why: String },
    #[error("truth run `{run}` names injected claims but no injected misbehaviour")]
    InjectedClaimsWithoutMisbehaviour { run: String },
    #[error(
        "truth run `{run}` records the engine outcome `{recorded}`, and its facts show `{shown}`"
    )]
    EngineOutcomeDiffers {
        run: String,
        recorded: String,
        shown: &'static str,
    },
    /// A problem of one truth run's facts (the variants below, down to the recorder's).
    #[error("truth run `{run}`: {problem}")]
    InTruthRun {
        run: String,
        problem: Box<CampaignProblem>,
    },

    // One run's facts (inside `InTruthRun`): the shape the rules need.
    #[error("request `{request}`: `{field}` holds {value:?}, not a SHA-256 (64 lowercase hex)")]
    BlockDigestMalformed {
        request: String,
        field: &'static str,
        value: String,
    },
    #[error("request `{request}`: an output's token ids and log-probabilities differ in number")]
    OutputLengthsDiffer { request: String },
    /// A residency run's content digests (docs/conformance.md, "Residency runs"): one entry
    /// per footprint block, each a SHA-256.
    #[error("`{list}` has {entries} entries, not one per footprint block ({footprint})")]
    DigestListNotPerBlock {
        list: String,
        entries: usize,
        footprint: usize,
    },
    #[error("`{list}` holds {value:?}, not a SHA-256 (64 lowercase hex)")]
    DigestListMalformed { list: String, value: String },
    #[error("malformed: {why}")]
    SlotRunMalformed { why: String },
    #[error("a slot run names no claim")]
    SlotRunNamesNoClaim,
    #[error("claim `{claim}` has prefix_tokens 0")]
    SlotPrefixZero { claim: String },
    #[error("claim `{claim}` is listed twice")]
    SlotClaimListedTwice { claim: String },
    #[error("claim `{claim}` is listed twice in `claims`")]
    ClaimListedTwiceInClaims { claim: String },
    #[error("{count} claim requests (not one)")]
    ClaimRequestsNotOne { count: usize },
    #[error("claim_blocks.per_step is not in strictly increasing step order")]
    StepsNotIncreasing,
    #[error("claim_input.footprint_blocks is 0")]
    FootprintZero,

    // One run's facts: truth that contradicts itself.
    #[error(
        "request `{request}`: the client's finish_reason {client:?} differs from the engine's {engine:?}"
    )]
    FinishReasonDiffers {
        request: String,
        client: Option<String>,
        engine: Option<String>,
    },
    #[error("request `{request}` finished `error` with no block reported as a failed load")]
    ErrorWithoutFailedBlock { request: String },
    #[error(
        "request `{request}` was served {tokens} tokens from the tier, and the engine ran no load job"
    )]
    ServedWithoutLoadJob { request: String, tokens: u64 },
    #[error("the claim's request was not served")]
    ClaimRequestNotServed,
    #[error(
        "request `{request}` finished `error` (refused) yet was served {external} tokens from the tier and {local} cached (num_cached_tokens {num_cached:?})"
    )]
    RefusedYetServed {
        request: String,
        external: u64,
        local: u64,
        num_cached: Option<u64>,
    },
    #[error(
        "request `{request}`: the tokens served ({external} from the tier, {local:?} locally) are not its last prefill's ({want_external}, {want_local})"
    )]
    ServedNotLastPrefill {
        request: String,
        external: u64,
        local: Option<u64>,
        want_external: u64,
        want_local: u64,
    },
    #[error(
        "request `{request}`: num_cached_tokens {cached} is not its last prefill's local and external tokens ({want_local} + {want_external})"
    )]
    CachedNotLastPrefill {
        request: String,
        cached: u64,
        want_local: u64,
        want_external: u64,
    },
    #[error(
        "step {step}: {pinned} pinned and {evictable} evictable of {device_cached} device-cached blocks, {host_tier} in the host tier (footprint {footprint}): a pinned block is never evictable"
    )]
    PinnedBlockEvictable {
        step: u64,
        pinned: u64,
        evictable: u64,
        device_cached: u64,
        host_tier: u64,
        footprint: u64,
    },
    #[error(
        "probe `{request}` was served {tokens} tokens from the host tier, which held at most {most_held} of the claim's blocks ({load_blocks} load job blocks ran)"
    )]
    ProbeServedBeyondHostTier {
        request: String,
        tokens: u64,
        most_held: u64,
        load_blocks: u64,
    },
    #[error("a restore the engine answered {status} left {tokens} tokens in the slot")]
    FailedRestoreLeftTokens { status: u16, tokens: u64 },
    #[error("an erase the engine answered {status}")]
    EraseFailed { status: u16 },

    // One run's facts: injected failures bound to the run.
    #[error(
        "an injected failure names the claim `{claim}`, neither a claim of this run nor its injector's target: a firing is bound to its run"
    )]
    FiringNamesAnotherClaim { claim: String },
    #[error(
        "an injected failure targets {target:?}, but the run armed its injector for {armed:?}: a firing is bound to its run"
    )]
    FiringTargetsAnotherClaim {
        target: Option<String>,
        armed: Option<String>,
    },

    // The judging code that wrote the truth (`recorder`).
    #[error("the truth's `recorder.files` lists no file (or too many)")]
    RecorderFilesCount,
    #[error("recorder file `{path}` is not a repository file outside kvlower's own directories")]
    RecorderFileNotRepoFile { path: String },
    #[error("recorder file `{path}` cannot be read")]
    RecorderFileUnreadable { path: String },
    #[error("recorder file `{path}` is listed twice")]
    RecorderFileListedTwice { path: String },
    #[error(
        "recorder file `{path}` is also judged code (in `source.files`): the judge is not the judged"
    )]
    RecorderIsJudged { path: String },
    #[error(
        "the digest of the recorder's files is {digest}, the truth records {recorded}: the judging code changed since the campaign ran"
    )]
    RecorderDigestChanged { digest: String, recorded: String },

    // Every file that ran is in the digest (the import closure).
    #[error("`{path}` cannot be read")]
    ClosureFileUnreadable { path: String },
    #[error("the import closure has too many files")]
    ClosureTooLarge,
    #[error("`{path}` is not UTF-8: its imports cannot be read")]
    ClosureFileNotUtf8 { path: String },
    /// The import statements of a file cannot be read (`why`: the Python reader's words).
    #[error("`{path}`: {why}")]
    ImportsUnreadable { path: String, why: String },
    #[error("`{path}`: a relative import leaves its package")]
    RelativeImportLeavesPackage { path: String },
    #[error("`{path}`: `{name}` uses the module `{module}` as a package")]
    ModuleUsedAsPackage {
        path: String,
        name: String,
        module: String,
    },
    #[error("`{path}`: `{name}` names no repository module under `{root}`")]
    NoRepositoryModule {
        path: String,
        name: String,
        root: String,
    },
    #[error("`{path}`: `from {module} import *` of a package may load any of its modules")]
    StarImportOfPackage { path: String, module: String },
    #[error(
        "`{path}` imports `{file}`, which is neither in `source.files` nor among the recorder's files: every repository file that ran must be in the digest"
    )]
    ImportOutsideDigest { path: String, file: String },
    #[error("the recorder lists `{path}` as loaded, not a repository-relative path")]
    LoadedNotRelative { path: String },
    #[error(
        "the recorder saw `{path}` loaded during the run, and it is neither in `source.files` nor among the recorder's files: every repository file that ran must be in the digest"
    )]
    LoadedOutsideDigest { path: String },

    // The runs: each trace, its truth run, and what binds them.
    #[error("truth run `{run}` names trace `{trace}`, which cannot be read")]
    TruthRunTraceUnreadable { run: String, trace: String },
    #[error("truth run `{run}` names a trace file another truth run names")]
    TruthRunsShareATrace { run: String },
    #[error("scenario `{scenario}` lists no trace or no expectation")]
    ScenarioEmpty { scenario: String },
    #[error("trace `{path}` is not a repository file outside kvlower's own directories")]
    TraceNotRepoFile { path: String },
    #[error("trace `{path}` cannot be read")]
    TraceUnreadable { path: String },
    #[error("trace `{path}` names a file already listed: one run, listed twice")]
    TraceListedTwice { path: String },
    #[error("trace `{path}` is malformed")]
    TraceMalformed { path: String },
    #[error("trace `{path}` does not record the document's runtime in its header")]
    TraceOtherRuntime { path: String },
    #[error("trace `{path}` does not record the campaign's source digest in its header")]
    TraceOtherSourceDigest { path: String },
    #[error("claim `{claim}` is in two runs (`{first}` and `{path}`): a run copied, counted twice")]
    ClaimInTwoRuns {
        claim: String,
        first: String,
        path: String,
    },
    #[error("trace `{path}` has no run in the engine truth")]
    TraceWithoutTruthRun { path: String },
    #[error("run `{run}`: claim id {claim:?} is empty: it cannot bind the run to its truth")]
    ClaimIdEmpty { run: String, claim: String },
    #[error(
        "run `{run}`: claim id {claim:?} holds an invisible character (white space, a control or a format character): it cannot bind the run to its truth"
    )]
    ClaimIdInvisible { run: String, claim: String },
    #[error(
        "run `{run}`: the trace `{path}` names the claims {only_trace:?} its truth does not, and its truth names {only_truth:?} the trace does not: a run is judged by truth about its own claims"
    )]
    ClaimsDiffer {
        run: String,
        path: String,
        only_trace: Vec<String>,
        only_truth: Vec<String>,
    },
    #[error(
        "claim `{claim}` is named by two truth runs (`{first}` and `{run}`): a claim belongs to one run"
    )]
    ClaimNamedByTwoRuns {
        claim: String,
        first: String,
        run: String,
    },
    #[error("scenario `{scenario}`: `{path}` {} {gate}", if *.passes { "passes" } else { "does not pass" })]
    ExpectationUnmet {
        scenario: String,
        path: String,
        passes: bool,
        gate: TraceGate,
    },
    #[error("truth run `{run}` is of scenario `{scenario}`, the campaign lists it in `{listed}`")]
    TruthRunOfAnotherScenario {
        run: String,
        scenario: String,
        listed: String,
    },
    #[error(
        "run `{run}`: {claim}: {gate}: the trace {}, the engine's truth says it should {}({fact})",
        if *.passes { "passes" } else { "does not pass" },
        if *.should_pass { "" } else { "not " }
    )]
    VerdictDisagrees {
        run: String,
        claim: String,
        gate: TraceGate,
        passes: bool,
        should_pass: bool,
        fact: String,
    },
    #[error(
        "run `{run}`: {claim}: {gate}: the trace passes a claim the engine's truth never names"
    )]
    UnnamedClaimPasses {
        run: String,
        claim: String,
        gate: TraceGate,
    },
    #[error(
        "the engine truth records {truth_runs} runs, the campaign lists {listed}: a run is missing from the campaign"
    )]
    RunMissingFromCampaign { truth_runs: usize, listed: usize },
}

/// The hints, shared by the reasons that are fixed the same way.
const REGENERATE: &str = "re-run the campaign's verify script, which writes the document, the truth and the traces together (docs/conformance.md, \"Campaign documents\")";
const REPO_FILE: &str = "name a repository-relative file outside kvlower's own directories (capabilities/, modes/, results/, schemas/, bad_lowering/), readable and within the size cap";
const LIST_ONCE: &str =
    "list each file once: another spelling or a link of a listed file is the same file";
const SOURCE_CHANGED: &str = "the files changed since the campaign ran: re-run the campaign on the committed files, or restore them (docs/conformance.md, \"The source digest\")";
const TRUTH_FACTS: &str = "the engine truth contradicts itself or misses a fact a rule needs: fix the recorder and re-run the campaign (docs/conformance.md, \"The engine-truth document\")";
const FIRINGS: &str = "an injected failure belongs to its run: clear the injector's records between runs and re-run the campaign (docs/conformance.md, \"Every run is judged by its own truth\")";
const CLOSURE: &str = "list in `source.files` or the recorder's files every repository file the campaign's code imports or loads (docs/conformance.md, \"Every file that ran is in the digest\")";
const BINDING: &str = "a run is judged by truth about its own claims: the trace and its truth run must name the same visible claim ids, each claim in one run only (docs/conformance.md, \"Every run is judged by its own truth\")";
const AGREEMENT: &str = "run `kvlower gate` on the trace to see its verdicts, and fix the trace, the truth or the scenario's expectation (docs/conformance.md, \"Agreement\")";

impl CampaignProblem {
    /// The finding code this reason is reported under. Every reason today ends as
    /// `anchor-verdict-disagrees` (an anchored campaign that does not hold is a witness
    /// `check` cannot reproduce); a reason gets its own code here, and only here.
    pub fn code(&self) -> Code {
        use CampaignProblem as P;
        match self {
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
            | P::RunMissingFromCampaign { .. } => Code::AnchorVerdictDisagrees,
        }
    }

    /// What to do about it (never empty).
    pub fn hint(&self) -> &'static str {
        use CampaignProblem as P;
        match self {
            P::DocumentMalformed { .. } => {
                "write each key once, with the fields docs/conformance.md lists for a campaign document"
            }
            P::NotVersion2 => {
                "regenerate the document as `schema_version: 2` with its engine truth and source digest (docs/conformance.md)"
            }
            P::NoRuntime => "record in `runtime` the components every trace's header records",
            P::TooManyScenarios { .. } => {
                "split the campaign: a document lists 1 to 64 scenarios and at most 10000 traces"
            }
            P::NoSourceDigest | P::NoTruth => {
                "a version-2 campaign names its engine truth (`truth`) and its source files and digest (`source`): regenerate it with the campaign's verify script"
            }
            P::SourceFilesCount => {
                "list in `source.files` the patch's and the recorder's files (1 to 10000)"
            }
            P::RecorderFilesCount => {
                "list in the truth's `recorder.files` the judging code that wrote it (1 to 64 files)"
            }
            P::SourceFileNotRepoFile { .. }
            | P::SourceFileUnreadable { .. }
            | P::TruthNotRepoFile { .. }
            | P::TruthUnreadable { .. }
            | P::RecorderFileNotRepoFile { .. }
            | P::RecorderFileUnreadable { .. }
            | P::TraceNotRepoFile { .. }
            | P::TraceUnreadable { .. }
            | P::TruthRunTraceUnreadable { .. } => REPO_FILE,
            P::SourceFileListedTwice { .. } | P::RecorderFileListedTwice { .. } => LIST_ONCE,
            P::TraceListedTwice { .. } | P::TruthRunsShareATrace { .. } => {
                "list each run's trace once: another spelling or a link of a listed trace is the same run"
            }
            P::SourceDigestChanged { .. } | P::RecorderDigestChanged { .. } => SOURCE_CHANGED,
            P::RecorderIsJudged { .. } => {
                "the judging code is not the judged: move the file out of `source.files` or out of `recorder.files`"
            }
            P::TruthDigestDiffers { .. } => {
                "the truth changed since the campaign ran: restore it, or re-run the campaign to record its new SHA-256"
            }
            P::TruthMalformed { .. }
            | P::TruthSchema { .. }
            | P::TruthBlockSizeZero
            | P::TruthNoClaimPrefix
            | P::TruthRunKeysMalformed { .. }
            | P::TruthRunListedTwice { .. }
            | P::TruthRunMalformed { .. }
            | P::SlotRunMalformed { .. } => {
                "write the truth as `kvlower-engine-truth/1` describes it, each key once (docs/conformance.md, \"The engine-truth document\")"
            }
            P::TruthOtherRuntime
            | P::TruthOtherSourceDigest
            | P::TraceOtherRuntime { .. }
            | P::TraceOtherSourceDigest { .. } => REGENERATE,
            P::InjectedClaimsWithoutMisbehaviour { .. } | P::EngineOutcomeDiffers { .. } => {
                TRUTH_FACTS
            }
            P::InTruthRun { problem, .. } => problem.hint(),
            P::BlockDigestMalformed { .. }
            | P::OutputLengthsDiffer { .. }
            | P::DigestListNotPerBlock { .. }
            | P::DigestListMalformed { .. }
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
            | P::EraseFailed { .. } => TRUTH_FACTS,
            P::FiringNamesAnotherClaim { .. } | P::FiringTargetsAnotherClaim { .. } => FIRINGS,
            P::ClosureFileUnreadable { .. }
            | P::ClosureTooLarge
            | P::ClosureFileNotUtf8 { .. }
            | P::ImportsUnreadable { .. }
            | P::RelativeImportLeavesPackage { .. }
            | P::ModuleUsedAsPackage { .. }
            | P::NoRepositoryModule { .. }
            | P::StarImportOfPackage { .. }
            | P::ImportOutsideDigest { .. }
            | P::LoadedNotRelative { .. }
            | P::LoadedOutsideDigest { .. } => CLOSURE,
            P::ScenarioEmpty { .. } => "give every scenario at least one trace and one expectation",
            P::TraceMalformed { .. } => {
                "run `kvlower gate` on the trace: it names the malformed line"
            }
            P::ClaimInTwoRuns { .. }
            | P::ClaimIdEmpty { .. }
            | P::ClaimIdInvisible { .. }
            | P::ClaimsDiffer { .. }
            | P::ClaimNamedByTwoRuns { .. } => BINDING,
            P::TraceWithoutTruthRun { .. }
            | P::RunMissingFromCampaign { .. }
            | P::TruthRunOfAnotherScenario { .. } => {
                "every run of the campaign has one truth run, of the scenario that lists its trace, and every truth run is listed: a run left out of either is a run hidden"
            }
            P::ExpectationUnmet { .. }
            | P::VerdictDisagrees { .. }
            | P::UnnamedClaimPasses { .. } => AGREEMENT,
        }
    }

    /// The finding of this problem for the campaign document `campaign`: its code,
    /// message and hint.
    pub fn finding(&self, campaign: &str) -> Finding {
        Finding::new(self.code(), campaign, self.to_string()).with_hint(self.hint())
    }

    /// The reason this problem was found inside one truth run, wrapped with the run's name.
    pub(crate) fn in_run(run: &str) -> impl FnOnce(CampaignProblem) -> CampaignProblem + '_ {
        move |problem| CampaignProblem::InTruthRun {
            run: run.to_owned(),
            problem: Box::new(problem),
        }
    }
}

#[cfg(test)]
#[path = "campaign_problem/tests.rs"]
mod tests;
