//! Located, coded diagnostics: every finding names the file, the YAML path,
//! the line and column when known, what was expected, and a hint.

use kvlower_fs::Refusal;

use kvlower_yaml::YamlError;

kvlower_core::names! {
    /// A stable, kebab-case diagnostic code (documented in the README). It
    /// serializes as its name.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
    pub enum Code {
        UnreadableFile = "unreadable-file",
        InvalidUtf8 = "invalid-utf8",
        EmptyFile = "empty-file",
        YamlSyntax = "yaml-syntax",
        DuplicateKey = "duplicate-key",
        UnknownField = "unknown-field",
        UnknownName = "unknown-name",
        MissingField = "missing-field",
        WrongType = "wrong-type",
        InvalidCatalog = "invalid-catalog",
        CatalogWeakened = "catalog-weakened",
        CatalogAlias = "catalog-alias",
        CatalogMismatch = "catalog-mismatch",
        AnchorIncomplete = "anchor-incomplete",
        AnchorFileMissing = "anchor-file-missing",
        AnchorVerdictDisagrees = "anchor-verdict-disagrees",
        AnchorPlaceholder = "anchor-placeholder",
        AnchorSelfReference = "anchor-self-reference",
        AnchorRefused = "anchor-refused",
        AnchorNotRerunnable = "anchor-not-rerunnable",
        BlankValue = "blank-value",
        ControlCharacter = "control-character",
        PreconditionWrongDepth = "precondition-wrong-depth",
        DuplicateAdapterDepth = "duplicate-adapter-depth",
        AdapterAtNativeDepth = "adapter-at-native-depth",
        StaleResult = "stale-result",
        MissingResult = "missing-result",
        AuditSuiteFailed = "audit-suite-failed",
        CitedPositive = "cited-positive",
        FileOutsideRoot = "file-outside-root",
        NotARegularFile = "not-a-regular-file",
        FileTooLarge = "file-too-large",
        InvalidFileName = "invalid-file-name",
        StrayFile = "stray-file",
        MalformedTrace = "malformed-trace",
        RouteTraceRefused = "route-trace-refused",
        RouteTraceMalformed = "route-trace-malformed",
        RouteTraceInvalid = "route-trace-invalid",
        RouteRegistryUnreadable = "route-registry-unreadable",
        AnchorOtherRuntime = "anchor-other-runtime",
        AnchorScopeBeyondKind = "anchor-scope-beyond-kind",
        InvalidRuntimeIdentity = "invalid-runtime-identity",
        InvalidReviewDate = "invalid-review-date",
        ModesNotStated = "modes-not-stated",
        CapturePublisherUnreachable = "capture-publisher-unreachable",
        CapturePublisherRefused = "capture-publisher-refused",
        CaptureOutputUnwritable = "capture-output-unwritable",
        CaptureSetupFailed = "capture-setup-failed",
        ConfigInvalid = "config-invalid",
        InertAdapter = "inert-adapter",
        InertTraceScope = "inert-trace-scope",
        InertScope = "inert-scope",
        SignalNotProposed = "signal-not-proposed",
        UnusedAcknowledgement = "unused-acknowledgement",
        InvalidAcknowledgement = "invalid-acknowledgement",
    }
}

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

impl Code {
    /// The severity of every finding with this code.
    pub fn severity(self) -> Severity {
        match self {
            Code::InertAdapter
            | Code::InertTraceScope
            | Code::InertScope
            | Code::SignalNotProposed
            | Code::UnusedAcknowledgement => Severity::Warning,
            _ => Severity::Error,
        }
    }

