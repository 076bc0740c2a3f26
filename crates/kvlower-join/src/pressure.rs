//! soft_priority pressure controls: many joined trials → anchored evidence atoms.
//!
//! A priority field proves nothing by itself (paper §3: a priority value alone is
//! the false positive `soft_priority` rejects; `docs/model.md`). What `soft_priority + telemetry_join` needs is the
//! paper's controlled design (§6.1): an *original* run where the lower-priority claim is
//! lost first, a *swapped* run where swapping the priorities swaps the loser, and an
//! *equal-priority* run where both claims go in the same first-loss event; in every trial
//! both claims joinable before pressure and no claim lost before pressure. Each trial is
//! an ordinary fail-closed join, judged at the trial's observation point, so every
//! ambiguity rule of the join applies to every trial.
//!
//! Controls file (YAML, paths relative to the controls file):
//!
//! ```yaml
//! schema_version: 1
//! format: trtllm
//! registry: registry.yaml
//! tracked_claims: [claim-a, claim-b]
//! runs:
//!   original:
//!     priorities: {claim-a: 80, claim-b: 20}
//!     trials:
//!       - {events: original/trial-1.jsonl, pressure_starts_at: {event_index: 5}, observe_at: {event_index: 9}}
//!   swapped: {...}
//!   equal_priority: {...}
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::document::{Change, ClaimResult, EventRef, Transition, Verdict};
use crate::engine::JoinOptions;
use crate::error::JoinError;
use crate::input::join_reader_with;
use crate::registry::{ClaimId, EventFormat, Registry, StreamPoint};

/// The three control runs of the paper's design.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Original,
    Swapped,
    EqualPriority,
}

/// An event-index point (pressure starts are named by event, not time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventIndexPoint {
    pub event_index: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawControls {
    schema_version: u32,
    format: EventFormat,
    registry: String,
    tracked_claims: Vec<ClaimId>,
    runs: BTreeMap<RunKind, RawRun>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    priorities: BTreeMap<ClaimId, u32>,
    trials: Vec<RawTrial>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrial {
    events: String,
    pressure_starts_at: EventIndexPoint,
    observe_at: StreamPoint,
}

/// Why a trial does not count as following priority.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum TrialReason {
    /// The join could not judge this claim (its join reasons, by name).
    ClaimNotJoinable {
        claim: ClaimId,
        reasons: Vec<String>,
    },
    /// The claim was not materialized when pressure started.
    NotMaterializedBeforePressure { claim: ClaimId },
    /// The claim was lost before pressure started.
    LostBeforePressure { claim: ClaimId, event: EventRef },
    /// No tracked claim was lost between pressure start and the observation point.
    NoLossAfterPressure,
    /// The first-loss event took other claims than priority predicts.
    UnexpectedFirstLoss { lost: Vec<ClaimId> },
    /// The runtime reported other priorities on the claim's blocks than the run declares.
    PriorityNotObservedAsDeclared {
        claim: ClaimId,
        declared: u32,
        observed: Vec<u32>,
    },
}

