//! Drives the per-line checks and the family state machines over one trace.

use std::num::NonZeroU32;

use indexmap::IndexMap;

use crate::Pos;
use crate::connector::ConnectorClaim;
use crate::event::{EventKind, RawEvent, given};
use crate::family;
use crate::family::TraceFamily;
use crate::identity::{Bucket, ClaimIdentity, Interner};
use crate::multi_claim::{Attribution, NonTargetFacts, TargetFacts};
use crate::names::{Requirement, TraceGate};
use crate::parse::{LineProblem, Parsed, column_in_line, parse_line, parse_line_into};
use crate::problem::{LocatedProblem, Problem};
use crate::reference::ReferenceClaim;
use crate::residency::ResidencyClaim;
use crate::verdict::{ClaimVerdict, GateResult, TraceOutline, TraceTally};

/// At most this many diagnostics are kept per trace; the rest are counted.
pub const MAX_DIAGNOSTICS: usize = 1000;

/// Lines held back while no event has told the trace's family yet.
const MAX_UNDECIDED_LINES: usize = 1024;

/// A claim's state in either family.
trait ClaimState: Default {
    fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>);
}

impl ClaimState for ConnectorClaim {
    fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>) {
        ConnectorClaim::observe(self, kind, e, pos, claim);
    }
}

impl ClaimState for ReferenceClaim {
    fn observe(&mut self, kind: EventKind, e: &RawEvent<'_>, pos: Pos, claim: Option<&str>) {
        ReferenceClaim::observe(self, kind, e, pos, claim);
    }
}

struct Slot<S> {
    state: S,
    identity: ClaimIdentity,
    /// A diagnostic touched this claim.
    tainted: bool,
}

/// The claims of one trace, in order of first appearance (the order verdicts are
/// emitted in).
struct Claims<S> {
    slots: IndexMap<Box<str>, Slot<S>>,
    /// The most recent claim looked up (consecutive events mostly share a claim).
    last_key: String,
    last_index: Option<usize>,
}

impl<S: ClaimState> Claims<S> {
    fn new() -> Self {
        Claims {
            slots: IndexMap::new(),
            last_key: String::new(),
            last_index: None,
        }
    }

    /// The slot of `claim`, created on first sight (`None` past `u32::MAX` claims).
    fn slot(&mut self, claim: &str) -> Option<&mut Slot<S>> {
        let found = match self.last_index {
            Some(i) if self.last_key == claim => Some(i),
            _ => self.slots.get_index_of(claim),
        };
        let i = match found {
            Some(i) => i,
            None => {
                u32::try_from(self.slots.len()).ok()?;
                let slot = Slot {
                    state: S::default(),
                    identity: ClaimIdentity::default(),
                    tainted: false,
                };
                self.slots.insert_full(claim.into(), slot).0
            }
        };
        if self.last_index != Some(i) {
            self.last_key.clear();
            self.last_key.push_str(claim);
            self.last_index = Some(i);
        }
        self.slots.get_index_mut(i).map(|(_, slot)| slot)
    }

    fn get(&self, claim: &str) -> Option<&Slot<S>> {
        self.slots.get(claim)
    }
}

/// One family's state for a whole trace.
struct FamilyState<S> {
    claims: Claims<S>,
    unclaimed: S,
    unclaimed_seen: bool,
    attribution: Attribution,
}

impl<S: ClaimState> FamilyState<S> {
    fn new() -> Self {
        FamilyState {
            claims: Claims::new(),
            unclaimed: S::default(),
            unclaimed_seen: false,
            attribution: Attribution::default(),
        }
    }
}

enum Machine {
    Undecided,
    Connector(Box<FamilyState<ConnectorClaim>>),
    Reference(Box<FamilyState<ReferenceClaim>>),
    Unknown,
}