    /// One sentence on what the code means and how to fix it.
    pub fn explanation(self) -> &'static str {
        match self {
            Code::UnreadableFile => {
                "A file could not be read (missing, a broken link, or no permission)."
            }
            Code::InvalidUtf8 => {
                "A file is not UTF-8 text (or contains NUL bytes); YAML inputs must be UTF-8."
            }
            Code::EmptyFile => {
                "A file has no YAML content; a descriptor needs at least `runtime` and `non_claims`."
            }
            Code::YamlSyntax => {
                "The YAML parser rejected the file (indentation, tabs, unclosed quotes, aliases, nesting)."
            }
            Code::DuplicateKey => {
                "A mapping names the same key twice; the second would silently win, so it is an error."
            }
            Code::UnknownField => {
                "A key that the format does not define (often a typo); see docs/descriptor-format.md."
            }
            Code::UnknownName => {
                "An obligation, mode, depth, scope, status, signal, atom or precondition name that kvlower does not know."
            }
            Code::MissingField => "A required key is absent.",
            Code::WrongType => {
                "A value has the wrong type (for example a list where a mapping is expected)."
            }
            Code::InvalidCatalog => {
                "modes/modes.yaml is inconsistent (a mode without a bundle, telemetry supplying enforcement, ...)."
            }
            Code::CatalogWeakened => {
                "modes/modes.yaml accepts something the built-in baseline (the paper's catalog) does not: a smaller bundle or critical set, a depth or gate allowed more, a missing precondition, atom or forbidden lowering. Strengthening is allowed; `kvlower catalog diff` lists every difference."
            }
            Code::CatalogAlias => {
                "modes/modes.yaml uses a YAML alias; two modes or depths must not share one spec, so every spec is written out in full."
            }
            Code::CatalogMismatch => {
                "results/lowering-matrix.json was generated under another mode catalog (its digest differs); run `kvlower matrix`."
            }
            Code::AnchorIncomplete => {
                "An anchor lacks a field its kind needs, or its commit/path is malformed; the evidence would count as unanchored."
            }
            Code::AnchorFileMissing => {
                "A repo_file anchor names a file that is not in this repository."
            }
            Code::PreconditionWrongDepth => {
                "An adapter lists a precondition that belongs to another depth."
            }
            Code::DuplicateAdapterDepth => {
                "Two adapters share a depth; merge them so each row has one trust boundary."
            }
            Code::AdapterAtNativeDepth => {
                "An adapter at depth `none`; native evidence belongs under `native:`."
            }
            Code::AnchorVerdictDisagrees => {
                "A trace anchor claims a gate verdict that re-running `kvlower gate` on the committed trace does not give, or an anchored gate campaign does not hold (a trace verdict its engine truth contradicts, a source digest that changed, a run hidden or counted twice); the evidence does not count."
            }
            Code::AnchorPlaceholder => {
                "An anchor's note is the scaffold's placeholder (or a bare TODO): nothing has been anchored yet, so the evidence never counts. Replace it with real evidence, or delete the item."
            }
            Code::AnchorSelfReference => {
                "A repo_file anchor names one of kvlower's own inputs or outputs (capabilities/, modes/, results/, schemas/, bad_lowering/), possibly through a link; a descriptor cannot be its own evidence."
            }
            Code::AnchorRefused => {
                "A repo_file anchor was refused before it was opened: it resolves outside the repository (links included), is not a regular file (a directory, FIFO or device), or is too large."
            }
            Code::AnchorNotRerunnable => {
                "Run-time evidence (a trace-scoped item, an atom or a precondition) rests on a repository file that `check` cannot re-run: a trace needs a claimed `verdict`, or the file must be a `kvlower join` evidence document."
            }
            Code::BlankValue => {
                "A value that must be written (a runtime's name or version, the non-claim of a positive row) has no visible character; white space, default-ignorable (zero-width, ...), control and format characters do not count."
            }
            Code::ControlCharacter => {
                "A name, version or path contains a control character (newline, escape, ...); they are refused so that nothing can break out of a report line."
            }
            Code::AuditSuiteFailed => {
                "An audit suite (bad-lowering cases, mutation controls, provenance, independent audit) does not pass; the result file names the failing case."
            }
            Code::StaleResult => {
                "A committed generated result differs from what the descriptors produce; run `kvlower matrix`."
            }
            Code::MissingResult => "A generated result is not committed; run `kvlower matrix`.",
            Code::CitedPositive => {
                "A positive row rests on a cited anchor (the paper, a public source, a docs page) that `check` cannot re-run, and its descriptor does not say `allow_cited_positives: <reason>`; anchor it to committed evidence `check` re-runs, or allow it explicitly (with `--require-verified`, never allowed)."
            }
            Code::FileOutsideRoot => {
                "A path resolves (through a link, `..` or an absolute path) outside the repository root; it is refused, not read."
            }
            Code::NotARegularFile => {
                "A path names a FIFO, device, socket, directory or /proc//sys pseudo-file; kvlower reads regular files only (docs/files.md)."
            }
            Code::FileTooLarge => {
                "A file is larger than the cap for its kind (docs/files.md lists the caps); it is refused, not truncated."
            }
            Code::InvalidFileName => {
                "A file name is not UTF-8 or contains control characters; rename it (it would otherwise be skipped or garble reports)."
            }
            Code::StrayFile => {
                "A file in results/ or schemas/ that `kvlower matrix` does not generate (often a leftover temporary file); delete it."
            }
            Code::MalformedTrace => {
                "`kvlower gate`: a trace line is not a well-formed event (not JSON, a missing or non-increasing `event_sequence`, conflicting claim ids, ...; docs/trace-format.md); a malformed trace cannot pass any gate."
            }
            Code::RouteTraceRefused => {
                "`kvlower route`: the routing trace was refused before it was read (missing, not a regular file, or over its cap; docs/files.md)."
            }
            Code::RouteTraceMalformed => {
                "`kvlower route`: the routing trace is not JSON of the documented shape (docs/routing-trace.md); the finding gives line:column and the JSON path."
            }
            Code::RouteTraceInvalid => {
                "`kvlower route`: the routing trace is well-formed JSON whose values contradict the format (an unsupported schema version, a block size of 0, a request id twice, requests out of decision order, ...; docs/routing-trace.md)."
            }
            Code::AnchorOtherRuntime => {
                "A repo_file anchor names evidence (a join or routing gate document, a gate trace) whose recorded runtime identity is not exactly the descriptor's `runtime.identity` — another kind, version or patch, none recorded (a trace without its header line), or one that does not decode (docs/descriptor-format.md, \"Runtime identity\")."
            }
            Code::AnchorScopeBeyondKind => {
                "An evidence item claims a scope its anchor cannot show: a docs_page is documentation (`docs_only`), a public_source naming source code or docs is `source_inspection`; run-time scopes rest on a re-run repository file, the paper, or a public_source naming a published trace or result (.json, .jsonl, .ndjson, .csv, .tsv, .log)."
            }
            Code::InvalidRuntimeIdentity => {
                "`runtime.identity` is empty, names a kind twice, or has a version or patch that is not plain ASCII (`[0-9A-Za-z][0-9A-Za-z._+-]*`; a patch may also use `/` and `@`); such an identity matches no evidence."
            }
            Code::ModesNotStated => {
                "A `supported` evidence item does not say which modes' paths it exercised; left out, it supports no mode (omission never widens evidence). Write `modes: [..]`, or `modes: all` when it exercised every mode's path."
            }
            Code::InvalidReviewDate => {
                "`runtime.reviewed` is not an ISO date (YYYY-MM-DD) or lies in the future; write the date a person last checked the descriptor against its runtime's public sources."
            }
            Code::RouteRegistryUnreadable => {
                "`kvlower route`: the claim registry the routing trace names cannot be read (the join's own error; docs/join.md)."
            }
            Code::CapturePublisherUnreachable => {
                "`kvlower capture`: no ZMTP publisher accepted the connection and completed the handshake within --connect-timeout (at most --duration); nothing was written (docs/capture-format.md)."
            }
            Code::CapturePublisherRefused => {
                "`kvlower capture`: the peer is not a ZMTP 3 PUB/XPUB socket with NULL security, broke the framing, or declared a message over the caps (1 GiB, 255 parts, 64 KiB per command); the connection was closed and nothing was written (docs/capture-format.md)."
            }
            Code::CaptureOutputUnwritable => {
                "`kvlower capture`: the capture file (or its temporary file beside it) could not be created, written, synced or renamed into place."
            }
            Code::CaptureSetupFailed => {
                "`kvlower capture`: the options name no endpoint (or more than 65535), or the async runtime could not start."
            }
            Code::ConfigInvalid => {
                "`kvlower.toml` at the repository root is not valid: an unknown key, a value of the wrong type, or not TOML (docs/config.md lists every key)."
            }
            Code::InertAdapter => {
                "An adapter has `supported` evidence but not every trust-boundary precondition of its depth anchored, so none of its evidence can ever count."
            }
            Code::InertTraceScope => {
                "A `supported` trace-scoped item whose anchor does not state `preserves_order: true` and `preserves_claim_scope: true` never counts."
            }
            Code::InertScope => {
                "A `supported` item with scope `docs_only` or `source_inspection` never makes a positive row (fail-closed rule 4)."
            }
            Code::SignalNotProposed => {
                "A signal suggests a mode of which the catalog lists it as a forbidden lowering, and no proposal offers it as that mode: the row can be `approximate` for it, never `rejected`."
            }
            Code::UnusedAcknowledgement => {
                "An `acknowledge:` entry of a descriptor matches no warning `check` reports (same code, same YAML path): it acknowledges nothing and should be removed or corrected."
            }
            Code::InvalidAcknowledgement => {
                "An `acknowledge:` entry names an unknown code or an error's code (only warnings can be acknowledged), or gives no reason; it acknowledges nothing."
            }
        }
    }
}

