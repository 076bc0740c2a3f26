//! A bounded ZMTP 3.x SUB client (feature `zmq`): the only ZeroMQ code `kvlower capture`
//! runs, written here so that every length a peer declares is checked against a cap
//! before anything is allocated or read (`docs/capture-format.md`, *Bounds on hostile
//! publishers*).
//!
//! What it speaks (ZMTP 3.0, RFC 23; a 3.1 peer downgrades to it):
//!
//! - the 64-byte greeting: signature `FF 00×8 7F`, version 3.0, mechanism `NULL`,
//!   as-server 0; the peer's must have the signature bytes, major version 3 and `NULL`;
//! - the `READY` command with `Socket-Type` `SUB`; the peer's `READY` must say `PUB` or
//!   `XPUB` (anything else is refused);
//! - one subscription to every topic, as a ZMTP 3.0 message `[0x01]` (libzmq 4.x and
//!   other ZMTP 3 publishers accept it);
//! - then frames: a flags byte (bit 0 MORE, bit 1 LONG, bit 2 COMMAND, the others must
//!   be 0), the size (1 byte, or 8 bytes big-endian when LONG), the body. `PING` is
//!   answered with `PONG`; other commands are ignored.
//!
//! Grammar (ZMTP 3.1: the traffic is a sequence of whole commands and whole messages,
//! and a property names itself once), each breach refused:
//!
//! - a `READY` that gives a property twice (names compared ignoring ASCII case, as
//!   property names are) — a second `Socket-Type` would otherwise win;
//! - a command frame between the parts of one multipart message.
//!
//! A message the peer cut off by closing (or resetting) the connection after its first
//! frame had begun is not lost in silence: [`Received::Truncated`] says how much of it
//! had been declared, the capture records a `truncated` marker (a gap for the join), and
//! the next [`SubConnection::recv`] reports the closed connection.
//!
//! Caps (checked on the declared size, before reading the body):
//!
//! - a command is at most [`MAX_COMMAND_BYTES`];
//! - a message is kept as data while its parts fit the capture file's caps
//!   ([`MAX_FRAME_BYTES`] in total, [`MAX_PARTS`] parts); a larger one is read and
//!   discarded in fixed-size chunks and reported as [`Received::Dropped`] (a `dropped`
//!   record in the capture);
//! - a message declaring more than [`MAX_WIRE_MESSAGE_BYTES`] in total, or more than
//!   [`MAX_WIRE_PARTS`] parts, is refused: [`ZmtpError::Refused`], and the caller closes
//!   the connection.
//!
//! Only the NULL security mechanism exists here (KV-event publishers bind without
//! CURVE or PLAIN).

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufStream};

use crate::file::{MAX_FRAME_BYTES, MAX_PARTS};

/// Largest command frame accepted (a `READY` with its properties, a `PING`, ...).
pub const MAX_COMMAND_BYTES: u64 = 64 * 1024;
/// Largest message (all parts, as declared by the frame sizes) a peer may send: over
/// [`MAX_FRAME_BYTES`] it is skipped and recorded as dropped, over this it is refused.
pub const MAX_WIRE_MESSAGE_BYTES: u64 = 1024 * 1024 * 1024;
/// Most parts in one message a peer may send (the capture's `dropped` record counts
/// parts in one byte); more is refused.
pub const MAX_WIRE_PARTS: usize = 255;

const FLAG_MORE: u8 = 0x01;
const FLAG_LONG: u8 = 0x02;
const FLAG_COMMAND: u8 = 0x04;
const FLAGS_RESERVED: u8 = 0xF8;

/// Why a connection ended.
#[derive(Debug, thiserror::Error)]
pub enum ZmtpError {
    /// The connection failed or closed (reset, end of stream): the peer may be
    /// reconnected to.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The peer broke the protocol or a cap: never reconnected to.
    #[error("{0}")]
    Refused(String),
}

fn refused(message: impl Into<String>) -> ZmtpError {
    ZmtpError::Refused(message.into())
}