impl Machine {
    fn family(&self) -> Option<TraceFamily> {
        match self {
            Machine::Undecided => None,
            Machine::Connector(_) => Some(TraceFamily::Connector),
            Machine::Reference(_) => Some(TraceFamily::Reference),
            Machine::Unknown => Some(TraceFamily::Unknown),
        }
    }
}

/// Evaluates one trace, line by line; see [`crate::evaluate_reader_each`].
pub(crate) struct TraceEvaluator {
    name: String,
    machine: Machine,
    /// Lines held back: the 1-based line, the whitespace trimmed before it, the bytes.
    undecided: Vec<(u64, usize, Vec<u8>)>,
    interner: Interner,
    last_sequence: Option<u64>,
    events: u64,
    nonblank_lines: u64,
    diagnostics: Vec<LocatedProblem>,
    suppressed: u64,
    /// A diagnostic touched no claim in particular, so it touches every claim.
    taint_all: bool,
    /// The runtime the header line recorded; only the first non-blank line may be one.
    runtime: Option<Vec<crate::TraceComponent>>,
    /// The source digest the header line recorded, if any.
    source_digest: Option<String>,
    /// Whether a non-blank line (header or not) has been seen.
    past_first_line: bool,
}

impl TraceEvaluator {
    pub fn new(name: &str) -> Self {
        TraceEvaluator {
            name: name.to_owned(),
            machine: Machine::Undecided,
            undecided: Vec::new(),
            interner: Interner::default(),
            last_sequence: None,
            events: 0,
            nonblank_lines: 0,
            diagnostics: Vec::new(),
            suppressed: 0,
            taint_all: false,
            runtime: None,
            source_digest: None,
            past_first_line: false,
        }
    }

    fn diagnose(&mut self, line: Option<u64>, problem: Problem) {
        self.diagnose_at(line, None, problem);
    }

    fn diagnose_at(&mut self, line: Option<u64>, column: Option<u32>, problem: Problem) {
        if self.diagnostics.len() < MAX_DIAGNOSTICS {
            self.diagnostics.push(LocatedProblem {
                line,
                column,
                problem,
            });
        } else {
            self.suppressed = self.suppressed.saturating_add(1);
        }
    }

    /// A problem with a line that could not be tied to a claim: it touches all of them.
    pub fn line_problem(&mut self, line: u64, problem: Problem) {
        self.diagnose(Some(line), problem);
        self.taint_all = true;
    }

    /// [`Self::line_problem`] for a line that did not parse, at the column of the byte
    /// the parser points at (`lead`: the whitespace trimmed before the parsed bytes).
    fn parse_problem(&mut self, line: u64, lead: usize, problem: &LineProblem) {
        let column = column_in_line(problem, lead);
        self.diagnose_at(Some(line), column, problem.problem.clone());
        self.taint_all = true;
    }

    /// Judges one line (1-based `line`, without its terminator).
    pub fn push_line(&mut self, line: u64, bytes: &[u8]) {
        let lead = crate::parse::leading_json_whitespace(bytes);
        let bytes = crate::parse::trim_json_whitespace(bytes);
        if !self.past_first_line && !bytes.is_empty() {
            self.past_first_line = true;
            match crate::header::parse(bytes) {
                Some(Ok(header)) => {
                    self.runtime = Some(header.runtime);
                    self.source_digest = header.source_digest;
                    return;
                }
                Some(Err(problem)) => {
                    self.nonblank_lines = self.nonblank_lines.saturating_add(1);
                    return self.line_problem(line, problem);
                }
                // An event: a trace without a header (it gates, but anchors nothing).
                None => {}
            }
        }
        if bytes.is_empty() {
            return;
        }
        let mut event = RawEvent::default();
        match parse_line_into(bytes, &mut event) {
            Ok(()) => self.push_event(line, lead, bytes, &event),
            Err(problem) => {
                self.nonblank_lines = self.nonblank_lines.saturating_add(1);
                self.parse_problem(line, lead, &problem);
            }
        }
    }