impl Code {
    /// Whether a finding with this code says that kvlower could not read an input
    /// at all (missing, unreadable, refused before it was opened, an unreachable
    /// publisher, an unwritable output), as opposed to a finding about content it
    /// read and judged. The former exits 2, the latter 1 (docs/output.md, "Exit
    /// codes"). An anchor naming a missing or refused file is a finding about the
    /// descriptor (`anchor-file-missing`, `anchor-refused`), not an unread input.
    /// `route-registry-unreadable` covers a malformed registry too, so `route`
    /// decides from its error instead.
    pub fn is_unread_input(self) -> bool {
        matches!(
            self,
            Code::UnreadableFile
                | Code::NotARegularFile
                | Code::FileTooLarge
                | Code::FileOutsideRoot
                | Code::RouteTraceRefused
                | Code::CapturePublisherUnreachable
                | Code::CapturePublisherRefused
                | Code::CaptureOutputUnwritable
                | Code::CaptureSetupFailed
        )
    }

    /// The code for a file that [`kvlower_fs`] refused to read.
    pub fn for_refusal(refusal: &Refusal) -> Code {
        match refusal {
            Refusal::OutsideRoot { .. } => Code::FileOutsideRoot,
            Refusal::NotRegular { .. }
            | Refusal::PseudoFile { .. }
            | Refusal::WouldBlock { .. } => Code::NotARegularFile,
            Refusal::TooLarge { .. } => Code::FileTooLarge,
            Refusal::Missing { .. } | Refusal::PermissionDenied { .. } | Refusal::Io { .. } => {
                Code::UnreadableFile
            }
        }
    }
}

