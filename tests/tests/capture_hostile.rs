//! `kvlower capture` against hostile ZeroMQ publishers (issue 21, item 7): a raw
//! TcpListener on 127.0.0.1 speaks (or mis-speaks) ZMTP 3 as a PUB socket. Whatever the
//! peer does, kvlower must exit with a documented code (0, 1 or 2; never a signal such
//! as SIGABRT from a failed allocation), say why with a coded message, stay bounded in
//! memory and time, and leave either no file or a complete capture.
//!
//! kvlower runs as a child process so that an abort or a hang is observed, not
//! suffered: this test binary re-runs itself with `KVLOWER_CHILD_ARGS` set, and
//! [`kvlower_child`] then behaves exactly as the `kvlower` binary (`src/main.rs`):
//! `kvlower_cli::run` with the process's stderr, and its exit code.

#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "test code: a broken fixture should panic"
)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const CHILD_ENV: &str = "KVLOWER_CHILD_ARGS";

/// Not a test of its own: the `kvlower` entry point of the child processes below.
/// Without `KVLOWER_CHILD_ARGS` it does nothing.
#[test]
fn kvlower_child() {
    let Ok(args) = std::env::var(CHILD_ENV) else {
        return;
    };
    let args: Vec<String> = serde_json::from_str(&args).unwrap();
    let argv = std::iter::once("kvlower".to_string()).chain(args);
    let code = kvlower_cli::run(
        argv,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
    .as_u8();
    std::process::exit(i32::from(code));
}

/// What the child did.
struct Outcome {
    code: Option<i32>,
    signal: Option<i32>,
    stderr: String,
    /// The child's stdout: the capture's summary (and the test harness's own lines).
    stdout: String,
    elapsed: Duration,
    /// The largest resident set seen while it ran (sampled from /proc every 20 ms).
    max_rss_kb: u64,
}

/// The resident set of a running process, from /proc (0 when unavailable).
fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Far above what a capture needs (its caps allow a few tens of MiB), far below what
/// buffering a hostile peer's stream would take.
const RSS_LIMIT_KB: u64 = 256 * 1024;

/// Runs `kvlower capture --endpoint ENDPOINT --out OUT ARGS...` as a child process,
/// killing it (and failing) if it runs longer than `limit`.
fn capture(endpoint: &str, out: &Path, args: &[&str], limit: Duration) -> Outcome {
    let mut all: Vec<String> = vec![
        "capture".into(),
        "--endpoint".into(),
        endpoint.into(),
        "--out".into(),
        out.display().to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    let start = Instant::now();
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args([
            "capture_hostile::kvlower_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "-q",
        ])
        .env(CHILD_ENV, serde_json::to_string(&all).unwrap())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain both pipes on threads so that a chatty child never blocks on a full pipe.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let reader = drain(Box::new(child.stderr.take().unwrap()));
    let out_reader = drain(Box::new(child.stdout.take().unwrap()));
    let mut max_rss_kb = 0;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        max_rss_kb = max_rss_kb.max(rss_kb(child.id()));
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "kvlower capture still running after {limit:?} (a hang); stderr so far: {}",
                reader.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        code: status.code(),
        signal: status.signal(),
        stderr: reader.join().unwrap(),
        stdout: out_reader.join().unwrap(),
        elapsed: start.elapsed(),
        max_rss_kb,
    }
}

/// Our side of a ZMTP 3.0 greeting: signature, version 3.0, NULL, as-server 1.
fn greeting() -> Vec<u8> {
    let mut g = vec![0u8; 64];
    g[0] = 0xFF;
    g[9] = 0x7F;
    g[10] = 3;
    g[12..16].copy_from_slice(b"NULL");
    g[32] = 1;
    g
}

/// `READY` with `Socket-Type` = `PUB`, as a short command frame.
fn ready_pub() -> Vec<u8> {
    let mut body = vec![5];
    body.extend_from_slice(b"READY");
    body.push(11);
    body.extend_from_slice(b"Socket-Type");
    body.extend_from_slice(&3u32.to_be_bytes());
    body.extend_from_slice(b"PUB");
    let mut f = vec![0x04, body.len() as u8];
    f.extend(body);
    f
}

/// A message frame (short or long form).
fn frame(more: bool, body: &[u8]) -> Vec<u8> {
    let more = u8::from(more);
    let mut f = Vec::new();
    if body.len() > 255 {
        f.push(more | 0x02);
        f.extend_from_slice(&(body.len() as u64).to_be_bytes());
    } else {
        f.push(more);
        f.push(body.len() as u8);
    }
    f.extend_from_slice(body);
    f
}

/// Deterministic pseudo-random bytes (xorshift64*), never starting with `avoid`.
fn garbage(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_be_bytes());
    }
    out.truncate(n);
    out
}

