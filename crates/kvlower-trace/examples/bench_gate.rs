//! Throughput and memory of the trace gate, next to serde_json's `IgnoredAny` ceiling.
//!
//! ```text
//! cargo run --release -p kvlower-trace --example bench_gate -- [--campaign N] [--claims N]
//!     [--cycles-small N] [--cycles-large N] [--copies N] [--connector-only]
//!     [--dir PATH [--reuse]]
//! ```
//!
//! First, the connector family's campaign shape: 7 scenarios (success path, claimed load
//! failure, wrong-claim failure, unclaimed failure, fallback recompute, ordinary offload
//! without claim, generic counters) × `--copies` traces (default 300: 2,100 files of
//! 16–25 events, ~21 KB each), reported also as files/s. `--connector-only` stops there.
//!
//! Generates synthetic connector traces (realistic ~1 KB lines, sorted keys) into a
//! temporary directory:
//! - a campaign of `--campaign` traces (default 4000), cycling through success, same-claim
//!   failure and fallback-recompute runs;
//! - one multi-claim trace with `--claims` claims (default 200000), 64 claims interleaved
//!   at a time;
//! - two traces with the same 1000 claims but `--cycles-small` / `--cycles-large` reuse
//!   cycles per claim (default 20 / 200), to show memory stays flat as a trace grows.
//!
//! `--reuse` measures the data already in `--dir` (same sizes) without regenerating it.
//!
//! Each measurement runs in a fresh child process (this same binary, `--measure`) so its
//! peak RSS (`VmHWM` from `/proc/self/status`) is its own. "gate" evaluates with
//! `evaluate_reader_each` on one thread (verdicts streamed and dropped); "gate -jN" uses
//! a pool of one thread per core (at least 2), as `kvlower gate` does: one large trace
//! through `evaluate_reader_pooled` (its lines parsed on the pool while earlier lines are
//! judged), a directory's files one per pool task; "ceiling" reads the same bytes line by
//! line on one thread and parses each line into `serde::de::IgnoredAny` — the fastest a
//! serde_json reader of the same lines can be. `rel` is the ceiling's time in the same
//! run divided by the column's time.