/// Why a run is not the control the design needs.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "problem", rename_all = "snake_case")]
pub enum DesignProblem {
    MissingRun {
        run: RunKind,
    },
    NoTrials {
        run: RunKind,
    },
    NotTwoTrackedClaims,
    MissingPriority {
        run: RunKind,
        claim: ClaimId,
    },
    /// original and swapped need different priorities; equal_priority equal ones.
    PrioritiesDoNotFitRun {
        run: RunKind,
    },
    /// swapped must exchange the original priorities.
    NotASwapOfOriginal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialResult {
    pub events: String,
    pub pressure_starts_at: u64,
    pub observation_point: StreamPoint,
    /// The first event at or after pressure start where a tracked claim was lost.
    pub first_loss: Option<EventRef>,
    /// The tracked claims lost in that event.
    pub first_lost: Vec<ClaimId>,
    /// Each tracked claim's first loss at or after pressure start, when reconstructed.
    pub loss_after_pressure: BTreeMap<ClaimId, Option<EventRef>>,
    pub joinable_before_pressure: bool,
    pub no_pre_pressure_loss: bool,
    pub followed_priority: bool,
    pub reasons: Vec<TrialReason>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub run: RunKind,
    pub priorities: BTreeMap<ClaimId, u32>,
    /// Who priority says must go first: the lower-priority claim, or both when equal.
    pub expected_first_lost: Vec<ClaimId>,
    /// `followed/trials`.
    pub followed: String,
    pub trials: Vec<TrialResult>,
}

/// The observed-fact atoms a soft_priority row anchors to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AtomKind {
    PressureControlsObserved,
    BothClaimsJoinableBeforePressure,
    NoPrePressureClaimLoss,
    MaterializationChangesReconstructable,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Atom {
    pub atom: AtomKind,
    pub observed: bool,
    /// `passed/total` over all trials (or tracked loss claims).
    pub count: String,
    pub per_run: BTreeMap<RunKind, String>,
    /// The event files the counts come from (relative, as resolved from the controls file).
    pub anchors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PressureReport {
    pub schema_version: u32,
    pub depth: String,
    pub controls: String,
    pub registry: String,
    pub format: EventFormat,
    pub tracked_claims: Vec<ClaimId>,
    pub design_problems: Vec<DesignProblem>,
    pub runs: Vec<RunResult>,
    pub atoms: Vec<Atom>,
}

fn yaml_err(path: &Path, yaml_path: &str, message: String) -> JoinError {
    JoinError::Registry {
        path: path.to_path_buf(),
        location: None,
        yaml_path: yaml_path.into(),
        message,
    }
}

/// Reads the controls file, joins every trial, and derives the atoms.
pub fn run_controls(controls: &Path) -> Result<PressureReport, JoinError> {
    let src = crate::input::files::read_text(controls, kvlower_fs::FileKind::Registry)?;
    let raw: RawControls =
        kvlower_yaml::from_str(&src).map_err(|e| JoinError::yaml(controls, e))?;
    if raw.schema_version != 1 {
        return Err(yaml_err(
            controls,
            "schema_version",
            format!(
                "unsupported schema_version {} (this kvlower reads 1)",
                raw.schema_version
            ),
        ));
    }
    let base = controls.parent().unwrap_or(Path::new(""));
    let registry_path = base.join(&raw.registry);
    let registry = Registry::load(&registry_path)?;
    for (i, t) in raw.tracked_claims.iter().enumerate() {
        if !registry.claims.iter().any(|c| c.id == *t) {
            return Err(yaml_err(
                controls,
                &format!("tracked_claims[{i}]"),
                format!("claim `{t}` is not in {}", registry_path.display()),
            ));
        }
    }
    let tracked = raw.tracked_claims.clone();
    let mut problems: Vec<DesignProblem> = Vec::new();
    if tracked.len() != 2 || tracked.first() == tracked.get(1) {
        problems.push(DesignProblem::NotTwoTrackedClaims);
    }
    for kind in [RunKind::Original, RunKind::Swapped, RunKind::EqualPriority] {
        match raw.runs.get(&kind) {
            None => problems.push(DesignProblem::MissingRun { run: kind }),
            Some(r) => {
                if r.trials.is_empty() {
                    problems.push(DesignProblem::NoTrials { run: kind });
                }
                for t in &tracked {
                    if !r.priorities.contains_key(t) {
                        problems.push(DesignProblem::MissingPriority {
                            run: kind,
                            claim: t.clone(),
                        });
                    }
                }
                let ps: BTreeSet<u32> = tracked
                    .iter()
                    .filter_map(|t| r.priorities.get(t).copied())
                    .collect();
                let fits = match kind {
                    RunKind::EqualPriority => ps.len() == 1,
                    _ => ps.len() == tracked.len(),
                };
                if !fits {
                    problems.push(DesignProblem::PrioritiesDoNotFitRun { run: kind });
                }
            }
        }
    }
    if let (Some(o), Some(s), [a, b]) = (
        raw.runs.get(&RunKind::Original),
        raw.runs.get(&RunKind::Swapped),
        tracked.as_slice(),
    ) && (o.priorities.get(a) != s.priorities.get(b)
        || o.priorities.get(b) != s.priorities.get(a))
    {
        problems.push(DesignProblem::NotASwapOfOriginal);
    }
    problems.sort();

    let study = Study {
        registry: &registry,
        registry_path: &registry_path,
        format: raw.format,
        tracked: &tracked,
    };
    let mut runs = Vec::new();
    for (kind, run) in &raw.runs {
        let expected = expected_first_lost(&tracked, &run.priorities);
        let plan = RunPlan {
            priorities: &run.priorities,
            expected: &expected,
        };
        let mut trials = Vec::new();
        for t in &run.trials {
            trials.push(study.judge_trial(&plan, &base.join(&t.events), t)?);
        }
        let followed = trials.iter().filter(|t| t.followed_priority).count();
        runs.push(RunResult {
            run: *kind,
            priorities: run.priorities.clone(),
            expected_first_lost: expected,
            followed: format!("{followed}/{}", trials.len()),
            trials,
        });
    }
    let atoms = atoms(&runs, problems.is_empty());
    Ok(PressureReport {
        schema_version: 1,
        depth: "telemetry_join".into(),
        controls: controls.display().to_string(),
        registry: registry_path.display().to_string(),
        format: raw.format,
        tracked_claims: tracked,
        design_problems: problems,
        runs,
        atoms,
    })
}

fn expected_first_lost(tracked: &[ClaimId], pr: &BTreeMap<ClaimId, u32>) -> Vec<ClaimId> {
    let min = tracked.iter().filter_map(|t| pr.get(t)).min();
    let mut v: Vec<ClaimId> = tracked
        .iter()
        .filter(|t| min.is_some() && pr.get(*t) == min)
        .cloned()
        .collect();
    v.sort();
    v
}

/// What every trial of the controls shares: the registry, the event format and
/// the claims it tracks.
struct Study<'a> {
    registry: &'a Registry,
    registry_path: &'a Path,
    format: EventFormat,
    tracked: &'a [ClaimId],
}

/// One run's declared priorities, and the claims expected to be lost first under them.
struct RunPlan<'a> {
    priorities: &'a BTreeMap<ClaimId, u32>,
    expected: &'a [ClaimId],
}