/// Reads what the subscriber sends during the handshake: its 64-byte greeting, and
/// (when `ready`) its READY command. Bounded by a timeout.
fn read_subscriber(s: &mut TcpStream, ready: bool) {
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut g = [0u8; 64];
    s.read_exact(&mut g).unwrap();
    assert_eq!(
        (g[0], g[9], g[10]),
        (0xFF, 0x7F, 3),
        "the subscriber's greeting"
    );
    if ready {
        // READY(SUB) is a short command: flags, size, body; then [0x00, 0x01, 0x01].
        let mut h = [0u8; 2];
        s.read_exact(&mut h).unwrap();
        let mut body = vec![0u8; usize::from(h[1])];
        s.read_exact(&mut body).unwrap();
        assert_eq!(h[0], 0x04);
        assert!(body.ends_with(b"SUB"));
    }
}

/// Reads the subscription the subscriber sends after our READY: everything.
fn read_subscription(s: &mut TcpStream) {
    let mut sub = [0u8; 3];
    s.read_exact(&mut sub).unwrap();
    assert_eq!(sub, [0x00, 0x01, 0x01], "subscribe to everything");
}

/// A publisher on 127.0.0.1 that runs `behave` on every connection it accepts (on a
/// detached thread: it ends with the test binary).
fn hostile(behave: fn(TcpStream)) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("tcp://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || behave(s));
        }
    });
    endpoint
}

/// A peer that completes the handshake as a PUB socket, then sends `tail` and holds
/// the connection open.
fn handshake_then(mut s: TcpStream, tail: &[u8]) {
    s.write_all(&greeting()).unwrap();
    read_subscriber(&mut s, false);
    s.write_all(&ready_pub()).unwrap();
    let _ = s.write_all(tail);
    std::thread::sleep(Duration::from_secs(15));
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect()
}

/// The peer was refused: exit 2 (nothing could be recorded; not a signal), a coded
/// message, no file left behind.
fn assert_refused(o: &Outcome, dir: &Path, code: &str, what: &str) {
    assert_eq!(
        (o.code, o.signal),
        (Some(2), None),
        "{what}: exit 2 expected, not a signal; stderr:\n{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!("error[{code}]")),
        "{what}: stderr must carry error[{code}]:\n{}",
        o.stderr
    );
    assert!(o.stderr.contains("hint:"), "{what}: {}", o.stderr);
    assert!(
        o.max_rss_kb < RSS_LIMIT_KB,
        "{what}: memory grew to {} KiB",
        o.max_rss_kb
    );
    assert!(
        temp_files(dir).is_empty(),
        "{what}: no capture (and no temporary file) may be left: {:?}",
        temp_files(dir)
    );
}

fn run_refused(behave: fn(TcpStream), what: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.kvcap");
    let endpoint = hostile(behave);
    let o = capture(
        &endpoint,
        &out,
        &["--duration", "3"],
        Duration::from_secs(30),
    );
    assert_refused(&o, dir.path(), "capture-publisher-refused", what);
    assert!(
        o.elapsed < Duration::from_secs(20),
        "{what}: took {:?}",
        o.elapsed
    );
}

#[test]
fn a_frame_declaring_2_pow_62_bytes_is_refused_before_allocation() {
    run_refused(
        |s| {
            let mut t = vec![0x02];
            t.extend((1u64 << 62).to_be_bytes());
            handshake_then(s, &t);
        },
        "2^62-byte frame",
    );
}

