//! The live subscriber behind `kvlower capture` (feature `zmq`).
//!
//! One SUB socket per endpoint (rank = position on the command line), subscribed to
//! every topic. Frames go, as they arrive, into a temporary file beside the output;
//! when a stop condition holds the `end` record is written, the file is synced and
//! renamed over the output, so a reader sees either no capture or a complete one.
//!
//! ZeroMQ is the pure-Rust `zeromq` crate (no libzmq, no C++ toolchain). A PUB socket
//! drops messages for a subscriber that falls behind; the frames' own sequence numbers
//! make such a loss visible to the join (a `sequence_gap`), never silent.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use zeromq::{Socket, SocketOptions, SocketRecv, SubSocket};

use crate::file::{CaptureHeader, CaptureWriter, Endpoint};

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
    /// How long to wait for each publisher to accept the connection.
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
    /// Frames per rank, in rank order.
    pub per_rank: Vec<u64>,
    pub stop: StopReason,
}

#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    #[error("{endpoint}: {message}")]
    Endpoint { endpoint: String, message: String },
    #[error("{}: {source}", path.display())]
    Output {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Runtime(String),
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Checks an endpoint before connecting: only `tcp://HOST:PORT` is accepted.
pub fn check_endpoint(e: &str) -> Result<(), String> {
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
        .map(|_| ())
        .ok_or_else(|| format!("`{e}`: port must be 1-65535"))
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
        .map_err(|e| SubscribeError::Runtime(e.to_string()))?;
    rt.block_on(run(opts, on_subscribed))
}

fn out_err(path: &Path) -> impl Fn(std::io::Error) -> SubscribeError + '_ {
    move |source| SubscribeError::Output {
        path: path.to_path_buf(),
        source,
    }
}

async fn run(
    opts: &CaptureOptions,
    on_subscribed: &mut dyn FnMut(),
) -> Result<CaptureSummary, SubscribeError> {
    if opts.endpoints.is_empty() || opts.endpoints.len() > usize::from(u16::MAX) {
        return Err(SubscribeError::Runtime(
            "give between 1 and 65535 --endpoint".into(),
        ));
    }
    for e in &opts.endpoints {
        check_endpoint(e).map_err(|message| SubscribeError::Endpoint {
            endpoint: e.clone(),
            message,
        })?;
    }
    // Open the temporary output first: a wrong --out fails before any connection.
    let dir = match opts.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".kvlower-capture-")
        .tempfile_in(&dir)
        .map_err(out_err(&opts.out))?;

    let mut sockets = Vec::with_capacity(opts.endpoints.len());
    for e in &opts.endpoints {
        let mut o = SocketOptions::default();
        o.connect_timeout(opts.connect_timeout);
        let mut s = SubSocket::with_options(o);
        s.connect(e).await.map_err(|err| SubscribeError::Endpoint {
            endpoint: e.clone(),
            message: format!("cannot connect: {err}"),
        })?;
        s.subscribe("")
            .await
            .map_err(|err| SubscribeError::Endpoint {
                endpoint: e.clone(),
                message: format!("cannot subscribe: {err}"),
            })?;
        sockets.push(s);
    }
    // The subscription travels to the publisher after `subscribe` returns; give it a
    // moment so that "subscribed" means the publisher has it.
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

    let (tx, mut rx) = mpsc::channel::<(u16, u64, zeromq::ZmqMessage)>(1024);
    let (etx, mut erx) = mpsc::channel::<(u16, String)>(16);
    let mut tasks = Vec::new();
    for (rank, mut s) in sockets.into_iter().enumerate() {
        let tx = tx.clone();
        let etx = etx.clone();
        let rank = u16::try_from(rank).unwrap_or(u16::MAX);
        tasks.push(tokio::spawn(async move {
            loop {
                match s.recv().await {
                    Ok(m) => {
                        if tx.send((rank, now_ns(), m)).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        let _ = etx.send((rank, e.to_string())).await;
                        break;
                    }
                }
            }
        }));
    }
    drop(tx);
    drop(etx);
    on_subscribed();

    let start = tokio::time::Instant::now();
    let mut last = start;
    let mut per_rank = vec![0u64; opts.endpoints.len()];
    let far = Duration::from_secs(365 * 24 * 3600);
    let deadline = start + opts.duration.unwrap_or(far);
    let mut sigterm = terminate_signal();
    let stop = loop {
        let idle_at = last + opts.until_idle.unwrap_or(far);
        tokio::select! {
            m = rx.recv() => match m {
                Some((rank, ns, msg)) => {
                    last = tokio::time::Instant::now();
                    let parts = msg.into_vec();
                    let refs: Vec<&[u8]> = parts.iter().map(|b| b.as_ref()).collect();
                    writer.frame(rank, ns, &refs).map_err(out_err(&opts.out))?;
                    if let Some(c) = per_rank.get_mut(usize::from(rank)) {
                        *c += 1;
                    }
                }
                None => {
                    // Every receiver ended: report the first socket error.
                    let (rank, e) = erx.recv().await.unwrap_or((0, "closed".into()));
                    return Err(SubscribeError::Endpoint {
                        endpoint: opts.endpoints.get(usize::from(rank)).cloned().unwrap_or_default(),
                        message: format!("receive failed: {e}"),
                    });
                }
            },
            _ = tokio::time::sleep_until(deadline) => break StopReason::Duration,
            _ = tokio::time::sleep_until(idle_at) => break StopReason::Idle,
            _ = tokio::signal::ctrl_c() => break StopReason::Signal,
            _ = sigterm.recv() => break StopReason::Signal,
        }
    };
    for t in &tasks {
        t.abort();
    }
    // Frames already queued were received before the stop: keep them.
    while let Ok((rank, ns, msg)) = rx.try_recv() {
        let parts = msg.into_vec();
        let refs: Vec<&[u8]> = parts.iter().map(|b| b.as_ref()).collect();
        writer.frame(rank, ns, &refs).map_err(out_err(&opts.out))?;
        if let Some(c) = per_rank.get_mut(usize::from(rank)) {
            *c += 1;
        }
    }
    let (buf, trailer) = writer.finish().map_err(out_err(&opts.out))?;
    let file = buf
        .into_inner()
        .map_err(|e| out_err(&opts.out)(e.into_error()))?;
    file.sync_all().map_err(out_err(&opts.out))?;
    drop(file);
    tmp.persist(&opts.out)
        .map_err(|e| out_err(&opts.out)(e.error))?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(CaptureSummary {
        frames: trailer.frames,
        dropped: trailer.dropped,
        per_rank,
        stop,
    })
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