#![expect(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "it prints what it measured or saw"
)]
#![expect(
    clippy::unwrap_used,
    clippy::panic,
    reason = "a benchmark driver, not library code"
)]

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--measure") {
        let mode = &args[1];
        let path = PathBuf::from(&args[2]);
        measure(mode, &path);
        return;
    }
    let flag = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().unwrap())
    };
    let copies = flag("--copies", 300);
    let connector_only = args.iter().any(|a| a == "--connector-only");
    let campaign = flag("--campaign", 4000);
    let claims = flag("--claims", 200_000);
    let cycles_small = flag("--cycles-small", 20);
    let cycles_large = flag("--cycles-large", 200);
    let tmp = tempfile::tempdir().unwrap();
    let root = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map_or_else(|| tmp.path().to_path_buf(), PathBuf::from);
    std::fs::create_dir_all(&root).unwrap();

    let reuse = args.iter().any(|a| a == "--reuse");
    let campaign_dir = root.join("campaign");
    let multi = root.join("multi_claim.jsonl");
    let small = root.join("cycles_small.jsonl");
    let large = root.join("cycles_large.jsonl");
    let connector_campaign = root.join("connector-campaign");
    if !reuse {
        generate_connector_campaign(&connector_campaign, copies);
        if !connector_only {
            generate(&root, campaign, claims, cycles_small, cycles_large);
        }
    }

    // Written data is flushed and read once untimed, so no measurement pays for writeback
    // or a cold page cache; each mode then runs 3 times and the fastest run counts.
    let _ = Command::new("sync").status();
    println!("rel = ceiling time / this time (1.00 = as fast as the ceiling); RSS = peak, MB");
    let threads = pool_threads();
    println!(
        "gate: one thread; gate -j{threads}: `evaluate_reader_pooled` on a pool of {threads} threads \
         (lines parsed on the pool while earlier lines are judged); ceiling: one thread"
    );
    println!(
        "{:<34} {:>7} {:>9} | {:^23} | {:^23} | {:^23}",
        "",
        "",
        "",
        "gate (kvlower-trace)",
        format!("gate -j{threads}"),
        "ceiling: IgnoredAny"
    );
    println!(
        "{:<34} {:>7} {:>9} | {:>5} {:>5} {:>5} {:>5} | {:>5} {:>5} {:>5} {:>5} | {:>5} {:>5} {:>5} {:>5}",
        "dataset",
        "MB",
        "events",
        "Mev/s",
        "MB/s",
        "RSS",
        "rel",
        "Mev/s",
        "MB/s",
        "RSS",
        "rel",
        "Mev/s",
        "MB/s",
        "RSS",
        "rel"
    );
    let mut datasets = vec![(
        format!("connector campaign (7 x {copies} traces)"),
        connector_campaign,
    )];
    if !connector_only {
        datasets.extend([
            (format!("campaign ({campaign} traces)"), campaign_dir),
            (format!("multi-claim ({claims} claims)"), multi),
            (format!("1000 claims x {cycles_small} reuse cycles"), small),
            (format!("1000 claims x {cycles_large} reuse cycles"), large),
        ]);
    }
    let mut per_file = Vec::new();
    for (label, path) in datasets {
        child("ceiling", &path);
        let best = |mode: &str| {
            (0..3)
                .map(|_| child(mode, &path))
                .min_by(|a, b| a.secs.total_cmp(&b.secs))
                .unwrap()
        };
        let gate = best("gate");
        let pooled = best("gate-pooled");
        let ceiling = best("ceiling");
        assert_eq!(gate.lines, ceiling.lines, "both read the same lines");
        assert_eq!(pooled.lines, ceiling.lines, "both read the same lines");
        assert_eq!(pooled.verdicts, gate.verdicts, "the same verdicts");
        let mb = gate.bytes as f64 / 1e6;
        let cols = |m: &Measured| {
            format!(
                "{:>5.2} {:>5.0} {:>5.1} {:>5.2}",
                m.lines as f64 / m.secs / 1e6,
                mb / m.secs,
                m.peak_kb as f64 / 1024.0,
                ceiling.secs / m.secs
            )
        };
        println!(
            "{:<34} {:>7.1} {:>9} | {} | {} | {}",
            label,
            mb,
            gate.lines,
            cols(&gate),
            cols(&pooled),
            cols(&ceiling)
        );
        if gate.files > 1 {
            per_file.push(format!(
                "{label}: {} files, {:.1} KB/file; gate {:.0} files/s (-j{threads}: {:.0}), ceiling {:.0} files/s, gate / ceiling = {:.2}",
                gate.files,
                gate.bytes as f64 / gate.files as f64 / 1e3,
                gate.files as f64 / gate.secs,
                pooled.files as f64 / pooled.secs,
                ceiling.files as f64 / ceiling.secs,
                ceiling.secs / gate.secs
            ));
        }
    }
    for line in per_file {
        println!("{line}");
    }
}

/// The connector family's campaign shape: 7 scenarios (success path, claimed load
/// failure, wrong-claim failure, unclaimed failure, fallback recompute, ordinary offload
/// without claim, generic counters), `copies` traces each, 16–25 events of ~1 KB.
fn generate_connector_campaign(dir: &Path, copies: u64) {
    let t = Templates::new();
    std::fs::create_dir_all(dir).unwrap();
    for scenario in 0..7 {
        for copy in 0..copies {
            let path = dir.join(format!("scenario-{scenario}-rep-{copy:04}.jsonl"));
            let mut w = BufWriter::new(File::create(path).unwrap());
            let claim = format!("bench:connector:{scenario}:rep-{copy:04}:claim");
            t.scenario_run(&mut w, scenario, &claim);
            w.flush().unwrap();
        }
    }
}

