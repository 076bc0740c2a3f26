//! The live subscriber behind `kvlower capture` (feature `zmq`).
//!
//! One SUB connection per endpoint (rank = position on the command line), subscribed
//! to every topic. Messages go, as they arrive, into a temporary file beside the
//! output; when a stop condition holds the `end` record is written, the file is synced
//! and renamed over the output, so a reader sees either no capture or a complete one.
//!
//! ZeroMQ is [`crate::zmtp`]: a bounded ZMTP 3 SUB client of this crate, which checks
//! every size a peer declares against a cap before reading or allocating, so a hostile
//! publisher is refused with [`SubscribeError::Refused`] instead of exhausting memory.
//! A PUB socket drops messages for a subscriber that falls behind, and a connection
//! that is lost is re-established while the capture runs; the frames' own sequence
//! numbers make such a loss visible to the join (a `sequence_gap`), never silent.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::time::Instant;

use crate::file::{CaptureHeader, CaptureWriter, Endpoint};
use crate::zmtp::{Received, SubConnection, ZmtpError};

/// Received messages waiting to be written hold at most this many bytes together (a
/// kept message is at most `MAX_FRAME_BYTES`); a publisher beyond it waits, and its
/// PUB socket drops what its own queue cannot hold.
pub const MAX_QUEUED_BYTES: u32 = 64 * 1024 * 1024;
/// Pause between connection attempts (while connecting, and after a lost connection).
const RETRY: Duration = Duration::from_millis(100);

/// What to subscribe to and when to stop.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// `tcp://HOST:PORT`, one per data-parallel rank, in rank order.
    pub endpoints: Vec<String>,
    pub out: PathBuf,
    /// Stop this long after the subscriptions are in place.
    pub duration: Option<Duration>,
    /// Stop after this long without a frame (counted from the subscription while no
    /// frame has arrived yet).
    pub until_idle: Option<Duration>,
    /// How long to wait for the publishers to accept the connection and complete the
    /// ZMTP handshake (never longer than `duration`).
    pub connect_timeout: Duration,
    /// Operator-declared engine facts, recorded in the header.
    pub meta: BTreeMap<String, String>,
    /// The writing tool, recorded in the header.
    pub writer: String,
}

/// Why the capture stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    Duration,
    Idle,
    Signal,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Duration => "duration elapsed",
            StopReason::Idle => "idle",
            StopReason::Signal => "interrupted",
        })
    }
}

/// What a finished capture holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSummary {
    pub frames: u64,
    pub dropped: u64,
    /// Messages the publishers cut off by closing the connection inside them.
    pub truncated: u64,
    /// Frames per rank, in rank order.
    pub per_rank: Vec<u64>,
    pub stop: StopReason,
}

/// Why no capture was written. Every variant has a stable [`code`](Self::code).
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    /// No ZMTP publisher answered at the endpoint in time.
    #[error("{endpoint}: {message}")]
    Unreachable { endpoint: String, message: String },
    /// The peer broke the ZMTP protocol or a cap: the connection was closed.
    #[error("{endpoint}: publisher refused: {message}; connection closed")]
    Refused { endpoint: String, message: String },
    #[error("{}: {source}", path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Invalid options, or the async runtime could not start.
    #[error("{0}")]
    Setup(String),
}

impl SubscribeError {
    /// A stable code per kind of failure (`kvlower codes` lists them).
    pub fn code(&self) -> kvlower_codes::Code {
        use kvlower_codes::Code;
        match self {
            SubscribeError::Unreachable { .. } => Code::CapturePublisherUnreachable,
            SubscribeError::Refused { .. } => Code::CapturePublisherRefused,
            SubscribeError::Output { .. } => Code::CaptureOutputUnwritable,
            SubscribeError::Setup(_) => Code::CaptureSetupFailed,
        }
    }

    /// The finding for this error about the capture written to `out` (as shown to
    /// the reader): its code, the message and the hint. Every capture error is an
    /// unread input ([`kvlower_codes::Code::is_unread_input`]): nothing was recorded.
    pub fn finding(&self, out: impl Into<String>) -> kvlower_codes::Finding {
        kvlower_codes::Finding::new(self.code(), out, self.to_string()).with_hint(self.hint())
    }