impl Study<'_> {
    /// Joins one trial's events, judged at its observation point, and says whether the
    /// first loss after pressure started followed the run's priorities.
    fn judge_trial(
        &self,
        run: &RunPlan<'_>,
        events: &Path,
        t: &RawTrial,
    ) -> Result<TrialResult, JoinError> {
        let file = crate::input::files::open_events(events)?;
        let report = join_reader_with(
            self.registry,
            self.registry_path,
            BufReader::new(file),
            events,
            self.format,
            JoinOptions {
                observe_at: Some(t.observe_at),
            },
        )?;
        let p = t.pressure_starts_at.event_index;
        let mut reasons = Vec::new();
        let mut joinable = true;
        let mut no_pre_loss = true;
        let mut first_losses: Vec<(ClaimId, Option<EventRef>)> = Vec::new();
        for id in self.tracked {
            let Some(c) = report.claims.iter().find(|c| c.claim_id == *id) else {
                continue;
            };
            let claim = claim_trial(c, p, run.priorities.get(id).copied());
            joinable &= claim.joinable;
            no_pre_loss &= claim.kept_before_pressure;
            reasons.extend(claim.reasons);
            first_losses.push((id.clone(), claim.first_loss));
        }
        let first_loss = first_losses.iter().filter_map(|(_, e)| *e).min();
        let mut first_lost: Vec<ClaimId> = first_losses
            .iter()
            .filter(|(_, e)| first_loss.is_some() && *e == first_loss)
            .map(|(c, _)| c.clone())
            .collect();
        first_lost.sort();
        if joinable && no_pre_loss {
            if first_loss.is_none() {
                reasons.push(TrialReason::NoLossAfterPressure);
            } else if first_lost != run.expected {
                reasons.push(TrialReason::UnexpectedFirstLoss {
                    lost: first_lost.clone(),
                });
            }
        }
        reasons.sort();
        Ok(TrialResult {
            events: events.display().to_string(),
            pressure_starts_at: p,
            observation_point: t.observe_at,
            first_loss,
            first_lost,
            loss_after_pressure: first_losses.into_iter().collect(),
            joinable_before_pressure: joinable,
            no_pre_pressure_loss: no_pre_loss,
            followed_priority: reasons.is_empty(),
            reasons,
        })
    }
}

/// What one tracked claim's joined result says about a trial.
struct ClaimTrial {
    /// Joinable, and materialized just before pressure started.
    joinable: bool,
    /// Joinable, and not lost before pressure started.
    kept_before_pressure: bool,
    /// Its first loss at or after pressure started.
    first_loss: Option<EventRef>,
    reasons: Vec<TrialReason>,
}

