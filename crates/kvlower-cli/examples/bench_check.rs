//! How long `kvlower check` takes on many descriptors, fresh and stale.
//!
//! ```text
//! cargo run --release -p kvlower-cli --example bench_check -- [--descriptors N] [--runs R]
//! ```
//!
//! Copies this repository's inputs (everything but `target/` and `.git/`)
//! into a temporary directory, adds copies of the committed descriptors until
//! there are `N` (default 2000; each copy's `runtime.version` gets a suffix,
//! so every copy has its own rows), runs `kvlower matrix`, then times
//! `kvlower check` in-process, best of `R` (default 3) runs, in four states:
//!
//! - fresh: every result matches (the ordinary CI run);
//! - stale: the generated results of the committed descriptors are put
//!   back (what a contributor who forgot `kvlower matrix` commits), with the
//!   human report (bounded diffs) and with `-q` (no diff computed);
//! - garbage: `results/lowering-matrix.md` replaced by 300,000 unrelated lines.
//!
//! The figures are quoted in docs/files.md.

#![expect(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a benchmark driver, not library code: it prints what it measured"
)]

use std::path::Path;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map_or(default, |v| v.parse().unwrap())
    };
    let descriptors = flag("--descriptors", 2000);
    let runs = flag("--runs", 3);

    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_tree(&source, root);
    let committed_results = snapshot(root);

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
    while count < descriptors {
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
    let root_arg = root.display().to_string();
    let started = Instant::now();
    let (code, _) = kvlower(&["matrix", "--root", &root_arg]);
    assert_eq!(code, 0, "matrix failed");
    println!(
        "{count} descriptors; matrix took {:.2} s",
        started.elapsed().as_secs_f64()
    );

    // Where a check's time goes.
    let cpu = cpu_time();
    let (repo, _) = kvlower_evidence::load_repository(root).unwrap();
    let load = cpu_time() - cpu;
    let cpu = cpu_time();
    let env = kvlower_evidence::FsEnvironment::new(repo.root.clone());
    let audit = kvlower_cli::audit::run(&repo, &env);
    let audit_time = cpu_time() - cpu;
    let cpu = cpu_time();
    let files = kvlower_cli::results::files(&repo, &env, &audit);
    let generate = cpu_time() - cpu;
    println!(
        "CPU time per phase of a check: load {:.2} s, audit suites {:.2} s, other results {:.2} s ({} files)",
        load.as_secs_f64(),
        audit_time.as_secs_f64(),
        generate.as_secs_f64(),
        files.len()
    );

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

fn kvlower(args: &[&str]) -> (u8, usize) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let argv = std::iter::once("kvlower").chain(args.iter().copied());
    let code = kvlower_cli::run(argv, &mut out, &mut err).as_u8();
    (code, out.len() + err.len())
}

/// Best of `runs`: (wall clock, CPU time of this thread). On a shared
/// machine the CPU time is the steadier figure.
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
        .min_by_key(|t| t.cpu)
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

/// CPU time of the calling thread (Linux: `/proc/thread-self/schedstat`,
/// nanoseconds on CPU); zero elsewhere.
fn cpu_time() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map_or(Duration::ZERO, Duration::from_nanos)
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
