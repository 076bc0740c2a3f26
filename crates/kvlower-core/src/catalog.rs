//! The mode catalog (`modes/modes.yaml`): obligation bundles, what each
//! adapter depth may supply and under which preconditions, which signals
//! suggest which modes, and the forbidden lowerings.
//!
//! [`CatalogDoc`] is the file as written; [`Catalog::new`] validates it into a
//! form the judgment can rely on (every mode and depth described, no
//! enforcement obligation reachable through telemetry, …).

use std::collections::BTreeSet;

use crate::vocab::{Atom, Depth, Mode, Obligation, Precondition, Signal, TraceGate};

pub use crate::catalog_doc::{
    CatalogDoc, DepthSpec, ForbiddenLowering, JoinDocumentSpec, ModeSpec, SignalSpec,
    TELEMETRY_JOIN_PRECONDITIONS,
};

/// O\[m\]: the obligations a mode needs, never empty.
///
/// An empty bundle would make Lower hold vacuously (every obligation of
/// nothing is supplied), so a row would be `native_sound` on no evidence:
/// the type makes that state unrepresentable instead of relying on a check
/// far from the judgment. Only [`Bundle::new`] builds one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle(Vec<Obligation>);

impl Bundle {
    /// The bundle of these obligations, or `None` when there are none.
    pub fn new(obligations: Vec<Obligation>) -> Option<Bundle> {
        (!obligations.is_empty()).then_some(Bundle(obligations))
    }

    /// The obligations, in catalog order (at least one).
    pub fn as_slice(&self) -> &[Obligation] {
        &self.0
    }
}

impl std::ops::Deref for Bundle {
    type Target = [Obligation];

    fn deref(&self) -> &[Obligation] {
        &self.0
    }
}

/// What the judgment needs of one mode, from the effective catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeRules {
    /// O\[m\].
    pub bundle: Bundle,
    /// Obligations whose absence makes a proposed mapping `rejected`.
    pub enforcement_critical: Vec<Obligation>,
    /// Observed atoms the mode needs beyond its obligations.
    pub required_atoms: Vec<Atom>,
}

/// A catalog problem, with the YAML path it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogError {
    pub path: String,
    pub message: String,
}

/// A validated catalog: total over modes, depths and signals.
///
/// It keeps the document as written (for reports and `catalog diff`) and
/// judges under its meet with the built-in baseline ([`crate::baseline`]), so
/// a weakened file can never raise a label, even where its finding is ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    doc: CatalogDoc,
    effective: CatalogDoc,
    /// The effective rules of every mode, indexed by [`Mode::index`]: an
    /// array of [`Mode::COUNT`] entries, so [`Catalog::mode`] is total.
    modes: [ModeRules; Mode::COUNT],
}

