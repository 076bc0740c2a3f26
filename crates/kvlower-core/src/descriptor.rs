//! A runtime descriptor: the curated, anchored evidence about one runtime
//! (one YAML file in `capabilities/`). Format: `docs/descriptor-format.md`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::vocab::{
    Ambiguity, Atom, Depth, Mode, Obligation, Precondition, Scope, Signal, Status, TraceGate,
};

/// One runtime's evidence, as written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    /// Which runtime and build the evidence is about.
    pub runtime: RuntimeIdentity,
    /// Evidence the unmodified backend supplies by itself.
    #[serde(default)]
    pub native: Vec<EvidenceItem>,
    /// Represented adapters (or a backend patch), each at one depth.
    #[serde(default)]
    pub adapters: Vec<Adapter>,
    /// Observed facts beyond obligations (pressure controls, …).
    #[serde(default)]
    pub atoms: Vec<AtomEvidence>,
    /// Primitives that make rows plausible; they never satisfy obligations.
    #[serde(default)]
    pub signals: Vec<SignalEvidence>,
    /// Primitives the descriptor (or a naive reading of it) offers *as* a mode.
    #[serde(default)]
    pub proposals: Vec<Proposal>,
    /// What the rows of this runtime do not claim.
    pub non_claims: NonClaims,
    /// Why positive rows may rest on cited anchors (the paper, a public source)
    /// that `check` cannot re-run. Without it a `cited` positive row is a
    /// finding (`cited-positive`): a positive a reviewer cannot reproduce must be
    /// allowed in the open, in the descriptor's own diff. `--require-verified`
    /// ignores it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    pub allow_cited_positives: Option<String>,
    /// Warnings of this descriptor its authors have read and accept, each with
    /// why: `check` no longer counts them (`--deny-warnings` passes) and lists them
    /// as acknowledged. An acknowledgement that matches no warning is itself a
    /// warning (`unused-acknowledgement`); an error can never be acknowledged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acknowledge: Vec<Acknowledgement>,
}

/// One acknowledged warning (`acknowledge:` in a descriptor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Acknowledgement {
    /// The warning's code as `check` prints it (`signal-not-proposed`, ...;
    /// `kvlower codes` marks the warnings).
    pub code: String,
    /// The YAML path the warning is at, as `check` prints it (`signals[2]`).
    pub path: String,
    /// Why the warning is right to stay (visible text; shown to reviewers).
    pub reason: String,
}

// The schema's shape only: `modes_or_all` reads `modes:`, so that a misspelt mode in
// the list is serde's "unknown variant" at its own index (`modes[1]`, an
// `unknown-name` with a did-you-mean), not "data did not match any variant of
// untagged enum", which is all a derived untagged enum can say.
/// `modes:` as written: a list of modes, or `all` (every mode, said explicitly).
#[derive(schemars::JsonSchema)]
#[schemars(untagged)]
#[expect(
    dead_code,
    reason = "the schema's shape of `modes:`; modes_or_all reads it"
)]
enum ModesInput {
    All(AllModes),
    Only(Vec<Mode>),
}

/// The word `all`.
#[derive(schemars::JsonSchema)]
#[expect(
    dead_code,
    reason = "the schema's shape of `all`; modes_or_all reads it"
)]
enum AllModes {
    #[schemars(rename = "all")]
    All,
}

fn modes_or_all<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Mode>, D::Error> {
    struct ModesVisitor;
    impl<'de> serde::de::Visitor<'de> for ModesVisitor {
        type Value = Vec<Mode>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("`all` or a list of modes")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Vec<Mode>, E> {
            if v == "all" {
                Ok(Mode::ALL.to_vec())
            } else {
                Err(E::invalid_value(serde::de::Unexpected::Str(v), &self))
            }
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Mode>, A::Error> {
            let mut modes = Vec::new();
            while let Some(mode) = seq.next_element::<Mode>()? {
                modes.push(mode);
            }
            Ok(modes)
        }
    }
    d.deserialize_any(ModesVisitor)
}

/// Which runtime, which build, and what kind of source the evidence comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    /// The runtime's name as shown in results (visible characters, no control character).
    #[serde(deserialize_with = "strict::string")]
    pub name: String,
    /// A release version or a source commit.
    #[serde(deserialize_with = "strict::string")]
    pub version: String,
    /// What the evidence was read from (a source tree, a release container, ...).
    pub source: SourceKind,
    /// The date (`YYYY-MM-DD`, not in the future) a person last checked this
    /// descriptor against its runtime's public sources, so a reader of the matrix
    /// can tell how current each row is. Old can be right: age is no finding.
    #[serde(deserialize_with = "strict::string")]
    pub reviewed: String,
    /// The exact runtime components this descriptor describes: what an evidence
    /// document must record, as the same set, to anchor anything here
    /// (`docs/descriptor-format.md`, "Runtime identity").
    pub identity: Vec<crate::identity::RuntimeComponent>,
    /// Free text about the runtime or build (shown in reports).
    #[serde(default)]
    pub note: String,
}