    /// Judges one line (as [`Self::push_line`]) parsed ahead by [`crate::parse::parse`] from
    /// `trim_json_whitespace(bytes)`. Until the first non-blank line, which may be the header, the
    /// line is judged by `push_line` instead (parsed again, in order).
    pub fn push_line_parsed(&mut self, line: u64, bytes: &[u8], parsed: &Parsed<'_>) {
        if self.past_first_line {
            let lead = crate::parse::leading_json_whitespace(bytes);
            let trimmed = crate::parse::trim_json_whitespace(bytes);
            self.push_parsed(line, lead, trimmed, parsed);
        } else {
            self.push_line(line, bytes);
        }
    }

    /// Judges one line already parsed by [`crate::parse::parse`] (`bytes` trimmed, as given to it,
    /// `lead` bytes of whitespace having been trimmed before them).
    /// By reference: an event is large, and lines parsed ahead are judged where they lie.
    pub fn push_parsed(&mut self, line: u64, lead: usize, bytes: &[u8], parsed: &Parsed<'_>) {
        match parsed {
            Parsed::Blank => {}
            Parsed::Problem(problem) => {
                self.nonblank_lines = self.nonblank_lines.saturating_add(1);
                self.parse_problem(line, lead, problem);
            }
            Parsed::Event(event) => self.push_event(line, lead, bytes, event),
        }
    }

    /// Judges one non-blank line that parsed into `event` (`bytes` trimmed, after `lead`
    /// bytes of whitespace).
    fn push_event(&mut self, line: u64, lead: usize, bytes: &[u8], event: &RawEvent<'_>) {
        self.nonblank_lines = self.nonblank_lines.saturating_add(1);
        if let Machine::Undecided = self.machine {
            let kind = event
                .event
                .as_ref()
                .map_or(EventKind::Other, |n| EventKind::of(n.as_str()));
            match family::of_event(event, kind) {
                Some(found) => self.decide(found),
                None if self.undecided.len() < MAX_UNDECIDED_LINES => {
                    self.undecided.push((line, lead, bytes.to_vec()));
                    return;
                }
                None => {
                    self.decide(TraceFamily::Unknown);
                    self.diagnose(None, Problem::UnknownFamily);
                    self.taint_all = true;
                }
            }
        }
        self.judge(line, event);
    }

    fn decide(&mut self, found: TraceFamily) {
        self.machine = match found {
            TraceFamily::Connector => Machine::Connector(Box::new(FamilyState::new())),
            TraceFamily::Reference => Machine::Reference(Box::new(FamilyState::new())),
            TraceFamily::Unknown => Machine::Unknown,
        };
        for (line, lead, bytes) in std::mem::take(&mut self.undecided) {
            match parse_line(&bytes) {
                Ok(event) => self.judge(line, &event),
                Err(problem) => self.parse_problem(line, lead, &problem),
            }
        }
    }

    fn taint(&mut self, claim: Option<&str>) {
        let Some(claim) = claim else {
            self.taint_all = true;
            return;
        };
        let slot_tainted = match &mut self.machine {
            Machine::Connector(f) => f.claims.slot(claim).map(|s| s.tainted = true),
            Machine::Reference(f) => f.claims.slot(claim).map(|s| s.tainted = true),
            Machine::Undecided | Machine::Unknown => Some(()),
        };
        if slot_tainted.is_none() {
            self.taint_all = true;
        }
    }

