//! The capture driver: a `kvlower capture` file replayed frame by frame, each frame's
//! payload decoded from msgpack; a frame the recorder dropped (or that the publisher cut
//! off) is an ambiguity.

use std::io::BufRead;
use std::path::Path;

use crate::document::{EventRef, JoinReport};
use crate::engine::Engine;
use crate::error::JoinError;
use crate::events::Decoder;
use crate::registry::{EventFormat, RuntimeIdentity};

/// Replays a capture file (`kvlower capture`): frame by frame, each frame's payload
/// decoded from msgpack. An event's `line` is its frame's number (1-based).
pub(super) fn join_capture<R: BufRead>(
    mut engine: Engine<'_>,
    mut decoder: Decoder,
    events: R,
    (registry_path, runtime): (&Path, Option<&RuntimeIdentity>),
    events_path: &Path,
) -> Result<JoinReport, JoinError> {
    let bad = |frame: u64, json_path: Option<String>, message: String| JoinError::Event {
        path: events_path.to_path_buf(),
        line: frame,
        json_path,
        message,
    };
    let cap = |e: kvlower_capture::CaptureError| JoinError::Capture {
        path: events_path.to_path_buf(),
        message: e.to_string(),
    };
    let mut rd = kvlower_capture::CaptureReader::new(events).map_err(cap)?;
    // A header that records a runtime identity must be the registry's: the join
    // document's identity is the registry's alone (red-team H1).
    super::identity::check_header_identity(&rd.header().meta, runtime).map_err(|problem| {
        JoinError::Identity {
            path: registry_path.to_path_buf(),
            problem,
        }
    })?;
    engine.set_capture_meta(rd.header().meta.clone());
    let mut frame: u64 = 0;
    while let Some(rec) = rd.next_record().map_err(cap)? {
        frame += 1;
        match rec {
            kvlower_capture::Record::Frame { rank, parts, .. } => {
                let f = kvlower_capture::event_frame(&parts)
                    .map_err(|m| bad(frame, None, format!("frame {frame}: {m}")))?;
                // vLLM's usual shape decodes typed, straight from the bytes; any other
                // payload (and every error) goes through the generic decoder.
                let typed = match decoder.format() {
                    EventFormat::Vllm => crate::typed::vllm_batch(f.payload),
                    _ => None,
                };
                if let Some(raw) = typed {
                    engine.feed(crate::typed::decode(&mut decoder, raw, frame, f.seq, rank));
                    continue;
                }
                let v = crate::msgpack::decode(f.payload)
                    .map_err(|m| bad(frame, None, format!("payload is not msgpack: {m}")))?;
                let decoded = decoder
                    .decode_frame(&v, frame, f.seq, rank)
                    .map_err(|e| bad(frame, e.json_path, e.message))?;
                engine.feed(decoded);
            }
            // A message dropped as oversized or cut off by the publisher: a gap.
            kvlower_capture::Record::Dropped { .. } | kvlower_capture::Record::Truncated { .. } => {
                let event = EventRef {
                    index: decoder.next_index(),
                    line: frame,
                };
                engine.frame_dropped(event);
            }
        }
    }
    Ok(engine.finish(
        frame,
        registry_path.display().to_string(),
        events_path.display().to_string(),
    ))
}
