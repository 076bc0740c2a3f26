//! How long `kvlower check` takes on many descriptors, and how much memory.
//!
//! ```text
//! cargo run --release -p kvlower-cli --example bench_check -- \
//!     [--sizes 500,1000,2000,4000] [--runs R] [--detail N]
//! ```
//!
//! For each size `N` of `--sizes` (default 500,1000,2000,4000): copies this
//! repository's inputs (everything but `target/` and `.git/`) into a temporary
//! directory, adds copies of the committed descriptors until there are `N`
//! (each copy's `runtime.version` gets a suffix, so every copy has its own
//! rows), runs `kvlower matrix`, then runs a fresh `kvlower check` `R` times
//! (default 3), each in a child process (this program, re-executed), and
//! prints the best run's wall and CPU time (every thread), the ratio of the
//! wall time to the 1 s target, and the child's peak resident set size
//! (`VmHWM`) divided by `N`, against the 50 KB per descriptor target.
//!
//! At the `--detail` size (default 2000; 0 for none) it also prints where a
//! check's CPU time goes and times, in-process, best of `R`:
//!
//! - fresh: every result matches (the ordinary CI run);
//! - stale: the generated results of the committed descriptors are put
//!   back (what a contributor who forgot `kvlower matrix` commits), with the
//!   human report (bounded diffs) and with `-q` (no diff computed);
//! - garbage: `results/lowering-matrix.md` replaced by 300,000 unrelated lines.
//!
//! The figures are quoted in docs/performance.md and docs/files.md.

#![expect(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark driver, not library code: it prints what it measured"
)]

use std::path::Path;
use std::time::{Duration, Instant};

/// The wall-time target of a fresh check (issue 26).
const TARGET_WALL: Duration = Duration::from_secs(1);
/// The peak-memory target per descriptor, in KB (issue 26).
const TARGET_KB_PER_DESCRIPTOR: f64 = 50.0;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if let Some(root) = value("--child-check") {
        child_check(&root);
        return;
    }
    let number = |name: &str, default: usize| value(name).map_or(default, |v| v.parse().unwrap());
    let runs = number("--runs", 3);
    // `--descriptors N` (the old flag) is `--sizes N`.
    let sizes: Vec<usize> = value("--sizes")
        .or_else(|| value("--descriptors"))
        .unwrap_or_else(|| "500,1000,2000,4000".to_string())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let detail = number("--detail", 2000);

    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "fresh `kvlower check`, best of {runs} child processes; {threads} core(s) available; \
         load average before: {}",
        load_average()
    );
    println!(
        "| descriptors | wall | CPU | wall ÷ 1 s target | peak RSS | per descriptor | ÷ 50 KB target |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut detail_dir = None;
    for &n in &sizes {
        let dir = tempfile::tempdir().unwrap();
        let count = populate(dir.path(), n);
        let root_arg = dir.path().display().to_string();
        let (code, _) = kvlower(&["matrix", "--root", &root_arg]);
        assert_eq!(code, 0, "matrix failed");
        let best = (0..runs.max(1))
            .map(|_| child(&root_arg))
            .min_by_key(|r| r.wall)
            .unwrap();
        let peak_kb = best.peak_kb as f64;
        let per = peak_kb / count as f64;
        println!(
            "| {count} | {:.2} s | {:.2} s | {:.2} | {:.1} MB | {:.1} KB | {:.2} |",
            best.wall.as_secs_f64(),
            best.cpu.as_secs_f64(),
            best.wall.as_secs_f64() / TARGET_WALL.as_secs_f64(),
            peak_kb / 1024.0,
            per,
            per / TARGET_KB_PER_DESCRIPTOR,
        );
        if n == detail {
            detail_dir = Some(dir);
        }
    }
    println!("load average after: {}", load_average());
    if let Some(dir) = detail_dir {
        details(dir.path(), runs);
    }
}

/// The phase breakdown and the stale and garbage timings, in-process.
fn details(root: &Path, runs: usize) {
    let root_arg = root.display().to_string();
    let cpu = cpu_time();
    // One environment for the load and the judgment, as `check` (its `Ctx`).
    let env = kvlower_evidence::FsEnvironment::new(root.to_path_buf());
    let (repo, _) = kvlower_evidence::load_repository(&env).unwrap();
    let load = cpu_time() - cpu;
    let cpu = cpu_time();
    let audit = kvlower_cli::suites::run(&repo, &env);
    let audit_time = cpu_time() - cpu;
    let cpu = cpu_time();
    let files = kvlower_cli::results::files(&repo, &env, &audit);
    let generate = cpu_time() - cpu;
    println!(
        "\n{} descriptors, CPU time per phase of a check: load {:.2} s, audit suites {:.2} s, \
         other results {:.2} s ({} files)",
        repo.descriptors.len(),
        load.as_secs_f64(),
        audit_time.as_secs_f64(),
        generate.as_secs_f64(),
        files.len()
    );
    drop((files, audit, env, repo));
    let committed_results = committed_results();

    let fresh = best_of(runs, &["check", "--root", &root_arg], 0);
    println!("check, fresh results:                 {fresh}");

    let generated = snapshot(root);
    restore(root, &committed_results);
    let stale = best_of(runs, &["check", "--root", &root_arg], 1);
    println!("check, stale results (human, diffs):  {stale}");
    let quiet = best_of(runs, &["check", "-q", "--root", &root_arg], 1);
    println!("check, stale results (-q, no diff):   {quiet}");

    restore(root, &generated);
    let garbage: String = (0..300_000)
        .map(|n| format!("garbage line {n}\n"))
        .collect();
    std::fs::write(root.join("results/lowering-matrix.md"), garbage).unwrap();
    let garbage = best_of(runs, &["check", "--root", &root_arg], 1);
    println!("check, 300,000-line garbage result:   {garbage}");
}

