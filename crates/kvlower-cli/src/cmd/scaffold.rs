//! `kvlower new <runtime>`: a descriptor to start from, every obligation
//! listed with status `unknown` (so every row is `unknown` until evidence is
//! added), and comments showing how to anchor each kind of evidence.

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use kvlower_core::{Catalog, Mode, Obligation};
use kvlower_load::{CAPABILITIES_DIR, load_catalog};

use crate::Exit;

#[derive(Debug, clap::Args)]
pub struct NewArgs {
    /// Runtime name and version, used for the file name (e.g. `myruntime_1_2`)
    pub runtime: String,
    /// Repository root holding modes/ and capabilities/
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print the descriptor instead of writing capabilities/<runtime>.yaml
    #[arg(long)]
    pub stdout: bool,
}

pub fn run(args: &NewArgs, out: &mut dyn Write, err: &mut dyn Write) -> anyhow::Result<Exit> {
    let slug: String = args
        .runtime
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
        writeln!(
            err,
            "error: `{}` gives an empty file name; use letters and digits",
            args.runtime
        )?;
        return Ok(Exit::Usage);
    }
    let mut diagnostics = Vec::new();
    let Some(catalog) = load_catalog(&args.root, &mut diagnostics) else {
        for d in &diagnostics {
            writeln!(err, "{d}")?;
        }
        return Ok(Exit::Findings);
    };
    let rel = format!("{CAPABILITIES_DIR}/{slug}.yaml");
    let text = scaffold(&catalog, &args.runtime, &rel);
    if args.stdout {
        write!(out, "{text}")?;
        return Ok(Exit::Success);
    }
    let path = args.root.join(&rel);
    let dir = args.root.join(CAPABILITIES_DIR);
    std::fs::create_dir_all(&dir)?;
    let mut tmp = crate::cmd::matrix::readable_temp_file(&dir)?;
    tmp.write_all(text.as_bytes())?;
    // Never overwrite: persist_noclobber fails if the file exists, even if it appeared meanwhile.
    if tmp.persist_noclobber(&path).is_err() {
        writeln!(
            err,
            "error: {rel} already exists; choose another name or edit it"
        )?;
        return Ok(Exit::Usage);
    }
    writeln!(
        out,
        "wrote {rel}; fill in the evidence, then run `kvlower check` and `kvlower matrix`"
    )?;
    Ok(Exit::Success)
}

/// The scaffold text for `runtime`, to be written at `rel`.
pub fn scaffold(catalog: &Catalog, runtime: &str, rel: &str) -> String {
    let mut s = String::new();
    s.push_str("# yaml-language-server: $schema=../schemas/descriptor.schema.json\n");
    let _ = writeln!(
        s,
        "# Descriptor scaffold for {runtime}, made by `kvlower new`."
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
    let quoted = serde_json::to_string(runtime).unwrap_or_else(|_| "\"runtime\"".to_string());
    let _ = writeln!(
        s,
        "runtime:\n  name: {quoted}\n  version: \"unknown\"\n  source: source_tree  # source_tree | release_container | documentation | patched_source | simulator\n"
    );
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
        let _ = writeln!(
            s,
            "  - obligation: {o}\n    status: unknown\n    scope: docs_only\n    anchor:\n      kind: repo_file\n      path: {rel}\n      note: placeholder, replace with the source that shows this obligation"
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