    /// How to fix it.
    pub fn hint(&self) -> &'static str {
        match self {
            SubscribeError::Unreachable { .. } => {
                "start the runtime with its KV-event publisher first, check HOST:PORT, or give a longer --connect-timeout / --duration"
            }
            SubscribeError::Refused { .. } => {
                "the endpoint must be a ZMTP 3 PUB socket (NULL security) whose messages stay within the caps of docs/capture-format.md"
            }
            SubscribeError::Output { .. } => "name a file in an existing, writable folder",
            SubscribeError::Setup(_) => {
                "give 1 to 65535 --endpoint tcp://HOST:PORT; if they are right, the system refused a runtime resource (threads, timers, sockets)"
            }
        }
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The `HOST:PORT` of an endpoint, or why it is not `tcp://HOST:PORT`.
fn address(e: &str) -> Result<&str, String> {
    let rest = e
        .strip_prefix("tcp://")
        .ok_or_else(|| format!("`{e}`: an endpoint is tcp://HOST:PORT"))?;
    let (host, port) = rest
        .rsplit_once(':')
        .ok_or_else(|| format!("`{e}`: no port (tcp://HOST:PORT)"))?;
    if host.is_empty() || host == "*" {
        return Err(format!("`{e}`: name the publisher's host"));
    }
    port.parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .map(|_| rest)
        .ok_or_else(|| format!("`{e}`: port must be 1-65535"))
}

/// Checks an endpoint before connecting: only `tcp://HOST:PORT` is accepted.
pub fn check_endpoint(e: &str) -> Result<(), String> {
    address(e).map(|_| ())
}

/// Subscribes, calls `on_subscribed` once every socket is connected and subscribed,
/// records until a stop condition holds, and writes `opts.out` atomically.
pub fn capture(
    opts: &CaptureOptions,
    on_subscribed: &mut dyn FnMut(),
) -> Result<CaptureSummary, SubscribeError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| SubscribeError::Setup(format!("cannot start the async runtime: {e}")))?;
    let result = rt.block_on(run(opts, on_subscribed));
    // A name lookup still running on the blocking pool must not hold the exit.
    rt.shutdown_timeout(Duration::from_millis(100));
    result
}

fn out_err(path: &Path) -> impl Fn(std::io::Error) -> SubscribeError + '_ {
    move |source| SubscribeError::Output {
        path: path.to_path_buf(),
        source,
    }
}

/// One connection attempt: TCP, then the ZMTP handshake, each bounded by `deadline`.
async fn attempt(
    endpoint: &str,
    addr: &str,
    deadline: Instant,
) -> Result<SubConnection<TcpStream>, Attempt> {
    let stream = match tokio::time::timeout_at(deadline, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return Err(Attempt::Failed(format!("cannot connect: {e}"))),
        Err(_) => return Err(Attempt::Failed("the connection was not accepted".into())),
    };
    let _ = stream.set_nodelay(true);
    match tokio::time::timeout_at(deadline, SubConnection::handshake(stream)).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(ZmtpError::Refused(message))) => Err(Attempt::Refused(SubscribeError::Refused {
            endpoint: endpoint.to_string(),
            message,
        })),
        Ok(Err(ZmtpError::Io(e))) => Err(Attempt::Failed(format!(
            "the connection ended during the ZMTP handshake: {e}"
        ))),
        Err(_) => Err(Attempt::Failed(
            "the peer accepted the connection but did not complete the ZMTP handshake".into(),
        )),
    }
}

enum Attempt {
    /// Worth retrying (nothing listening yet, reset, timed out).
    Failed(String),
    /// A peer that is not a publisher within the caps: final.
    Refused(SubscribeError),
}

