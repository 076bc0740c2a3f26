//! The one table of diagnostic codes: one row per code, with everything said about
//! it (its name, severity, whether it means an input went unread, and the what / why /
//! example / fix that `kvlower codes`, `kvlower explain-code CODE` and
//! docs/diagnostic-codes.md print, like `ruff rule`). Adding a code is adding a row;
//! the enum [`Code`] and every accessor are generated from the rows, so nothing else
//! can fall out of step.

/// How bad a finding is. Errors fail `check` (exit 1); warnings are reported but
/// fail it only under `--deny-warnings`. A warning never changes a label: it
/// describes evidence the judgment already ignores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        }
    }
}

impl std::fmt::Display for Severity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The long documentation of one code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CodeDoc {
    /// What the finding says (the one-line summary, [`Code::explanation`]).
    pub what: &'static str,
    /// Why kvlower reports it (what would go wrong otherwise).
    pub why: &'static str,
    /// An input or command that produces it.
    pub example: &'static str,
    /// How to make it go away for the right reason.
    pub fix: &'static str,
}

/// Declares [`Code`] and its accessors from the rows of the table.
macro_rules! code_table {
    ( $(
        $variant:ident = $name:literal {
            severity: $severity:ident,
            unread_input: $unread:literal,
            what: $what:literal,
            why: $why:literal,
            example: $example:literal,
            fix: $fix:literal $(,)?
        }
    ),+ $(,)? ) => {
        crate::names! {
            /// A stable, kebab-case diagnostic code (documented in the README). It
            /// serializes as its name.
            #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
            pub enum Code {
                $( $variant = $name ),+
            }
        }

        impl Code {
            /// The severity of every finding with this code.
            pub fn severity(self) -> Severity {
                match self { $( Code::$variant => Severity::$severity ),+ }
            }

            /// Whether a finding with this code says that kvlower could not read an
            /// input at all (missing, unreadable, refused before it was opened, an
            /// unreachable publisher, an unwritable output), as opposed to a finding
            /// about content it read and judged. The former exits 2, the latter 1
            /// (docs/output.md, "Exit codes"). An anchor naming a missing or refused
            /// file is a finding about the descriptor (`anchor-file-missing`,
            /// `anchor-refused`), not an unread input. This is the only place the
            /// distinction is made: every command decides its exit from it.
            pub fn is_unread_input(self) -> bool {
                match self { $( Code::$variant => $unread ),+ }
            }

            /// One sentence on what the code means and how to fix it.
            pub fn explanation(self) -> &'static str {
                match self { $( Code::$variant => $what ),+ }
            }

            /// What / why / example / fix (see [`CodeDoc`]).
            pub fn doc(self) -> CodeDoc {
                match self {
                    $( Code::$variant => CodeDoc { what: $what, why: $why, example: $example, fix: $fix } ),+
                }
            }
        }
    };
}