/// One finding. Ordered by file, line, column, code (the report order).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// Path relative to the repository root (or as given on the command line).
    pub file: String,
    /// 1-based line and column, when known.
    pub location: Option<(usize, usize)>,
    pub code: Code,
    /// Dotted YAML path (`adapters[0].evidence[2].anchor`), empty for the whole file.
    pub yaml_path: String,
    pub message: String,
    pub hint: Option<String>,
    /// Error or warning ([`Code::severity`]).
    pub severity: Severity,
    /// Other files that caused the finding, where known (a stale result's
    /// descriptors); SARIF's `relatedLocations`.
    pub related: Vec<String>,
}

impl Diagnostic {
    pub fn new(code: Code, file: impl Into<String>, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: file.into(),
            location: None,
            code,
            yaml_path: String::new(),
            message: message.into(),
            hint: None,
            severity: code.severity(),
            related: Vec::new(),
        }
    }

    /// Whether this finding is a warning (reported, never failing `check` by itself).
    pub fn is_warning(&self) -> bool {
        self.severity == Severity::Warning
    }

    pub fn at(mut self, line: usize, col: usize) -> Diagnostic {
        self.location = Some((line, col));
        self
    }

    pub fn at_path(mut self, path: impl Into<String>) -> Diagnostic {
        self.yaml_path = path.into();
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Diagnostic {
        self.hint = Some(hint.into());
        self
    }

    /// A finding for a file [`kvlower_fs`] refused, with a hint per reason.
    pub fn refused(file: impl Into<String>, refusal: &Refusal) -> Diagnostic {
        let hint = match refusal {
            Refusal::Missing { .. } => "check that the file exists",
            Refusal::PermissionDenied { .. } => "check the file's permissions",
            Refusal::OutsideRoot { .. } => {
                "keep inputs inside the repository; a link must not point outside it"
            }
            Refusal::NotRegular { .. }
            | Refusal::PseudoFile { .. }
            | Refusal::WouldBlock { .. } => "kvlower reads regular files only (see docs/files.md)",
            Refusal::TooLarge { .. } => "see docs/files.md for the cap per kind of file",
            Refusal::Io { .. } => "check that the file is readable",
        };
        Diagnostic::new(
            Code::for_refusal(refusal),
            file,
            excerpt(&refusal.to_string(), MESSAGE_MAX_CHARS),
        )
        .with_hint(hint)
    }

    /// Finds the line and column of `yaml_path` in `src` (best effort).
    pub fn located_in(mut self, src: &str) -> Diagnostic {
        if self.location.is_none() {
            self.location = locate(src, &self.yaml_path);
        }
        self
    }

    /// Classifies a YAML/serde error and adds a "did you mean" hint.
    pub fn from_yaml_error(file: &str, e: &YamlError) -> Diagnostic {
        use kvlower_yaml::YamlErrorKind;
        let m = e.message.as_str();
        let code = if e.kind == YamlErrorKind::DuplicateKey {
            Code::DuplicateKey
        } else if matches!(
            e.kind,
            YamlErrorKind::Syntax | YamlErrorKind::TooDeep | YamlErrorKind::MultipleDocuments
        ) {
            Code::YamlSyntax
        } else if m.starts_with("unknown field") {
            Code::UnknownField
        } else if m.starts_with("unknown variant") {
            Code::UnknownName
        } else if m.starts_with("missing field") {
            Code::MissingField
        } else if m.starts_with("duplicate") {
            Code::DuplicateKey
        } else if m.starts_with("invalid type")
            || m.starts_with("invalid value")
            || m.starts_with("invalid length")
        {
            Code::WrongType
        } else {
            Code::YamlSyntax
        };
        // The legacy alias is accepted on input but never printed.
        let message = plain_expectation(&e.message.replace("`active_refusal_or_defer`, ", ""));
        // The message may quote the offending value (a whole file, when a
        // descriptor is a link to one): keep a short, escaped excerpt only.
        let message = excerpt(
            &shorten_quoted(&message, VALUE_MAX_CHARS),
            MESSAGE_MAX_CHARS,
        );
        let mut d = Diagnostic::new(code, file, message).at_path(e.path.clone());
        d.location = e.location;
        d.hint = match code {
            Code::UnknownField | Code::UnknownName => did_you_mean(m),
            Code::MissingField => {
                Some("add the key; docs/descriptor-format.md lists the required ones".into())
            }
            Code::DuplicateKey => Some("remove or merge the repeated key".into()),
            Code::YamlSyntax if e.kind == YamlErrorKind::TooDeep => Some(format!(
                "kvlower reads YAML nested at most {} levels deep",
                kvlower_yaml::MAX_NESTING
            )),
            Code::YamlSyntax if e.kind == YamlErrorKind::MultipleDocuments => {
                Some("keep one document per file: remove the `---` line and what follows, or move it to its own file".into())
            }
            Code::YamlSyntax if m.contains("tab") || m.contains("\t") => {
                Some("YAML indentation must use spaces, not tabs".into())
            }
            Code::YamlSyntax => Some("check indentation and quoting near the location".into()),
            _ => None,
        };
        d
    }
}

