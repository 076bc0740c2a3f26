//! `kvlower new <runtime>`: a descriptor to start from, every obligation
//! listed with status `unknown` (so every row is `unknown` until evidence is
//! added), and comments showing how to anchor each kind of evidence.

use std::fmt::Write as _;
use std::path::PathBuf;

use kvlower_core::descriptor::SourceKind;
use kvlower_core::{Catalog, Mode, Obligation};
use kvlower_load::{CAPABILITIES_DIR, load_catalog};

use crate::Exit;
use crate::output::{Form, Format, Outcome};

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Runtime name, shown in results and used for the file name (e.g. `myruntime`)
    pub runtime: String,
    /// The release version or source commit the evidence is about (e.g. `1.2.0`, `3bafe17`)
    #[arg(long = "version", value_name = "VERSION")]
    pub runtime_version: String,
    /// What the evidence is read from: source_tree, release_container, documentation,
    /// patched_source or simulator
    #[arg(long, value_name = "SOURCE", default_value = "source_tree", value_parser = parse_source)]
    pub source: SourceKind,
    /// A runtime component written into `runtime.identity` (vllm, sglang, trtllm, dynamo,
    /// lmcache, mooncake, llm_d, lmdeploy, aibrix, tgi, blis, kv_deadline_scheduler, kvcr, other),
    /// with `=VERSION` when its version is not --version; repeat it for a stack
    /// (`--kind vllm=0.32.0 --kind lmcache=0.5.6`)
    #[arg(long, value_name = "KIND[=VERSION]", default_value = "other", value_parser = parse_kind)]
    pub kind: Vec<(kvlower_core::identity::RuntimeKind, Option<String>)>,
    /// Repository root holding modes/ and capabilities/
    /// [default: the nearest directory, from here up, holding kvlower.toml or modes/modes.yaml]
    #[arg(long, default_value = ".", hide_default_value = true)]
    pub root: PathBuf,
    /// Print the descriptor instead of writing capabilities/<runtime>_<version>.yaml
    /// (lower case, every other character `_`)
    #[arg(long)]
    pub stdout: bool,
    /// Output format (`json`: the shared envelope; the path, and with --stdout
    /// the descriptor text, as its payload)
    #[arg(long, value_parser = Format::parser(Format::SIMPLE), default_value_t = Format::Human)]
    pub format: Format,
}

/// The `payload` of `new --format json`.
#[derive(Debug, serde::Serialize)]
pub struct Payload {
    /// The descriptor's path relative to the root.
    path: String,
    /// Whether it was written (false with `--stdout`).
    written: bool,
    /// The descriptor text, with `--stdout` only.
    text: Option<String>,
}

/// With `--stdout` the descriptor itself; once written, only the summary says so.
impl crate::output::Payload for Payload {
    fn human(&self) -> String {
        self.text.clone().unwrap_or_default()
    }
}

/// Parses a `runtime.source` name with the descriptor format's own names.
fn parse_source(s: &str) -> Result<SourceKind, String> {
    serde_json::from_value(serde_json::Value::String(s.to_string())).map_err(|_| {
        "expected one of: source_tree, release_container, documentation, patched_source, simulator"
            .to_string()
    })
}

/// Parses `KIND` or `KIND=VERSION` with the descriptor format's own names.
fn parse_kind(s: &str) -> Result<(kvlower_core::identity::RuntimeKind, Option<String>), String> {
    let (name, version) = match s.split_once('=') {
        Some((name, version)) => (name, Some(version.to_string())),
        None => (s, None),
    };
    let kind = kvlower_core::identity::RuntimeKind::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = kvlower_core::identity::RuntimeKind::ALL
            .iter()
            .map(|k| k.name())
            .collect();
        format!(
            "expected one of: {} (optionally `=VERSION`)",
            names.join(", ")
        )
    })?;
    Ok((kind, version))
}

