//! `kvlower join` vs Dynamo's native KV indexer on one capture, measured in one run.
//!
//! ```text
//! join-vs-dynamo CAPTURE REGISTRY LIVE_BLOCKS
//! ```
//!
//! Each side runs in a child process of its own (so each peak RSS is its own):
//!
//! - **kvlower**: `kvlower_join::join_paths(REGISTRY, CAPTURE, vllm)`, the report
//!   serialized to JSON (into a sink): exactly `kvlower join --format json`'s work.
//! - **dynamo**: the same capture read frame by frame with kvlower's capture reader,
//!   each payload through `dynamo_kv_router::zmq_wire::decode_event_batch`, every event
//!   through `ZmqEventNormalizer::normalize` and `RadixTree::apply_event`: Dynamo's
//!   indexer path, with no claim logic, sequence checks or identity checks.
//!
//! Each child prints `events`, `seconds` and its `VmHWM` (peak RSS); the parent prints
//! events/s for both, kvlower ÷ dynamo, and peak RSS per live block (LIVE_BLOCKS is what
//! the capture leaves live: `capture_churn`'s churn mode leaves 0, its live mode N).

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn vm_hwm_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn run_kvlower(capture: &Path, registry: &Path) -> u64 {
    let report = kvlower_join::join_paths(registry, capture, kvlower_join::EventFormat::Vllm)
        .expect("kvlower join");
    serde_json::to_writer_pretty(std::io::sink(), &report).expect("serialize");
    report.stream.events
}

fn run_dynamo(capture: &Path) -> u64 {
    use dynamo_kv_router::RadixTree;
    use dynamo_kv_router::protocols::WorkerWithDpRank;
    use dynamo_kv_router::zmq_wire::{ZmqEventNormalizer, decode_event_batch};

    let file = std::fs::File::open(capture).expect("open capture");
    let mut rd = kvlower_capture::CaptureReader::new(std::io::BufReader::new(file))
        .expect("capture header");
    let mut norm = ZmqEventNormalizer::new(4);
    let mut tree = RadixTree::new();
    let worker = WorkerWithDpRank::new(0, 0);
    let mut events = 0u64;
    let mut event_id = 0u64;
    while let Some(rec) = rd.next_record().expect("capture record") {
        let kvlower_capture::Record::Frame { parts, .. } = rec else {
            continue;
        };
        let batch = decode_event_batch(&parts[2]).expect("dynamo decode");
        for raw in batch.events {
            events += 1;
            if let Some(p) = norm.normalize(raw, event_id, worker) {
                if let Some(ev) = p.into_router_event() {
                    tree.apply_event(ev).expect("apply_event");
                }
            }
            event_id += 1;
        }
    }
    std::hint::black_box(&tree);
    events
}

fn child(side: &str, capture: &Path, registry: &Path) {
    let t = Instant::now();
    let events = match side {
        "kvlower" => run_kvlower(capture, registry),
        "dynamo" => run_dynamo(capture),
        _ => panic!("unknown side {side}"),
    };
    let secs = t.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{events} {secs} {}", vm_hwm_kib()).unwrap();
}

struct Figures {
    events: u64,
    secs: f64,
    hwm_kib: u64,
}

fn spawn(side: &str, capture: &str, registry: &str) -> Figures {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--child", side, capture, registry])
        .output()
        .expect("spawn child");
    assert!(
        out.status.success(),
        "{side} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = String::from_utf8(out.stdout).unwrap();
    let f: Vec<&str> = s.split_whitespace().collect();
    Figures {
        events: f[0].parse().unwrap(),
        secs: f[1].parse().unwrap(),
        hwm_kib: f[2].parse().unwrap(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        child(&args[1], Path::new(&args[2]), Path::new(&args[3]));
        return;
    }
    let [capture, registry, live, rest @ ..] = args.as_slice() else {
        eprintln!("usage: join-vs-dynamo CAPTURE REGISTRY LIVE_BLOCKS [RUNS]");
        std::process::exit(2);
    };
    let live: u64 = live.parse().expect("LIVE_BLOCKS");
    let runs: usize = rest.first().map_or(3, |r| r.parse().expect("RUNS"));
    println!("capture {capture}, {live} blocks live at the end, best of {runs} runs each (interleaved)");
    let mut best: [Option<Figures>; 2] = [None, None];
    for _ in 0..runs {
        for (i, side) in ["kvlower", "dynamo"].into_iter().enumerate() {
            let f = spawn(side, capture, registry);
            if best[i].as_ref().is_none_or(|b| f.secs < b.secs) {
                best[i] = Some(f);
            }
        }
    }
    let [Some(k), Some(d)] = best else { unreachable!() };
    let rate = |f: &Figures| f.events as f64 / f.secs;
    for (name, f) in [("kvlower join", &k), ("dynamo indexer", &d)] {
        let per_block = if live > 0 {
            format!("{:.0} B/live block", f.hwm_kib as f64 * 1024.0 / live as f64)
        } else {
            "-".into()
        };
        println!(
            "{name:<15} {:>9} events {:>7.3} s {:>10.0} events/s  peak RSS {:>7.1} MiB  {per_block}",
            f.events,
            f.secs,
            rate(f),
            f.hwm_kib as f64 / 1024.0
        );
    }
    println!(
        "kvlower / dynamo: {:.2}x events/s, {:.2}x peak RSS",
        rate(&k) / rate(&d),
        k.hwm_kib as f64 / d.hwm_kib as f64
    );
}