impl std::fmt::Display for Diagnostic {
    /// `file:line:col: error[code]: message (at yaml.path)` then an indented hint.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some((line, col)) = self.location {
            write!(f, ":{line}:{col}")?;
        }
        write!(f, ": error[{}]: {}", self.code, self.message)?;
        if !self.yaml_path.is_empty() {
            write!(f, " (at `{}`)", self.yaml_path)?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

/// The most characters of a quoted value a diagnostic repeats (longer than
/// any name kvlower knows, so "expected one of" lists stay whole).
pub const VALUE_MAX_CHARS: usize = 64;
/// The most characters of a whole diagnostic message (a backstop: the
/// longest "expected one of" list is under 1,000).
pub const MESSAGE_MAX_CHARS: usize = 2000;

/// `text` with control characters escaped (no line breaks or terminal
/// escapes reach a CI log) and cut to `max` characters, marked with `…`.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Cuts every `"…"`- or backtick-quoted span of `message` longer than `max`
/// characters to its first `max` characters. serde quotes values with Rust
/// string escapes, so `\"` inside a span does not end it.
fn shorten_quoted(message: &str, max: usize) -> String {
    let mut out = String::with_capacity(message.len().min(4 * max));
    let mut chars = message.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c != '"' && c != '`' {
            continue;
        }
        let close = c;
        let mut kept = 0usize;
        let mut escaped = false;
        let mut cut = false;
        for d in chars.by_ref() {
            if d == close && !escaped {
                if cut {
                    out.push('…');
                }
                out.push(d);
                break;
            }
            escaped = close == '"' && d == '\\' && !escaped;
            if kept < max {
                out.push(d);
                kept += 1;
            } else {
                cut = true;
            }
        }
    }
    out
}

