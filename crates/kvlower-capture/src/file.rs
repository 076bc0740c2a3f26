//! The capture file (format version 1, `docs/capture-format.md`).
//!
//! A capture keeps every ZMQ multipart message a subscriber received, losslessly and
//! in arrival order, so that a join can be re-run on exactly what the runtime sent.
//! Layout (all integers big-endian):
//!
//! ```text
//! magic    8 bytes  0x89 "KVLCAP" 0x0A   (0x89 never starts UTF-8 text: JSON Lines
//!                                         and captures are told apart by one byte)
//! version  u16      1
//! hlen     u32      header length, at most MAX_HEADER_BYTES
//! header   hlen     UTF-8 JSON: CaptureHeader
//! records  ...      each starts with a kind byte:
//!   0x01 frame    u16 rank, u64 recv_unix_ns, u8 nparts (<= MAX_PARTS),
//!                 nparts x (u32 len, len bytes); all parts together <= MAX_FRAME_BYTES
//!   0x02 dropped  u16 rank, u64 recv_unix_ns, u64 bytes, u8 nparts
//!                 (a message over MAX_FRAME_BYTES: kept as a marker, never as data)
//!   0x03 end      u64 frames, u64 markers   (last record: the frame records, and the
//!                 dropped and truncated records together; a file without it is
//!                 truncated and refused)
//!   0x04 truncated u16 rank, u64 recv_unix_ns, u64 bytes, u8 nparts
//!                 (a message the publisher cut off by closing the connection inside
//!                 it: what its frames begun had declared; kept as a marker, no data)
//! ```
//!
//! Every length is checked against its cap before anything is allocated, so a hostile
//! file costs at most one frame of memory.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};

/// The first eight bytes of every capture file.
pub const MAGIC: [u8; 8] = [0x89, b'K', b'V', b'L', b'C', b'A', b'P', b'\n'];
/// The capture-file layout this crate writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// Largest header (JSON) accepted.
pub const MAX_HEADER_BYTES: u32 = 1024 * 1024;
/// Largest message (all parts) kept as data; larger ones become `dropped` records.
pub const MAX_FRAME_BYTES: u64 = 16 * 1024 * 1024;
/// Most parts in one message (publishers send three: topic, sequence, payload).
pub const MAX_PARTS: u8 = 16;

const KIND_FRAME: u8 = 0x01;
const KIND_DROPPED: u8 = 0x02;
const KIND_END: u8 = 0x03;
const KIND_TRUNCATED: u8 = 0x04;

/// One subscribed publisher. `rank` is its position on the command line (one publisher
/// per data-parallel rank: vLLM and SGLang bind port base+rank).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Endpoint {
    pub rank: u16,
    pub endpoint: String,
}

/// The capture header: what was subscribed to, and what the operator declared about
/// the engine (`--meta KEY=VALUE`, e.g. `kv_cache_report_mode=incremental`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureHeader {
    /// Always `kvlower-capture`.
    pub capture_format: String,
    pub version: u16,
    pub endpoints: Vec<Endpoint>,
    /// A key repeated here is refused, never read as its last value (issue 42): the
    /// derived structs refuse a repeated field of their own, this is the header's one map.
    #[serde(default, deserialize_with = "meta_without_repeats")]
    pub meta: BTreeMap<String, String>,
    /// The tool that wrote the file (`kvlower 0.1.0`).
    pub writer: String,
    /// When the subscriptions were in place (ns since the Unix epoch).
    pub subscribed_unix_ns: u64,
}

/// `meta` as a map whose keys are each given once. serde's map keeps the last of two
/// equal keys, so `"runtime":"A","runtime":"B"` would read as `B` while a reader of the
/// bytes sees `A` first: the header is malformed instead (docs/capture-format.md). Keys
/// are compared decoded (`"\u0072untime"` is `runtime`).
fn meta_without_repeats<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    struct Meta;
    impl<'de> serde::de::Visitor<'de> for Meta {
        type Value = BTreeMap<String, String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a map of strings, each key once")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((key, value)) = map.next_entry::<String, String>()? {
                if out.contains_key(&key) {
                    return Err(serde::de::Error::custom(format!(
                        "the key `meta.{key}` is repeated"
                    )));
                }
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Meta)
}