/// Writes the benchmark's traces below `root`.
fn generate(root: &Path, campaign: u64, claims: u64, cycles_small: u64, cycles_large: u64) {
    let t = Templates::new();
    eprintln!("generating into {} …", root.display());
    let campaign_dir = root.join("campaign");
    std::fs::create_dir_all(&campaign_dir).unwrap();
    for i in 0..campaign {
        let path = campaign_dir.join(format!("run-{i:05}.jsonl"));
        let mut w = BufWriter::new(File::create(path).unwrap());
        let mut seq = 0;
        let claim = format!("bench:campaign:{i}:claim");
        match i % 3 {
            0 => t.success_run(&mut w, &claim, &mut seq, 1),
            1 => t.failure_run(&mut w, &claim, &mut seq),
            _ => t.fallback_run(&mut w, &claim, &mut seq),
        }
    }
    let multi = root.join("multi_claim.jsonl");
    t.multi_claim_trace(&multi, claims, 1);
    let small = root.join("cycles_small.jsonl");
    t.multi_claim_trace(&small, 1000, cycles_small);
    let large = root.join("cycles_large.jsonl");
    t.multi_claim_trace(&large, 1000, cycles_large);
}

struct Measured {
    files: u64,
    lines: u64,
    bytes: u64,
    secs: f64,
    peak_kb: u64,
    verdicts: u64,
}

/// Threads of the pooled gate: one per core, at least 2.
fn pool_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

fn child(mode: &str, path: &Path) -> Measured {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--measure", mode])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    Measured {
        files: v["files"].as_u64().unwrap(),
        lines: v["lines"].as_u64().unwrap(),
        bytes: v["bytes"].as_u64().unwrap(),
        secs: v["secs"].as_f64().unwrap(),
        peak_kb: v["peak_kb"].as_u64().unwrap(),
        verdicts: v["verdicts"].as_u64().unwrap(),
    }
}

fn files(path: &Path) -> Vec<PathBuf> {
    if path.is_dir() {
        let mut v: Vec<PathBuf> = std::fs::read_dir(path)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        v
    } else {
        vec![path.to_path_buf()]
    }
}

/// Runs one measurement in this process and prints it as JSON.
fn measure(mode: &str, path: &Path) {
    let files = files(path);
    let bytes: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(pool_threads())
        .build()
        .unwrap();
    let start = Instant::now();
    let mut lines = 0u64;
    let mut verdicts = 0u64;
    let many_pooled = mode == "gate-pooled" && files.len() > 1;
    if many_pooled {
        // Many files: one file per pool task, as `kvlower gate` judges a campaign.
        let (l, v) = pool.install(|| {
            use rayon::prelude::*;
            files
                .par_iter()
                .map(|f| {
                    let reader = BufReader::with_capacity(1 << 16, File::open(f).unwrap());
                    let mut verdicts = 0u64;
                    let outline =
                        kvlower_trace::evaluate_reader_each("bench", reader, |_| verdicts += 1);
                    assert!(outline.diagnostics.is_empty(), "{:?}", outline.diagnostics);
                    (outline.events, verdicts)
                })
                .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        lines = l;
        verdicts = v;
    }
    let one_by_one: &[PathBuf] = if many_pooled { &[] } else { &files };
    for f in one_by_one {
        let reader = BufReader::with_capacity(1 << 16, File::open(f).unwrap());
        match mode {
            "gate" => {
                let outline =
                    kvlower_trace::evaluate_reader_each("bench", reader, |_| verdicts += 1);
                assert!(outline.diagnostics.is_empty(), "{:?}", outline.diagnostics);
                lines += outline.events;
            }
            "gate-pooled" => {
                let outline = kvlower_trace::evaluate_reader_pooled(
                    "bench",
                    reader,
                    kvlower_trace::MAX_TRACE_BYTES,
                    &pool,
                    |_| verdicts += 1,
                );
                assert!(outline.diagnostics.is_empty(), "{:?}", outline.diagnostics);
                lines += outline.events;
            }
            "ceiling" => {
                let mut reader = reader;
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    if reader.read_until(b'\n', &mut buf).unwrap() == 0 {
                        break;
                    }
                    serde_json::from_slice::<serde::de::IgnoredAny>(&buf).unwrap();
                    lines += 1;
                }
            }
            other => panic!("unknown mode {other}"),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}",
        json!({"files": files.len(), "lines": lines, "bytes": bytes, "secs": secs, "verdicts": verdicts, "peak_kb": peak_kb()})
    );
}

/// Peak resident set size of this process (`VmHWM`), in KiB.
fn peak_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Whose event to write: its claim (`None`: no claim metadata) and the claim its failure
/// fields and outcomes name (`None`: the event's own claim).
#[derive(Clone, Copy)]
struct Who<'a> {
    claim: Option<&'a str>,
    target: Option<&'a str>,
}

