//! `kvlower explain-code CODE`: what / why / example / fix for every diagnostic
//! code (like `ruff rule`). [`Code::explanation`] stays the one-line summary;
//! `what` is that summary.

use crate::diagnostic::Code;

/// The long documentation of one code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CodeDoc {
    /// What the finding says (the one-line summary).
    pub what: &'static str,
    /// Why kvlower reports it (what would go wrong otherwise).
    pub why: &'static str,
    /// An input or command that produces it.
    pub example: &'static str,
    /// How to make it go away for the right reason.
    pub fix: &'static str,
}

impl Code {
    /// What / why / example / fix (see [`CodeDoc`]).
    pub fn doc(self) -> CodeDoc {
        let (why, example, fix) = details(self);
        CodeDoc {
            what: self.explanation(),
            why,
            example,
            fix,
        }
    }
}

fn details(code: Code) -> (&'static str, &'static str, &'static str) {
    use Code::*;
    match code {
        UnreadableFile => (
            "An input that cannot be read cannot be judged; kvlower fails closed instead of skipping it.",
            "capabilities/x.yaml is a link to a file that was deleted, or has mode 000.",
            "Restore the file or its permissions, or remove the dangling link.",
        ),
        InvalidUtf8 => (
            "Names and anchors are compared as text; bytes that are not UTF-8 would be compared wrongly or garble reports.",
            "A descriptor saved as Latin-1 with a `é` in its note.",
            "Save the file as UTF-8 (without NUL bytes).",
        ),
        EmptyFile => (
            "An empty descriptor describes nothing, and silently skipping it would hide a truncated file.",
            "capabilities/new.yaml with only comments in it.",
            "Write at least `runtime:` and `non_claims:` (`kvlower new NAME --version V` writes a scaffold), or delete the file.",
        ),
        YamlSyntax => (
            "A file the parser rejects cannot be judged; nothing in it counts.",
            "`native:` indented with a tab, or an unclosed quote in a note.",
            "Fix the YAML at the line and column given (spaces, not tabs; close every quote).",
        ),
        DuplicateKey => (
            "With a duplicate key the last value would silently win, so a reviewer could read evidence that does not count.",
            "An anchor mapping with `path:` written twice.",
            "Keep one of the two keys.",
        ),
        UnknownField => (
            "A misspelt key would otherwise be ignored and its evidence silently lost (or silently widened).",
            "`preserve_order: true` instead of `preserves_order: true` (the hint says which key was meant).",
            "Use the key the hint names; docs/descriptor-format.md lists every key.",
        ),
        UnknownName => (
            "Obligations, modes, depths, scopes and the rest are a closed vocabulary; an unknown name would judge nothing.",
            "`mode: best_efort` (did you mean `best_effort`?).",
            "Use the name the hint suggests; `kvlower schema descriptor` lists every name.",
        ),
        MissingField => (
            "A required key carries meaning (what runtime, what is not claimed); a default would invent it.",
            "A descriptor without `non_claims:`.",
            "Add the key; docs/descriptor-format.md says what each one means.",
        ),
        WrongType => (
            "A value of the wrong shape cannot be read as what the format means by it.",
            "`modes: offloadable` where a list (`[offloadable]`) or `all` is expected.",
            "Write the value in the expected shape (the message names it).",
        ),
        InvalidCatalog => (
            "Every row is judged under the catalog; an inconsistent one would make every label meaningless.",
            "modes/modes.yaml letting `telemetry_join` supply an enforcement obligation.",
            "Fix modes/modes.yaml as the message says; docs/catalog.md explains its parts.",
        ),
        CatalogWeakened => (
            "The paper's catalog is a floor: a weaker local catalog would turn rejected rows positive.",
            "Removing an obligation from a mode's bundle in modes/modes.yaml.",
            "Undo the weakening (only strengthening is allowed); `kvlower catalog diff` lists every difference.",
        ),
        CatalogAlias => (
            "With an alias two modes or depths share one spec, so changing one silently changes the other.",
            "`soft_priority: *best_effort_spec` in modes/modes.yaml.",
            "Write the spec out in full at each place.",
        ),
        CatalogMismatch => (
            "A committed matrix judged under another catalog would present stale labels as current.",
            "Editing modes/modes.yaml without regenerating results/.",
            "Run `kvlower matrix` and commit results/.",
        ),
        AnchorIncomplete => (
            "Evidence that cannot be checked does not count (fail-closed rule 2); an incomplete anchor makes its item inert.",
            "`anchor: {kind: public_source, repository: vllm-project/vllm, path: vllm/config.py, note: ...}` without `commit`.",
            "Add the field the message names (docs/descriptor-format.md lists what each anchor kind needs).",
        ),
        AnchorFileMissing => (
            "A repo_file anchor is checked against this repository; a file that is not here anchors nothing.",
            "`anchor: {kind: repo_file, path: evidence/run/trace.jsonl, ...}` with no such file.",
            "Commit the file at that path, or fix the path.",
        ),
        AnchorVerdictDisagrees => (
            "`check` re-runs the gate on the committed trace, or a whole gate campaign with its engine truth and source digest; a claimed verdict it does not reproduce, or a trace verdict the engine's truth contradicts, would be a forged witness.",
            "`verdict: {gate: connector_observation, pass: true}` on a trace that fails that gate; a campaign whose run `success-07` passes `connector_failure_outcome` while its truth says the request finished `length`.",
            "Run `kvlower gate` on the trace (`kvlower gate --campaign DOC` on a campaign: it names the run, gate and engine fact) and fix the evidence or re-run the campaign (docs/conformance.md).",
        ),
        AnchorPlaceholder => (
            "A scaffold placeholder is not evidence; counting it would make an unreviewed descriptor positive.",
            "The note `placeholder, replace with the source that shows this obligation` that `kvlower new` writes (or a bare `TODO`).",
            "Replace the note with what the anchor shows, or delete the item.",
        ),
        AnchorSelfReference => (
            "A descriptor, the catalog or a generated result cannot be evidence for itself.",
            "`anchor: {kind: repo_file, path: results/lowering-matrix.json, ...}`.",
            "Anchor to evidence (a trace, a join document) committed outside kvlower's own inputs and outputs.",
        ),
        AnchorRefused => (
            "kvlower reads only regular files inside the repository; anything else could block, leak or change under it.",
            "A repo_file anchor naming a link to /etc/passwd, a FIFO, or a 10 GiB file.",
            "Commit the evidence as a regular file inside the repository, under its cap (docs/files.md).",
        ),
        AnchorNotRerunnable => (
            "Run-time evidence counts only when `check` can re-run it; a file it cannot re-run would be taken on trust.",
            "A trace-scoped item anchored to evidence/run/notes.txt.",
            "Anchor a gate trace with a claimed `verdict`, or a `kvlower join` evidence document.",
        ),
        BlankValue => (
            "A name or version without a visible character identifies nothing and makes rows unreadable; a positive row whose non-claim is blank says nothing of what it does not claim.",
            "`runtime: {name: \"\\u200b\", ...}` (a zero-width space), or `non_claims: {default: \"\\ufff9\"}` on a descriptor with a positive row.",
            "Write a visible name, version or non-claim (white space, default-ignorable, control and format characters do not count).",
        ),
        ControlCharacter => (
            "A control character could forge a line of a report or a terminal escape.",
            "A runtime version containing a newline.",
            "Remove the control character.",
        ),
        PreconditionWrongDepth => (
            "Preconditions are the trust boundary of one depth; one from another depth proves nothing here.",
            "A `telemetry_join` adapter listing `patch_stack_identified` (a backend_patch precondition).",
            "Move the precondition to the adapter of its depth, or remove it.",
        ),
        DuplicateAdapterDepth => (
            "Each row has one trust boundary per depth; two adapters at one depth would mix their preconditions.",
            "Two adapters with `depth: claim_registry`.",
            "Merge them into one adapter.",
        ),
        AdapterAtNativeDepth => (
            "Depth `none` is the unmodified runtime; an adapter there would pass adapter evidence off as native.",
            "`adapters: [{depth: none, ...}]`.",
            "Move its items under `native:`, or give the adapter its real depth.",
        ),
        StaleResult => (
            "Committed results must be what the descriptors produce, or a reader trusts labels nobody computed.",
            "Editing a descriptor without regenerating results/.",
            "Run `kvlower matrix` and commit results/ (the diff shows what changed).",
        ),
        MissingResult => (
            "Every generated result is part of the committed record; a missing one hides rows.",
            "Deleting results/central-result-table.md.",
            "Run `kvlower matrix` and commit the file.",
        ),
        AuditSuiteFailed => (
            "The audit suites check the checker (bad lowerings rejected, mutations lowering labels); a failure means a judgment can be wrong.",
            "A bad-lowering case under bad_lowering/ that is no longer rejected.",
            "Read the failing case in the result file it names and fix the judgment or the case.",
        ),
        CitedPositive => (
            "A positive row that rests on evidence `check` cannot re-run must be allowed in the open, or it looks verified.",
            "A `native_sound` row anchored only to a `paper` anchor.",
            "Anchor the evidence to a committed trace or join document, or write `allow_cited_positives: <why>` in the descriptor.",
        ),
        FileOutsideRoot => (
            "Inputs outside the repository are not part of the reviewed record and could change under it.",
            "capabilities/x.yaml is a link to ../../elsewhere/x.yaml.",
            "Copy the file into the repository instead of linking out of it.",
        ),
        NotARegularFile => (
            "Reading a FIFO, device or pseudo-file could block or leak; kvlower reads regular files only.",
            "`kvlower gate /dev/stdin` on a terminal, or a descriptor that is a FIFO.",
            "Name a regular file (or `-` for standard input where a command accepts it).",
        ),
        FileTooLarge => (
            "Caps keep a hostile or accidental input from exhausting memory; a truncated read would judge part of a file.",
            "A 100 MiB descriptor.",
            "Split or shrink the file; docs/files.md lists the cap per kind.",
        ),
        InvalidFileName => (
            "A file name that is not UTF-8 or holds control characters would be skipped or garble reports.",
            "capabilities/vllm\\n.yaml.",
            "Rename the file.",
        ),
        StrayFile => (
            "results/ and schemas/ hold only generated files; a stray one would be committed as if generated.",
            "results/.tmp-lowering-matrix.json left by an interrupted run.",
            "Run `kvlower matrix` (it removes its leftovers), or delete the file.",
        ),
        MalformedTrace => (
            "A trace that is not well-formed cannot witness anything; a partial read would pass gates on half a run.",
            "A line with `event_sequence` smaller than the line before.",
            "Fix or regenerate the trace (docs/trace-format.md).",
        ),
        RouteTraceRefused => (
            "The routing gate reads one regular file under its cap; anything else is refused before reading.",
            "`kvlower route --trace missing.json`, or a FIFO.",
            "Name the routing trace file itself (the hint says what was wrong).",
        ),
        RouteTraceMalformed => (
            "A routing trace of the wrong shape cannot be judged; unknown fields are refused so typos do not drop data.",
            "A trace with `worker` where `worker_id` is expected.",
            "Fix the field at the line:column and JSON path given (docs/routing-trace.md).",
        ),
        RouteTraceInvalid => (
            "Values that contradict the format would make any verdict meaningless.",
            "A routing trace with `block_size: 0`.",
            "Fix the value at the JSON path given.",
        ),
        RouteRegistryUnreadable => (
            "Without the claim registry no claim can be attributed.",
            "A routing trace whose `registry` names a file that is not beside it.",
            "Fix the trace's `registry` (relative to the trace's folder) or the registry itself (docs/join.md).",
        ),
        AnchorOtherRuntime => (
            "Evidence from another runtime build is not evidence for this one; borrowing it would copy labels between runtimes.",
            "A vLLM-only descriptor anchored to a join document recorded under Dynamo + vLLM.",
            "Anchor evidence recorded with exactly this descriptor's `runtime.identity`, or fix the identity.",
        ),
        AnchorScopeBeyondKind => (
            "A scope says what the evidence observed; a docs page cannot have observed a run.",
            "`scope: runtime_trace` with a `docs_page` anchor.",
            "Lower the scope to what the anchor shows (`docs_only`, `source_inspection`), or anchor a re-run trace.",
        ),
        InvalidRuntimeIdentity => (
            "Identity is how evidence is matched to a descriptor; a malformed one matches nothing (or the wrong thing).",
            "`identity: [{kind: vllm, version: \"0.32 .0\"}]`.",
            "Write each kind once with a plain ASCII version (docs/descriptor-format.md, \"Runtime identity\").",
        ),
        InvalidReviewDate => (
            "The review date tells a reader how current a descriptor is; a malformed or future date misleads.",
            "`reviewed: 2026-13-01`.",
            "Write the ISO date of the last review (YYYY-MM-DD).",
        ),
        ModesNotStated => (
            "Evidence exercises some modes' paths; left unstated it would otherwise widen to every mode.",
            "A `supported` item without `modes:`.",
            "Write `modes: [..]` with the modes whose path it exercised, or `modes: all`.",
        ),
        CapturePublisherUnreachable => (
            "Without a publisher there is nothing to record; an empty capture would look like a quiet runtime.",
            "`kvlower capture --endpoint tcp://127.0.0.1:5557 ...` before the engine started.",
            "Start the engine with its KV-event publisher first (`kvlower capture --help`), check HOST:PORT, or give a longer --connect-timeout.",
        ),
        CapturePublisherRefused => (
            "A peer that is not a ZMTP 3 publisher, or breaks a cap, could feed anything; the connection is closed.",
            "Pointing --endpoint at an HTTP port.",
            "Point --endpoint at the runtime's KV-event PUB socket (docs/capture-format.md).",
        ),
        CaptureOutputUnwritable => (
            "A capture is written atomically or not at all; a partial file would be joined as if complete.",
            "`--out no-such-folder/run.kvcap`.",
            "Write to an existing, writable folder with free space.",
        ),
        CaptureSetupFailed => (
            "The capture cannot start without an endpoint or its runtime.",
            "`kvlower capture --out run.kvcap` with no usable --endpoint.",
            "Give one --endpoint tcp://HOST:PORT per data-parallel rank.",
        ),
        ConfigInvalid => (
            "A repository's kvlower.toml says which results it keeps and which check options CI wants; a misspelt key would silently keep the default.",
            "`[results]` with `mutaton_controls = true` (a typo) in kvlower.toml.",
            "Fix the key or value at the line given (docs/config.md lists every key and its type).",
        ),
        InertAdapter => (
            "The judgment voids every item of an adapter whose preconditions are not all anchored (the trust boundary); the evidence looks like support but never counts.",
            "A `telemetry_join` adapter with 1 of its 9 preconditions anchored and `supported` items.",
            "Anchor every precondition of the depth (`kvlower explain DESCRIPTOR` lists the unmet ones), or mark the items `unknown`.",
        ),
        InertTraceScope => (
            "A trace that does not keep event order and claim scope cannot show that the claim was honoured; the judgment does not count it.",
            "`scope: runtime_trace` with an anchor lacking `preserves_order: true`.",
            "State `preserves_order: true` and `preserves_claim_scope: true` when the trace keeps them; otherwise lower the scope.",
        ),
        InertScope => (
            "A docs page or a source reading exercised no runtime path, so it never makes a positive row (rule 4), `supported` or not.",
            "`status: supported` with `scope: docs_only`.",
            "Anchor the item to a trace the runtime produced, or write `status: unknown` and keep the reading as context.",
        ),
        SignalNotProposed => (
            "Only a proposal makes a forbidden lowering `rejected`; without one the signal can only make the row look `approximate`.",
            "`signals: [{signal: request_scoped_pin, ...}]` with no `proposals:` entry offering it as hard_protected.",
            "Add `proposals: [{primitive: request_scoped_pin, mode: hard_protected, note: ...}]` when someone offers it as that mode, or acknowledge the warning with a reason (`acknowledge: [{code: signal-not-proposed, path: signals[0], reason: ...}]`) when nobody does.",
        ),
        UnusedAcknowledgement => (
            "Like an unfulfilled `#[expect]`: an acknowledgement outliving its warning (the evidence was fixed, or the path moved) would silently acknowledge a future warning at that path.",
            "`acknowledge: [{code: signal-not-proposed, path: signals[3], reason: ...}]` in a descriptor with three signals.",
            "Remove the entry, or correct its `code` and `path` to the warning `check` prints.",
        ),
        InvalidAcknowledgement => (
            "An acknowledgement is a reviewed decision: an error changes what the rows may say and can never be waved through, and one without a reason tells the reviewer nothing.",
            "`acknowledge: [{code: cited-positive, path: native[0], reason: ok}]` or `reason: \"\"`.",
            "Acknowledge only a warning (`kvlower codes` marks them), by its exact code, with a reason in words.",
        ),
    }
}