impl CaptureHeader {
    pub fn new(endpoints: Vec<Endpoint>, meta: BTreeMap<String, String>, writer: String) -> Self {
        CaptureHeader {
            capture_format: "kvlower-capture".into(),
            version: FORMAT_VERSION,
            endpoints,
            meta,
            writer,
            subscribed_unix_ns: 0,
        }
    }
}

/// One record after the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// A message as received: for KV-event publishers `[topic, seq (8 bytes), payload]`.
    Frame {
        rank: u16,
        recv_unix_ns: u64,
        parts: Vec<Vec<u8>>,
    },
    /// A message larger than [`MAX_FRAME_BYTES`]: its data is not in the file.
    Dropped {
        rank: u16,
        recv_unix_ns: u64,
        bytes: u64,
        parts: u8,
    },
    /// A message the publisher cut off by closing the connection inside it: its data
    /// is not in the file; `bytes` and `parts` are what its frames begun had declared.
    Truncated {
        rank: u16,
        recv_unix_ns: u64,
        bytes: u64,
        parts: u8,
    },
}

/// The `end` record: the counts the writer saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Trailer {
    pub frames: u64,
    pub dropped: u64,
    /// `truncated` records (the `end` record counts them with the dropped ones).
    pub truncated: u64,
}

/// Why a capture file cannot be read. Offsets are byte offsets into the file.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot read: {0}")]
    Io(#[from] io::Error),
    #[error("not a kvlower capture file (bad magic)")]
    BadMagic,
    #[error("capture format version {0} is not supported (this kvlower reads {FORMAT_VERSION})")]
    Version(u16),
    #[error("byte {offset}: {message}")]
    Malformed { offset: u64, message: String },
    #[error(
        "byte {offset}: the file ends without an `end` record (truncated capture; a capture is written atomically, so this file was cut or edited)"
    )]
    Truncated { offset: u64 },
}

/// Writes a capture: header first, then records, then [`CaptureWriter::finish`].
pub struct CaptureWriter<W: Write> {
    out: W,
    trailer: Trailer,
}

impl<W: Write> CaptureWriter<W> {
    pub fn new(mut out: W, header: &CaptureHeader) -> io::Result<Self> {
        let json = serde_json::to_vec(header).map_err(io::Error::other)?;
        let len = u32::try_from(json.len())
            .ok()
            .filter(|l| *l <= MAX_HEADER_BYTES)
            .ok_or_else(|| io::Error::other("capture header too large"))?;
        out.write_all(&MAGIC)?;
        out.write_all(&FORMAT_VERSION.to_be_bytes())?;
        out.write_all(&len.to_be_bytes())?;
        out.write_all(&json)?;
        Ok(CaptureWriter {
            out,
            trailer: Trailer::default(),
        })
    }

    /// Appends one received message; an oversized one (or one with too many parts)
    /// is recorded as `dropped`. Returns whether the data was kept.
    pub fn frame(&mut self, rank: u16, recv_unix_ns: u64, parts: &[&[u8]]) -> io::Result<bool> {
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let nparts = u8::try_from(parts.len()).unwrap_or(u8::MAX);
        if total > MAX_FRAME_BYTES || parts.len() > usize::from(MAX_PARTS) {
            self.dropped(rank, recv_unix_ns, total, nparts)?;
            return Ok(false);
        }
        self.out.write_all(&[KIND_FRAME])?;
        self.out.write_all(&rank.to_be_bytes())?;
        self.out.write_all(&recv_unix_ns.to_be_bytes())?;
        self.out.write_all(&[nparts])?;
        for p in parts {
            // Each part fits: the total is at most MAX_FRAME_BYTES < u32::MAX.
            let len = u32::try_from(p.len()).map_err(io::Error::other)?;
            self.out.write_all(&len.to_be_bytes())?;
            self.out.write_all(p)?;
        }
        self.trailer.frames += 1;
        Ok(true)
    }