/// One message received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Received {
    /// Within the capture file's caps: the parts as sent.
    Kept(Vec<Vec<u8>>),
    /// Over them (but within the wire caps): its data was read and discarded.
    Dropped { bytes: u64, parts: u8 },
    /// Cut off: the connection ended inside the message (after its first frame had
    /// begun). `bytes` and `parts` are what the frames begun had declared.
    Truncated { bytes: u64, parts: u8 },
}

/// Our greeting: signature, version 3.0, mechanism NULL, as-server 0, filler.
pub fn greeting() -> [u8; 64] {
    let mut g = [0u8; 64];
    g[0] = 0xFF;
    g[9] = 0x7F;
    g[10] = 3;
    g[11] = 0;
    g[12..16].copy_from_slice(b"NULL");
    g
}

/// Checks a peer's greeting (ZMTP 3.x, NULL mechanism).
pub fn check_greeting(g: &[u8; 64]) -> Result<(), ZmtpError> {
    if g[0] != 0xFF || g[9] & 0x01 == 0 {
        return Err(refused(
            "the peer's greeting has no ZMTP signature (not a ZeroMQ 3.x publisher)",
        ));
    }
    if g[10] != 3 {
        return Err(refused(format!(
            "the peer speaks ZMTP {}.{}; only 3.x is supported",
            g[10], g[11]
        )));
    }
    let mech = &g[12..32];
    let name_len = mech.iter().position(|b| *b == 0).unwrap_or(mech.len());
    if &mech[..name_len] != b"NULL" || mech[name_len..].iter().any(|b| *b != 0) {
        return Err(refused(format!(
            "the peer asks for security mechanism `{}`; only NULL is supported",
            String::from_utf8_lossy(&mech[..name_len]).escape_debug()
        )));
    }
    Ok(())
}

/// A command frame (short form: every command we send is under 256 bytes).
fn command(name: &[u8], data: &[u8]) -> Vec<u8> {
    let body_len = 1 + name.len() + data.len();
    let mut f = Vec::with_capacity(2 + body_len);
    f.push(FLAG_COMMAND);
    f.push(u8::try_from(body_len).unwrap_or(u8::MAX));
    f.push(u8::try_from(name.len()).unwrap_or(u8::MAX));
    f.extend_from_slice(name);
    f.extend_from_slice(data);
    f
}

/// Our `READY`: `Socket-Type` = `SUB`.
pub fn ready_sub() -> Vec<u8> {
    let mut props = Vec::new();
    props.push(11);
    props.extend_from_slice(b"Socket-Type");
    props.extend_from_slice(&3u32.to_be_bytes());
    props.extend_from_slice(b"SUB");
    command(b"READY", &props)
}

/// A parsed command body: its name and the bytes after it.
fn split_command(body: &[u8]) -> Result<(&[u8], &[u8]), ZmtpError> {
    let (&n, rest) = body
        .split_first()
        .ok_or_else(|| refused("an empty command frame"))?;
    let n = usize::from(n);
    if rest.len() < n {
        return Err(refused("a command name longer than its frame"));
    }
    Ok(rest.split_at(n))
}

/// The `Socket-Type` property of a `READY` body's properties; a property given twice
/// (names compared ignoring ASCII case) is refused.
fn socket_type(mut props: &[u8]) -> Result<Option<&[u8]>, ZmtpError> {
    let mut found = None;
    let mut names: Vec<&[u8]> = Vec::new();
    while let Some((&n, rest)) = props.split_first() {
        let n = usize::from(n);
        let (name, rest) = rest
            .split_at_checked(n)
            .ok_or_else(|| refused("a READY property name longer than the command"))?;
        let (len, rest) = rest
            .split_at_checked(4)
            .ok_or_else(|| refused("a READY property without its value length"))?;
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        let (value, rest) = usize::try_from(len)
            .ok()
            .and_then(|l| rest.split_at_checked(l))
            .ok_or_else(|| refused("a READY property value longer than the command"))?;
        if names.iter().any(|seen| seen.eq_ignore_ascii_case(name)) {
            return Err(refused(format!(
                "the peer's READY gives the property `{}` twice (a property names itself once)",
                String::from_utf8_lossy(name).escape_debug()
            )));
        }
        names.push(name);
        if name.eq_ignore_ascii_case(b"Socket-Type") {
            found = Some(value);
        }
        props = rest;
    }
    Ok(found)
}