#[test]
fn a_frame_declaring_one_tebibyte_is_refused_before_allocation() {
    run_refused(
        |s| {
            let mut t = frame(true, b"kv-events");
            t.push(0x03);
            t.extend((1u64 << 40).to_be_bytes());
            t.extend([0u8; 1024]);
            handshake_then(s, &t);
        },
        "1 TiB frame",
    );
}

#[test]
fn garbage_after_the_greeting_is_refused() {
    run_refused(
        |mut s| {
            s.write_all(&greeting()).unwrap();
            read_subscriber(&mut s, false);
            let _ = s.write_all(&garbage(4096, 7));
            std::thread::sleep(Duration::from_secs(15));
        },
        "4 KiB of garbage instead of READY",
    );
}

#[test]
fn garbage_that_decodes_as_a_long_frame_is_refused() {
    run_refused(
        |s| {
            // After READY: a LONG|MORE flags byte, then 4 KiB of pseudo-random bytes
            // (the first eight are the frame size the decoder sees).
            let mut t = vec![0x03];
            let mut g = garbage(4096, 21);
            g[0] |= 0x80;
            t.extend(g);
            handshake_then(s, &t);
        },
        "garbage read as a long frame",
    );
}

#[test]
fn a_garbage_greeting_is_refused() {
    run_refused(
        |mut s| {
            let mut g = garbage(4096, 99);
            g[0] = 0x42;
            let _ = s.write_all(&g);
            std::thread::sleep(Duration::from_secs(15));
        },
        "garbage greeting",
    );
}

#[test]
fn an_endless_multipart_message_is_refused_with_bounded_memory() {
    run_refused(
        |mut s| {
            s.write_all(&greeting()).unwrap();
            read_subscriber(&mut s, false);
            s.write_all(&ready_pub()).unwrap();
            // MORE always set: a message that never ends, until the peer hangs up.
            let chunk: Vec<u8> = (0..4096).flat_map(|_| frame(true, b"x")).collect();
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(20) {
                if s.write_all(&chunk).is_err() {
                    return;
                }
            }
        },
        "endless multipart message",
    );
}

#[test]
fn a_peer_that_never_speaks_does_not_outlast_the_duration() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.kvcap");
    let endpoint = hostile(|_s| std::thread::sleep(Duration::from_secs(60)));
    // The default --connect-timeout is 60 s; --duration 2 bounds the wait.
    let o = capture(
        &endpoint,
        &out,
        &["--duration", "2"],
        Duration::from_secs(20),
    );
    assert_refused(
        &o,
        dir.path(),
        "capture-publisher-unreachable",
        "silent peer",
    );
    assert!(
        o.stderr.contains("did not complete the ZMTP handshake"),
        "{}",
        o.stderr
    );
    assert!(
        o.elapsed < Duration::from_secs(8),
        "the connect wait exceeded --duration 2: {:?}",
        o.elapsed
    );
}

#[test]
fn a_wrong_socket_type_is_refused() {
    run_refused(
        |mut s| {
            s.write_all(&greeting()).unwrap();
            read_subscriber(&mut s, false);
            let mut r = ready_pub();
            let n = r.len();
            r[n - 3..].copy_from_slice(b"REQ");
            let _ = s.write_all(&r);
            std::thread::sleep(Duration::from_secs(15));
        },
        "a REQ socket",
    );
}