    /// Appends a `dropped` record: a message of `bytes` bytes in `parts` parts that was
    /// received but not kept (over [`MAX_FRAME_BYTES`] or [`MAX_PARTS`]).
    pub fn dropped(
        &mut self,
        rank: u16,
        recv_unix_ns: u64,
        bytes: u64,
        parts: u8,
    ) -> io::Result<()> {
        self.lost_message(KIND_DROPPED, rank, recv_unix_ns, bytes, parts)?;
        self.trailer.dropped += 1;
        Ok(())
    }

    /// Appends a `truncated` record: a message cut off by the publisher closing the
    /// connection inside it, of which `bytes` in `parts` parts had been declared.
    pub fn truncated(
        &mut self,
        rank: u16,
        recv_unix_ns: u64,
        bytes: u64,
        parts: u8,
    ) -> io::Result<()> {
        self.lost_message(KIND_TRUNCATED, rank, recv_unix_ns, bytes, parts)?;
        self.trailer.truncated += 1;
        Ok(())
    }

    /// The one layout of the two records of a message not kept (`dropped`, `truncated`):
    /// kind, rank, receive time, declared bytes, parts.
    fn lost_message(
        &mut self,
        kind: u8,
        rank: u16,
        recv_unix_ns: u64,
        bytes: u64,
        parts: u8,
    ) -> io::Result<()> {
        self.out.write_all(&[kind])?;
        self.out.write_all(&rank.to_be_bytes())?;
        self.out.write_all(&recv_unix_ns.to_be_bytes())?;
        self.out.write_all(&bytes.to_be_bytes())?;
        self.out.write_all(&[parts])
    }

    /// Writes the `end` record and returns the inner writer and the counts.
    pub fn finish(mut self) -> io::Result<(W, Trailer)> {
        let markers = self.trailer.dropped.saturating_add(self.trailer.truncated);
        self.out.write_all(&[KIND_END])?;
        self.out.write_all(&self.trailer.frames.to_be_bytes())?;
        self.out.write_all(&markers.to_be_bytes())?;
        self.out.flush()?;
        Ok((self.out, self.trailer))
    }
}

/// Reads a capture record by record; memory is one frame at a time.
pub struct CaptureReader<R: Read> {
    inp: R,
    offset: u64,
    header: CaptureHeader,
    seen: Trailer,
    done: bool,
}