impl<'a> Who<'a> {
    fn claim(claim: &'a str) -> Self {
        Who {
            claim: Some(claim),
            target: None,
        }
    }
}

/// Event templates with `__CLAIM__`, `__SEQ__`, `__REQ__` placeholders, keys sorted.
struct Templates {
    events: Vec<(&'static str, String)>,
}

impl Templates {
    fn new() -> Self {
        let envelope = json!({
            "cache_identity": "bench-cache:v1",
            "claim_id": "__CLAIM__",
            "hook_scope": "bench_offloading_connector_failure_semantics:bench",
            "instrumentation_scope": "bench_connector_probe_not_conformance",
            "materialization_predicate": "leading_prefix_at_least(1)",
            "monotonic_ns": 113641438524287u64,
            "predicate_id": "predicate:bench-leading-prefix",
            "prefix_id": "prefix:bench:a977eb91cfd2a19f",
            "request_id": "__REQ__",
            "request_token_map_id": "token-map:bench-prefix:a977eb91cfd2a19f",
            "resident_claim": true,
            "resident_claim_id": "__CLAIM__",
            "resident_claim_role": "reuse",
            "reusable_object_id": "bench-request-prefix:a977eb91cfd2a19f",
            "wall_time_ns": 1779484100457224420u64,
        });
        let reason = "controlled_resident_claim_cpu_to_gpu_load_failure";
        let specs: Vec<(&'static str, &'static str, Value)> = vec![
            (
                "init",
                "request_initialized",
                json!({"has_kv_transfer_params": true, "cache_salt": null, "num_block_hashes": 30, "num_prompt_tokens": 480}),
            ),
            (
                "lookup0",
                "offload_lookup_result",
                json!({"num_hit_tokens": 0, "num_computed_tokens": 0, "will_load_async": false}),
            ),
            (
                "store",
                "offload_store_job_created",
                json!({"job_id": 0, "key_count": 7, "num_offloadable_tokens": 480, "offload_generation": 0, "src_block_count": 28, "transfer_type": ["GPU", "CPU"]}),
            ),
            (
                "store_sub",
                "offload_worker_transfer_submitted",
                json!({"job_id": 0, "key_count": 7, "submitted": true, "transfer_type": ["GPU", "CPU"]}),
            ),
            (
                "store_ok",
                "offload_worker_transfer_finished",
                json!({"job_id": 0, "key_count": 7, "success": true, "transfer_size": 10321920, "transfer_time": 0.0007174720168113709, "transfer_type": ["GPU", "CPU"]}),
            ),
            (
                "offloaded",
                "resident_claim_offloaded",
                json!({"block_count_footprint": 7, "cache_tier_from": "gpu_kv_cache", "cache_tier_to": "host_offload_tier", "destination_tier": "CPU", "source_tier": "GPU", "restoration_required": true, "job_id": 0, "key_count": 7, "transfer_type": ["GPU", "CPU"]}),
            ),
            (
                "store_done",
                "offload_job_completed",
                json!({"is_store": true, "job_id": 0, "key_count": 7, "offload_generation": 0, "restoration_generation": null}),
            ),
            (
                "finished",
                "offload_request_finished_no_pending_jobs",
                json!({}),
            ),
            (
                "lookup_hit",
                "offload_lookup_result",
                json!({"num_hit_tokens": 448, "num_computed_tokens": 0, "will_load_async": true}),
            ),
            (
                "restore_req",
                "resident_claim_restore_required",
                json!({"reuse_requires_restoration": true, "restoration_required": true, "predicate_satisfied_from_primary": false, "restoration_generation": 1, "job_id": 1, "num_external_tokens": 448, "transfer_type": ["CPU", "GPU"]}),
            ),
            (
                "load",
                "offload_load_job_created",
                json!({"job_id": 1, "dst_block_count": 28, "num_external_tokens": 448, "restoration_generation": 1, "transfer_type": ["CPU", "GPU"]}),
            ),
            (
                "load_sub",
                "offload_worker_transfer_submitted",
                json!({"job_id": 1, "submitted": true, "transfer_type": ["CPU", "GPU"]}),
            ),
            (
                "load_ok",
                "offload_worker_transfer_finished",
                json!({"job_id": 1, "success": true, "transfer_size": 10321920, "transfer_time": 0.0005642560124397278, "transfer_type": ["CPU", "GPU"]}),
            ),
            (
                "restored",
                "resident_claim_restored",
                json!({"restored_from_offload_tier": true, "restoration_source": "offload_tier", "restoration_completed": true, "cache_tier_from": "host_offload_tier", "cache_tier_to": "gpu_kv_cache", "job_id": 1}),
            ),
            (
                "load_done",
                "offload_job_completed",
                json!({"is_store": false, "job_id": 1, "key_count": 7, "offload_generation": null, "restoration_generation": 1}),
            ),
            (
                "load_fail",
                "offload_worker_transfer_finished",
                json!({"job_id": 1, "success": false, "transfer_size": 10321920, "transfer_time": 0.0005650240182876587, "transfer_type": ["CPU", "GPU"], "controlled_restoration_unavailable": true, "failure_injection_flag": true, "injected_restoration_failure": true, "failure_mode": "refusal", "failure_reason": reason, "failure_target_claim_id": "__TARGET__", "failure_matched_claim_id": "__TARGET__"}),
            ),
            (
                "worker_failed",
                "offload_worker_load_failed",
                json!({"job_id": 1, "invalid_block_ids": [32, 33, 34, 35, 36, 37, 38, 39], "failure_injection_flag": true, "failure_reason": reason}),
            ),
            (
                "sched_failed",
                "scheduler_resident_claim_restoration_failed",
                json!({"blocking_claim_ids": ["__TARGET__"], "claim_scoped_outcome_type": "refusal", "finish_status": "FINISHED_ERROR", "finish_reason": "error", "native_scheduler_admission_refusal": false, "native_scheduler_refusal": false, "outcome_claim_id": "__TARGET__", "scheduler_event_before_finish_requests": true, "scheduler_failure_policy": "fail", "scheduler_side_failure_outcome": true, "scheduler_side_refusal": true}),
            ),
            (
                "sched_refused",
                "scheduler_active_request_refused",
                json!({"blocking_claim_ids": ["__TARGET__"], "claim_scoped_outcome_type": "refusal", "finish_status": "FINISHED_ERROR", "native_scheduler_admission_refusal": false, "outcome_claim_id": "__TARGET__", "scheduler_event_before_finish_requests": true, "scheduler_side_failure_outcome": true, "scheduler_side_refusal": true}),
            ),
            (
                "finished_pending",
                "offload_request_finished_pending_jobs",
                json!({"pending_job_ids": [1]}),
            ),
            (
                "job_failed",
                "offload_load_job_failed",
                json!({"is_store": false, "failure_injection_flag": true, "failure_reason": reason, "job_id": 1}),
            ),
            (
                "restoration_failed",
                "resident_claim_restoration_failed",
                json!({"blocking_claim_ids": ["__TARGET__"], "claim_scoped_outcome_type": "refusal", "controlled_restoration_unavailable": true, "failure_injection_flag": true, "injected_restoration_failure": true, "outcome_claim_id": "__TARGET__"}),
            ),
            (
                "refused",
                "active_request_refused",
                json!({"blocking_claim_ids": ["__TARGET__"], "outcome_claim_id": "__TARGET__", "outcome_type": "refusal"}),
            ),
            (
                "generic_offloaded",
                "generic_kv_blocks_offloaded",
                json!({"generic_offload_blocks": 7, "request_id": null}),
            ),
            (
                "generic_onboarded",
                "generic_kv_blocks_onboarded",
                json!({"generic_onboard_blocks": 7, "request_id": null}),
            ),
            (
                "generic_failed",
                "generic_kv_transfer_failed_counter",
                json!({"failure_count": 0, "request_id": null}),
            ),
            (
                "generic_errors",
                "generic_request_error_counter",
                json!({"request_failures": 0, "request_id": null}),
            ),
            (
                "fallback_sched",
                "scheduler_resident_claim_restoration_failed",
                json!({"blocking_claim_ids": [], "claim_scoped_outcome_type": "fallback_recompute_without_claim_satisfaction", "finish_status": null, "outcome_claim_id": "__CLAIM__", "scheduler_failure_policy": "recompute", "scheduler_side_failure_outcome": true, "scheduler_side_refusal": false}),
            ),
        ];
        let events = specs
            .into_iter()
            .map(|(key, name, fields)| {
                let mut m = envelope.as_object().unwrap().clone();
                m.insert("event".into(), json!(name));
                m.insert("event_sequence".into(), json!("__SEQ__"));
                m.extend(fields.as_object().unwrap().clone());
                (key, serde_json::to_string(&m).unwrap())
            })
            .collect();
        Templates { events }
    }