/// What the descriptor's evidence was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    SourceTree,
    ReleaseContainer,
    Documentation,
    PatchedSource,
    Simulator,
}

/// One obligation as a piece of evidence claims it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvidenceItem {
    /// The obligation this item is evidence for.
    pub obligation: Obligation,
    /// How far the evidence establishes it; only `supported` counts (fail-closed rule 2).
    pub status: Status,
    /// Where the fact was observed: docs, source, or a kind of trace.
    pub scope: Scope,
    /// Where the evidence can be checked.
    pub anchor: Anchor,
    /// The modes whose path this evidence exercised, or `all`. A run that
    /// exercised the hard-claim path is no witness for the offload path. Left
    /// out (empty), a `supported` item supports no mode — omission must not
    /// widen evidence — and a `missing` item contradicts every mode (which only
    /// lowers labels).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "modes_or_all"
    )]
    #[schemars(with = "ModesInput")]
    pub modes: Vec<Mode>,
    /// What the evidence shows, in a sentence (shown by `kvlower explain`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// What carries the obligation in the runtime itself, as the anchored
    /// source names it: a field, event, metric or API (`BlockStored.medium`,
    /// `num_cached_tokens`, `/slots?action=restore`). Shown by the matrix
    /// (`carried_by` in `results/lowering-matrix.json`, the page's drill-down);
    /// it never changes a label: only the anchor is evidence.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub carried_by: Vec<String>,
}

/// An adapter (or backend patch) at one depth of the ladder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Adapter {
    /// The rung of the adapter-depth ladder this adapter sits at (never `none`).
    pub depth: Depth,
    /// What the adapter is, in a few words (visible characters, no control character).
    #[serde(deserialize_with = "strict::string")]
    pub name: String,
    /// The depth's trust-boundary preconditions, each with its anchor.
    #[serde(default)]
    pub preconditions: BTreeMap<Precondition, Anchor>,
    /// Known ambiguities of this adapter; any one voids its evidence.
    #[serde(default)]
    pub ambiguities: Vec<Ambiguity>,
    /// The obligations the adapter supplies, each an anchored item.
    #[serde(default)]
    pub evidence: Vec<EvidenceItem>,
}

/// An observed atom with its anchor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AtomEvidence {
    /// The observed atom.
    pub atom: Atom,
    /// Where it was observed; atoms count only from a trace (fail-closed rule 3).
    pub scope: Scope,
    /// Where the observation can be checked.
    pub anchor: Anchor,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// What the observation shows.
    pub note: String,
}

/// An approximation signal the runtime exposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SignalEvidence {
    /// The primitive the runtime exposes.
    pub signal: Signal,
    /// Where the primitive can be seen (a static source is enough).
    pub anchor: Anchor,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    /// What the primitive is.
    pub note: String,
}

/// A primitive offered as a mode (e.g. active no-evict as hard_protected).
/// Proposals are what make a failing row `rejected` rather than `approximate`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Proposal {
    /// The primitive offered.
    pub primitive: Signal,
    /// The mode it is offered as.
    pub mode: Mode,
    /// The shallowest row depth the proposal is made at (default: native).
    #[serde(default = "depth_none")]
    pub depth: Depth,
    /// Who offers it, or why a naive reading would.
    #[serde(default)]
    pub note: String,
}

fn depth_none() -> Depth {
    Depth::None
}

/// The calibrated non-claims of a runtime's rows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NonClaims {
    /// Applies to every row without a mode-specific non-claim.
    #[serde(deserialize_with = "strict::string")]
    pub default: String,
    /// Mode-specific non-claims, replacing `default` for that mode's rows.
    #[serde(default, deserialize_with = "strict::string_map")]
    pub modes: BTreeMap<Mode, String>,
}

impl NonClaims {
    pub fn for_mode(&self, mode: Mode) -> &str {
        self.modes.get(&mode).map_or(&self.default, String::as_str)
    }
}

crate::names! {
    /// What kind of thing an anchor points at.
    #[derive(
        Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema,
    )]
    pub enum AnchorKind {
        /// A result the paper reports from runs we cannot repeat here: needs
        /// `section` (and names the artifact `path` the paper gives, if any).
        Paper = "paper",
        /// A public repository file: needs `repository`, `commit` and `path`.
        PublicSource = "public_source",
        /// A dated public documentation page: needs `url` and `retrieved`.
        DocsPage = "docs_page",
        /// A file in this repository: needs `path` (relative to the root).
        RepoFile = "repo_file",
    }
}

impl AnchorKind {
    /// The anchor fields that name a target (every other field is common to all kinds).
    pub const ALL_FIELDS: [&'static str; 6] = [
        "repository",
        "commit",
        "path",
        "section",
        "url",
        "retrieved",
    ];