/// One frame's header.
struct Header {
    more: bool,
    command: bool,
    size: u64,
}

/// A SUB connection after the handshake.
pub struct SubConnection<S> {
    io: BufStream<S>,
    /// A data frame's flags byte has been read and its message is not whole yet.
    in_message: bool,
}

impl<S: AsyncRead + AsyncWrite + Unpin> SubConnection<S> {
    /// Greeting, `READY` both ways (the peer must be a PUB or XPUB), then the
    /// subscription to every topic. Time bounds are the caller's (wrap in a timeout).
    pub async fn handshake(stream: S) -> Result<Self, ZmtpError> {
        let mut io = BufStream::new(stream);
        io.write_all(&greeting()).await?;
        io.flush().await?;
        let mut g = [0u8; 64];
        io.read_exact(&mut g).await?;
        check_greeting(&g)?;
        io.write_all(&ready_sub()).await?;
        io.flush().await?;
        let mut conn = SubConnection {
            io,
            in_message: false,
        };
        let h = conn.header().await?;
        if !h.command {
            return Err(refused("the peer sent a message before its READY command"));
        }
        let body = conn.command_body(&h).await?;
        let (name, rest) = split_command(&body)?;
        match name {
            b"READY" => match socket_type(rest)? {
                Some(b"PUB") | Some(b"XPUB") => {}
                Some(t) => {
                    return Err(refused(format!(
                        "the peer is a ZeroMQ {} socket, not a publisher (PUB or XPUB)",
                        String::from_utf8_lossy(t).escape_debug()
                    )));
                }
                None => return Err(refused("the peer's READY names no Socket-Type")),
            },
            b"ERROR" => {
                let reason = rest.get(1..).unwrap_or_default();
                return Err(refused(format!(
                    "the peer refused the handshake: ERROR `{}`",
                    String::from_utf8_lossy(reason).escape_debug()
                )));
            }
            other => {
                return Err(refused(format!(
                    "the peer sent the command `{}` instead of READY",
                    String::from_utf8_lossy(other).escape_debug()
                )));
            }
        }
        // Subscribe to every topic: a ZMTP 3.0 subscription message, body 0x01.
        conn.io.write_all(&[0x00, 0x01, 0x01]).await?;
        conn.io.flush().await?;
        Ok(conn)
    }

    async fn header(&mut self) -> Result<Header, ZmtpError> {
        let flags = self.io.read_u8().await?;
        if flags & FLAG_COMMAND == 0 {
            self.in_message = true;
        }
        if flags & FLAGS_RESERVED != 0 {
            return Err(refused(format!(
                "a frame with flags 0x{flags:02x} (reserved bits set: not ZMTP 3 framing)"
            )));
        }
        let size = if flags & FLAG_LONG != 0 {
            self.io.read_u64().await?
        } else {
            u64::from(self.io.read_u8().await?)
        };
        let h = Header {
            more: flags & FLAG_MORE != 0,
            command: flags & FLAG_COMMAND != 0,
            size,
        };
        if h.command && h.more {
            return Err(refused("a command frame with the MORE flag"));
        }
        if h.command && h.size > MAX_COMMAND_BYTES {
            return Err(refused(format!(
                "a command frame of {} bytes (cap {MAX_COMMAND_BYTES})",
                h.size
            )));
        }
        Ok(h)
    }

