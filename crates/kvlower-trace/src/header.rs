//! The trace header: an optional first line naming the runtime that produced the
//! trace (docs/trace-format.md, "The header").
//!
//! Why: a verdict on a trace committed for runtime A must not anchor runtime B's
//! descriptor. The header records the runtime identity; `kvlower check` lets a
//! trace's verdict anchor only a descriptor whose `runtime.identity` is the same.
//! A trace without a header still gates (campaigns of older traces keep working)
//! but anchors nothing.

use serde::{Deserialize, Serialize};

use crate::problem::Problem;

/// The key that makes a first line a header, and the only format version so far.
pub const HEADER_KEY: &str = "kvlower_trace_header";
pub const HEADER_VERSION: u64 = 1;
/// Components a header may list (a runtime and what it runs behind or on).
const MAX_COMPONENTS: usize = 16;
/// Bytes of one kind, version or patch string.
const MAX_FIELD_BYTES: usize = 256;

/// One runtime component as a trace header records it. Kept as the text the
/// trace gave: whether it decodes (a known kind, an exact version) is for the
/// judgment that compares it with a descriptor, which fails closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceComponent {
    pub kind: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
}

/// The components as the core compares them with a descriptor's identity.
pub fn recorded_runtime(components: &[TraceComponent]) -> kvlower_core::identity::RecordedRuntime {
    kvlower_core::identity::RecordedRuntime {
        components: components
            .iter()
            .map(|c| kvlower_core::identity::RecordedComponent {
                kind: c.kind.clone(),
                version: c.version.clone(),
                patch: c.patch.clone(),
            })
            .collect(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HeaderLine {
    kvlower_trace_header: u64,
    runtime: Vec<TraceComponent>,
    /// The source digest of the patch and recorder that produced the trace
    /// (docs/conformance.md, "The source digest"); a campaign requires it.
    #[serde(default)]
    source_digest: Option<String>,
}

/// What a header line records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub runtime: Vec<TraceComponent>,
    pub source_digest: Option<String>,
}

/// Reads `bytes` (a trace's first non-blank line) as a header: `None` when the
/// line is not one (no `kvlower_trace_header` key: an event), `Some(Err)` when it
/// is one but malformed.
pub(crate) fn parse(bytes: &[u8]) -> Option<Result<Header, Problem>> {
    // Only a JSON object naming the key is a header; anything else is left to the
    // event parser, which reports it as it always has. A line holding neither the key's
    // text nor an escape (through which a key could still spell it) cannot name it, so
    // the parse into a `Value` (every first line of a campaign's traces, and the costliest
    // parse of the gate) is skipped: the answer is the same `None`.
    static KEY: std::sync::OnceLock<memchr::memmem::Finder<'static>> = std::sync::OnceLock::new();
    let key = KEY.get_or_init(|| memchr::memmem::Finder::new(HEADER_KEY));
    if key.find(bytes).is_none() && memchr::memchr(b'\\', bytes).is_none() {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if !value.as_object()?.contains_key(HEADER_KEY) {
        return None;
    }
    let bad = |why: String| Some(Err(Problem::BadHeader(why)));
    // A repeated key would hide a value (serde keeps the last): the header is malformed.
    if let Err(why) = crate::strict_json::check_no_repeated_keys(bytes) {
        return bad(why);
    }
    let header: HeaderLine = match serde_json::from_value(value) {
        Ok(h) => h,
        Err(e) => return bad(e.to_string()),
    };
    if header.kvlower_trace_header != HEADER_VERSION {
        return bad(format!(
            "unsupported {HEADER_KEY} {} (expected {HEADER_VERSION})",
            header.kvlower_trace_header
        ));
    }
    if header.runtime.is_empty() || header.runtime.len() > MAX_COMPONENTS {
        return bad(format!(
            "`runtime` must list 1 to {MAX_COMPONENTS} components"
        ));
    }
    let too_long = header.runtime.iter().any(|c| {
        c.kind.len() > MAX_FIELD_BYTES
            || c.version.len() > MAX_FIELD_BYTES
            || c.patch.as_ref().is_some_and(|p| p.len() > MAX_FIELD_BYTES)
    });
    if too_long {
        return bad(format!(
            "a runtime field is longer than {MAX_FIELD_BYTES} bytes"
        ));
    }
    if header.source_digest.as_ref().is_some_and(|d| {
        d.len() != 64 || !d.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    }) {
        return bad("`source_digest` is not 64 lowercase hex digits".into());
    }
    Some(Ok(Header {
        runtime: header.runtime,
        source_digest: header.source_digest,
    }))
}
