//! Inert evidence: what can never count, whatever the row, reported by `check` as a
//! warning so its author learns why (it never changes a label).

use super::*;

/// Evidence that can never count, whatever the row: the judgment already ignores
/// it (so it never changes a label), and `check` reports it as a warning so that
/// its author learns why. Each names the YAML path of what is inert and the
/// judgment's own reason ([`Defeat`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InertEvidence {
    /// YAML path of the item, adapter or signal (`adapters[0]`, `native[2].anchor`).
    pub path: String,
    pub why: Inert,
}

/// Why a piece of evidence is inert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inert {
    /// An adapter whose trust-boundary preconditions are not all anchored: none of
    /// its `supported` items can supply anything ([`Defeat::PreconditionsUnmet`]).
    PreconditionsUnmet {
        depth: Depth,
        missing: Vec<Precondition>,
        anchored: usize,
        items: usize,
    },
    /// A `supported`, trace-scoped item whose anchor does not state
    /// `preserves_order` / `preserves_claim_scope` ([`Defeat::Unanchored`]).
    TraceScopeNotPreserved { defects: Vec<AnchorDefect> },
    /// A `supported` item whose scope is docs or source reading ([`Defeat::ScopeTooWeak`]).
    ScopeTooWeak { scope: crate::vocab::Scope },
    /// A signal that suggests `mode` and that the catalog lists as a forbidden
    /// lowering of it, which no proposal offers as that mode: as a signal it can
    /// only make the row `approximate`; the forbidden lowering never counts.
    ForbiddenSignalNotProposed { signal: Signal, mode: Mode },
}

/// The inert evidence of `descriptor` (see [`InertEvidence`]), in document order.
/// Uses the judgment's own checks: [`unmet_preconditions`], the structural anchor
/// defects, [`Scope::is_runtime_observed`](crate::vocab::Scope::is_runtime_observed)
/// and [`Catalog::forbidden`].
pub fn inert_evidence(
    catalog: &Catalog,
    descriptor: &Descriptor,
    env: &dyn Environment,
) -> Vec<InertEvidence> {
    let mut found = Vec::new();
    let items = |list: &[EvidenceItem], prefix: &str, found: &mut Vec<_>| {
        for (i, item) in list.iter().enumerate() {
            if item.status != Status::Supported {
                continue;
            }
            if !item.scope.is_runtime_observed() {
                found.push(InertEvidence {
                    path: format!("{prefix}[{i}].scope"),
                    why: Inert::ScopeTooWeak { scope: item.scope },
                });
                continue;
            }
            let defects: Vec<AnchorDefect> = item
                .anchor
                .defects(Some(item.scope))
                .into_iter()
                .filter(|d| {
                    matches!(
                        d,
                        AnchorDefect::TraceOrderNotPreserved
                            | AnchorDefect::TraceClaimScopeNotPreserved
                    )
                })
                .collect();
            if !defects.is_empty() {
                found.push(InertEvidence {
                    path: format!("{prefix}[{i}].anchor"),
                    why: Inert::TraceScopeNotPreserved { defects },
                });
            }
        }
    };
    items(&descriptor.native, "native", &mut found);
    for (ai, adapter) in descriptor.adapters.iter().enumerate() {
        let supported = adapter
            .evidence
            .iter()
            .filter(|e| e.status == Status::Supported)
            .count();
        let missing = unmet_preconditions(catalog, adapter, &descriptor.runtime, env);
        if supported > 0 && !missing.is_empty() {
            let required = catalog
                .depth(adapter.depth)
                .map_or(0, |spec| spec.preconditions.len());
            found.push(InertEvidence {
                path: format!("adapters[{ai}]"),
                why: Inert::PreconditionsUnmet {
                    depth: adapter.depth,
                    anchored: required.saturating_sub(missing.len()),
                    missing,
                    items: supported,
                },
            });
        }
        items(
            &adapter.evidence,
            &format!("adapters[{ai}].evidence"),
            &mut found,
        );
    }
    for (si, s) in descriptor.signals.iter().enumerate() {
        for mode in Mode::ALL.iter() {
            if catalog.signal_suggests(s.signal, *mode)
                && catalog.forbidden(s.signal, *mode).is_some()
                && !descriptor
                    .proposals
                    .iter()
                    .any(|p| p.primitive == s.signal && p.mode == *mode)
            {
                found.push(InertEvidence {
                    path: format!("signals[{si}]"),
                    why: Inert::ForbiddenSignalNotProposed {
                        signal: s.signal,
                        mode: *mode,
                    },
                });
            }
        }
    }
    found
}

impl std::fmt::Display for Inert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |v: Vec<String>| v.join(", ");
        match self {
            Inert::PreconditionsUnmet {
                depth,
                missing,
                anchored,
                items,
            } => write!(
                f,
                "{depth} adapter has {anchored} of its {} preconditions anchored (missing: {}); none of its {items} supported item(s) can count",
                anchored + missing.len(),
                list(missing.iter().map(ToString::to_string).collect())
            ),
            Inert::TraceScopeNotPreserved { defects } => write!(
                f,
                "trace-scoped evidence never counts unless its anchor states {}",
                list(
                    defects
                        .iter()
                        .map(|d| match d {
                            AnchorDefect::TraceOrderNotPreserved =>
                                "`preserves_order: true`".to_string(),
                            AnchorDefect::TraceClaimScopeNotPreserved => {
                                "`preserves_claim_scope: true`".to_string()
                            }
                            other => other.to_string(),
                        })
                        .collect()
                )
            ),
            Inert::ScopeTooWeak { scope } => write!(
                f,
                "a `supported` item with scope `{scope}` never counts: {}",
                Defeat::ScopeTooWeak { scope: *scope }
            ),
            Inert::ForbiddenSignalNotProposed { signal, mode } => write!(
                f,
                "signal `{signal}` suggests {mode} but is a forbidden lowering of it, and no proposal offers it as {mode}: it can make the {mode} row `approximate`, never `rejected`"
            ),
        }
    }
}