    /// The target fields this kind needs, each with a visible character.
    /// One table for [`Anchor::defects`] and the generated JSON Schema.
    pub fn required_fields(self) -> &'static [&'static str] {
        match self {
            AnchorKind::Paper => &["section"],
            AnchorKind::PublicSource => &["repository", "commit", "path"],
            AnchorKind::DocsPage => &["url", "retrieved"],
            AnchorKind::RepoFile => &["path"],
        }
    }

    /// The target fields this kind may have; any other is `FieldNotForKind`.
    pub fn allowed_fields(self) -> &'static [&'static str] {
        match self {
            AnchorKind::Paper => &["section", "path"],
            AnchorKind::PublicSource => &["repository", "commit", "path"],
            AnchorKind::DocsPage => &["url", "retrieved", "section"],
            AnchorKind::RepoFile => &["path"],
        }
    }
}

/// Where a piece of evidence can be checked.
///
/// Fields are optional in the type so that an incomplete anchor parses and is
/// *judged* unanchored (fail closed) as well as reported by `check`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Anchor {
    /// What the anchor points at; decides which other fields it needs and allows.
    pub kind: Option<AnchorKind>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    /// `public_source`: the repository, as `owner/name`.
    pub repository: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    /// `public_source`: the commit read, 7 to 40 hexadecimal digits.
    pub commit: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    /// `public_source`, `repo_file` (and optionally `paper`): a relative path
    /// inside the repository (or artifact) named; no `..` segment, no leading `/`.
    pub path: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    /// `paper`: the section, table or appendix cited (`§6.1`, `§9 Table 9`,
    /// `Appendix A`); optional on `docs_page`.
    pub section: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    /// `docs_page`: the page's `http(s)://` URL.
    pub url: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "strict::opt_string"
    )]
    /// `docs_page`: the date the page was read, `YYYY-MM-DD`, not in the future.
    pub retrieved: Option<String>,
    /// What the anchored source shows (required; a placeholder or a bare TODO anchors nothing).
    #[serde(default, deserialize_with = "strict::string")]
    pub note: String,
    /// For trace-scoped evidence: the anchored trace keeps event order.
    #[serde(default, skip_serializing_if = "is_false")]
    pub preserves_order: bool,
    /// For trace-scoped evidence: the anchored trace keeps claim scope.
    #[serde(default, skip_serializing_if = "is_false")]
    pub preserves_claim_scope: bool,
    /// For a `repo_file` trace: the gate verdict this evidence rests on.
    /// `kvlower check` re-runs the gate; a disagreement voids the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<ClaimedVerdict>,
    /// For a `repo_file` gate campaign document: the patch's and the recorder's source
    /// files the campaign must name (`source.files`, docs/conformance.md), as the trust
    /// root says them. A campaign naming other files (another recorder) anchors nothing.
    /// For a join document whose registry identity is patched: the patch's files, whose
    /// sha256 set must be the one its capture header records (docs/descriptor-format.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_files: Option<Vec<String>>,
}

/// A gate verdict claimed for one claim of an anchored trace file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimedVerdict {
    /// The claim the verdict is about; absent for a trace's unclaimed events.
    #[serde(default)]
    pub claim_id: Option<String>,
    /// The gate of `kvlower gate` whose verdict is claimed.
    pub gate: TraceGate,
    /// Whether the gate passes for that claim.
    pub pass: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Deserializers for the text fields that must not be blank: they take a string
/// and nothing else, so `allow_cited_positives: true` or `note: 42` is a
/// `wrong-type` finding ("invalid type: boolean `true`, expected a string")
/// instead of the text "true" (a YAML deserializer hands a plain scalar to a
/// `String` field as its text).
mod strict {
    use std::collections::BTreeMap;
    use std::fmt;

    use serde::Deserializer;
    use serde::de::{self, Deserialize, Visitor};

    /// A string, refusing every other type.
    struct Text;

    impl Visitor<'_> for Text {
        type Value = String;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }

        fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
            Ok(v)
        }
    }

    /// A string field: `deserialize_any`, so the value's own type decides.
    pub fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        d.deserialize_any(Text)
    }

    /// A string value of the map's own type.
    struct StrictString(String);

    impl<'de> Deserialize<'de> for StrictString {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            string(d).map(StrictString)
        }
    }

    /// An optional string field (`null` or absent is `None`).
    pub fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
        Ok(Option::<StrictString>::deserialize(d)?.map(|s| s.0))
    }

    /// A map whose values are strings.
    pub fn string_map<'de, D, K>(d: D) -> Result<BTreeMap<K, String>, D::Error>
    where
        D: Deserializer<'de>,
        K: Deserialize<'de> + Ord,
    {
        Ok(BTreeMap::<K, StrictString>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect())
    }
}