code_table! {
    UnreadableFile = "unreadable-file" {
        severity: Error,
        unread_input: true,
        what: "A file could not be read (missing, a broken link, or no permission).",
        why: "An input that cannot be read cannot be judged; kvlower fails closed instead of skipping it.",
        example: "capabilities/x.yaml is a link to a file that was deleted, or has mode 000.",
        fix: "Restore the file or its permissions, or remove the dangling link.",
    },
    InvalidUtf8 = "invalid-utf8" {
        severity: Error,
        unread_input: false,
        what: "A file is not UTF-8 text (or contains NUL bytes); YAML inputs must be UTF-8.",
        why: "Names and anchors are compared as text; bytes that are not UTF-8 would be compared wrongly or garble reports.",
        example: "A descriptor saved as Latin-1 with a `é` in its note.",
        fix: "Save the file as UTF-8 (without NUL bytes).",
    },
    EmptyFile = "empty-file" {
        severity: Error,
        unread_input: false,
        what: "A file has no YAML content; a descriptor needs at least `runtime` and `non_claims`.",
        why: "An empty descriptor describes nothing, and silently skipping it would hide a truncated file.",
        example: "capabilities/new.yaml with only comments in it.",
        fix: "Write at least `runtime:` and `non_claims:` (`kvlower new NAME --version V` writes a scaffold), or delete the file.",
    },
    YamlSyntax = "yaml-syntax" {
        severity: Error,
        unread_input: false,
        what: "The YAML parser rejected the file (indentation, tabs, unclosed quotes, aliases, nesting).",
        why: "A file the parser rejects cannot be judged; nothing in it counts.",
        example: "`native:` indented with a tab, or an unclosed quote in a note.",
        fix: "Fix the YAML at the line and column given (spaces, not tabs; close every quote).",
    },
    DuplicateKey = "duplicate-key" {
        severity: Error,
        unread_input: false,
        what: "A mapping names the same key twice; the second would silently win, so it is an error.",
        why: "With a duplicate key the last value would silently win, so a reviewer could read evidence that does not count.",
        example: "An anchor mapping with `path:` written twice.",
        fix: "Keep one of the two keys.",
    },
    YamlTag = "yaml-tag" {
        severity: Error,
        unread_input: false,
        what: "A YAML node (a value or a key, at any depth) carries an explicit tag (`!!binary`, `!custom`, `!!str`, any other); kvlower's formats are untagged, so a tagged node is refused, never read as its text.",
        why: "A tag changes what a node means to other YAML tools (`!!binary` is bytes, `!custom` an application type) while a reader that ignores it sees the plain text: a reviewer and kvlower would read different documents.",
        example: "`reason: !!binary dHJ1ZQ==` in an acknowledgement, or `!custom runtime: x`.",
        fix: "Remove the tag and write the value as a plain or quoted string.",
    },
    UnknownField = "unknown-field" {
        severity: Error,
        unread_input: false,
        what: "A key that the format does not define (often a typo); see docs/descriptor-format.md.",
        why: "A misspelt key would otherwise be ignored and its evidence silently lost (or silently widened).",
        example: "`preserve_order: true` instead of `preserves_order: true` (the hint says which key was meant).",
        fix: "Use the key the hint names; docs/descriptor-format.md lists every key.",
    },
    UnknownName = "unknown-name" {
        severity: Error,
        unread_input: false,
        what: "An obligation, mode, depth, scope, status, signal, atom or precondition name that kvlower does not know.",
        why: "Obligations, modes, depths, scopes and the rest are a closed vocabulary; an unknown name would judge nothing.",
        example: "`mode: best_efort` (did you mean `best_effort`?).",
        fix: "Use the name the hint suggests; `kvlower schema descriptor` lists every name.",
    },
    MissingField = "missing-field" {
        severity: Error,
        unread_input: false,
        what: "A required key is absent.",
        why: "A required key carries meaning (what runtime, what is not claimed); a default would invent it.",
        example: "A descriptor without `non_claims:`.",
        fix: "Add the key; docs/descriptor-format.md says what each one means.",
    },
    WrongType = "wrong-type" {
        severity: Error,
        unread_input: false,
        what: "A value has the wrong type (for example a list where a mapping is expected).",
        why: "A value of the wrong shape cannot be read as what the format means by it.",
        example: "`modes: offloadable` where a list (`[offloadable]`) or `all` is expected.",
        fix: "Write the value in the expected shape (the message names it).",
    },
    InvalidCatalog = "invalid-catalog" {
        severity: Error,
        unread_input: false,
        what: "modes/modes.yaml is inconsistent (a mode without a bundle, telemetry supplying enforcement, ...).",
        why: "Every row is judged under the catalog; an inconsistent one would make every label meaningless.",
        example: "modes/modes.yaml letting `telemetry_join` supply an enforcement obligation.",
        fix: "Fix modes/modes.yaml as the message says; docs/catalog.md explains its parts.",
    },
    CatalogWeakened = "catalog-weakened" {
        severity: Error,
        unread_input: false,
        what: "modes/modes.yaml accepts something the built-in baseline (the paper's catalog) does not: a smaller bundle or critical set, a depth or gate allowed more, a missing precondition, atom or forbidden lowering. Strengthening is allowed; `kvlower catalog diff` lists every difference.",
        why: "The paper's catalog is a floor: a weaker local catalog would turn rejected rows positive.",
        example: "Removing an obligation from a mode's bundle in modes/modes.yaml.",
        fix: "Undo the weakening (only strengthening is allowed); `kvlower catalog diff` lists every difference.",
    },
    CatalogAlias = "catalog-alias" {
        severity: Error,
        unread_input: false,
        what: "modes/modes.yaml uses a YAML alias; two modes or depths must not share one spec, so every spec is written out in full.",
        why: "With an alias two modes or depths share one spec, so changing one silently changes the other.",
        example: "`soft_priority: *best_effort_spec` in modes/modes.yaml.",
        fix: "Write the spec out in full at each place.",
    },
    CatalogMismatch = "catalog-mismatch" {
        severity: Error,
        unread_input: false,
        what: "results/lowering-matrix.json was generated under another mode catalog (its digest differs); run `kvlower matrix`.",
        why: "A committed matrix judged under another catalog would present stale labels as current.",
        example: "Editing modes/modes.yaml without regenerating results/.",
        fix: "Run `kvlower matrix` and commit results/.",
    },
    AnchorIncomplete = "anchor-incomplete" {
        severity: Error,
        unread_input: false,
        what: "An anchor lacks a field its kind needs, or its commit/path is malformed; the evidence would count as unanchored.",
        why: "Evidence that cannot be checked does not count (fail-closed rule 2); an incomplete anchor makes its item inert.",
        example: "`anchor: {kind: public_source, repository: vllm-project/vllm, path: vllm/config.py, note: ...}` without `commit`.",
        fix: "Add the field the message names (docs/descriptor-format.md lists what each anchor kind needs).",
    },
    AnchorFileMissing = "anchor-file-missing" {
        severity: Error,
        unread_input: false,
        what: "A repo_file anchor names a file that is not in this repository.",
        why: "A repo_file anchor is checked against this repository; a file that is not here anchors nothing.",
        example: "`anchor: {kind: repo_file, path: evidence/run/trace.jsonl, ...}` with no such file.",
        fix: "Commit the file at that path, or fix the path.",
    },
    AnchorVerdictDisagrees = "anchor-verdict-disagrees" {
        severity: Error,
        unread_input: false,
        what: "A trace anchor claims a gate verdict that re-running `kvlower gate` on the committed trace does not give, or an anchored gate campaign does not hold (a trace verdict its engine truth contradicts, a source digest that changed, a run hidden or counted twice); the evidence does not count.",
        why: "`check` re-runs the gate on the committed trace, or a whole gate campaign with its engine truth and source digest; a claimed verdict it does not reproduce, or a trace verdict the engine's truth contradicts, would be a forged witness.",
        example: "`verdict: {gate: connector_observation, pass: true}` on a trace that fails that gate; a campaign whose run `success-07` passes `connector_failure_outcome` while its truth says the request finished `length`.",
        fix: "Run `kvlower gate` on the trace (`kvlower gate --campaign DOC` on a campaign: it names the run, gate and engine fact) and fix the evidence or re-run the campaign (docs/conformance.md).",
    },
    AnchorPlaceholder = "anchor-placeholder" {
        severity: Error,
        unread_input: false,
        what: "An anchor's note is the scaffold's placeholder (or a bare TODO): nothing has been anchored yet, so the evidence never counts. Replace it with real evidence, or delete the item.",
        why: "A scaffold placeholder is not evidence; counting it would make an unreviewed descriptor positive.",
        example: "The note `placeholder, replace with the source that shows this obligation` that `kvlower new` writes (or a bare `TODO`).",
        fix: "Replace the note with what the anchor shows, or delete the item.",
    },
    AnchorSelfReference = "anchor-self-reference" {
        severity: Error,
        unread_input: false,
        what: "A repo_file anchor names one of kvlower's own inputs or outputs (capabilities/, modes/, results/, schemas/, bad_lowering/), possibly through a link; a descriptor cannot be its own evidence.",
        why: "A descriptor, the catalog or a generated result cannot be evidence for itself.",
        example: "`anchor: {kind: repo_file, path: results/lowering-matrix.json, ...}`.",
        fix: "Anchor to evidence (a trace, a join document) committed outside kvlower's own inputs and outputs.",
    },
    AnchorRefused = "anchor-refused" {
        severity: Error,
        unread_input: false,
        what: "A repo_file anchor was refused before it was opened: it resolves outside the repository (links included), is not a regular file (a directory, FIFO or device), or is too large.",
        why: "kvlower reads only regular files inside the repository; anything else could block, leak or change under it.",
        example: "A repo_file anchor naming a link to /etc/passwd, a FIFO, or a 10 GiB file.",
        fix: "Commit the evidence as a regular file inside the repository, under its cap (docs/files.md).",
    },
    AnchorNotRerunnable = "anchor-not-rerunnable" {
        severity: Error,
        unread_input: false,
        what: "Run-time evidence (a trace-scoped item, an atom or a precondition) rests on a repository file that `check` cannot re-run: a trace needs a claimed `verdict`, or the file must be a `kvlower join` evidence document.",
        why: "Run-time evidence counts only when `check` can re-run it; a file it cannot re-run would be taken on trust.",
        example: "A trace-scoped item anchored to evidence/run/notes.txt.",
        fix: "Anchor a gate trace with a claimed `verdict`, or a `kvlower join` evidence document.",
    },
    BlankValue = "blank-value" {
        severity: Error,
        unread_input: false,
        what: "A value that must be written (a runtime's name or version, the non-claim of a positive row) has no visible character; white space, default-ignorable (zero-width, ...), control and format characters do not count.",
        why: "A name or version without a visible character identifies nothing and makes rows unreadable; a positive row whose non-claim is blank says nothing of what it does not claim.",
        example: "`runtime: {name: \"\\u200b\", ...}` (a zero-width space), or `non_claims: {default: \"\\ufff9\"}` on a descriptor with a positive row.",
        fix: "Write a visible name, version or non-claim (white space, default-ignorable, control and format characters do not count).",
    },
    ControlCharacter = "control-character" {
        severity: Error,
        unread_input: false,
        what: "A name, version or path contains a control character (newline, escape, ...); they are refused so that nothing can break out of a report line.",
        why: "A control character could forge a line of a report or a terminal escape.",
        example: "A runtime version containing a newline.",
        fix: "Remove the control character.",
    },
    PreconditionWrongDepth = "precondition-wrong-depth" {
        severity: Error,
        unread_input: false,
        what: "An adapter lists a precondition that belongs to another depth.",
        why: "Preconditions are the trust boundary of one depth; one from another depth proves nothing here.",
        example: "A `telemetry_join` adapter listing `patch_stack_identified` (a backend_patch precondition).",
        fix: "Move the precondition to the adapter of its depth, or remove it.",
    },
    DuplicateAdapterDepth = "duplicate-adapter-depth" {
        severity: Error,
        unread_input: false,
        what: "Two adapters share a depth; merge them so each row has one trust boundary.",
        why: "Each row has one trust boundary per depth; two adapters at one depth would mix their preconditions.",
        example: "Two adapters with `depth: claim_registry`.",
        fix: "Merge them into one adapter.",
    },
    AdapterAtNativeDepth = "adapter-at-native-depth" {
        severity: Error,
        unread_input: false,
        what: "An adapter at depth `none`; native evidence belongs under `native:`.",
        why: "Depth `none` is the unmodified runtime; an adapter there would pass adapter evidence off as native.",
        example: "`adapters: [{depth: none, ...}]`.",
        fix: "Move its items under `native:`, or give the adapter its real depth.",
    },
    StaleResult = "stale-result" {
        severity: Error,
        unread_input: false,
        what: "A committed generated result differs from what the descriptors produce; run `kvlower matrix`.",
        why: "Committed results must be what the descriptors produce, or a reader trusts labels nobody computed.",
        example: "Editing a descriptor without regenerating results/.",
        fix: "Run `kvlower matrix` and commit results/ (the diff shows what changed).",
    },
    MissingResult = "missing-result" {
        severity: Error,
        unread_input: false,
        what: "A generated result is not committed; run `kvlower matrix`.",
        why: "Every generated result is part of the committed record; a missing one hides rows.",
        example: "Deleting results/central-result-table.md.",
        fix: "Run `kvlower matrix` and commit the file.",
    },
    AuditSuiteFailed = "audit-suite-failed" {
        severity: Error,
        unread_input: false,
        what: "An audit suite (bad-lowering cases, mutation controls, provenance, independent audit) does not pass; the result file names the failing case.",
        why: "The audit suites check the checker (bad lowerings rejected, mutations lowering labels); a failure means a judgment can be wrong.",
        example: "A bad-lowering case under bad_lowering/ that is no longer rejected.",
        fix: "Read the failing case in the result file it names and fix the judgment or the case.",
    },
    CitedPositive = "cited-positive" {
        severity: Error,
        unread_input: false,
        what: "A positive row rests on a cited anchor (the paper, a public source, a docs page) that `check` cannot re-run, and its descriptor does not say `allow_cited_positives: <reason>`; anchor it to committed evidence `check` re-runs, or allow it explicitly (with `--require-verified`, never allowed).",
        why: "A positive row that rests on evidence `check` cannot re-run must be allowed in the open, or it looks verified.",
        example: "A `native_sound` row anchored only to a `paper` anchor.",
        fix: "Anchor the evidence to a committed trace or join document, or write `allow_cited_positives: <why>` in the descriptor.",
    },
    FileOutsideRoot = "file-outside-root" {
        severity: Error,
        unread_input: true,
        what: "A path resolves (through a link, `..` or an absolute path) outside the repository root; it is refused, not read.",
        why: "Inputs outside the repository are not part of the reviewed record and could change under it.",
        example: "capabilities/x.yaml is a link to ../../elsewhere/x.yaml.",
        fix: "Copy the file into the repository instead of linking out of it.",
    },
    NotARegularFile = "not-a-regular-file" {
        severity: Error,
        unread_input: true,
        what: "A path names a FIFO, device, socket, directory or /proc//sys pseudo-file; kvlower reads regular files only (docs/files.md).",
        why: "Reading a FIFO, device or pseudo-file could block or leak; kvlower reads regular files only.",
        example: "`kvlower gate /dev/stdin` on a terminal, or a descriptor that is a FIFO.",
        fix: "Name a regular file (or `-` for standard input where a command accepts it).",
    },
    WriteThroughLink = "write-through-link" {
        severity: Error,
        unread_input: true,
        what: "A command that writes (`init`, `new`, `matrix`, `bad-lowering`) found a symbolic link where it would create or write into a file or directory (`kvlower.toml`, `modes/`, `capabilities/`, `schemas/`, `results/`, or a staging name a write goes through before its rename: `results/.kvlower-stage.NAME`, the journal `results/.kvlower-journal`); it wrote nothing, and says whether the link is to a directory, to a file or to nothing (docs/files.md).",
        why: "Writing through a link would write outside the repository (or over a file it names) where no review sees it; kvlower never writes through a link.",
        example: "`kvlower init DIR` with `DIR/schemas` a link to a directory elsewhere.",
        fix: "Replace the link with the real directory or file it stands for (or remove it) and run the command again.",
    },
    FileTooLarge = "file-too-large" {
        severity: Error,
        unread_input: true,
        what: "A file is larger than the cap for its kind (docs/files.md lists the caps); it is refused, not truncated.",
        why: "Caps keep a hostile or accidental input from exhausting memory; a truncated read would judge part of a file.",
        example: "A 100 MiB descriptor.",
        fix: "Split or shrink the file; docs/files.md lists the cap per kind.",
    },
    InvalidFileName = "invalid-file-name" {
        severity: Error,
        unread_input: false,
        what: "A file name is not UTF-8 or contains control characters; rename it (it would otherwise be skipped or garble reports).",
        why: "A file name that is not UTF-8 or holds control characters would be skipped or garble reports.",
        example: "capabilities/vllm\\n.yaml.",
        fix: "Rename the file.",
    },
    StrayFile = "stray-file" {
        severity: Error,
        unread_input: false,
        what: "A file in results/ or schemas/ that `kvlower matrix` does not generate (often a leftover temporary file); delete it.",
        why: "results/ and schemas/ hold only generated files; a stray one would be committed as if generated.",
        example: "results/.tmp-lowering-matrix.json left by an interrupted run.",
        fix: "Run `kvlower matrix` (it removes its leftovers), or delete the file.",
    },
    MalformedTrace = "malformed-trace" {
        severity: Error,
        unread_input: false,
        what: "`kvlower gate`: a trace line is not a well-formed event (not JSON, a missing or non-increasing `event_sequence`, conflicting claim ids, ...; docs/trace-format.md); a malformed trace cannot pass any gate.",
        why: "A trace that is not well-formed cannot witness anything; a partial read would pass gates on half a run.",
        example: "A line with `event_sequence` smaller than the line before.",
        fix: "Fix or regenerate the trace (docs/trace-format.md).",
    },
    JoinRegistryInvalid = "join-registry-invalid" {
        severity: Error,
        unread_input: false,
        what: "`kvlower join`: the claim registry (or the pressure-controls file) is not YAML of the documented shape (docs/join.md); the finding gives line:column and the YAML path.",
        why: "Claims are judged against the registry written before the run; one that cannot be read as such attributes nothing, and a guessed reading would attribute the wrong thing.",
        example: "A claim written `claim: doc-a` where `claim_id: doc-a` is expected (unknown keys are refused), or `schema_version: [` left unclosed.",
        fix: "Fix the key or value at the line and YAML path given (docs/join.md lists every key).",
    },
    JoinTokenMapInvalid = "join-token-map-invalid" {
        severity: Error,
        unread_input: false,
        what: "`kvlower join`: a token-map file the registry names is not JSON of the documented shape (docs/join.md); the finding gives its line.",
        why: "The token map holds the claims' tokens (tokenizer output saved before the run); one that cannot be read gives no tokens, so no claim could be judged through it.",
        example: "A token map with a trailing comma, or a token id written as a string (`\"101\"`).",
        fix: "Regenerate the token map with the run that wrote the events, or fix the line given.",
    },
    CampaignDocumentInvalid = "campaign-document-invalid" {
        severity: Error,
        unread_input: false,
        what: "`kvlower gate --campaign`: the file named is not a gate campaign document, or is a malformed one (a repeated key, a wrong schema, a field of the wrong type; docs/conformance.md).",
        why: "A campaign report re-runs exactly the traces, truth and digests a campaign document names; a file that is not one names nothing to re-run, and a guessed reading could report a campaign that does not exist.",
        example: "`kvlower gate --campaign README.md`, or a campaign document with `schema` written twice.",
        fix: "Name the campaign's `gate-campaign.json` (docs/conformance.md), or regenerate it with the campaign's verify script.",
    },
    RouteTraceRefused = "route-trace-refused" {
        severity: Error,
        unread_input: true,
        what: "`kvlower route`: the routing trace was refused before it was read (missing, not a regular file, or over its cap; docs/files.md).",
        why: "The routing gate reads one regular file under its cap; anything else is refused before reading.",
        example: "`kvlower route --trace missing.json`, or a FIFO.",
        fix: "Name the routing trace file itself (the hint says what was wrong).",
    },
    RouteTraceMalformed = "route-trace-malformed" {
        severity: Error,
        unread_input: false,
        what: "`kvlower route`: the routing trace is not JSON of the documented shape (docs/routing-trace.md); the finding gives line:column and the JSON path.",
        why: "A routing trace of the wrong shape cannot be judged; unknown fields are refused so typos do not drop data.",
        example: "A trace with `worker` where `worker_id` is expected.",
        fix: "Fix the field at the line:column and JSON path given (docs/routing-trace.md).",
    },
    RouteTraceInvalid = "route-trace-invalid" {
        severity: Error,
        unread_input: false,
        what: "`kvlower route`: the routing trace is well-formed JSON whose values contradict the format (an unsupported schema version, a block size of 0, a request id twice, requests out of decision order, ...; docs/routing-trace.md).",
        why: "Values that contradict the format would make any verdict meaningless.",
        example: "A routing trace with `block_size: 0`.",
        fix: "Fix the value at the JSON path given.",
    },
    RouteRegistryUnreadable = "route-registry-unreadable" {
        severity: Error,
        unread_input: false,
        what: "`kvlower route`: the claim registry the routing trace names (or its token map) was read but cannot be read as one: not YAML or JSON of its shape (the join's own error; docs/join.md).",
        why: "Without the claim registry no claim can be attributed.",
        example: "The registry beside the trace starts `schema_version: [` and never closes it.",
        fix: "Fix the trace's `registry` (relative to the trace's folder) or the registry itself (docs/join.md).",
    },
    RouteRegistryRefused = "route-registry-refused" {
        severity: Error,
        unread_input: true,
        what: "`kvlower route`: the claim registry the routing trace names (or its token map) was not read at all: missing, unreadable, not a regular file or over its cap (docs/files.md).",
        why: "Without the claim registry no claim can be attributed; a registry that was never read is an input kvlower could not judge, not a malformed one.",
        example: "A routing trace whose `registry` names a file that is not beside it.",
        fix: "Fix the trace's `registry` (relative to the trace's folder), or commit the registry it names as a regular file under its cap.",
    },
    AnchorOtherRuntime = "anchor-other-runtime" {
        severity: Error,
        unread_input: false,
        what: "A repo_file anchor names evidence (a join or routing gate document, a gate trace) whose recorded runtime identity is not exactly the descriptor's `runtime.identity` — another kind, version or patch, none recorded (a trace without its header line; a join document whose events record no `meta.runtime`: JSON Lines, or a capture header without it), or one that does not decode (docs/descriptor-format.md, \"Runtime identity\").",
        why: "Evidence from another runtime build is not evidence for this one; borrowing it would copy labels between runtimes.",
        example: "A vLLM-only descriptor anchored to a join document recorded under Dynamo + vLLM.",
        fix: "Anchor evidence recorded with exactly this descriptor's `runtime.identity`, or fix the identity.",
    },
    AnchorScopeBeyondKind = "anchor-scope-beyond-kind" {
        severity: Error,
        unread_input: false,
        what: "An evidence item claims a scope its anchor cannot show: a docs_page is documentation (`docs_only`), a public_source naming source code or docs is `source_inspection`; run-time scopes rest on a re-run repository file, the paper, or a public_source naming a published trace or result (.json, .jsonl, .ndjson, .csv, .tsv, .log).",
        why: "A scope says what the evidence observed; a docs page cannot have observed a run.",
        example: "`scope: runtime_trace` with a `docs_page` anchor.",
        fix: "Lower the scope to what the anchor shows (`docs_only`, `source_inspection`), or anchor a re-run trace.",
    },
    InvalidRuntimeIdentity = "invalid-runtime-identity" {
        severity: Error,
        unread_input: false,
        what: "`runtime.identity` is empty, names a kind twice, or has a version or patch that is not plain ASCII (`[0-9A-Za-z][0-9A-Za-z._+-]*`; a patch may also use `/` and `@`); such an identity matches no evidence.",
        why: "Identity is how evidence is matched to a descriptor; a malformed one matches nothing (or the wrong thing).",
        example: "`identity: [{kind: vllm, version: \"0.32 .0\"}]`.",
        fix: "Write each kind once with a plain ASCII version (docs/descriptor-format.md, \"Runtime identity\").",
    },
    InvalidReviewDate = "invalid-review-date" {
        severity: Error,
        unread_input: false,
        what: "`runtime.reviewed` is not an ISO date (YYYY-MM-DD) or lies in the future; write the date a person last checked the descriptor against its runtime's public sources.",
        why: "The review date tells a reader how current a descriptor is; a malformed or future date misleads.",
        example: "`reviewed: 2026-13-01`.",
        fix: "Write the ISO date of the last review (YYYY-MM-DD).",
    },
    ModesNotStated = "modes-not-stated" {
        severity: Error,
        unread_input: false,
        what: "A `supported` evidence item does not say which modes' paths it exercised; left out, it supports no mode (omission never widens evidence). Write `modes: [..]`, or `modes: all` when it exercised every mode's path.",
        why: "Evidence exercises some modes' paths; left unstated it would otherwise widen to every mode.",
        example: "A `supported` item without `modes:`.",
        fix: "Write `modes: [..]` with the modes whose path it exercised, or `modes: all`.",
    },
    CapturePublisherUnreachable = "capture-publisher-unreachable" {
        severity: Error,
        unread_input: true,
        what: "`kvlower capture`: no ZMTP publisher accepted the connection and completed the handshake within --connect-timeout (at most --duration); nothing was written (docs/capture-format.md).",
        why: "Without a publisher there is nothing to record; an empty capture would look like a quiet runtime.",
        example: "`kvlower capture --endpoint tcp://127.0.0.1:5557 ...` before the engine started.",
        fix: "Start the engine with its KV-event publisher first (`kvlower capture --help`), check HOST:PORT, or give a longer --connect-timeout.",
    },
    CapturePublisherRefused = "capture-publisher-refused" {
        severity: Error,
        unread_input: true,
        what: "`kvlower capture`: the peer is not a ZMTP 3 PUB/XPUB socket with NULL security, broke the framing, or declared a message over the caps (1 GiB, 255 parts, 64 KiB per command); the connection was closed and nothing was written (docs/capture-format.md).",
        why: "A peer that is not a ZMTP 3 publisher, or breaks a cap, could feed anything; the connection is closed.",
        example: "Pointing --endpoint at an HTTP port.",
        fix: "Point --endpoint at the runtime's KV-event PUB socket (docs/capture-format.md).",
    },
    CaptureOutputUnwritable = "capture-output-unwritable" {
        severity: Error,
        unread_input: true,
        what: "`kvlower capture`: the capture file (or its temporary file beside it) could not be created, written, synced or renamed into place.",
        why: "A capture is written atomically or not at all; a partial file would be joined as if complete.",
        example: "`--out no-such-folder/run.kvcap`.",
        fix: "Write to an existing, writable folder with free space.",
    },
    CaptureSetupFailed = "capture-setup-failed" {
        severity: Error,
        unread_input: true,
        what: "`kvlower capture`: the options name no endpoint (or more than 65535), or the async runtime could not start.",
        why: "The capture cannot start without an endpoint or its runtime.",
        example: "`kvlower capture --out run.kvcap` with no usable --endpoint.",
        fix: "Give one --endpoint tcp://HOST:PORT per data-parallel rank.",
    },
    ConfigInvalid = "config-invalid" {
        severity: Error,
        unread_input: false,
        what: "`kvlower.toml` at the repository root is not valid: an unknown key, a value of the wrong type, or not TOML (docs/config.md lists every key).",
        why: "A repository's kvlower.toml says which results it keeps and which check options CI wants; a misspelt key would silently keep the default.",
        example: "`[results]` with `mutaton_controls = true` (a typo) in kvlower.toml.",
        fix: "Fix the key or value at the line given (docs/config.md lists every key and its type).",
    },
    InertAdapter = "inert-adapter" {
        severity: Warning,
        unread_input: false,
        what: "An adapter has `supported` evidence but not every trust-boundary precondition of its depth anchored, so none of its evidence can ever count.",
        why: "The judgment voids every item of an adapter whose preconditions are not all anchored (the trust boundary); the evidence looks like support but never counts.",
        example: "A `telemetry_join` adapter with 1 of its 9 preconditions anchored and `supported` items.",
        fix: "Anchor every precondition of the depth (`kvlower explain DESCRIPTOR` lists the unmet ones), or mark the items `unknown`.",
    },
    InertTraceScope = "inert-trace-scope" {
        severity: Warning,
        unread_input: false,
        what: "A `supported` trace-scoped item whose anchor does not state `preserves_order: true` and `preserves_claim_scope: true` never counts.",
        why: "A trace that does not keep event order and claim scope cannot show that the claim was honoured; the judgment does not count it.",
        example: "`scope: runtime_trace` with an anchor lacking `preserves_order: true`.",
        fix: "State `preserves_order: true` and `preserves_claim_scope: true` when the trace keeps them; otherwise lower the scope.",
    },
    InertScope = "inert-scope" {
        severity: Warning,
        unread_input: false,
        what: "A `supported` item with scope `docs_only` or `source_inspection` never makes a positive row (fail-closed rule 4).",
        why: "A docs page or a source reading exercised no runtime path, so it never makes a positive row (rule 4), `supported` or not.",
        example: "`status: supported` with `scope: docs_only`.",
        fix: "Anchor the item to a trace the runtime produced, or write `status: unknown` and keep the reading as context.",
    },
    SignalNotProposed = "signal-not-proposed" {
        severity: Warning,
        unread_input: false,
        what: "A signal suggests a mode of which the catalog lists it as a forbidden lowering, and no proposal offers it as that mode: the row can be `approximate` for it, never `rejected`.",
        why: "Only a proposal makes a forbidden lowering `rejected`; without one the signal can only make the row look `approximate`.",
        example: "`signals: [{signal: request_scoped_pin, ...}]` with no `proposals:` entry offering it as hard_protected.",
        fix: "Add `proposals: [{primitive: request_scoped_pin, mode: hard_protected, note: ...}]` when someone offers it as that mode, or acknowledge the warning with a reason (`acknowledge: [{code: signal-not-proposed, path: signals[0], reason: ...}]`) when nobody does.",
    },
    UnusedAcknowledgement = "unused-acknowledgement" {
        severity: Warning,
        unread_input: false,
        what: "An `acknowledge:` entry of a descriptor matches no warning `check` reports (same code, same YAML path): it acknowledges nothing and should be removed or corrected.",
        why: "Like an unfulfilled `#[expect]`: an acknowledgement outliving its warning (the evidence was fixed, or the path moved) would silently acknowledge a future warning at that path.",
        example: "`acknowledge: [{code: signal-not-proposed, path: signals[3], reason: ...}]` in a descriptor with three signals.",
        fix: "Remove the entry, or correct its `code` and `path` to the warning `check` prints.",
    },
    InvalidAcknowledgement = "invalid-acknowledgement" {
        severity: Error,
        unread_input: false,
        what: "An `acknowledge:` entry names an unknown code or an error's code (only warnings can be acknowledged), or gives no reason; it acknowledges nothing.",
        why: "An acknowledgement is a reviewed decision: an error changes what the rows may say and can never be waved through, and one without a reason tells the reviewer nothing.",
        example: "`acknowledge: [{code: cited-positive, path: native[0], reason: ok}]` or `reason: \"\"`.",
        fix: "Acknowledge only a warning (`kvlower codes` marks them), by its exact code, with a reason in words.",
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Code::ALL` lists every row once, in table order, and every name reads back.
    #[test]
    fn every_row_is_a_code_that_reads_back() {
        assert_eq!(Code::COUNT, Code::ALL.len());
        for (i, c) in Code::ALL.iter().enumerate() {
            assert_eq!(c.index(), i, "{c}");
            assert_eq!(Code::from_name(c.name()), Some(*c));
            assert_eq!(serde_json::to_value(c).ok(), Some(c.name().into()));
            assert_eq!(c.doc().what, c.explanation());
        }
    }

    /// The unread-input column: only a finding that an input was never read exits 2.
    #[test]
    fn unread_input_is_the_refusals_only() {
        let unread: Vec<&str> = Code::ALL
            .iter()
            .filter(|c| c.is_unread_input())
            .map(|c| c.name())
            .collect();
        assert_eq!(
            unread,
            [
                "unreadable-file",
                "file-outside-root",
                "not-a-regular-file",
                "write-through-link",
                "file-too-large",
                "route-trace-refused",
                "route-registry-refused",
                "capture-publisher-unreachable",
                "capture-publisher-refused",
                "capture-output-unwritable",
                "capture-setup-failed",
            ]
        );
        assert!(!Code::AnchorRefused.is_unread_input());
        assert!(!Code::AnchorFileMissing.is_unread_input());
    }
}
