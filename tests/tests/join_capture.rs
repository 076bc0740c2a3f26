//! `kvlower capture` against real ZMQ PUB sockets on 127.0.0.1 (bounded in time): the
//! `zeromq` crate's, and libzmq's through pyzmq when it is installed; and the capture
//! file feeding `kvlower join` directly. Hostile publishers: `capture_hostile.rs`.

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use kvlower_tests::kvlower;
use rmp::encode as mp;
use zeromq::{Socket, SocketSend, ZmqMessage};

/// A vLLM >= 0.24 batch: positional `[ts, events, dp_rank]`, events maps tagged `type`.
fn batch(ts: f64, events: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    mp::write_array_len(&mut b, 3).unwrap();
    mp::write_f64(&mut b, ts).unwrap();
    mp::write_array_len(&mut b, events.len() as u32).unwrap();
    for e in events {
        b.extend(e);
    }
    mp::write_uint(&mut b, 0).unwrap();
    b
}

fn stored(hashes: &[u64], parent: Option<u64>, tokens: &[u32]) -> Vec<u8> {
    let mut b = Vec::new();
    mp::write_map_len(&mut b, 7).unwrap();
    mp::write_str(&mut b, "type").unwrap();
    mp::write_str(&mut b, "BlockStored").unwrap();
    mp::write_str(&mut b, "block_hashes").unwrap();
    mp::write_array_len(&mut b, hashes.len() as u32).unwrap();
    for h in hashes {
        mp::write_uint(&mut b, *h).unwrap();
    }
    mp::write_str(&mut b, "parent_block_hash").unwrap();
    match parent {
        Some(p) => mp::write_uint(&mut b, p).map(|_| ()).unwrap(),
        None => mp::write_nil(&mut b).unwrap(),
    }
    mp::write_str(&mut b, "token_ids").unwrap();
    mp::write_array_len(&mut b, tokens.len() as u32).unwrap();
    for t in tokens {
        mp::write_uint(&mut b, u64::from(*t)).unwrap();
    }
    mp::write_str(&mut b, "block_size").unwrap();
    mp::write_uint(&mut b, 2).unwrap();
    mp::write_str(&mut b, "lora_id").unwrap();
    mp::write_nil(&mut b).unwrap();
    mp::write_str(&mut b, "medium").unwrap();
    mp::write_str(&mut b, "GPU").unwrap();
    b
}

fn removed(hashes: &[u64]) -> Vec<u8> {
    let mut b = Vec::new();
    mp::write_map_len(&mut b, 3).unwrap();
    mp::write_str(&mut b, "type").unwrap();
    mp::write_str(&mut b, "BlockRemoved").unwrap();
    mp::write_str(&mut b, "block_hashes").unwrap();
    mp::write_array_len(&mut b, hashes.len() as u32).unwrap();
    for h in hashes {
        mp::write_uint(&mut b, *h).unwrap();
    }
    mp::write_str(&mut b, "medium").unwrap();
    mp::write_str(&mut b, "GPU").unwrap();
    b
}

/// stderr of the in-process run, forwarded line by line.
struct Lines(mpsc::Sender<String>, Vec<u8>);

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.1.extend_from_slice(buf);
        while let Some(i) = self.1.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.1.drain(..=i).collect();
            let _ = self
                .0
                .send(String::from_utf8_lossy(&line).trim_end().to_string());
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const REGISTRY: &str = r#"schema_version: 1
cache_identity:
  model: synthetic-model
  tokenizer: synthetic-tokenizer
  hash_domain: {name: "synthetic", encoding: int}
  runtime: {kind: vllm, version: "synthetic test publisher"}
  namespace: default
  adapter: {kind: base_model}
  block_size: 2
claims:
  - claim_id: kept
    reusable_object_id: prompt-a
    token_ids: [1, 2, 3, 4]
    predicate: leading_prefix_at_least(4)
    registered_before: {event_index: 0}
    observe_at: {event_index: 2}
  - claim_id: evicted
    reusable_object_id: prompt-b
    token_ids: [7, 8]
    predicate: leading_prefix_at_least(2)
    registered_before: {event_index: 0}
    observe_at: {event_index: 2}
"#;

