//! The only module that reads files: the trace (bounded, through `kvlower-fs`) and the
//! registry it names (through `kvlower-join`, which bounds its own reads).

use std::path::{Component, Path, PathBuf};

use kvlower_fs::FileKind;
use kvlower_join::Registry;

use crate::document::RouteReport;
use crate::error::RouteError;
use crate::judge::{RegisteredClaim, judge};
use crate::trace::{RouteTrace, parse_trace};

/// The registry path a trace names, joined to the trace's folder, written with `/`
/// (the same string on every machine). `None` when `registry` is absolute or climbs out
/// of the trace's folder (a trace names its own registry, beside it or below it).
pub fn registry_path(trace: &str, registry: &str) -> Option<String> {
    let rel = Path::new(registry);
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let dir = Path::new(trace).parent().unwrap_or(Path::new(""));
    Some(dir.join(rel).to_string_lossy().replace('\\', "/"))
}

/// The registry's claims, reduced to what the gate needs (see [`RegisteredClaim`]).
pub fn registered_claims(registry: &Registry, trace: &RouteTrace) -> Vec<RegisteredClaim> {
    let same_block = registry.cache_identity.block_size == Some(trace.block_size);
    registry
        .claims
        .iter()
        .map(|c| {
            let required = match (&c.tokens, c.predicate) {
                (Some(tokens), Some(p)) if same_block && c.reasons.is_empty() => {
                    let n = p.required_blocks(trace.block_size) as usize
                        * trace.block_size.get() as usize;
                    tokens.get(..n).map(<[u32]>::to_vec)
                }
                _ => None,
            };
            RegisteredClaim {
                id: c.id.0.clone(),
                required_tokens: required,
                registered_before: c.registered_before,
            }
        })
        .collect()
}

/// Reads, parses and judges the trace at `path` (as named on the command line) with the
/// registry it names.
pub fn evaluate_path(path: &Path) -> Result<RouteReport, RouteError> {
    let shown = path.to_string_lossy().replace('\\', "/");
    evaluate_with(path, &shown, &|name| Some(PathBuf::from(name)))
}

/// Like [`evaluate_path`], for a caller that confines paths (`kvlower check`): the trace
/// is read from `trace_file` and recorded as `trace_name`; `registry_file` maps the
/// registry's recorded name to a file to read, or refuses it (`None`).
pub fn evaluate_with(
    trace_file: &Path,
    trace_name: &str,
    registry_file: &dyn Fn(&str) -> Option<PathBuf>,
) -> Result<RouteReport, RouteError> {
    let bytes = FileKind::RoutingTrace
        .open()
        .read(trace_file)
        .map_err(|e| RouteError::Refused {
            path: PathBuf::from(trace_name),
            message: e.to_string(),
            hint: crate::error::refusal_hint(&e),
        })?;
    let named = Path::new(trace_name);
    let text = String::from_utf8(bytes).map_err(|e| RouteError::Malformed {
        path: named.to_path_buf(),
        line: 1,
        column: 1,
        json_path: String::new(),
        message: format!("not UTF-8 (at byte {})", e.utf8_error().valid_up_to()),
    })?;
    let trace = parse_trace(&text, named)?;
    let Some(registry) = registry_path(trace_name, &trace.registry) else {
        return Err(RouteError::Invalid {
            path: named.to_path_buf(),
            json_path: "$.registry".into(),
            message: format!("registry {:?} leaves the trace's folder", trace.registry),
            expected: "a path relative to the trace's folder, without `..`",
        });
    };
    let Some(file) = registry_file(&registry) else {
        return Err(RouteError::Refused {
            path: PathBuf::from(&registry),
            message: "the registry is missing or refused (outside the root, not a regular file)"
                .into(),
            hint: "the trace's `registry` is relative to the trace's folder; check that it names a regular file there",
        });
    };
    let reg = Registry::load(&file)?;
    Ok(judge(
        &trace,
        &registered_claims(&reg, &trace),
        trace_name,
        &registry,
        reg.cache_identity.runtime.clone(),
    ))
}
