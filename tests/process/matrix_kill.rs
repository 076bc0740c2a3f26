//! Kills the real `kvlower matrix` binary (SIGKILL and SIGINT) at pseudo-random
//! points of a run, a bounded number of times, and checks issue 12 #9: no file
//! tears; the generated set is all old or all new unless the run's journal is
//! there to finish it; the next run leaves the new set and nothing else.
//!
//! A third of the kills land anywhere in the second half of a run, a third
//! while files are being staged, a third just after the first target was
//! replaced; the results layout's unit tests (`crates/kvlower-cli/src/layout.rs`)
//! cover every single step exactly.

#![expect(clippy::print_stderr, reason = "it prints what it measured or saw")]
#![cfg(unix)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Kills per run: six by default (each of the three kill points twice, SIGKILL and
/// SIGINT), sixteen with `KVLOWER_DEEP_TESTS=1` (as CI's deep tier runs it).
fn iterations() -> u64 {
    let deep = std::env::var_os("KVLOWER_DEEP_TESTS").is_some_and(|v| !v.is_empty() && v != "0");
    if deep { 16 } else { 6 }
}
const JOURNAL: &str = "results/.kvlower-journal";

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("mkdir");
    for entry in fs::read_dir(from).expect("read_dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            fs::copy(&path, to.join(entry.file_name())).expect("copy");
        }
    }
}

/// Every file of `results/` and `schemas/`, by relative path.
fn generated_set(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut set = BTreeMap::new();
    for dir in ["results", "schemas"] {
        for entry in fs::read_dir(root.join(dir)).expect("read_dir").flatten() {
            let rel = format!("{dir}/{}", entry.file_name().to_string_lossy());
            set.insert(rel, fs::read(entry.path()).expect("read"));
        }
    }
    set
}

fn write_old_set(root: &Path, new: &BTreeMap<String, Vec<u8>>) {
    for dir in ["results", "schemas"] {
        let _ = fs::remove_dir_all(root.join(dir));
        fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    for rel in new.keys() {
        fs::write(root.join(rel), format!("old {rel}\n")).expect("write");
    }
}

fn matrix(root: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvlower"));
    cmd.args(["matrix", "--root"])
        .arg(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Whether a run has started writing: a target that no longer holds its old
/// contents, or (unless `replaced_only`) any entry that is not a target.
fn touched(root: &Path, new: &BTreeMap<String, Vec<u8>>, replaced_only: bool) -> bool {
    ["results", "schemas"].iter().any(|dir| {
        fs::read_dir(root.join(dir)).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let rel = format!("{dir}/{}", e.file_name().to_string_lossy());
                if !new.contains_key(&rel) {
                    return !replaced_only;
                }
                fs::read(e.path()).is_ok_and(|b| b != format!("old {rel}\n").as_bytes())
            })
        })
    })
}

/// A small deterministic generator (no `rand` dependency for one test).
struct Lcg(u64);

impl Lcg {
    fn next_unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn killed_matrix_runs_leave_old_new_or_a_journal_and_the_next_run_cleans_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for sub in [
        "modes",
        "capabilities",
        "results",
        "schemas",
        "bad_lowering",
        // Descriptors anchor committed evidence documents that check and matrix re-run.
        "evidence",
        "scripts", // the source files a campaign's digest covers
    ] {
        copy_dir(&repo_root().join(sub), &root.join(sub));
    }
    // What this repository keeps (every audit suite; docs/config.md).
    std::fs::copy(repo_root().join("kvlower.toml"), root.join("kvlower.toml")).expect("copy");
    let new = generated_set(root);
    assert!(new.len() > 3);

    // How long one full run takes on this machine.
    write_old_set(root, &new);
    let started = Instant::now();
    assert!(matrix(root).status().expect("runs").success());
    let full = started.elapsed();
    assert_eq!(generated_set(root), new);

    let mut rng = Lcg(0x006b_766c_6f77_6572);
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    let iterations = iterations();
    for i in 0..iterations {
        write_old_set(root, &new);
        let mut child = matrix(root).spawn().expect("spawn");
        match i % 3 {
            // Anywhere in the second half of a run.
            0 => std::thread::sleep(full.mul_f64(0.4 + 0.7 * rng.next_unit())),
            // While staging: once the run touches results/ or schemas/.
            1 => {
                while !touched(root, &new, false) && child.try_wait().ok().flatten().is_none() {}
                std::thread::sleep(Duration::from_micros((5_000.0 * rng.next_unit()) as u64));
            }
            // While replacing: once the first target holds something new.
            _ => {
                while !touched(root, &new, true) && child.try_wait().ok().flatten().is_none() {}
                std::thread::sleep(Duration::from_micros((500.0 * rng.next_unit()) as u64));
            }
        }
        if i % 2 == 0 {
            let _ = child.kill(); // SIGKILL
        } else {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
        }
        let _ = child.wait();

        let journaled = root.join(JOURNAL).is_file();
        let mut old_count = 0;
        let mut new_count = 0;
        for (rel, contents) in &new {
            let now = fs::read(root.join(rel)).expect("a target vanished");
            if &now == contents {
                new_count += 1;
            } else if now == format!("old {rel}\n").as_bytes() {
                old_count += 1;
            } else {
                panic!("iteration {i}: {rel} is torn");
            }
        }
        let state = match (old_count, new_count) {
            (_, 0) => "old",
            (0, _) => "new",
            _ => "mixed",
        };
        assert!(
            state != "mixed" || journaled,
            "iteration {i}: a mixed set ({new_count} new, {old_count} old) and no journal"
        );
        *outcomes
            .entry(if journaled { "journaled" } else { state })
            .or_default() += 1;

        // The next run finishes the set and leaves nothing else behind.
        assert!(matrix(root).status().expect("runs").success());
        assert_eq!(
            generated_set(root),
            new,
            "iteration {i}: not exactly the generated set after the next run"
        );
    }
    eprintln!("kill outcomes over {iterations} runs (full run {full:?}): {outcomes:?}");
}