/// An honest publisher whose message is over the capture's 16 MiB cap: the capture
/// keeps a `dropped` marker for it and goes on; the file is complete.
#[test]
fn an_oversized_message_becomes_a_dropped_marker() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.kvcap");
    let endpoint = hostile(|mut s| {
        s.write_all(&greeting()).unwrap();
        read_subscriber(&mut s, true);
        s.write_all(&ready_pub()).unwrap();
        read_subscription(&mut s);
        let big = vec![0xC0u8; 17 * 1024 * 1024];
        let mut m = frame(true, b"kv-events");
        m.extend(frame(true, &0u64.to_be_bytes()));
        m.extend(frame(false, &big));
        m.extend(frame(true, b"kv-events"));
        m.extend(frame(true, &1u64.to_be_bytes()));
        m.extend(frame(false, &[0x90]));
        // A heartbeat in between: PING (TTL 0, context "hb") is answered with PONG.
        m.extend([0x04, 7, 4, b'P', b'I', b'N', b'G', 0, 0]);
        s.write_all(&m).unwrap();
        std::thread::sleep(Duration::from_secs(15));
    });
    let o = capture(
        &endpoint,
        &out,
        &["--until-idle", "1.5", "--duration", "10"],
        Duration::from_secs(30),
    );
    assert_eq!((o.code, o.signal), (Some(0), None), "{}", o.stderr);
    assert!(o.max_rss_kb < RSS_LIMIT_KB, "{} KiB", o.max_rss_kb);
    assert!(
        o.stdout.contains("1 frames") && o.stdout.contains("1 dropped"),
        "{}",
        o.stdout
    );
    let bytes = std::fs::read(&out).unwrap();
    let mut rd = kvlower_capture::CaptureReader::new(bytes.as_slice()).unwrap();
    let mut recs = Vec::new();
    while let Some(r) = rd.next_record().unwrap() {
        recs.push(r);
    }
    assert!(
        matches!(
            recs.as_slice(),
            [
                kvlower_capture::Record::Dropped { bytes, parts: 3, .. },
                kvlower_capture::Record::Frame { .. }
            ] if *bytes == 17 * 1024 * 1024 + 9 + 8
        ),
        "{recs:?}"
    );
}

/// Issue 34, item 5: a READY giving `Socket-Type` twice (`SUB`, then `PUB`) was
/// accepted with the last value; it is refused now (a property names itself once).
#[test]
fn a_ready_giving_socket_type_twice_is_refused() {
    run_refused(
        |mut s| {
            s.write_all(&greeting()).unwrap();
            read_subscriber(&mut s, false);
            let mut body = vec![5];
            body.extend_from_slice(b"READY");
            for t in [&b"SUB"[..], b"PUB"] {
                body.push(11);
                body.extend_from_slice(b"Socket-Type");
                body.extend_from_slice(&3u32.to_be_bytes());
                body.extend_from_slice(t);
            }
            let mut f = vec![0x04, u8::try_from(body.len()).unwrap()];
            f.extend(body);
            s.write_all(&f).unwrap();
            let mut m = frame(true, b"kv-events");
            m.extend(frame(true, &0u64.to_be_bytes()));
            m.extend(frame(false, &[0x90]));
            let _ = s.write_all(&m);
            std::thread::sleep(Duration::from_secs(15));
        },
        "Socket-Type twice",
    );
}

/// Issue 34, item 5: a PING or SUBSCRIBE command between the parts of one multipart
/// message was accepted (the message kept whole around it); it is refused now.
#[test]
fn a_command_between_the_parts_of_a_message_is_refused() {
    run_refused(
        |s| {
            let mut t = frame(true, b"kv-events");
            t.extend([0x04, 7, 4, b'P', b'I', b'N', b'G', 0, 0]);
            t.extend(frame(true, &0u64.to_be_bytes()));
            t.extend(frame(false, &[0x90]));
            handshake_then(s, &t);
        },
        "PING between parts",
    );
    run_refused(
        |s| {
            let mut t = frame(true, b"kv-events");
            t.extend(frame(true, &0u64.to_be_bytes()));
            t.extend([0x04, 12, 9]);
            t.extend_from_slice(b"SUBSCRIBE");
            t.extend_from_slice(b"kv");
            t.extend(frame(false, &[0x90]));
            handshake_then(s, &t);
        },
        "SUBSCRIBE between parts",
    );
}