impl<R: Read> CaptureReader<R> {
    /// Reads and checks the magic, version and header.
    pub fn new(mut inp: R) -> Result<Self, CaptureError> {
        let mut magic = [0u8; 8];
        read_exact_or(&mut inp, &mut magic, 0)?;
        if magic != MAGIC {
            return Err(CaptureError::BadMagic);
        }
        let mut v = [0u8; 2];
        read_exact_or(&mut inp, &mut v, 8)?;
        let version = u16::from_be_bytes(v);
        if version != FORMAT_VERSION {
            return Err(CaptureError::Version(version));
        }
        let mut l = [0u8; 4];
        read_exact_or(&mut inp, &mut l, 10)?;
        let hlen = u32::from_be_bytes(l);
        if hlen > MAX_HEADER_BYTES {
            return Err(CaptureError::Malformed {
                offset: 10,
                message: format!("header length {hlen} exceeds the cap of {MAX_HEADER_BYTES}"),
            });
        }
        let mut h = vec![0u8; hlen as usize];
        read_exact_or(&mut inp, &mut h, 14)?;
        let header: CaptureHeader =
            serde_json::from_slice(&h).map_err(|e| CaptureError::Malformed {
                offset: 14,
                message: format!("header is not a capture header: {e}"),
            })?;
        if header.capture_format != "kvlower-capture" || header.version != FORMAT_VERSION {
            return Err(CaptureError::Malformed {
                offset: 14,
                message: "header names another format or version".into(),
            });
        }
        let mut ranks: Vec<u16> = header.endpoints.iter().map(|e| e.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        if ranks.len() != header.endpoints.len() {
            return Err(CaptureError::Malformed {
                offset: 14,
                message: "two endpoints share one rank".into(),
            });
        }
        Ok(CaptureReader {
            inp,
            offset: 14 + u64::from(hlen),
            header,
            seen: Trailer::default(),
            done: false,
        })
    }

    pub fn header(&self) -> &CaptureHeader {
        &self.header
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], CaptureError> {
        let mut b = [0u8; N];
        read_exact_or(&mut self.inp, &mut b, self.offset)?;
        self.offset += N as u64;
        Ok(b)
    }

    fn malformed(&self, at: u64, message: impl Into<String>) -> CaptureError {
        CaptureError::Malformed {
            offset: at,
            message: message.into(),
        }
    }

    /// The next record, `Ok(None)` after a consistent `end` record.
    pub fn next_record(&mut self) -> Result<Option<Record>, CaptureError> {
        if self.done {
            return Ok(None);
        }
        let start = self.offset;
        let mut kind = [0u8; 1];
        match self.inp.read(&mut kind)? {
            0 => return Err(CaptureError::Truncated { offset: start }),
            _ => self.offset += 1,
        }
        match kind[0] {
            KIND_FRAME => {
                let rank = u16::from_be_bytes(self.bytes::<2>()?);
                self.check_rank(rank, start)?;
                let recv_unix_ns = u64::from_be_bytes(self.bytes::<8>()?);
                let [n] = self.bytes::<1>()?;
                if n > MAX_PARTS {
                    return Err(self.malformed(start, format!("{n} parts (cap {MAX_PARTS})")));
                }
                let mut parts = Vec::with_capacity(usize::from(n));
                let mut total: u64 = 0;
                for _ in 0..n {
                    let at = self.offset;
                    let len = u32::from_be_bytes(self.bytes::<4>()?);
                    total += u64::from(len);
                    if total > MAX_FRAME_BYTES {
                        return Err(self.malformed(
                            at,
                            format!("frame larger than the cap of {MAX_FRAME_BYTES} bytes"),
                        ));
                    }
                    // The length is within the frame cap (checked above), so the part is
                    // allocated once at its size and filled by as few reads as the
                    // reader needs (one `read_to_end` per part grew it 8 KiB at a time).
                    let mut p = vec![0u8; len as usize];
                    let got = read_full(&mut self.inp, &mut p)?;
                    self.offset += got as u64;
                    if got != p.len() {
                        return Err(CaptureError::Truncated {
                            offset: self.offset,
                        });
                    }
                    parts.push(p);
                }
                self.seen.frames += 1;
                Ok(Some(Record::Frame {
                    rank,
                    recv_unix_ns,
                    parts,
                }))
            }
            KIND_DROPPED => {
                let rank = u16::from_be_bytes(self.bytes::<2>()?);
                self.check_rank(rank, start)?;
                let recv_unix_ns = u64::from_be_bytes(self.bytes::<8>()?);
                let bytes = u64::from_be_bytes(self.bytes::<8>()?);
                let [parts] = self.bytes::<1>()?;
                self.seen.dropped += 1;
                Ok(Some(Record::Dropped {
                    rank,
                    recv_unix_ns,
                    bytes,
                    parts,
                }))
            }
            KIND_TRUNCATED => {
                let rank = u16::from_be_bytes(self.bytes::<2>()?);
                self.check_rank(rank, start)?;
                let recv_unix_ns = u64::from_be_bytes(self.bytes::<8>()?);
                let bytes = u64::from_be_bytes(self.bytes::<8>()?);
                let [parts] = self.bytes::<1>()?;
                self.seen.truncated += 1;
                Ok(Some(Record::Truncated {
                    rank,
                    recv_unix_ns,
                    bytes,
                    parts,
                }))
            }
            KIND_END => {
                let frames = u64::from_be_bytes(self.bytes::<8>()?);
                let markers = u64::from_be_bytes(self.bytes::<8>()?);
                let seen_markers = self.seen.dropped.saturating_add(self.seen.truncated);
                if frames != self.seen.frames || markers != seen_markers {
                    return Err(self.malformed(
                        start,
                        format!(
                            "end record counts {frames} frames and {markers} dropped or truncated, the file holds {} and {seen_markers}",
                            self.seen.frames
                        ),
                    ));
                }
                let mut extra = [0u8; 1];
                if self.inp.read(&mut extra)? != 0 {
                    return Err(self.malformed(self.offset, "data after the end record"));
                }
                self.done = true;
                Ok(None)
            }
            k => Err(self.malformed(start, format!("unknown record kind 0x{k:02x}"))),
        }
    }

    fn check_rank(&self, rank: u16, at: u64) -> Result<(), CaptureError> {
        if self.header.endpoints.iter().any(|e| e.rank == rank) {
            Ok(())
        } else {
            Err(self.malformed(at, format!("rank {rank} is not in the header")))
        }
    }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn read_full<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn read_exact_or<R: Read>(r: &mut R, buf: &mut [u8], offset: u64) -> Result<(), CaptureError> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => CaptureError::Truncated { offset },
        _ => CaptureError::Io(e),
    })
}