    fn write(&self, w: &mut impl Write, key: &str, claim: &str, seq: &mut u64) {
        self.write_as(w, key, Who::claim(claim), seq);
    }

    /// Writes one event for `who`: its claim (or none), and the claim its failure
    /// fields and outcomes name.
    fn write_as(&self, w: &mut impl Write, key: &str, who: Who<'_>, seq: &mut u64) {
        let template = &self.events.iter().find(|(k, _)| *k == key).unwrap().1;
        let mut line = template
            .replace("\"__SEQ__\"", &seq.to_string())
            .replace("__REQ__", "1-bench");
        match who.claim {
            Some(claim) => {
                line = line
                    .replace("__TARGET__", who.target.unwrap_or(claim))
                    .replace("__CLAIM__", claim);
            }
            None => {
                line = line
                    .replace("[\"__TARGET__\"]", "[]")
                    .replace("\"__TARGET__\"", "null")
                    .replace("\"__CLAIM__\"", "null");
            }
        }
        *seq += 1;
        w.write_all(line.as_bytes()).unwrap();
        w.write_all(b"\n").unwrap();
    }

    /// One trace of the connector family's campaign scenario `scenario` (0..7).
    fn scenario_run(&self, w: &mut impl Write, scenario: usize, claim: &str) {
        let mut seq = 0;
        let seq = &mut seq;
        let claimed = Who::claim(claim);
        let unclaimed = Who {
            claim: None,
            target: None,
        };
        let wrong = Who {
            claim: Some(claim),
            target: Some("bench:campaign:some-other-claim"),
        };
        const RESIDENT: [&str; 8] = [
            "init",
            "lookup0",
            "store",
            "store_sub",
            "store_ok",
            "offloaded",
            "store_done",
            "finished",
        ];
        const REUSE_OK: [&str; 8] = [
            "lookup_hit",
            "restore_req",
            "load",
            "load_sub",
            "load_ok",
            "restored",
            "load_done",
            "finished",
        ];
        const FAILURE: [&str; 13] = [
            "init",
            "lookup_hit",
            "restore_req",
            "load",
            "load_sub",
            "load_fail",
            "worker_failed",
            "sched_failed",
            "sched_refused",
            "finished_pending",
            "job_failed",
            "restoration_failed",
            "refused",
        ];
        fn emit(t: &Templates, w: &mut impl Write, keys: &[&str], who: Who<'_>, seq: &mut u64) {
            for key in keys {
                t.write_as(w, key, who, seq);
            }
        }
        match scenario {
            // success_path
            0 => {
                emit(self, w, &RESIDENT, claimed, seq);
                emit(self, w, &REUSE_OK, claimed, seq);
            }
            // claimed_load_failure
            1 => {
                emit(self, w, &RESIDENT, claimed, seq);
                emit(self, w, &FAILURE, claimed, seq);
            }
            // wrong_claim_failure: the injection and outcomes name another claim
            2 => {
                emit(self, w, &RESIDENT, claimed, seq);
                emit(self, w, &FAILURE, wrong, seq);
            }
            // unclaimed_failure
            3 => {
                emit(self, w, &RESIDENT, unclaimed, seq);
                emit(self, w, &FAILURE, unclaimed, seq);
            }
            // fallback_recompute
            4 => self.fallback_run(w, claim, seq),
            // ordinary_offload_without_claim
            5 => {
                emit(self, w, &RESIDENT, unclaimed, seq);
                emit(self, w, &REUSE_OK, unclaimed, seq);
            }
            // generic_counter_only: an unclaimed offload plus the generic counters
            _ => {
                emit(self, w, &RESIDENT, unclaimed, seq);
                emit(
                    self,
                    w,
                    &["generic_offloaded", "generic_onboarded"],
                    unclaimed,
                    seq,
                );
                emit(self, w, &REUSE_OK, unclaimed, seq);
                emit(
                    self,
                    w,
                    &["generic_failed", "generic_errors"],
                    unclaimed,
                    seq,
                );
            }
        }
    }

