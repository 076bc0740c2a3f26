//! The join's inputs: the files it opens ([`files`]: through kvlower's one safe read),
//! and the two drivers that replay an event stream into the engine, one for each
//! form a stream comes in: JSON Lines ([`jsonl`]) and `kvlower capture` files
//! ([`capture`]). A stream's first byte says which; both end in the same report.

mod capture;
pub(crate) mod files;
mod jsonl;

use std::io::BufRead;
use std::path::Path;

use crate::document::JoinReport;
use crate::engine::{Engine, JoinOptions};
use crate::error::JoinError;
use crate::events::Decoder;
use crate::registry::{EventFormat, Registry};

pub use files::{MAX_REGISTRY_BYTES, confine, open_events, read_text, stream_error};
pub use jsonl::MAX_EVENT_LINE_BYTES;

mod identity;
pub use crate::identity_problem::PATCH_DIGEST_SUFFIX;
pub use identity::{capture_meta, check_header_identity, patch_file_digests};

/// Joins `registry` to the events read from `events`: JSON Lines (see
/// [`crate::events`]) or a capture file (`kvlower capture`), told apart by its first
/// byte.
///
/// `registry_path` and `events_path` only label the report and the errors; they are
/// recorded exactly as given.
pub fn join_reader<R: BufRead>(
    registry: &Registry,
    registry_path: &Path,
    events: R,
    events_path: &Path,
    format: EventFormat,
) -> Result<JoinReport, JoinError> {
    join_reader_with(
        registry,
        registry_path,
        events,
        events_path,
        format,
        JoinOptions::default(),
    )
}

/// [`join_reader`] with options that change what is judged (pressure trials).
pub(crate) fn join_reader_with<R: BufRead>(
    registry: &Registry,
    registry_path: &Path,
    events: R,
    events_path: &Path,
    format: EventFormat,
    opts: JoinOptions,
) -> Result<JoinReport, JoinError> {
    let engine = Engine::new(registry, format, opts);
    let decoder = Decoder::new(format);
    let mut events = events;
    let first = events
        .fill_buf()
        .map_err(|e| stream_error(events_path, e))?;
    if first.first() == Some(&kvlower_capture::MAGIC[0]) {
        return capture::join_capture(
            engine,
            decoder,
            events,
            (registry_path, registry.cache_identity.runtime.as_ref()),
            events_path,
        );
    }
    jsonl::join_lines(engine, decoder, events, registry_path, events_path)
}