/// Issue 34, item 5: a message cut off by the publisher closing the connection inside
/// it was lost without a trace (exit 0, nothing in the file or the summary). It is now a
/// `truncated` marker in the capture, counted in the summary; the join sees a gap.
#[test]
fn a_message_cut_off_by_the_publisher_is_a_truncated_marker() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.kvcap");
    let endpoint = hostile(|mut s| {
        s.write_all(&greeting()).unwrap();
        read_subscriber(&mut s, true);
        s.write_all(&ready_pub()).unwrap();
        read_subscription(&mut s);
        if SEQ.fetch_add(1, Ordering::SeqCst) == 0 {
            let mut m = frame(true, b"kv-events");
            m.extend(frame(true, &0u64.to_be_bytes()));
            m.extend(frame(false, &[0x90]));
            // The second message stops inside its payload frame, and the peer closes.
            m.extend(frame(true, b"kv-events"));
            m.extend(frame(true, &1u64.to_be_bytes()));
            m.extend(&frame(false, &[0x91; 100])[..50]);
            s.write_all(&m).unwrap();
            return;
        }
        std::thread::sleep(Duration::from_secs(15));
    });
    let o = capture(
        &endpoint,
        &out,
        &["--until-idle", "2", "--duration", "10"],
        Duration::from_secs(30),
    );
    assert_eq!((o.code, o.signal), (Some(0), None), "{}", o.stderr);
    assert!(
        o.stdout.contains("1 frames") && o.stdout.contains("1 cut off by the publisher"),
        "{}",
        o.stdout
    );
    let bytes = std::fs::read(&out).unwrap();
    let mut rd = kvlower_capture::CaptureReader::new(bytes.as_slice()).unwrap();
    let mut recs = Vec::new();
    while let Some(r) = rd.next_record().unwrap() {
        recs.push(r);
    }
    // What its frames had declared: 9 + 8 + 100 bytes in 3 parts.
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert!(
        matches!(recs[0], kvlower_capture::Record::Frame { .. }),
        "{recs:?}"
    );
    let marker = format!("{:?}", recs[1]);
    assert!(
        marker.starts_with("Truncated {") && marker.ends_with("bytes: 117, parts: 3 }"),
        "{marker}"
    );
}

/// A publisher that drops the connection is reconnected to while the capture runs;
/// nothing is lost here because nothing was published in between.
#[test]
fn a_lost_connection_is_re_established() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.kvcap");
    let endpoint = hostile(|mut s| {
        s.write_all(&greeting()).unwrap();
        read_subscriber(&mut s, true);
        s.write_all(&ready_pub()).unwrap();
        read_subscription(&mut s);
        let seq = SEQ.fetch_add(1, Ordering::SeqCst);
        if seq < 2 {
            let mut m = frame(true, b"kv-events");
            m.extend(frame(true, &seq.to_be_bytes()));
            m.extend(frame(false, &[0x90]));
            s.write_all(&m).unwrap();
        }
        // The first connection closes at once; the second stays open.
        if seq >= 1 {
            std::thread::sleep(Duration::from_secs(15));
        }
    });
    let o = capture(
        &endpoint,
        &out,
        &["--until-idle", "2", "--duration", "10"],
        Duration::from_secs(30),
    );
    assert_eq!((o.code, o.signal), (Some(0), None), "{}", o.stderr);
    assert!(o.stdout.contains("2 frames"), "{}", o.stdout);
}

/// The other exit-2 causes, in-process: nothing listening, and an unwritable --out
/// (refused before any connection). capture judges no content, so it never exits 1.
#[test]
fn an_unreachable_publisher_or_unwritable_file_is_exit_2_with_a_code() {
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let endpoint = format!("tcp://127.0.0.1:{port}");
    let out = dir.path().join("run.kvcap").display().to_string();
    let start = Instant::now();
    let r = kvlower_tests::kvlower(&[
        "capture",
        "--endpoint",
        &endpoint,
        "--out",
        &out,
        "--duration",
        "1",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("error[capture-publisher-unreachable]: tcp://127.0.0.1:"),
        "{}",
        r.stderr
    );
    assert!(
        start.elapsed() < Duration::from_secs(8),
        "{:?}",
        start.elapsed()
    );
    assert!(temp_files(dir.path()).is_empty());

    let missing = dir.path().join("no-such-folder/run.kvcap");
    let r = kvlower_tests::kvlower(&[
        "capture",
        "--endpoint",
        &endpoint,
        "--out",
        &missing.display().to_string(),
        "--duration",
        "1",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("error[capture-output-unwritable]"),
        "{}",
        r.stderr
    );
}