/// The three messages every publisher below sends: `[topic, seq, payload]`.
fn messages() -> Vec<Vec<Vec<u8>>> {
    let payloads = [
        batch(1.0, &[stored(&[11, 12], None, &[1, 2, 3, 4])]),
        batch(1.1, &[stored(&[21], None, &[7, 8])]),
        batch(1.2, &[removed(&[21])]),
    ];
    payloads
        .into_iter()
        .enumerate()
        .map(|(seq, p)| {
            vec![
                b"kv-events".to_vec(),
                (seq as u64).to_be_bytes().to_vec(),
                p,
            ]
        })
        .collect()
}

/// Runs `kvlower capture` in-process against `endpoint`, calls `go` once it says it is
/// subscribed (the publisher then sends [`messages`]), and checks the capture and the
/// join it feeds.
fn capture_and_join(endpoint: String, go: impl FnOnce()) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.kvcap");
    let (line_tx, line_rx) = mpsc::channel::<String>();
    let out_arg = out.display().to_string();
    let capture = std::thread::spawn(move || {
        let mut stdout = Vec::new();
        let mut stderr = Lines(line_tx, Vec::new());
        let args = [
            "kvlower",
            "capture",
            "--endpoint",
            &endpoint,
            "--out",
            &out_arg,
            "--until-idle",
            "1.5",
            "--duration",
            "20",
            "--connect-timeout",
            "10",
            "--meta",
            "kv_cache_report_mode=incremental",
            "--meta",
            "engine=synthetic test publisher",
        ];
        let code = kvlower_cli::run(args, &mut stdout, &mut stderr).as_u8();
        (code, String::from_utf8_lossy(&stdout).into_owned())
    });
    let first = line_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(first, "kvlower capture: subscribed");
    go();
    let (code, summary) = capture.join().unwrap();
    let notes: Vec<String> = line_rx.try_iter().collect();
    assert_eq!(code, 0, "{notes:?} {summary}");
    // The counts are the summary, on stdout (docs/output.md, "Streams").
    assert!(summary.contains("3 frames"), "{summary}");

    // The file is a complete capture with the operator's meta in its header.
    let bytes = std::fs::read(&out).unwrap();
    let mut rd = kvlower_capture::CaptureReader::new(bytes.as_slice()).unwrap();
    assert_eq!(
        rd.header()
            .meta
            .get("kv_cache_report_mode")
            .map(String::as_str),
        Some("incremental")
    );
    let mut seqs = Vec::new();
    while let Some(kvlower_capture::Record::Frame { rank, parts, .. }) = rd.next_record().unwrap() {
        assert_eq!(rank, 0);
        seqs.push(kvlower_capture::event_frame(&parts).unwrap().seq);
    }
    assert_eq!(seqs, vec![0, 1, 2]);
    // No temporary file is left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1);

    // The capture feeds join directly.
    let reg = dir.path().join("registry.yaml");
    std::fs::write(&reg, REGISTRY).unwrap();
    let r = kvlower(&[
        "join",
        "--registry",
        &reg.display().to_string(),
        "--events",
        &out.display().to_string(),
        "--events-format",
        "vllm",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let status = |id: &str| {
        doc["claims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["claim_id"] == id)
            .map(|c| c["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(status("kept"), "materialized");
    assert_eq!(status("evicted"), "lost");
    assert_eq!(doc["stream"]["sequence_checked"], true);
}

/// An independent ZMTP peer: the `zeromq` crate's PUB socket (kvlower's own client is
/// crates/kvlower-capture/src/zmtp.rs; this checks it against code it does not share).
#[test]
fn capture_from_a_pub_socket_feeds_join() {
    let (port_tx, port_rx) = mpsc::channel::<String>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let publisher = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut s = zeromq::PubSocket::new();
            let ep = s.bind("tcp://127.0.0.1:0").await.unwrap();
            port_tx.send(ep.to_string()).unwrap();
            // Wait (bounded) for the capture to say it is subscribed.
            let mut waited = 0;
            while go_rx.try_recv().is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
                waited += 1;
                assert!(waited < 1500, "capture never subscribed");
            }
            for parts in messages() {
                let mut it = parts.into_iter();
                let mut m = ZmqMessage::from(it.next().unwrap());
                for p in it {
                    m.push_back(p.into());
                }
                s.send(m).await.unwrap();
            }
            // Keep the socket open long enough for the frames to leave.
            tokio::time::sleep(Duration::from_millis(500)).await;
        });
    });
    let endpoint = port_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    capture_and_join(endpoint, || go_tx.send(()).unwrap());
    publisher.join().unwrap();
}