    /// Envelope checks, then hands the event to the family's state machine.
    fn judge(&mut self, line: u64, e: &RawEvent<'_>) {
        let Some(trace_family) = self.machine.family() else {
            return;
        };
        if let (Some(a), Some(b)) = (given(&e.claim_id), given(&e.resident_claim_id))
            && a != b
        {
            self.diagnose(
                Some(line),
                Problem::ClaimIdConflict {
                    claim_id: a.to_owned(),
                    resident_claim_id: b.to_owned(),
                },
            );
            self.taint(Some(a));
            self.taint(Some(b));
            return;
        }
        let claim = e.claim();
        let problem = self.envelope_problem(e, trace_family);
        if let Some(problem) = problem {
            self.diagnose(Some(line), problem);
            self.taint(claim);
            return;
        }
        let Some(name) = e.event.as_ref() else {
            return;
        };
        let kind = EventKind::of(name.as_str());
        let ordinal = self.events.saturating_add(1);
        let Some(pos) = u32::try_from(ordinal).ok().and_then(NonZeroU32::new) else {
            // Past 2^32 events positions cannot be told apart; judge nothing more.
            self.diagnose(Some(line), Problem::TooManyEvents);
            self.taint_all = true;
            return;
        };
        self.events = ordinal;
        let fed = match &mut self.machine {
            Machine::Connector(f) => {
                f.attribution.observe(kind, e);
                feed(f, &mut self.interner, kind, e, pos, claim)
            }
            Machine::Reference(f) => feed(f, &mut self.interner, kind, e, pos, claim),
            Machine::Undecided | Machine::Unknown => Fed::Judged,
        };
        match fed {
            Fed::Judged => {}
            Fed::Ambiguous(problem) => self.diagnose(Some(line), problem),
            Fed::TableFull => {
                self.diagnose(Some(line), Problem::TooManyClaims);
                self.taint_all = true;
            }
        }
    }

    /// What is wrong with the event's envelope (event name, sequence, family), if anything.
    /// Records the sequence as seen when it is fine.
    fn envelope_problem(&mut self, e: &RawEvent<'_>, trace_family: TraceFamily) -> Option<Problem> {
        if e.event.is_none() {
            return Some(Problem::MissingEvent);
        }
        let Some(sequence) = e.event_sequence else {
            return Some(Problem::MissingSequence);
        };
        if let Some(previous) = self.last_sequence
            && sequence <= previous
        {
            return Some(Problem::SequenceNotIncreasing {
                found: sequence,
                previous,
            });
        }
        if let Some(found) = family::contradicts(e, trace_family) {
            return Some(Problem::MixedFamily {
                found,
                trace: trace_family,
            });
        }
        if trace_family == TraceFamily::Reference {
            match e.schema_version {
                Some(1) | None => {}
                Some(v) => return Some(Problem::SchemaVersion(v)),
            }
            if sequence == 0 {
                return Some(Problem::ReferenceSequenceZero);
            }
        }
        self.last_sequence = Some(sequence);
        None
    }

    /// Finishes the trace: emits one verdict per claim (in order of first appearance, the
    /// unclaimed row last) through `on_verdict`, and returns everything else.
    pub fn finish(mut self, on_verdict: &mut dyn FnMut(ClaimVerdict)) -> TraceOutline {
        // A header and nothing else is a run that emitted no event: valid, and
        // no gate passes. A file without even a header is still malformed.
        let header_only = self.runtime.is_some() && self.nonblank_lines == 0;
        if let Machine::Undecided = self.machine {
            if !header_only {
                let problem = if self.nonblank_lines == 0 {
                    Problem::EmptyTrace
                } else {
                    Problem::UnknownFamily
                };
                self.diagnose(None, problem);
                self.taint_all = true;
            }
            self.undecided.clear();
            self.machine = Machine::Unknown;
        }
        if self.suppressed > 0 {
            let n = self.suppressed;
            self.diagnostics.push(LocatedProblem {
                line: None,
                column: None,
                problem: Problem::Suppressed(n),
            });
        }
        let mut tally = TraceTally {
            valid: self.diagnostics.is_empty(),
            ..TraceTally::default()
        };
        let mut emit = |v: ClaimVerdict| {
            tally.add_verdict(&v);
            on_verdict(v);
        };
        let any_diagnostic = !self.diagnostics.is_empty();
        let family = self.machine.family().unwrap_or(TraceFamily::Unknown);
        match std::mem::replace(&mut self.machine, Machine::Unknown) {
            Machine::Connector(f) => {
                finish_connector(*f, self.taint_all, any_diagnostic, &mut emit)
            }
            Machine::Reference(f) => finish_reference(*f, self.taint_all, &mut emit),
            Machine::Undecided | Machine::Unknown => {}
        }
        if family == TraceFamily::Reference && tally.reference.is_none() {
            tally.reference = Some(false);
        }
        TraceOutline {
            name: self.name,
            family,
            runtime: self.runtime,
            source_digest: self.source_digest,
            events: self.events,
            diagnostics: self.diagnostics,
            tally,
        }
    }
}