/// Connects and subscribes, retrying until `deadline`; a refused peer is final.
async fn connect(
    endpoint: &str,
    addr: &str,
    deadline: Instant,
    wait: Duration,
) -> Result<SubConnection<TcpStream>, SubscribeError> {
    loop {
        let last = match attempt(endpoint, addr, deadline).await {
            Ok(c) => return Ok(c),
            Err(Attempt::Refused(e)) => return Err(e),
            Err(Attempt::Failed(m)) => m,
        };
        if Instant::now() + RETRY >= deadline {
            return Err(SubscribeError::Unreachable {
                endpoint: endpoint.to_string(),
                message: format!(
                    "no ZMTP publisher answered within {:.1} s ({last})",
                    wait.as_secs_f64()
                ),
            });
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// What a receiving task reports.
enum Event {
    Message {
        rank: u16,
        recv_unix_ns: u64,
        message: Received,
        /// Its share of [`MAX_QUEUED_BYTES`], released once written.
        _budget: OwnedSemaphorePermit,
    },
    Fatal(SubscribeError),
}

/// Receives one rank's messages until the capture stops (which aborts this task), or
/// until the peer is refused. A lost connection is re-established (`handshake_wait`
/// per attempt); messages published meanwhile are lost, and show as a sequence gap.
async fn receive(
    rank: u16,
    endpoint: String,
    addr: String,
    mut conn: SubConnection<TcpStream>,
    tx: mpsc::Sender<Event>,
    budget: Arc<Semaphore>,
    handshake_wait: Duration,
) {
    loop {
        match conn.recv().await {
            Ok(message) => {
                let recv_unix_ns = now_ns();
                let bytes = match &message {
                    Received::Kept(parts) => parts.iter().map(Vec::len).sum::<usize>(),
                    Received::Dropped { .. } | Received::Truncated { .. } => 0,
                };
                // A kept message is at most MAX_FRAME_BYTES < MAX_QUEUED_BYTES.
                let n = u32::try_from(bytes)
                    .unwrap_or(MAX_QUEUED_BYTES)
                    .clamp(1, MAX_QUEUED_BYTES);
                let Ok(permit) = budget.clone().acquire_many_owned(n).await else {
                    return;
                };
                let ev = Event::Message {
                    rank,
                    recv_unix_ns,
                    message,
                    _budget: permit,
                };
                if tx.send(ev).await.is_err() {
                    return;
                }
            }
            Err(ZmtpError::Refused(message)) => {
                let _ = tx
                    .send(Event::Fatal(SubscribeError::Refused { endpoint, message }))
                    .await;
                return;
            }
            Err(ZmtpError::Io(_)) => loop {
                tokio::time::sleep(RETRY).await;
                match attempt(&endpoint, &addr, Instant::now() + handshake_wait).await {
                    Ok(c) => {
                        conn = c;
                        break;
                    }
                    Err(Attempt::Refused(e)) => {
                        let _ = tx.send(Event::Fatal(e)).await;
                        return;
                    }
                    Err(Attempt::Failed(_)) => {}
                }
            },
        }
    }
}

fn write_message<W: std::io::Write>(
    writer: &mut CaptureWriter<W>,
    per_rank: &mut [u64],
    rank: u16,
    recv_unix_ns: u64,
    message: &Received,
) -> std::io::Result<()> {
    match message {
        Received::Kept(parts) => {
            let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
            if writer.frame(rank, recv_unix_ns, &refs)?
                && let Some(c) = per_rank.get_mut(usize::from(rank))
            {
                *c += 1;
            }
        }
        Received::Dropped { bytes, parts } => {
            writer.dropped(rank, recv_unix_ns, *bytes, *parts)?;
        }
        Received::Truncated { bytes, parts } => {
            writer.truncated(rank, recv_unix_ns, *bytes, *parts)?;
        }
    }
    Ok(())
}

async fn run(
    opts: &CaptureOptions,
    on_subscribed: &mut dyn FnMut(),
) -> Result<CaptureSummary, SubscribeError> {
    if opts.endpoints.is_empty() || opts.endpoints.len() > usize::from(u16::MAX) {
        return Err(SubscribeError::Setup(
            "give between 1 and 65535 --endpoint".into(),
        ));
    }
    let mut addrs = Vec::with_capacity(opts.endpoints.len());
    for e in &opts.endpoints {
        addrs.push(address(e).map_err(SubscribeError::Setup)?.to_string());
    }
    // Open the temporary output first: a wrong --out fails before any connection.
    let dir = match opts.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp =
        kvlower_fs::write::temp_file_in(&dir, ".kvlower-capture-").map_err(out_err(&opts.out))?;

    // One wait for all publishers, never longer than the capture itself.
    let wait = match opts.duration {
        Some(d) => opts.connect_timeout.min(d),
        None => opts.connect_timeout,
    };
    let deadline = Instant::now() + wait;
    let mut conns = Vec::with_capacity(opts.endpoints.len());
    for (e, a) in opts.endpoints.iter().zip(&addrs) {
        conns.push(connect(e, a, deadline, wait).await?);
    }
    // The subscription travels to the publisher after the handshake; give it a moment
    // so that "subscribed" means the publisher has it.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let endpoints = opts
        .endpoints
        .iter()
        .enumerate()
        .map(|(i, e)| Endpoint {
            rank: u16::try_from(i).unwrap_or(u16::MAX),
            endpoint: e.clone(),
        })
        .collect();
    let mut header = CaptureHeader::new(endpoints, opts.meta.clone(), opts.writer.clone());
    header.subscribed_unix_ns = now_ns();
    let file = tmp.reopen().map_err(out_err(&opts.out))?;
    let mut writer =
        CaptureWriter::new(BufWriter::new(file), &header).map_err(out_err(&opts.out))?;

    let (tx, mut rx) = mpsc::channel::<Event>(1024);
    let budget = Arc::new(Semaphore::new(MAX_QUEUED_BYTES as usize));
    let mut tasks = Vec::new();
    for (rank, ((conn, e), a)) in conns
        .into_iter()
        .zip(&opts.endpoints)
        .zip(&addrs)
        .enumerate()
    {
        let rank = u16::try_from(rank).unwrap_or(u16::MAX);
        tasks.push(tokio::spawn(receive(
            rank,
            e.clone(),
            a.clone(),
            conn,
            tx.clone(),
            budget.clone(),
            opts.connect_timeout,
        )));
    }
    drop(tx);
    on_subscribed();

    let start = Instant::now();
    let mut last = start;
    let mut per_rank = vec![0u64; opts.endpoints.len()];
    let far = Duration::from_secs(365 * 24 * 3600);
    let deadline = start + opts.duration.unwrap_or(far);
    let mut sigterm = terminate_signal();
    let stop = loop {
        let idle_at = last + opts.until_idle.unwrap_or(far);
        tokio::select! {
            ev = rx.recv() => match ev {
                Some(Event::Message { rank, recv_unix_ns, message, .. }) => {
                    last = Instant::now();
                    write_message(&mut writer, &mut per_rank, rank, recv_unix_ns, &message)
                        .map_err(out_err(&opts.out))?;
                }
                Some(Event::Fatal(e)) => {
                    abort_all(&tasks);
                    return Err(e);
                }
                None => {
                    return Err(SubscribeError::Setup("every receiver ended".into()));
                }
            },
            _ = tokio::time::sleep_until(deadline) => break StopReason::Duration,
            _ = tokio::time::sleep_until(idle_at) => break StopReason::Idle,
            _ = tokio::signal::ctrl_c() => break StopReason::Signal,
            _ = sigterm.recv() => break StopReason::Signal,
        }
    };
    abort_all(&tasks);
    // Messages already queued were received before the stop: keep them.
    while let Ok(ev) = rx.try_recv() {
        match ev {
            Event::Message {
                rank,
                recv_unix_ns,
                message,
                ..
            } => write_message(&mut writer, &mut per_rank, rank, recv_unix_ns, &message)
                .map_err(out_err(&opts.out))?,
            Event::Fatal(e) => return Err(e),
        }
    }
    let (buf, trailer) = writer.finish().map_err(out_err(&opts.out))?;
    let file = buf
        .into_inner()
        .map_err(|e| out_err(&opts.out)(e.into_error()))?;
    file.sync_all().map_err(out_err(&opts.out))?;
    drop(file);
    kvlower_fs::write::persist_replacing(tmp, &opts.out).map_err(out_err(&opts.out))?;
    kvlower_fs::write::sync_dir(&dir);
    Ok(CaptureSummary {
        frames: trailer.frames,
        dropped: trailer.dropped,
        truncated: trailer.truncated,
        per_rank,
        stop,
    })
}

fn abort_all(tasks: &[tokio::task::JoinHandle<()>]) {
    for t in tasks {
        t.abort();
    }
}

/// SIGTERM as a stream (a capture under a supervisor stops cleanly, like Ctrl-C).
struct Term(Option<tokio::signal::unix::Signal>);

impl Term {
    async fn recv(&mut self) {
        match &mut self.0 {
            Some(s) => {
                s.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
}

fn terminate_signal() -> Term {
    Term(tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_checked() {
        assert!(check_endpoint("tcp://127.0.0.1:5557").is_ok());
        for bad in [
            "127.0.0.1:5557",
            "tcp://127.0.0.1",
            "tcp://:5557",
            "tcp://*:5557",
            "tcp://h:0",
            "ipc:///tmp/x",
        ] {
            assert!(check_endpoint(bad).is_err(), "{bad}");
        }
    }
}