/// Copies the repository's inputs into `root` and adds descriptor copies until
/// there are `n`; returns how many there are.
fn populate(root: &Path, n: usize) -> usize {
    copy_tree(&source(), root);
    let originals: Vec<(String, String)> = std::fs::read_dir(root.join("capabilities"))
        .unwrap()
        .flatten()
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    let mut count = originals.len();
    let mut i = 0;
    while count < n {
        let (name, text) = &originals[i % originals.len()];
        let copy = text.replacen(
            "\n  version: ",
            &format!("\n  version: bench copy {i} of "),
            1,
        );
        let stem = name.trim_end_matches(".yaml");
        std::fs::write(
            root.join(format!("capabilities/{stem}_bench_{i:05}.yaml")),
            copy,
        )
        .unwrap();
        count += 1;
        i += 1;
    }
    count
}

fn source() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The committed `results/` and `schemas/` of this repository.
fn committed_results() -> Vec<(String, Vec<u8>)> {
    snapshot(&source())
}

/// One child run of a fresh check.
struct ChildRun {
    wall: Duration,
    cpu: Duration,
    peak_kb: u64,
}

/// Runs `check --root root` in a child process (this program with
/// `--child-check`), which reports its own wall time, CPU time and peak RSS.
fn child(root: &str) -> ChildRun {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--child-check", root])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let fields: Vec<u64> = text
        .split_whitespace()
        .map(|f| f.parse().unwrap())
        .collect();
    ChildRun {
        wall: Duration::from_nanos(fields[0]),
        cpu: Duration::from_nanos(fields[1]),
        peak_kb: fields[2],
    }
}

/// The child: one fresh check, then `wall_ns cpu_ns peak_kb` on stdout.
fn child_check(root: &str) {
    let started = Instant::now();
    let (code, _) = kvlower(&["check", "--root", root]);
    let wall = started.elapsed();
    let cpu = cpu_time();
    assert_eq!(code, 0, "check found something");
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let peak_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    println!("{} {} {peak_kb}", wall.as_nanos(), cpu.as_nanos());
}

fn kvlower(args: &[&str]) -> (u8, usize) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv = std::iter::once("kvlower").chain(args.iter().copied());
    let code = kvlower_cli::run(argv, &mut out, &mut err).as_u8();
    (code, out.len() + err.len())
}

/// Best of `runs`: (wall clock, CPU time of every thread of this process).
fn best_of(runs: usize, args: &[&str], expected: u8) -> Timing {
    (0..runs.max(1))
        .map(|_| {
            let cpu = cpu_time();
            let started = Instant::now();
            let (code, _) = kvlower(args);
            let wall = started.elapsed();
            assert_eq!(code, expected, "{args:?}");
            Timing {
                wall,
                cpu: cpu_time().saturating_sub(cpu),
            }
        })
        .min_by_key(|t| t.wall)
        .unwrap()
}

#[derive(Debug)]
struct Timing {
    wall: Duration,
    cpu: Duration,
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:>7.2} s wall, {:>7.2} s CPU",
            self.wall.as_secs_f64(),
            self.cpu.as_secs_f64()
        )
    }
}

/// CPU time of every live thread of this process (Linux:
/// `/proc/self/task/*/schedstat`, nanoseconds on CPU); zero elsewhere.
fn cpu_time() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The contents of `results/` and `schemas/`.
fn snapshot(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    for dir in ["results", "schemas"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            files.push((
                format!("{dir}/{}", e.file_name().to_string_lossy()),
                std::fs::read(e.path()).unwrap(),
            ));
        }
    }
    files
}

fn restore(root: &Path, files: &[(String, Vec<u8>)]) {
    for (rel, bytes) in files {
        std::fs::write(root.join(rel), bytes).unwrap();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let name = e.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        let ty = e.file_type().unwrap();
        if ty.is_dir() {
            copy_tree(&e.path(), &to.join(&name));
        } else if ty.is_file() {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}