/// What `check` would say about the identity `new` is asked to write
/// (`invalid-runtime-identity`): refused here instead of written.
fn refuse_identity(args: &NewArgs) -> Option<String> {
    let mut seen = Vec::new();
    for (kind, version) in &args.kind {
        if seen.contains(kind) {
            return Some(format!(
                "--kind {kind} is given twice; one component per kind (a descriptor describes one build)"
            ));
        }
        seen.push(*kind);
        let version = version.as_deref().unwrap_or(&args.runtime_version);
        if kvlower_core::identity::normalize_version(version).is_none() {
            return Some(format!(
                "`{}` is not an exact version (for --kind {kind}); write one release or commit in plain ASCII (`0.32.0`, `1.3.0rc14`, `06cff70502`): no spaces, no words",
                crate::output::escape_control(version)
            ));
        }
    }
    None
}

/// The name `source` has in descriptors (`source_tree`, ...).
fn source_name(source: SourceKind) -> String {
    serde_json::to_value(source)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "source_tree".to_string())
}

/// A runtime name or version must be one printable line: it is written into
/// YAML comments and Markdown tables, where a line break would escape them.
fn refuse_control(what: &str, value: &str) -> Option<String> {
    if value.chars().any(char::is_control) {
        return Some(format!(
            "the {what} `{}` contains a control character (a line break, tab, escape, ...); use one printable line",
            crate::output::escape_control(value)
        ));
    }
    if value.trim().is_empty() {
        return Some(format!("the {what} is empty"));
    }
    None
}

pub fn run(args: &NewArgs) -> anyhow::Result<Outcome<Payload>> {
    let usage = |message: &str| Outcome::error("new", Exit::Usage, message);
    if let Some(message) = refuse_control("runtime name", &args.runtime)
        .or_else(|| refuse_control("version", &args.runtime_version))
        .or_else(|| refuse_identity(args))
    {
        return Ok(usage(&message));
    }
    let slug: String = format!("{}_{}", args.runtime, args.runtime_version)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if slug.trim_matches('_').is_empty() {
        let message = format!(
            "`{}` gives an empty file name; use letters and digits",
            args.runtime
        );
        return Ok(usage(&message));
    }
    let mut diagnostics = Vec::new();
    let Some(catalog) = load_catalog(&args.root, &mut diagnostics) else {
        let what = " in the catalog; nothing written";
        return Ok(Outcome::stopped("new", Form::Lines, diagnostics, what));
    };
    let rel = format!("{CAPABILITIES_DIR}/{slug}.yaml");
    let text = scaffold(
        &catalog,
        &Identity {
            name: &args.runtime,
            version: &args.runtime_version,
            source: args.source,
            kinds: &args.kind,
        },
        &rel,
    );
    if args.stdout {
        let summary = format!("kvlower new: {rel} (not written)");
        let payload = Payload {
            path: rel,
            written: false,
            text: Some(text),
        };
        return Ok(Outcome::done(
            "new",
            Exit::Success,
            Form::Document,
            summary,
            payload,
        ));
    }
    // Never through a link (docs/files.md): `capabilities/` a link elsewhere is refused.
    let links = crate::write_guard::links(&args.root, "new", &[CAPABILITIES_DIR, rel.as_str()]);
    if !links.is_empty() {
        return Ok(Outcome::stopped(
            "new",
            Form::Lines,
            links,
            "; nothing written",
        ));
    }
    let path = args.root.join(&rel);
    let dir = args.root.join(CAPABILITIES_DIR);
    kvlower_fs::write::create_dir_all(&dir)?;
    let mut tmp = kvlower_fs::write::readable_temp_file(&dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    // Never overwrite: persist_noclobber fails if the file exists, even if it appeared meanwhile.
    if kvlower_fs::write::persist_new(tmp, &path).is_err() {
        return Ok(usage(&format!(
            "{rel} already exists; choose another name or edit it"
        )));
    }
    let summary = format!(
        "wrote {rel}; replace each placeholder with anchored evidence, run `kvlower check`, then `kvlower matrix` and commit"
    );
    let payload = Payload {
        path: rel,
        written: true,
        text: None,
    };
    Ok(Outcome::done(
        "new",
        Exit::Success,
        Form::Lines,
        summary,
        payload,
    ))
}

/// What `runtime:` says in a new descriptor.
pub struct Identity<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub source: SourceKind,
    /// Each component's kind, and its version when not `version`.
    pub kinds: &'a [(kvlower_core::identity::RuntimeKind, Option<String>)],
}