/// What feeding one event to a family produced.
enum Fed {
    Judged,
    /// Judged, and the event gave its claim a second identity value.
    Ambiguous(Problem),
    /// Not judged: the claim table is full.
    TableFull,
}

/// Feeds one envelope-checked event to a family.
fn feed<S: ClaimState>(
    f: &mut FamilyState<S>,
    interner: &mut Interner,
    kind: EventKind,
    e: &RawEvent<'_>,
    pos: Pos,
    claim: Option<&str>,
) -> Fed {
    let Some(claim) = claim else {
        f.unclaimed_seen = true;
        f.unclaimed.observe(kind, e, pos, None);
        return Fed::Judged;
    };
    let Some(slot) = f.claims.slot(claim) else {
        return Fed::TableFull;
    };
    let conflict = slot.identity.observe(e, interner);
    slot.state.observe(kind, e, pos, Some(claim));
    match conflict {
        None => Fed::Judged,
        Some(c) => Fed::Ambiguous(Problem::AmbiguousIdentity {
            claim: claim.to_owned(),
            field: c.field,
            first: c.first,
            second: c.second,
        }),
    }
}

fn with_taint(mut missing: Vec<Requirement>, tainted: bool) -> GateResult {
    if tainted {
        missing.push(Requirement::WellFormedTrace);
    }
    GateResult::from_missing(missing)
}

fn finish_connector(
    f: FamilyState<ConnectorClaim>,
    taint_all: bool,
    any_diagnostic: bool,
    emit: &mut dyn FnMut(ClaimVerdict),
) {
    let multi_claim = (f.claims.slots.len() >= 2).then(|| {
        let target_id = f.attribution.target();
        let target = target_id.map(|id| match f.claims.get(id) {
            Some(slot) => TargetFacts {
                id,
                failure_outcome_pass: !taint_all
                    && !slot.tainted
                    && slot
                        .state
                        .failure_missing(Bucket::Claim(&slot.identity))
                        .is_empty(),
                scheduler_failed: slot.state.has_scheduler_failure(),
                scheduler_refused: slot.state.has_scheduler_refusal(),
            },
            None => TargetFacts {
                id,
                failure_outcome_pass: false,
                scheduler_failed: false,
                scheduler_refused: false,
            },
        });
        let mut non_targets = NonTargetFacts::default();
        for (_, slot) in f
            .claims
            .slots
            .iter()
            .filter(|(id, _)| Some(&***id) != target_id)
        {
            non_targets.any_attributed_failure |= slot.state.attributed_failure;
            let restored = slot
                .state
                .observation_missing(Bucket::Claim(&slot.identity))
                .is_empty();
            non_targets.any_failed_without_restore |= slot.state.failed() && !restored;
        }
        with_taint(f.attribution.missing(target, non_targets), any_diagnostic)
    });
    let no_claims = f.claims.slots.is_empty();
    // The residency gates apply to every row of a trace with a residency event.
    let residency = f.unclaimed.residency.is_some()
        || f.claims.slots.values().any(|s| s.state.residency.is_some());
    for (id, slot) in f.claims.slots {
        let tainted = taint_all || slot.tainted;
        let bucket = Bucket::Claim(&slot.identity);
        let mut gates = std::collections::BTreeMap::new();
        gates.insert(
            TraceGate::ConnectorObservation,
            with_taint(slot.state.observation_missing(bucket), tainted),
        );
        gates.insert(
            TraceGate::ConnectorFailureOutcome,
            with_taint(slot.state.failure_missing(bucket), tainted),
        );
        if let Some(result) = &multi_claim {
            gates.insert(TraceGate::MultiClaimAttribution, result.clone());
        }
        if residency {
            insert_residency(&mut gates, slot.state.residency.as_deref(), bucket, tainted);
        }
        emit(ClaimVerdict {
            claim_id: Some(id.into()),
            family: TraceFamily::Connector,
            gates,
            controls_rejected: slot.state.controls(bucket),
        });
    }
    let unclaimed_row = f.unclaimed_seen && (no_claims || f.unclaimed.has_failure_evidence());
    if unclaimed_row {
        let mut gates = std::collections::BTreeMap::new();
        gates.insert(
            TraceGate::ConnectorObservation,
            with_taint(
                f.unclaimed.observation_missing(Bucket::Unclaimed),
                taint_all,
            ),
        );
        gates.insert(
            TraceGate::ConnectorFailureOutcome,
            with_taint(f.unclaimed.failure_missing(Bucket::Unclaimed), taint_all),
        );
        if residency {
            let state = f.unclaimed.residency.as_deref();
            insert_residency(&mut gates, state, Bucket::Unclaimed, taint_all);
        }
        emit(ClaimVerdict {
            claim_id: None,
            family: TraceFamily::Connector,
            gates,
            controls_rejected: f.unclaimed.controls(Bucket::Unclaimed),
        });
    }
}

