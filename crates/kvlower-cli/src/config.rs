//! `kvlower.toml`: what a repository keeps (docs/config.md), and where its root is.
//!
//! Parsed in one place, [`load`], into a typed [`Config`] that the commands
//! thread through; `kvlower-core` never sees it. A missing file is the default
//! (the lowering matrix and the schemas alone); an unknown key or a wrong type is a
//! located `config-invalid` finding.

use std::path::{Path, PathBuf};

use kvlower_codes::{Code, Finding};
use kvlower_load::MODES_PATH;
use serde::Deserialize;

/// The config file's name, at the repository root.
pub const CONFIG_FILE: &str = "kvlower.toml";

/// The generated files every repository keeps, whatever its config says.
pub const ALWAYS: &[&str] = &[
    "results/lowering-matrix.json",
    "results/lowering-matrix.md",
    crate::schema::DESCRIPTOR_SCHEMA,
    crate::schema::MODES_SCHEMA,
];

/// A repository's `kvlower.toml` (every key optional; docs/config.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Which generated results beyond the lowering matrix the repository keeps.
    pub results: ResultsConfig,
    /// Options of `kvlower check`.
    pub check: CheckConfig,
}

/// `[results]`: opt-ins, each `false` unless set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultsConfig {
    /// `results/bad-lowering-counterexamples.{md,json}` (from `bad_lowering/*.yaml`).
    pub bad_lowering: bool,
    /// `results/descriptor-evidence-mutation-controls.{md,json}`.
    pub mutation_controls: bool,
    /// `results/descriptor-provenance.{md,json}`.
    pub provenance: bool,
    /// `results/tensorrt-rc14-independent-descriptor-audit.{md,json}`.
    pub tensorrt_rc14_independent_audit: bool,
    /// `results/central-result-table.md`.
    pub central_result_table: bool,
    /// The README's "Runtimes compared" table, between its markers.
    pub readme_table: bool,
    /// `results/lowering-matrix.html`: the matrix as one self-contained page (docs/report.md).
    pub html_report: bool,
}

/// `[check]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CheckConfig {
    /// As `kvlower check --require-verified` (the flag can only add to it).
    pub require_verified: bool,
}

impl Config {
    /// Whether the repository keeps the generated file `path` (relative to the root).
    pub fn keeps(&self, path: &str) -> bool {
        use kvlower_audit as a;
        let r = &self.results;
        match path {
            p if ALWAYS.contains(&p) => true,
            a::BAD_LOWERING_JSON | a::BAD_LOWERING_MD => r.bad_lowering,
            a::MUTATIONS_JSON | a::MUTATIONS_MD => r.mutation_controls,
            a::PROVENANCE_JSON | a::PROVENANCE_MD => r.provenance,
            a::INDEPENDENT_JSON | a::INDEPENDENT_MD => r.tensorrt_rc14_independent_audit,
            "results/central-result-table.md" => r.central_result_table,
            crate::readme::README => r.readme_table,
            crate::html_page::REPORT_HTML => r.html_report,
            _ => false,
        }
    }

    /// Whether any audit suite is kept (otherwise none is run).
    pub fn runs_audit(&self) -> bool {
        let r = &self.results;
        r.bad_lowering || r.mutation_controls || r.provenance || r.tensorrt_rc14_independent_audit
    }
}

/// Every table and its keys, for "did you mean" and "belongs under" hints
/// (`tests/tests/newcomer.rs` holds it to serde's own list of each table's keys).
pub const TABLES: &[(&str, &[&str])] = &[
    (
        "results",
        &[
            "bad_lowering",
            "mutation_controls",
            "provenance",
            "tensorrt_rc14_independent_audit",
            "central_result_table",
            "readme_table",
            "html_report",
        ],
    ),
    ("check", &["require_verified"]),
];

/// The hint for an unknown key: where it belongs when it is a known key of another
/// table (`html_report` under `[check]`), else the nearest key by spelling.
fn unknown_key_hint(key: &str) -> Option<String> {
    if let Some((table, _)) = TABLES.iter().find(|(_, keys)| keys.contains(&key)) {
        return Some(format!(
            "`{key}` belongs under `[{table}]`: move it there (every key: docs/config.md)"
        ));
    }
    TABLES
        .iter()
        .flat_map(|(table, keys)| std::iter::once(*table).chain(keys.iter().copied()))
        .map(|k| (strsim::jaro_winkler(key, k), k))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| format!("did you mean `{k}`? (every key: docs/config.md)"))
}