    fn resident(&self, w: &mut impl Write, claim: &str, seq: &mut u64) {
        for key in [
            "init",
            "lookup0",
            "store",
            "store_sub",
            "store_ok",
            "offloaded",
            "store_done",
            "finished",
        ] {
            self.write(w, key, claim, seq);
        }
    }

    fn reuse_success(&self, w: &mut impl Write, claim: &str, seq: &mut u64) {
        for key in [
            "lookup_hit",
            "restore_req",
            "load",
            "load_sub",
            "load_ok",
            "restored",
            "load_done",
            "finished",
        ] {
            self.write(w, key, claim, seq);
        }
    }

    fn success_run(&self, w: &mut impl Write, claim: &str, seq: &mut u64, cycles: u64) {
        self.resident(w, claim, seq);
        for _ in 0..cycles {
            self.reuse_success(w, claim, seq);
        }
    }

    fn failure_run(&self, w: &mut impl Write, claim: &str, seq: &mut u64) {
        self.resident(w, claim, seq);
        for key in [
            "init",
            "lookup_hit",
            "restore_req",
            "load",
            "load_sub",
            "load_fail",
            "worker_failed",
            "sched_failed",
            "sched_refused",
            "finished_pending",
            "job_failed",
            "restoration_failed",
            "refused",
        ] {
            self.write(w, key, claim, seq);
        }
    }