/// The scaffold text for `runtime`, to be written at `rel`.
pub fn scaffold(catalog: &Catalog, runtime: &Identity<'_>, rel: &str) -> String {
    let mut s = String::new();
    s.push_str("# yaml-language-server: $schema=../schemas/descriptor.schema.json\n");
    let _ = writeln!(
        s,
        "# Descriptor scaffold for {}, made by `kvlower new`.",
        crate::output::escape_control(runtime.name)
    );
    s.push_str(
        "# Every obligation starts as `unknown` with a placeholder anchor (this file), so every\n\
         # row is `unknown`. Replace each placeholder with real evidence; anchor kinds:\n\
         #   kind: public_source, repository: owner/name, commit: <7-40 hex>, path: file/in/repo\n\
         #   kind: docs_page, url: https://..., retrieved: YYYY-MM-DD\n\
         #   kind: repo_file, path: traces/run.jsonl        (a file committed here)\n\
         #   kind: paper, section: \"§6.1\", path: <artifact path the paper names>\n\
         # Every anchor needs a `note` saying what it shows; trace-scoped evidence (any scope but\n\
         # docs_only and source_inspection) also needs preserves_order: true and\n\
         # preserves_claim_scope: true. See docs/descriptor-format.md.\n\n",
    );
    // A JSON string is a valid YAML double-quoted scalar, whatever the name holds.
    let quote = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".to_string());
    let _ = writeln!(
        s,
        "runtime:\n  name: {}\n  version: {}\n  source: {}  # source_tree | release_container | documentation | patched_source | simulator\n  \
         reviewed: YYYY-MM-DD  # the date you last checked this descriptor against the runtime's public sources\n  \
         identity:  # exactly what evidence must record to anchor here (docs/descriptor-format.md)",
        quote(runtime.name),
        quote(runtime.version),
        source_name(runtime.source),
    );
    for (kind, version) in runtime.kinds {
        let _ = writeln!(
            s,
            "    - kind: {kind}\n      version: {}",
            quote(version.as_deref().unwrap_or(runtime.version))
        );
    }
    s.push('\n');
    s.push_str("native:\n");
    for o in Obligation::ALL {
        let modes: Vec<&str> = Mode::ALL
            .iter()
            .filter(|m| catalog.bundle(**m).contains(o))
            .map(|m| m.name())
            .collect();
        let _ = writeln!(
            s,
            "  # {} ({}): needed by {}",
            o,
            o.code(),
            modes.join(", ")
        );
        // `supported` needs `modes:` (omitted, the item supports no mode:
        // `modes-not-stated`), so the scaffold shows it, commented, where it goes.
        let _ = writeln!(
            s,
            "  - obligation: {o}\n    status: unknown\n    scope: docs_only\n    \
             # modes: [{}]  # with `status: supported`, the modes whose path the evidence exercised (or `all`)\n    \
             anchor:\n      kind: repo_file\n      path: {rel}\n      note: placeholder, replace with the source that shows this obligation",
            modes.join(", ")
        );
    }
    s.push_str(
        "\n# adapters:\n#   - depth: telemetry_join\n#     name: what the adapter is\n\
         #     preconditions: {external_accepted_claim_registry: {kind: ..., note: ...}}  # all of the depth's, see modes/modes.yaml\n\
         #     evidence: []\n\
         # atoms: []      # e.g. {atom: pressure_controls_observed, scope: controlled_pressure, anchor: {...}}\n\
         # signals: []    # e.g. {signal: priority_field, anchor: {...}}\n\
         # proposals: []  # e.g. {primitive: active_no_evict, mode: hard_protected}\n\n",
    );
    let _ = writeln!(
        s,
        "non_claims:\n  default: Nothing is claimed for this runtime yet; every row is unknown."
    );
    s
}
