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

/// This process's CPU time (user + system), from /proc/self/stat (USER_HZ = 100).
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which ends at the last ')'): utime is the 12th.
    let rest = s.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|x| x.parse().ok())
        .collect();
    f.iter().sum::<u64>() as f64 / 100.0
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
    let mut rd =
        kvlower_capture::CaptureReader::new(std::io::BufReader::new(file)).expect("capture header");
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
    writeln!(out, "{events} {secs} {} {}", vm_hwm_kib(), cpu_seconds()).unwrap();
}

struct Figures {
    events: u64,
    secs: f64,
    hwm_kib: u64,
    /// CPU seconds of the whole child (reading the capture included): less sensitive
    /// than wall time to other jobs on a shared machine.
    cpu: f64,
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
        cpu: f[3].parse().unwrap(),
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
    println!(
        "capture {capture}, {live} blocks live at the end, best of {runs} runs each (interleaved; wall and CPU time minimized separately)"
    );
    let mut best: [Option<Figures>; 2] = [None, None];
    for _ in 0..runs {
        for (i, side) in ["kvlower", "dynamo"].into_iter().enumerate() {
            let f = spawn(side, capture, registry);
            best[i] = Some(match best[i].take() {
                None => f,
                Some(b) => Figures {
                    events: f.events,
                    secs: b.secs.min(f.secs),
                    hwm_kib: b.hwm_kib.max(f.hwm_kib),
                    cpu: b.cpu.min(f.cpu),
                },
            });
        }
    }
    let [Some(k), Some(d)] = best else {
        unreachable!()
    };
    let rate = |f: &Figures| f.events as f64 / f.secs;
    let cpu_rate = |f: &Figures| f.events as f64 / f.cpu;
    for (name, f) in [("kvlower join", &k), ("dynamo indexer", &d)] {
        let per_block = if live > 0 {
            format!(
                "{:.0} B/live block",
                f.hwm_kib as f64 * 1024.0 / live as f64
            )
        } else {
            "-".into()
        };
        println!(
            "{name:<15} {:>9} events {:>7.3} s {:>10.0} events/s {:>10.0} events/CPU-s  peak RSS {:>7.1} MiB  {per_block}",
            f.events,
            f.secs,
            rate(f),
            cpu_rate(f),
            f.hwm_kib as f64 / 1024.0
        );
    }
    println!(
        "kvlower / dynamo: {:.2}x events/s (wall), {:.2}x events/CPU-s, {:.2}x peak RSS",
        rate(&k) / rate(&d),
        cpu_rate(&k) / cpu_rate(&d),
        k.hwm_kib as f64 / d.hwm_kib as f64
    );
}