    fn fallback_run(&self, w: &mut impl Write, claim: &str, seq: &mut u64) {
        self.resident(w, claim, seq);
        for key in [
            "init",
            "lookup_hit",
            "restore_req",
            "load",
            "load_sub",
            "load_fail",
            "worker_failed",
            "fallback_sched",
            "job_failed",
        ] {
            self.write(w, key, claim, seq);
        }
        self.reuse_success(w, claim, seq);
    }

    /// `claims` success claims (the first one fails instead), 64 interleaved at a time,
    /// each with `cycles` reuse cycles.
    fn multi_claim_trace(&self, path: &Path, claims: u64, cycles: u64) {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(path).unwrap());
        let mut seq = 0;
        let window = 64;
        let mut first = 0;
        while first < claims {
            let ids: Vec<String> = (first..claims.min(first + window))
                .map(|i| format!("bench:multi:claim-{i:07}"))
                .collect();
            for id in &ids {
                self.resident(&mut w, id, &mut seq);
            }
            for _ in 0..cycles {
                for (k, id) in ids.iter().enumerate() {
                    if first == 0 && k == 0 {
                        continue;
                    }
                    self.reuse_success(&mut w, id, &mut seq);
                }
            }
            if first == 0 {
                for key in [
                    "init",
                    "lookup_hit",
                    "restore_req",
                    "load",
                    "load_sub",
                    "load_fail",
                    "worker_failed",
                    "sched_failed",
                    "sched_refused",
                    "finished_pending",
                    "job_failed",
                    "restoration_failed",
                    "refused",
                ] {
                    self.write(&mut w, key, &ids[0], &mut seq);
                }
            }
            first += window;
        }
        w.flush().unwrap();
    }
}