/// The same against libzmq itself, through pyzmq: `KVLOWER_TEST_PYTHON` (default
/// `python3`) must import `zmq`; without it the test prints a note and passes.
#[test]
fn capture_from_a_libzmq_publisher_via_pyzmq() {
    let python = std::env::var("KVLOWER_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let has_zmq = std::process::Command::new(&python)
        .args(["-c", "import zmq"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_zmq {
        eprintln!(
            "note: skipped capture_from_a_libzmq_publisher_via_pyzmq: `{python} -c 'import zmq'` \
             failed (pip install pyzmq, or set KVLOWER_TEST_PYTHON)"
        );
        return;
    }
    // The messages as hex, one per line, parts separated by spaces.
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let spec: Vec<String> = messages()
        .iter()
        .map(|m| m.iter().map(|p| hex(p)).collect::<Vec<_>>().join(" "))
        .collect();
    const SCRIPT: &str = r#"
import sys, time, zmq
msgs = [[bytes.fromhex(p) for p in line.split(" ")] for line in sys.argv[1:]]
ctx = zmq.Context()
s = ctx.socket(zmq.PUB)
port = s.bind_to_random_port("tcp://127.0.0.1")
print(port, flush=True)
sys.stdin.readline()
for m in msgs:
    s.send_multipart(m)
time.sleep(0.5)
s.close(linger=1000)
ctx.term()
"#;
    let mut child = std::process::Command::new(&python)
        .arg("-c")
        .arg(SCRIPT)
        .args(&spec)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut port = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut port).unwrap();
    let endpoint = format!("tcp://127.0.0.1:{}", port.trim());
    let mut stdin = child.stdin.take().unwrap();
    capture_and_join(endpoint, move || {
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    });
    assert!(child.wait().unwrap().success());
}

#[test]
fn capture_refuses_bad_arguments_before_connecting() {
    for args in [
        vec!["capture", "--endpoint", "127.0.0.1:1", "--out", "x"],
        vec![
            "capture",
            "--endpoint",
            "tcp://127.0.0.1:1",
            "--out",
            "x",
            "--duration",
            "-1",
        ],
        vec![
            "capture",
            "--endpoint",
            "tcp://127.0.0.1:1",
            "--out",
            "x",
            "--meta",
            "novalue",
        ],
    ] {
        let r = kvlower(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_truncated_or_hostile_capture_is_an_error_not_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let reg = dir.path().join("registry.yaml");
    std::fs::write(&reg, REGISTRY).unwrap();
    let header = kvlower_capture::CaptureHeader::new(
        vec![kvlower_capture::Endpoint {
            rank: 0,
            endpoint: "tcp://127.0.0.1:1".into(),
        }],
        Default::default(),
        "test".into(),
    );
    let mut w = kvlower_capture::CaptureWriter::new(Vec::new(), &header).unwrap();
    w.frame(0, 1, &[b"t", &0u64.to_be_bytes(), &batch(1.0, &[])])
        .unwrap();
    let (full, _) = w.finish().unwrap();
    for (name, bytes) in [
        ("cut.kvcap", full[..full.len() - 5].to_vec()),
        ("bad-payload.kvcap", {
            let mut w = kvlower_capture::CaptureWriter::new(Vec::new(), &header).unwrap();
            w.frame(
                0,
                1,
                &[b"t", &0u64.to_be_bytes(), &[0xdd, 0xff, 0xff, 0xff, 0xff]],
            )
            .unwrap();
            w.finish().unwrap().0
        }),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let r = kvlower(&[
            "join",
            "--registry",
            &reg.display().to_string(),
            "--events",
            &p.display().to_string(),
            "--events-format",
            "vllm",
        ]);
        assert_eq!(r.code, 1, "{name}: {}", r.stdout);
        assert!(r.stderr.contains(name), "{}", r.stderr);
    }
}