    /// Reads exactly `n` bytes (`n` already checked against a cap); memory grows only
    /// with the bytes that actually arrive.
    async fn body(&mut self, n: u64) -> Result<Vec<u8>, ZmtpError> {
        let mut b = Vec::new();
        let got = (&mut self.io).take(n).read_to_end(&mut b).await?;
        if got as u64 != n {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        Ok(b)
    }

    async fn command_body(&mut self, h: &Header) -> Result<Vec<u8>, ZmtpError> {
        self.body(h.size).await
    }

    /// Reads and discards `n` bytes through a fixed buffer.
    async fn skip(&mut self, n: u64) -> Result<(), ZmtpError> {
        let got = tokio::io::copy(&mut (&mut self.io).take(n), &mut tokio::io::sink()).await?;
        if got != n {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        Ok(())
    }

    async fn on_command(&mut self, body: &[u8]) -> Result<(), ZmtpError> {
        let (name, rest) = split_command(body)?;
        if name == b"PING" {
            // PING: TTL (2 bytes) then up to 16 bytes of context, echoed in PONG.
            let context = rest.get(2..).unwrap_or_default();
            let context = context.get(..16).unwrap_or(context);
            self.io.write_all(&command(b"PONG", context)).await?;
            self.io.flush().await?;
        }
        Ok(())
    }

    /// The next message. A connection that ends between messages (or inside a command)
    /// is an [`ZmtpError::Io`] of kind `UnexpectedEof`; one that ends inside a message is
    /// [`Received::Truncated`] first, and that error on the next call.
    pub async fn recv(&mut self) -> Result<Received, ZmtpError> {
        let mut count: usize = 0;
        let mut total: u64 = 0;
        self.in_message = false;
        let got = self.recv_parts(&mut count, &mut total).await;
        let cut = self.in_message;
        self.in_message = false;
        match got {
            Err(ZmtpError::Io(_)) if cut => Ok(Received::Truncated {
                bytes: total,
                parts: u8::try_from(count.max(1)).unwrap_or(u8::MAX),
            }),
            got => got,
        }
    }

    /// [`Self::recv`]'s frames, counting the parts and declared bytes of the message as
    /// they are read (so a cut-off message can be told).
    async fn recv_parts(
        &mut self,
        count: &mut usize,
        total: &mut u64,
    ) -> Result<Received, ZmtpError> {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        let mut dropping = false;
        loop {
            let h = self.header().await?;
            if h.command && *count > 0 {
                return Err(refused(
                    "a command frame between the parts of a message (ZMTP 3.1: whole commands and whole messages)",
                ));
            }
            if h.command {
                let body = self.command_body(&h).await?;
                self.on_command(&body).await?;
                continue;
            }
            *count += 1;
            *total = total.saturating_add(h.size);
            let (count, total) = (*count, *total);
            if count > MAX_WIRE_PARTS {
                return Err(refused(format!(
                    "a message of more than {MAX_WIRE_PARTS} parts (cap {MAX_WIRE_PARTS})"
                )));
            }
            if total > MAX_WIRE_MESSAGE_BYTES {
                return Err(refused(format!(
                    "a message declaring {total} bytes (cap {MAX_WIRE_MESSAGE_BYTES})"
                )));
            }
            if !dropping && (total > MAX_FRAME_BYTES || count > usize::from(MAX_PARTS)) {
                dropping = true;
                parts = Vec::new();
            }
            if dropping {
                self.skip(h.size).await?;
            } else {
                parts.push(self.body(h.size).await?);
            }
            if !h.more {
                return Ok(if dropping {
                    Received::Dropped {
                        bytes: total,
                        parts: u8::try_from(count).unwrap_or(u8::MAX),
                    }
                } else {
                    Received::Kept(parts)
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream, duplex};

    fn ready(socket_type: &[u8]) -> Vec<u8> {
        let mut props = vec![11];
        props.extend_from_slice(b"Socket-Type");
        props.extend_from_slice(&(socket_type.len() as u32).to_be_bytes());
        props.extend_from_slice(socket_type);
        command(b"READY", &props)
    }

    fn frame(more: bool, body: &[u8]) -> Vec<u8> {
        let mut f = Vec::new();
        let flags = if more { FLAG_MORE } else { 0 };
        if body.len() > 255 {
            f.push(flags | FLAG_LONG);
            f.extend_from_slice(&(body.len() as u64).to_be_bytes());
        } else {
            f.push(flags);
            f.push(body.len() as u8);
        }
        f.extend_from_slice(body);
        f
    }

    /// Runs a handshake against `peer_bytes` (what the publisher sends, all at once),
    /// then receives up to `n` messages; returns them and the first error.
    fn run(peer_bytes: Vec<u8>, n: usize) -> (Vec<Received>, Option<ZmtpError>, Vec<u8>) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (ours, mut theirs): (DuplexStream, DuplexStream) = duplex(1 << 16);
            let writer = tokio::spawn(async move {
                let _ = theirs.write_all(&peer_bytes).await;
                let _ = theirs.shutdown().await;
                let mut seen = Vec::new();
                let _ = theirs.read_to_end(&mut seen).await;
                seen
            });
            let mut got = Vec::new();
            let mut err = None;
            match SubConnection::handshake(ours).await {
                Ok(mut c) => {
                    for _ in 0..n {
                        match c.recv().await {
                            Ok(m) => got.push(m),
                            Err(e) => {
                                err = Some(e);
                                break;
                            }
                        }
                    }
                }
                Err(e) => err = Some(e),
            }
            let seen = writer.await.unwrap();
            (got, err, seen)
        })
    }

    fn publisher() -> Vec<u8> {
        let mut b = greeting().to_vec();
        b.extend(ready(b"PUB"));
        b
    }

    #[test]
    fn a_publisher_is_subscribed_and_its_messages_kept() {
        let mut b = publisher();
        b.extend(command(b"PING", &[0, 10, b'c', b'x']));
        b.extend(frame(true, b"kv"));
        b.extend(frame(true, &7u64.to_be_bytes()));
        b.extend(frame(false, &[0x93; 300]));
        let (got, err, seen) = run(b, 2);
        assert_eq!(
            got,
            vec![Received::Kept(vec![
                b"kv".to_vec(),
                7u64.to_be_bytes().to_vec(),
                vec![0x93; 300]
            ])]
        );
        assert!(
            matches!(&err, Some(ZmtpError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof),
            "{err:?}"
        );
        // What we sent: greeting, READY(SUB), subscription to everything, PONG.
        let mut want = greeting().to_vec();
        want.extend(ready_sub());
        want.extend([0, 1, 1]);
        want.extend(command(b"PONG", b"cx"));
        assert_eq!(seen, want);
    }

    #[test]
    fn huge_declared_sizes_are_refused_before_reading() {
        for size in [1u64 << 62, 1 << 40, MAX_WIRE_MESSAGE_BYTES + 1, u64::MAX] {
            let mut b = publisher();
            b.push(FLAG_LONG);
            b.extend(size.to_be_bytes());
            let (got, err, _) = run(b, 1);
            assert!(got.is_empty());
            assert!(
                matches!(err, Some(ZmtpError::Refused(_))),
                "{size}: {err:?}"
            );
        }
        // A long command.
        let mut b = publisher();
        b.push(FLAG_LONG | FLAG_COMMAND);
        b.extend((MAX_COMMAND_BYTES + 1).to_be_bytes());
        assert!(matches!(run(b, 1).1, Some(ZmtpError::Refused(_))));
    }

    #[test]
    fn oversized_messages_become_dropped_markers() {
        let mut b = publisher();
        let big = vec![7u8; MAX_FRAME_BYTES as usize + 1];
        b.extend(frame(true, b"t"));
        b.extend(frame(false, &big));
        let mut many = Vec::new();
        for i in 0..20u8 {
            many.extend(frame(i < 19, &[i]));
        }
        b.extend(many);
        b.extend(frame(false, b"ok"));
        let (got, _, _) = run(b, 3);
        assert_eq!(
            got,
            vec![
                Received::Dropped {
                    bytes: MAX_FRAME_BYTES + 2,
                    parts: 2
                },
                Received::Dropped {
                    bytes: 20,
                    parts: 20
                },
                Received::Kept(vec![b"ok".to_vec()]),
            ]
        );
    }

    #[test]
    fn endless_multipart_messages_are_refused() {
        let mut b = publisher();
        for _ in 0..=MAX_WIRE_PARTS {
            b.extend(frame(true, b"x"));
        }
        let (got, err, _) = run(b, 1);
        assert!(got.is_empty());
        assert!(matches!(err, Some(ZmtpError::Refused(_))), "{err:?}");
    }

    #[test]
    fn wrong_peers_are_refused() {
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        cases.push(("garbage greeting", vec![0x42; 64]));
        let mut v2 = greeting();
        v2[10] = 2;
        cases.push(("ZMTP 2", v2.to_vec()));
        let mut curve = greeting();
        curve[12..17].copy_from_slice(b"CURVE");
        cases.push(("CURVE", curve.to_vec()));
        let mut sub = greeting().to_vec();
        sub.extend(ready(b"SUB"));
        cases.push(("a SUB peer", sub));
        let mut none = greeting().to_vec();
        none.extend(command(b"READY", &[]));
        cases.push(("no Socket-Type", none));
        let mut msg = greeting().to_vec();
        msg.extend(frame(false, b"hi"));
        cases.push(("message before READY", msg));
        let mut err = greeting().to_vec();
        err.extend(command(b"ERROR", b"\x06denied"));
        cases.push(("ERROR", err));
        let mut bad_prop = greeting().to_vec();
        bad_prop.extend(command(b"READY", &[11, b'S', b'o']));
        cases.push(("cut property", bad_prop));
        let mut reserved = publisher();
        reserved.extend([0x80, 0x01, 0x00]);
        cases.push(("reserved flag bits", reserved));
        let mut more_cmd = publisher();
        more_cmd.extend([FLAG_COMMAND | FLAG_MORE, 0]);
        cases.push(("command with MORE", more_cmd));
        for (name, b) in cases {
            let (got, err, _) = run(b, 1);
            assert!(got.is_empty(), "{name}");
            assert!(
                matches!(err, Some(ZmtpError::Refused(_))),
                "{name}: {err:?}"
            );
        }
    }

    /// Issue 34, item 5: a READY giving `Socket-Type` twice (`SUB`, then `PUB`) was
    /// accepted with the last value; any property given twice is refused now.
    #[test]
    fn a_property_given_twice_is_refused() {
        let prop = |name: &[u8], value: &[u8]| {
            let mut p = vec![u8::try_from(name.len()).unwrap()];
            p.extend_from_slice(name);
            p.extend_from_slice(&u32::try_from(value.len()).unwrap().to_be_bytes());
            p.extend_from_slice(value);
            p
        };
        let cases: [Vec<u8>; 3] = [
            [prop(b"Socket-Type", b"SUB"), prop(b"Socket-Type", b"PUB")].concat(),
            [prop(b"Socket-Type", b"PUB"), prop(b"socket-type", b"PUB")].concat(),
            [
                prop(b"Identity", b""),
                prop(b"Socket-Type", b"PUB"),
                prop(b"IDENTITY", b"x"),
            ]
            .concat(),
        ];
        for props in cases {
            let mut b = greeting().to_vec();
            b.extend(command(b"READY", &props));
            b.extend(frame(false, b"m"));
            let (got, err, _) = run(b, 1);
            assert!(got.is_empty(), "{got:?}");
            assert!(
                matches!(&err, Some(ZmtpError::Refused(m)) if m.contains("twice")),
                "{err:?}"
            );
        }
        // The control: distinct properties are fine.
        let mut b = greeting().to_vec();
        let props = [prop(b"Identity", b""), prop(b"Socket-Type", b"PUB")].concat();
        b.extend(command(b"READY", &props));
        b.extend(frame(false, b"m"));
        assert_eq!(run(b, 1).0, vec![Received::Kept(vec![b"m".to_vec()])]);
    }

    /// Issue 34, item 5: PING and SUBSCRIBE command frames between the parts of one
    /// multipart message were accepted (the message kept whole around them).
    #[test]
    fn a_command_between_the_parts_of_a_message_is_refused() {
        for cmd in [
            command(b"PING", &[0, 10, b'c', b'x']),
            command(b"SUBSCRIBE", b"kv"),
        ] {
            let mut b = publisher();
            b.extend(frame(true, b"kv"));
            b.extend(cmd.clone());
            b.extend(frame(false, b"payload"));
            let (got, err, _) = run(b, 1);
            assert!(got.is_empty(), "{got:?}");
            assert!(
                matches!(&err, Some(ZmtpError::Refused(m)) if m.contains("between the parts")),
                "{err:?}"
            );
            // Between whole messages, commands are fine.
            let mut b = publisher();
            b.extend(frame(false, b"a"));
            b.extend(cmd);
            b.extend(frame(false, b"b"));
            let (got, _, _) = run(b, 2);
            assert_eq!(
                got,
                vec![
                    Received::Kept(vec![b"a".to_vec()]),
                    Received::Kept(vec![b"b".to_vec()])
                ]
            );
        }
    }

    /// Issue 34, item 5: a message cut off by the peer closing inside it was lost
    /// without a trace (the same end-of-stream as between messages). It is
    /// `Truncated` now, with what its frames had declared, and the closed connection
    /// comes after it; a connection closed between messages (or inside a command)
    /// is no truncation.
    #[test]
    fn a_message_cut_off_by_the_peer_is_reported_truncated() {
        let mut whole = publisher();
        whole.extend(frame(false, b"first"));
        let cuts: [(Vec<u8>, u64, u8); 4] = [
            // Inside the body of the second part.
            (
                [frame(true, b"kv"), frame(false, &[7; 40])[..20].to_vec()].concat(),
                42,
                2,
            ),
            // After a part with MORE, before the next frame.
            (frame(true, b"kv"), 2, 1),
            // After the first flags byte only.
            (vec![0x00], 0, 1),
            // Inside a long size field.
            (vec![FLAG_LONG, 0, 0], 0, 1),
        ];
        for (cut, bytes, parts) in cuts {
            let b = [whole.clone(), cut].concat();
            let (got, err, _) = run(b, 3);
            assert_eq!(
                got,
                vec![
                    Received::Kept(vec![b"first".to_vec()]),
                    Received::Truncated { bytes, parts }
                ]
            );
            assert!(
                matches!(&err, Some(ZmtpError::Io(e)) if e.kind() == io::ErrorKind::UnexpectedEof),
                "{err:?}"
            );
        }
        for clean in [Vec::new(), command(b"PING", &[0, 10])[..3].to_vec()] {
            let (got, err, _) = run([whole.clone(), clean].concat(), 3);
            assert_eq!(got, vec![Received::Kept(vec![b"first".to_vec()])]);
            assert!(matches!(err, Some(ZmtpError::Io(_))), "{err:?}");
        }
    }

    #[test]
    fn xpub_is_a_publisher_and_property_names_ignore_case() {
        let mut b = greeting().to_vec();
        let mut props = vec![11];
        props.extend_from_slice(b"socket-type");
        props.extend_from_slice(&4u32.to_be_bytes());
        props.extend_from_slice(b"XPUB");
        b.extend(command(b"READY", &props));
        b.extend(frame(false, b"m"));
        let (got, _, _) = run(b, 1);
        assert_eq!(got, vec![Received::Kept(vec![b"m".to_vec()])]);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_after_the_handshake_never_panic(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let mut b = publisher();
            b.extend(tail);
            let _ = run(b, 4);
        }
    }
}