/// One tracked claim in a trial whose pressure starts at event `p`; `declared` is
/// the priority the run gives it.
fn claim_trial(c: &ClaimResult, p: u64, declared: Option<u32>) -> ClaimTrial {
    let claim = &c.claim_id;
    if let Verdict::InsufficientEvidence { reasons: rs } = &c.verdict {
        return ClaimTrial {
            joinable: false,
            kept_before_pressure: false,
            first_loss: None,
            reasons: vec![TrialReason::ClaimNotJoinable {
                claim: claim.clone(),
                reasons: rs.iter().map(|r| r.name()).collect(),
            }],
        };
    }
    let mut reasons = Vec::new();
    let joinable = held_before(c, p);
    if !joinable {
        reasons.push(TrialReason::NotMaterializedBeforePressure {
            claim: claim.clone(),
        });
    }
    let lost = |tr: &&Transition| tr.change == Change::Lost;
    let lost_before = c
        .transitions
        .iter()
        .filter(lost)
        .find(|tr| tr.event.index < p);
    if let Some(l) = lost_before {
        reasons.push(TrialReason::LostBeforePressure {
            claim: claim.clone(),
            event: l.event,
        });
    }
    if let Some(declared) = declared
        && !c.observed_priorities.is_empty()
        && c.observed_priorities != [declared]
    {
        reasons.push(TrialReason::PriorityNotObservedAsDeclared {
            claim: claim.clone(),
            declared,
            observed: c.observed_priorities.clone(),
        });
    }
    ClaimTrial {
        joinable,
        kept_before_pressure: lost_before.is_none(),
        first_loss: c
            .transitions
            .iter()
            .filter(lost)
            .find(|tr| tr.event.index >= p)
            .map(|tr| tr.event),
        reasons,
    }
}

/// Whether the predicate held just before event `p` (pressure start).
fn held_before(c: &ClaimResult, p: u64) -> bool {
    c.transitions
        .iter()
        .rev()
        .find(|tr| tr.event.index < p)
        .is_some_and(|tr| tr.change == Change::Materialized)
}

fn atoms(runs: &[RunResult], design_ok: bool) -> Vec<Atom> {
    let anchors: Vec<String> = {
        let mut a: Vec<String> = runs
            .iter()
            .flat_map(|r| r.trials.iter().map(|t| t.events.clone()))
            .collect();
        a.sort();
        a.dedup();
        a
    };
    let tally = |f: &dyn Fn(&TrialResult) -> (usize, usize)| {
        let mut per_run = BTreeMap::new();
        let (mut pass, mut total) = (0, 0);
        for r in runs {
            let (mut p, mut t) = (0, 0);
            for tr in &r.trials {
                let (a, b) = f(tr);
                p += a;
                t += b;
            }
            per_run.insert(r.run, format!("{p}/{t}"));
            pass += p;
            total += t;
        }
        (pass, total, per_run)
    };
    let mk = |atom,
              (pass, total, per_run): (usize, usize, BTreeMap<RunKind, String>),
              extra: bool| Atom {
        atom,
        observed: extra && total > 0 && pass == total,
        count: format!("{pass}/{total}"),
        per_run,
        anchors: anchors.clone(),
    };
    let expected_by_trial: BTreeMap<&str, &Vec<ClaimId>> = runs
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .map(move |t| (t.events.as_str(), &r.expected_first_lost))
        })
        .collect();
    vec![
        mk(
            AtomKind::PressureControlsObserved,
            tally(&|t| (usize::from(t.followed_priority), 1)),
            design_ok,
        ),
        mk(
            AtomKind::BothClaimsJoinableBeforePressure,
            tally(&|t| (usize::from(t.joinable_before_pressure), 1)),
            true,
        ),
        mk(
            AtomKind::NoPrePressureClaimLoss,
            tally(&|t| (usize::from(t.no_pre_pressure_loss), 1)),
            true,
        ),
        mk(
            AtomKind::MaterializationChangesReconstructable,
            tally(&|t| {
                let expected = expected_by_trial
                    .get(t.events.as_str())
                    .map_or(&[][..], |e| e.as_slice());
                let hit = expected
                    .iter()
                    .filter(|c| {
                        t.joinable_before_pressure
                            && t.loss_after_pressure.get(*c).is_some_and(Option::is_some)
                    })
                    .count();
                (hit, expected.len())
            }),
            true,
        ),
    ]
}

impl PressureReport {
    /// The atom of one kind.
    pub fn atom(&self, kind: AtomKind) -> Option<&Atom> {
        self.atoms.iter().find(|a| a.atom == kind)
    }
}