/// Says "a mapping" where serde names a Rust type ("expected struct NonClaims").
fn plain_expectation(message: &str) -> String {
    match message.find("expected struct ") {
        Some(at) => {
            let rest = &message[at + "expected struct ".len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric())
                .unwrap_or(rest.len());
            format!("{}expected a mapping{}", &message[..at], &rest[end..])
        }
        None => message.to_string(),
    }
}

/// From serde's "unknown variant `x`, expected one of `a`, `b`" (or
/// "unknown field"), suggests the closest expected name.
fn did_you_mean(message: &str) -> Option<String> {
    let mut ticks = message.split('`').skip(1).step_by(2);
    let given = ticks.next()?;
    let expected: Vec<&str> = ticks.collect();
    let best = expected
        .iter()
        .map(|c| (strsim::jaro_winkler(given, c), *c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c);
    match best {
        Some(c) => Some(format!("did you mean `{c}`?")),
        None if !expected.is_empty() => Some(format!("expected one of: {}", expected.join(", "))),
        None => None,
    }
}

/// 1-based line and column of byte `offset` in `src`.
pub fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let before = src.get(..offset).unwrap_or(src);
    let line = 1 + before.matches('\n').count();
    let col = 1 + before.rsplit('\n').next().map_or(0, |l| l.chars().count());
    (line, col)
}