/// Adds the three residency gates to a row (a claim without residency events fails them).
fn insert_residency(
    gates: &mut std::collections::BTreeMap<TraceGate, GateResult>,
    state: Option<&ResidencyClaim>,
    bucket: Bucket<'_>,
    tainted: bool,
) {
    let none = ResidencyClaim::default();
    let state = state.unwrap_or(&none);
    gates.insert(
        TraceGate::ClaimProtection,
        with_taint(state.protection_missing(bucket), tainted),
    );
    gates.insert(
        TraceGate::ClaimDemotion,
        with_taint(state.demotion_missing(bucket), tainted),
    );
    gates.insert(
        TraceGate::ClaimExpiry,
        with_taint(state.expiry_missing(bucket), tainted),
    );
}

fn finish_reference(
    f: FamilyState<ReferenceClaim>,
    taint_all: bool,
    emit: &mut dyn FnMut(ClaimVerdict),
) {
    let no_claims = f.claims.slots.is_empty();
    for (id, slot) in f.claims.slots {
        let bucket = Bucket::Claim(&slot.identity);
        let mut missing = slot.state.missing(bucket);
        if slot.identity.ambiguous() {
            missing.push(Requirement::AmbiguousClaimCacheIdentity);
        }
        let mut gates = std::collections::BTreeMap::new();
        gates.insert(
            TraceGate::ReferenceLifecycle,
            with_taint(missing, taint_all || slot.tainted),
        );
        emit(ClaimVerdict {
            claim_id: Some(id.into()),
            family: TraceFamily::Reference,
            gates,
            controls_rejected: slot.state.controls(bucket),
        });
    }
    if f.unclaimed_seen && no_claims {
        let mut gates = std::collections::BTreeMap::new();
        gates.insert(
            TraceGate::ReferenceLifecycle,
            with_taint(f.unclaimed.missing(Bucket::Unclaimed), taint_all),
        );
        emit(ClaimVerdict {
            claim_id: None,
            family: TraceFamily::Reference,
            gates,
            controls_rejected: f.unclaimed.controls(Bucket::Unclaimed),
        });
    }
}