impl Catalog {
    /// Validates a catalog document; returns every problem, not just the first.
    pub fn new(doc: CatalogDoc) -> Result<Catalog, Vec<CatalogError>> {
        let mut errors = Vec::new();
        let mut err = |path: String, message: String| errors.push(CatalogError { path, message });

        for mode in Mode::ALL {
            let Some(spec) = doc.modes.get(mode) else {
                err("modes".into(), format!("mode `{mode}` has no bundle"));
                continue;
            };
            let path = format!("modes.{mode}");
            if spec.obligations.is_empty() {
                err(
                    format!("{path}.obligations"),
                    "a bundle needs at least one obligation".into(),
                );
            }
            report_duplicates(&spec.obligations, &format!("{path}.obligations"), &mut err);
            let mut atoms = BTreeSet::new();
            for a in &spec.required_atoms {
                if !atoms.insert(a) {
                    err(
                        format!("{path}.required_atoms"),
                        format!("`{a}` is listed twice"),
                    );
                }
            }
            for o in &spec.enforcement_critical {
                if !spec.obligations.contains(o) {
                    err(
                        format!("{path}.enforcement_critical"),
                        format!("`{o}` is enforcement-critical but not in the bundle"),
                    );
                }
            }
        }
        for depth in Depth::ALL.iter().filter(|d| **d != Depth::None) {
            let Some(spec) = doc.depths.get(depth) else {
                err("depths".into(), format!("depth `{depth}` is not described"));
                continue;
            };
            let path = format!("depths.{depth}");
            if spec.supplies_any != (*depth == Depth::BackendPatch) {
                err(
                    format!("{path}.supplies_any"),
                    "only backend_patch may supply any obligation".into(),
                );
            }
            report_duplicates(&spec.supplies, &format!("{path}.supplies"), &mut err);
            for o in spec.conditional.keys() {
                if !spec.supplies_any && !spec.supplies.contains(o) {
                    err(
                        format!("{path}.conditional.{o}"),
                        format!("`{o}` is conditional but the depth does not supply it"),
                    );
                }
            }
            if *depth == Depth::TelemetryJoin {
                // Fail-closed rule 6, checked on the data as well as in the judgment.
                for o in spec.supplies.iter().filter(|o| o.is_enforcement()) {
                    err(
                        format!("{path}.supplies"),
                        format!(
                            "telemetry cannot create enforcement, so telemetry_join may not supply `{o}`"
                        ),
                    );
                }
                let listed: BTreeSet<&Precondition> = spec.preconditions.iter().collect();
                let table5: BTreeSet<&Precondition> = TELEMETRY_JOIN_PRECONDITIONS.iter().collect();
                if listed != table5 {
                    err(
                        format!("{path}.preconditions"),
                        "telemetry_join needs exactly the nine preconditions of paper Table 5"
                            .into(),
                    );
                }
            }
            let mut seen = BTreeSet::new();
            for p in &spec.preconditions {
                if !seen.insert(p) {
                    err(
                        format!("{path}.preconditions"),
                        format!("`{p}` is listed twice"),
                    );
                }
            }
            if spec.preconditions.is_empty() {
                err(
                    format!("{path}.preconditions"),
                    "every adapter depth has a trust boundary: list its preconditions".into(),
                );
            }
        }
        if doc.depths.contains_key(&Depth::None) {
            err(
                "depths.none".into(),
                "`none` is native evidence only and takes no description".into(),
            );
        }
        for gate in TraceGate::ALL {
            match doc.trace_gates.get(gate) {
                None => err(
                    "trace_gates".into(),
                    format!("gate `{gate}` has no witness list"),
                ),
                Some(w) => report_duplicates(w, &format!("trace_gates.{gate}"), &mut err),
            }
        }
        let join = &doc.join_documents;
        if join.depth == Depth::None {
            err(
                "join_documents.depth".into(),
                "a join document is adapter evidence; it cannot sit at depth `none`".into(),
            );
        }
        report_duplicates(&join.witnesses, "join_documents.witnesses", &mut err);
        for o in join.witnesses.iter().filter(|o| o.is_enforcement()) {
            err(
                "join_documents.witnesses".into(),
                format!(
                    "telemetry cannot create enforcement, so a join document may not witness `{o}`"
                ),
            );
        }
        // A kind without an outcome: the floor names one for its own kinds (the meet); a
        // kind of the catalog's own without one counts no run (fail closed).
        for (gate, rule) in &doc.campaign_controls {
            for (kind, o) in &rule.outcomes {
                if !crate::baseline::CONTROL_OUTCOME_NAMES.contains(&o.as_str()) {
                    err(
                        format!("campaign_controls.{gate}.outcomes"),
                        format!(
                            "`{o}` (control kind `{kind}`) is not an outcome kvlower derives from engine truth"
                        ),
                    );
                }
            }
        }
        let mut pinned = std::collections::BTreeSet::new();
        for pin in &doc.judging_code {
            let hex = pin.sha256.len() == 64
                && pin
                    .sha256
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !hex {
                err(
                    "judging_code".into(),
                    format!("the pin of `{}` is not 64 lowercase hex digits", pin.path),
                );
            }
            let path_ok = !pin.path.is_empty()
                && !pin.path.starts_with('/')
                && !crate::text::has_control(&pin.path)
                && pin
                    .path
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != "..");
            if !path_ok {
                err(
                    "judging_code".into(),
                    format!("`{}` is not a repository-relative path", pin.path),
                );
            }
            if !pinned.insert(pin.path.as_str()) {
                err(
                    "judging_code".into(),
                    format!("`{}` is pinned twice", pin.path),
                );
            }
        }
        for signal in Signal::ALL {
            if !doc.signals.contains_key(signal) {
                err(
                    "signals".into(),
                    format!("signal `{signal}` is not described"),
                );
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let effective = crate::baseline::meet(&doc);
        let modes = mode_table(&effective)?;
        Ok(Catalog {
            doc,
            effective,
            modes,
        })
    }

    /// The document this catalog was validated from, as written.
    pub fn doc(&self) -> &CatalogDoc {
        &self.doc
    }

    /// What the judgment uses: the document's meet with the baseline (equal
    /// to [`Catalog::doc`] on every rule when the file does not weaken it).
    pub fn effective(&self) -> &CatalogDoc {
        &self.effective
    }

    /// Every difference of the file from the built-in baseline (weakenings first).
    pub fn changes(&self) -> Vec<crate::baseline::CatalogChange> {
        crate::baseline::compare(&self.doc)
    }

    /// SHA-256 (hex) of the canonical JSON serialization of the document as
    /// written: what `results/lowering-matrix.json` records.
    pub fn digest(&self) -> String {
        digest(&self.doc)
    }

    /// O\[m\]: total and never empty (see [`Bundle`]).
    pub fn bundle(&self, mode: Mode) -> &Bundle {
        &self.mode(mode).bundle
    }

    /// The effective rules of `mode`. Total: [`Catalog::new`] refuses a
    /// catalog that leaves a mode without rules.
    pub fn mode(&self, mode: Mode) -> &ModeRules {
        // `index() < Mode::COUNT`, the array's length.
        &self.modes[mode.index()]
    }

    /// What an adapter depth may supply and under which preconditions;
    /// `None` for [`Depth::None`], which is native evidence and has no rules.
    pub fn depth(&self, depth: Depth) -> Option<&DepthSpec> {
        self.effective.depths.get(&depth)
    }

    /// Whether a reproducing join evidence document may witness `obligation`.
    pub fn join_document_witnesses(&self, obligation: Obligation) -> bool {
        self.effective
            .join_documents
            .witnesses
            .contains(&obligation)
    }

    /// The depth a join evidence document must be used at.
    pub fn join_document_depth(&self) -> Depth {
        self.effective.join_documents.depth
    }

    /// Whether `depth` may ever supply `obligation` (before preconditions).
    pub fn depth_may_supply(&self, depth: Depth, obligation: Obligation) -> bool {
        self.depth(depth)
            .is_some_and(|s| s.supplies_any || s.supplies.contains(&obligation))
    }

    /// Whether a verdict of `gate` can witness `obligation`.
    pub fn gate_witnesses(&self, gate: TraceGate, obligation: Obligation) -> bool {
        self.effective
            .trace_gates
            .get(&gate)
            .is_some_and(|w| w.contains(&obligation))
    }

    /// What a gate campaign must show to witness `gate` (`None`: a campaign cannot).
    pub fn campaign_controls(
        &self,
        gate: TraceGate,
    ) -> Option<&crate::catalog_doc::CampaignControls> {
        self.effective.campaign_controls.get(&gate)
    }

    /// Modes a signal makes plausible.
    pub fn signal_suggests(&self, signal: Signal, mode: Mode) -> bool {
        self.effective
            .signals
            .get(&signal)
            .is_some_and(|s| s.suggests.contains(&mode))
    }

    /// The forbidden lowering that matches, if any.
    pub fn forbidden(&self, primitive: Signal, mode: Mode) -> Option<&ForbiddenLowering> {
        self.effective
            .forbidden_lowerings
            .iter()
            .find(|f| f.primitive == primitive && f.mode == mode)
    }
}

/// The rules of every mode, in [`Mode::ALL`] order, from the effective
/// document. [`Catalog::new`] has checked the written document; the meet with
/// the baseline only adds obligations, so this fails only if that ever stops
/// being true — and then the catalog is refused rather than judged open.
fn mode_table(effective: &CatalogDoc) -> Result<[ModeRules; Mode::COUNT], Vec<CatalogError>> {
    let mut errors = Vec::new();
    let mut rules = Vec::with_capacity(Mode::COUNT);
    for mode in Mode::ALL {
        let bundle = effective
            .modes
            .get(mode)
            .and_then(|spec| Some((spec, Bundle::new(spec.obligations.clone())?)));
        match bundle {
            Some((spec, bundle)) => rules.push(ModeRules {
                bundle,
                enforcement_critical: spec.enforcement_critical.clone(),
                required_atoms: spec.required_atoms.clone(),
            }),
            None => errors.push(CatalogError {
                path: format!("modes.{mode}.obligations"),
                message: "a bundle needs at least one obligation".into(),
            }),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    <[ModeRules; Mode::COUNT]>::try_from(rules).map_err(|_| {
        vec![CatalogError {
            path: "modes".into(),
            message: "every mode needs a bundle".into(),
        }]
    })
}

fn report_duplicates(list: &[Obligation], path: &str, err: &mut impl FnMut(String, String)) {
    let mut seen = BTreeSet::new();
    for o in list {
        if !seen.insert(o) {
            err(path.to_string(), format!("`{o}` is listed twice"));
        }
    }
}

/// SHA-256 (hex) of a catalog document's canonical serialization: compact
/// JSON of the typed document, whose maps are sorted (BTreeMap) and whose lists
/// keep their written order. Comments, layout and key order in the file do not
/// change it.
pub fn digest(doc: &CatalogDoc) -> String {
    use sha2::Digest;
    let canonical = serde_json::to_vec(doc).unwrap_or_default();
    let hash = sha2::Sha256::digest(&canonical);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of `bytes`, as 64 lowercase hex digits (pure: the caller read the bytes).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_bundle_cannot_be_built() {
        assert_eq!(Bundle::new(Vec::new()), None);
        let one = Bundle::new(vec![Obligation::ClaimIdentity]).map(|b| b.to_vec());
        assert_eq!(one, Some(vec![Obligation::ClaimIdentity]));
    }

    /// Every mode of a valid catalog has a non-empty bundle: emptying or
    /// removing any one mode's bundle is refused, never judged vacuously.
    #[test]
    fn every_mode_has_a_non_empty_bundle_or_the_catalog_is_refused() {
        let base = crate::baseline::doc();
        let catalog = Catalog::new(base.clone()).expect("the baseline is valid");
        for &mode in Mode::ALL {
            assert!(!catalog.bundle(mode).is_empty(), "{mode}");
            assert_eq!(
                catalog.bundle(mode).as_slice(),
                catalog.effective().modes[&mode].obligations.as_slice()
            );
            let mut emptied = base.clone();
            if let Some(spec) = emptied.modes.get_mut(&mode) {
                spec.obligations.clear();
                spec.enforcement_critical.clear();
            }
            assert!(Catalog::new(emptied).is_err(), "{mode} emptied");
            let mut removed = base.clone();
            removed.modes.remove(&mode);
            assert!(Catalog::new(removed).is_err(), "{mode} removed");
        }
    }

    /// The table behind the total [`Catalog::mode`] is refused, not filled
    /// with defaults, when the effective document lacks a mode or a bundle.
    #[test]
    fn the_mode_table_refuses_a_missing_or_empty_mode() {
        let base = crate::baseline::doc();
        assert!(mode_table(&base).is_ok());
        for &mode in Mode::ALL {
            let mut removed = base.clone();
            removed.modes.remove(&mode);
            let errors = mode_table(&removed).err().unwrap_or_default();
            assert_eq!(errors.len(), 1, "{mode} removed");
            let mut emptied = base.clone();
            if let Some(spec) = emptied.modes.get_mut(&mode) {
                spec.obligations.clear();
            }
            let errors = mode_table(&emptied).err().unwrap_or_default();
            assert_eq!(errors[0].path, format!("modes.{mode}.obligations"));
        }
    }
}