/// Best-effort location of a dotted YAML path (`a.b[2].c`) in block-style
/// YAML. Returns the deepest segment it could find.
pub fn locate(src: &str, path: &str) -> Option<(usize, usize)> {
    let lines: Vec<&str> = src.lines().collect();
    let mut start = 0usize;
    let mut parent_indent: isize = -1;
    let mut found: Option<(usize, usize)> = None;
    for segment in split_path(path) {
        match segment {
            Segment::Key(key) => {
                let hit = (start..lines.len()).find_map(|i| {
                    let (indent, content) = key_position(lines[i]);
                    if content.is_empty() || content.starts_with('#') {
                        return None;
                    }
                    if i > start
                        && (lines[i].len() - lines[i].trim_start().len()) as isize <= parent_indent
                    {
                        return Some(None);
                    }
                    let is_key = content
                        .strip_prefix(key)
                        .is_some_and(|rest| rest.starts_with(':'));
                    (is_key && indent as isize > parent_indent).then_some(Some((i, indent)))
                })??;
                found = Some((hit.0 + 1, hit.1 + 1));
                start = hit.0 + 1;
                parent_indent = hit.1 as isize;
            }
            Segment::Index(n) => {
                let mut count = 0usize;
                let mut list_indent: Option<usize> = None;
                let mut hit = None;
                for (i, line) in lines.iter().enumerate().skip(start) {
                    let trimmed = line.trim_start();
                    if trimmed.is_empty() || trimmed.starts_with('#') {
                        continue;
                    }
                    let indent = line.len() - trimmed.len();
                    if (indent as isize) <= parent_indent
                        && !(trimmed.starts_with("- ") && indent as isize == parent_indent)
                    {
                        break;
                    }
                    if trimmed.starts_with("- ") || trimmed == "-" {
                        let li = *list_indent.get_or_insert(indent);
                        if indent == li {
                            if count == n {
                                hit = Some((i, indent));
                                break;
                            }
                            count += 1;
                        }
                    }
                }
                let (i, indent) = hit?;
                found = Some((i + 1, indent + 1));
                start = i;
                parent_indent = indent as isize;
            }
        }
    }
    found
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn split_path(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let mut rest = part;
        if let Some(bracket) = rest.find('[') {
            let (key, idx) = rest.split_at(bracket);
            if !key.is_empty() {
                out.push(Segment::Key(key));
            }
            rest = idx;
            for piece in rest.split('[').filter(|p| !p.is_empty()) {
                if let Ok(n) = piece.trim_end_matches(']').parse() {
                    out.push(Segment::Index(n));
                }
            }
        } else {
            out.push(Segment::Key(rest));
        }
    }
    out
}