/// The `[topic, sequence, payload]` view of a KV-event frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventFrame<'a> {
    pub topic: &'a [u8],
    pub seq: u64,
    pub payload: &'a [u8],
}

/// Reads a frame as vLLM/SGLang/TensorRT-LLM publish it: three parts, the second an
/// 8-byte big-endian sequence number. Anything else is not a KV-event frame.
pub fn event_frame(parts: &[Vec<u8>]) -> Result<EventFrame<'_>, String> {
    match parts {
        [topic, seq, payload] => {
            let seq: [u8; 8] = seq.as_slice().try_into().map_err(|_| {
                format!(
                    "the sequence part has {} bytes, expected 8 (big-endian)",
                    seq.len()
                )
            })?;
            Ok(EventFrame {
                topic,
                seq: u64::from_be_bytes(seq),
                payload,
            })
        }
        _ => Err(format!(
            "a KV-event message has 3 parts [topic, sequence, payload], this one has {}",
            parts.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> CaptureHeader {
        CaptureHeader::new(
            vec![Endpoint {
                rank: 0,
                endpoint: "tcp://127.0.0.1:5557".into(),
            }],
            BTreeMap::from([("kv_cache_report_mode".into(), "incremental".into())]),
            "test".into(),
        )
    }

    fn write(frames: &[(u16, Vec<Vec<u8>>)]) -> Vec<u8> {
        let mut w = CaptureWriter::new(Vec::new(), &header()).unwrap();
        for (r, parts) in frames {
            let p: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            w.frame(*r, 7, &p).unwrap();
        }
        w.finish().unwrap().0
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Record>, CaptureError> {
        let mut r = CaptureReader::new(bytes)?;
        let mut out = Vec::new();
        while let Some(rec) = r.next_record()? {
            out.push(rec);
        }
        Ok(out)
    }

    #[test]
    fn round_trip_is_lossless() {
        let parts = vec![
            b"kv".to_vec(),
            3u64.to_be_bytes().to_vec(),
            vec![0x93, 1, 2],
        ];
        let bytes = write(&[(0, parts.clone())]);
        assert_eq!(bytes[0], 0x89);
        let recs = read_all(&bytes).unwrap();
        assert_eq!(
            recs,
            vec![Record::Frame {
                rank: 0,
                recv_unix_ns: 7,
                parts: parts.clone()
            }]
        );
        let f = event_frame(&parts).unwrap();
        assert_eq!(
            (f.topic, f.seq, f.payload),
            (&b"kv"[..], 3, &[0x93, 1, 2][..])
        );
    }

    /// Issue 34, item 5: a message cut off by the publisher is a `truncated` record,
    /// read back as such; the `end` record counts it with the dropped ones, and a
    /// count that disagrees is refused.
    #[test]
    fn a_truncated_marker_round_trips_and_is_counted() {
        let mut w = CaptureWriter::new(Vec::new(), &header()).unwrap();
        w.dropped(0, 5, MAX_FRAME_BYTES + 1, 3).unwrap();
        w.truncated(0, 6, 117, 3).unwrap();
        let (bytes, trailer) = w.finish().unwrap();
        assert_eq!((trailer.dropped, trailer.truncated), (1, 1));
        assert_eq!(
            read_all(&bytes).unwrap(),
            vec![
                Record::Dropped {
                    rank: 0,
                    recv_unix_ns: 5,
                    bytes: MAX_FRAME_BYTES + 1,
                    parts: 3
                },
                Record::Truncated {
                    rank: 0,
                    recv_unix_ns: 6,
                    bytes: 117,
                    parts: 3
                },
            ]
        );
        // The end record's marker count is its last 8 bytes: 2 here.
        let mut wrong = bytes.clone();
        let last = wrong.len() - 1;
        wrong[last] = 1;
        assert!(read_all(&wrong).is_err());
    }

    #[test]
    fn truncation_and_garbage_are_refused() {
        let bytes = write(&[(0, vec![b"t".to_vec(), vec![0; 8], vec![1; 40]])]);
        for cut in [3, 12, 20, bytes.len() - 1, bytes.len() - 17] {
            assert!(read_all(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert!(read_all(&extra).is_err());
        // A rank that the header does not list.
        let bad = write(&[(3, vec![vec![]])]);
        assert!(read_all(&bad).is_err());
    }

    #[test]
    fn hostile_lengths_allocate_nothing_big() {
        let mut bytes = write(&[]);
        bytes.truncate(bytes.len() - 17);
        bytes.extend([KIND_FRAME, 0, 0]);
        bytes.extend(0u64.to_be_bytes());
        bytes.push(1);
        bytes.extend(u32::MAX.to_be_bytes());
        let e = read_all(&bytes).unwrap_err();
        assert!(e.to_string().contains("cap"), "{e}");
        // A huge header length.
        let mut h = MAGIC.to_vec();
        h.extend(1u16.to_be_bytes());
        h.extend(u32::MAX.to_be_bytes());
        assert!(read_all(&h).unwrap_err().to_string().contains("cap"));
    }

    /// Issue 42: a key given twice, at any depth of the header, is refused (serde would
    /// keep the last), whatever `writer` names.
    #[test]
    fn a_header_repeating_a_key_is_refused() {
        let bytes = write(&[]);
        let hlen = u32::from_be_bytes(bytes[10..14].try_into().unwrap()) as usize;
        let json = std::str::from_utf8(&bytes[14..14 + hlen])
            .unwrap()
            .to_string();
        let with = |h: &str| {
            let mut b = bytes[..10].to_vec();
            b.extend(u32::try_from(h.len()).unwrap().to_be_bytes());
            b.extend(h.as_bytes());
            b.extend(&bytes[14 + hlen..]);
            b
        };
        assert!(read_all(&with(&json)).is_ok(), "the control");
        for (from, to) in [
            (r#""meta":{"#, r#""meta":{"runtime":"a 1","runtime":"b 2","#),
            (
                r#""meta":{"#,
                r#""meta":{"\u0072untime":"a 1","runtime":"b 2","#,
            ),
            (r#""writer":"#, r#""writer":"kvlower 9","writer":"#),
            (r#""rank":"#, r#""rank":1,"rank":"#),
            (r#""version":"#, r#""version":1,"version":"#),
        ] {
            let edited = json.replacen(from, to, 1);
            assert_ne!(edited, json);
            let e = read_all(&with(&edited)).unwrap_err().to_string();
            assert!(
                e.contains("repeated") || e.contains("duplicate"),
                "{to}: {e}"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_after_the_magic_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let mut b = write(&[(0, vec![b"t".to_vec(), vec![0; 8], vec![1, 2]])]);
            let keep = 14 + b[10..14].iter().fold(0usize, |a, x| a * 256 + *x as usize);
            b.truncate(keep);
            b.extend(tail);
            let _ = read_all(&b);
        }
    }
}