/// Reads `root/kvlower.toml`: the default when there is none, a located
/// `config-invalid` finding when it cannot be read or does not parse.
pub fn load(root: &Path) -> Result<Config, Box<Finding>> {
    // Read with the catalog's cap and refusals (a small hand-written file at the root).
    let bytes = match kvlower_fs::FileKind::Catalog
        .open()
        .within(root)
        .read(CONFIG_FILE)
    {
        Ok(bytes) => bytes,
        // Absent is the default; a dangling link named `kvlower.toml` is a
        // config that cannot be read, not an absent one.
        Err(kvlower_fs::Refusal::Missing { .. }) if !marker_present(&root.join(CONFIG_FILE)) => {
            return Ok(Config::default());
        }
        Err(refusal) => return Err(Box::new(refusal.finding(CONFIG_FILE))),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(Box::new(
            Finding::new(Code::ConfigInvalid, CONFIG_FILE, "not UTF-8")
                .with_hint("kvlower.toml is TOML, which is UTF-8 text (docs/config.md)"),
        ));
    };
    parse(&text)
}

/// Parses the text of a `kvlower.toml`.
pub fn parse(text: &str) -> Result<Config, Box<Finding>> {
    toml::from_str::<Config>(text).map_err(|e| {
        let message = e.message().trim().to_string();
        let mut d = Finding::new(Code::ConfigInvalid, CONFIG_FILE, message.clone());
        if let Some(span) = e.span() {
            let (line, col) = line_col(text, span.start);
            d = d.at(line, col).with_source(text);
        }
        let hint = unknown_key(&message)
            .and_then(|key| unknown_key_hint(&key))
            .unwrap_or_else(|| "every key and its type: docs/config.md".to_string());
        Box::new(d.with_hint(hint))
    })
}

/// The key named by serde's "unknown field `x`, expected ..." message.
fn unknown_key(message: &str) -> Option<String> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split_once('`').map(|(key, _)| key.to_string())
}

/// 1-based line and column (in characters) of byte `offset` in `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// The repository root for a command run from `start` without `--root`: the
/// first of `start` and its ancestors holding `kvlower.toml` or
/// `modes/modes.yaml` in any form (a regular file, but also a directory, a FIFO,
/// a dangling link, or an entry that cannot be looked at): a marker that exists
/// stops the walk, and the command then reports it if it cannot be read, instead
/// of walking past it to an outer repository. `None` when there is none.
pub fn discover_root(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).ok()?;
    start
        .ancestors()
        .find(|dir| marker_present(&dir.join(CONFIG_FILE)) || marker_present(&dir.join(MODES_PATH)))
        .map(Path::to_path_buf)
}

/// Whether a root marker is at `path` in any form: only "no such entry" (or a
/// path component that is no directory) means absent; an entry of any type, a
/// dangling link, or one whose lookup fails otherwise (permission denied) is there.
fn marker_present(path: &Path) -> bool {
    match kvlower_fs::inspect::lstat(path) {
        Ok(_) => true,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
        ),
    }
}

/// The root a command uses: `explicit` (`--root`, relative to `start`) when
/// given, else [`discover_root`] from `start`, else `start` itself (whose
/// missing inputs the command then reports). Shown relative (`.`, `../..`)
/// when `start` is `.`, so messages name the directory the way the user would.
pub fn resolve_root(explicit: Option<&Path>, start: &Path) -> PathBuf {
    if let Some(explicit) = explicit {
        return join(start, explicit);
    }
    let Some(found) = discover_root(start) else {
        return start.to_path_buf();
    };
    if start == Path::new(".")
        && let Ok(here) = std::path::absolute(start)
        && let Ok(rest) = here.strip_prefix(&found)
    {
        let up = rest.components().count();
        if up == 0 {
            return PathBuf::from(".");
        }
        return (0..up).map(|_| "..").collect::<PathBuf>();
    }
    found
}

/// `path` as seen from `start` (`.` leaves it as given).
pub fn join(start: &Path, path: &Path) -> PathBuf {
    if start == Path::new(".") || path.is_absolute() {
        path.to_path_buf()
    } else {
        start.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_is_the_default() {
        assert_eq!(parse(""), Ok(Config::default()));
    }

    #[test]
    fn a_misspelt_key_is_located_with_a_suggestion() {
        let d = parse("[results]\nbad_lowring = true\n").expect_err("unknown key");
        assert_eq!(d.code, Code::ConfigInvalid);
        assert_eq!(d.location, Some((2, 1)));
        assert!(
            d.hint
                .as_deref()
                .is_some_and(|h| h.contains("`bad_lowering`")),
            "{d:?}"
        );
    }
}