/// The indentation and text of a line's key, treating `- key:` as a key
/// indented past its dash.
fn key_position(line: &str) -> (usize, &str) {
    let trimmed = line.trim_start();
    let mut indent = line.len() - trimmed.len();
    let mut content = trimmed;
    while let Some(rest) = content.strip_prefix("- ") {
        indent += 2;
        content = rest.trim_start();
    }
    (indent, content)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_nested_keys_and_list_items() {
        let src = "runtime:\n  name: x\nadapters:\n  - depth: telemetry_join\n    evidence:\n      - obligation: a\n      - obligation: b\n        anchor:\n          kind: paper\n";
        assert_eq!(locate(src, "runtime.name"), Some((2, 3)));
        assert_eq!(locate(src, "adapters[0].evidence[1]"), Some((7, 7)));
        assert_eq!(locate(src, "adapters[0].evidence[1].anchor"), Some((8, 9)));
        assert_eq!(
            locate(src, "adapters[0].evidence[1].anchor.kind"),
            Some((9, 11))
        );
    }

    #[test]
    fn suggests_the_closest_name() {
        let hint = did_you_mean(
            "unknown variant `claim_identiy`, expected one of `claim_identity`, `explicit_acceptance`",
        );
        assert_eq!(hint.as_deref(), Some("did you mean `claim_identity`?"));
    }

    #[test]
    fn quoted_values_are_cut_and_escaped() {
        let secret = "root:x:0:0:root:/root:/bin/bash\\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\\nbin:x:2:2";
        let message = format!("invalid type: string \"{secret}\", expected a mapping");
        let short = shorten_quoted(&message, VALUE_MAX_CHARS);
        assert!(!short.contains("nologin"), "{short}");
        assert!(short.ends_with("…\", expected a mapping"), "{short}");
        assert_eq!(
            shorten_quoted("unknown field `ab`, expected `c`", 1),
            "unknown field `a…`, expected `c`"
        );
        assert_eq!(excerpt("a\nb\u{1b}[31m", 100), "a\\nb\\u{1b}[31m");
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }

    #[test]
    fn codes_are_unique_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for c in Code::ALL {
            assert!(seen.insert(c.name()));
            assert!(
                c.name()
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-')
            );
        }
    }

    /// `Code::ALL` lists every variant, each once, in declaration order.
    /// `position` is an exhaustive match: a new code does not compile until it
    /// is listed here too.
    #[test]
    fn code_all_lists_every_variant() {
        fn position(c: Code) -> usize {
            match c {
                Code::UnreadableFile => 0,
                Code::InvalidUtf8 => 1,
                Code::EmptyFile => 2,
                Code::YamlSyntax => 3,
                Code::DuplicateKey => 4,
                Code::UnknownField => 5,
                Code::UnknownName => 6,
                Code::MissingField => 7,
                Code::WrongType => 8,
                Code::InvalidCatalog => 9,
                Code::CatalogWeakened => 10,
                Code::CatalogAlias => 11,
                Code::CatalogMismatch => 12,
                Code::AnchorIncomplete => 13,
                Code::AnchorFileMissing => 14,
                Code::AnchorVerdictDisagrees => 15,
                Code::AnchorPlaceholder => 16,
                Code::AnchorSelfReference => 17,
                Code::AnchorRefused => 18,
                Code::AnchorNotRerunnable => 19,
                Code::BlankValue => 20,
                Code::ControlCharacter => 21,
                Code::PreconditionWrongDepth => 22,
                Code::DuplicateAdapterDepth => 23,
                Code::AdapterAtNativeDepth => 24,
                Code::StaleResult => 25,
                Code::MissingResult => 26,
                Code::AuditSuiteFailed => 27,
                Code::CitedPositive => 28,
                Code::FileOutsideRoot => 29,
                Code::NotARegularFile => 30,
                Code::FileTooLarge => 31,
                Code::InvalidFileName => 32,
                Code::StrayFile => 33,
                Code::MalformedTrace => 34,
                Code::RouteTraceRefused => 35,
                Code::RouteTraceMalformed => 36,
                Code::RouteTraceInvalid => 37,
                Code::RouteRegistryUnreadable => 38,
                Code::AnchorOtherRuntime => 39,
                Code::AnchorScopeBeyondKind => 40,
                Code::InvalidRuntimeIdentity => 41,
                Code::InvalidReviewDate => 42,
                Code::ModesNotStated => 43,
                Code::CapturePublisherUnreachable => 44,
                Code::CapturePublisherRefused => 45,
                Code::CaptureOutputUnwritable => 46,
                Code::CaptureSetupFailed => 47,
                Code::ConfigInvalid => 48,
                Code::InertAdapter => 49,
                Code::InertTraceScope => 50,
                Code::InertScope => 51,
                Code::SignalNotProposed => 52,
                Code::UnusedAcknowledgement => 53,
                Code::InvalidAcknowledgement => 54,
            }
        }
        assert_eq!(Code::ALL.len(), 55);
        assert_eq!(Code::COUNT, Code::ALL.len());
        for (i, c) in Code::ALL.iter().enumerate() {
            assert_eq!(position(*c), i, "{c}");
            assert_eq!(Code::from_name(c.name()), Some(*c));
            assert_eq!(serde_json::to_value(c).ok(), Some(c.name().into()));
        }
    }
}
