//! The live set-ups pick their loopback ports below the kernel's ephemeral range
//! (`scripts/kvlower_scripts/ports.py`). A port from `bind(("127.0.0.1", 0))`, closed again
//! before the engine binds it, lies in the range every `bind(0)` and `connect()` of the
//! engine's own libraries draws from in between: a CI run lost a KVCR reproduction to
//! `Address already in use` that way.

use std::path::{Path, PathBuf};
use std::process::Command;

use kvlower_tests::repo_root;

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            python_files(&path, out);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("py" | "sh")) {
            out.push(path);
        }
    }
}

/// The lines under `scripts` (Python and shell, comments left out) that ask the kernel for
/// a port (`.bind((HOST, 0))`), outside `ports.py`, which is the one picker.
fn ephemeral_picks(scripts: &Path) -> Vec<String> {
    let mut files = Vec::new();
    python_files(scripts, &mut files);
    let mut found = Vec::new();
    for path in files {
        if path.file_name().is_some_and(|n| n == "ports.py") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("read");
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with('#') {
                continue;
            }
            let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
            let asks = squeezed.contains(".bind((") && squeezed.contains(",0))");
            if asks {
                let rel = path.strip_prefix(scripts).unwrap_or(&path);
                found.push(format!("{}:{}: {code}", rel.display(), n + 1));
            }
        }
    }
    found
}

#[test]
fn no_live_set_up_asks_the_kernel_for_a_port() {
    let found = ephemeral_picks(&repo_root().join("scripts"));
    assert!(
        found.is_empty(),
        "ports from bind(0) (use kvlower_scripts.ports instead):\n{}",
        found.join("\n")
    );
}

/// The attack on the scan: the three pickers the set-ups had before ports.py (a shell
/// one-liner, a loop over sockets, a helper) are found; a comment is not.
#[test]
fn the_port_scan_finds_planted_pickers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    std::fs::create_dir_all(root.join("live_x")).expect("mkdir");
    std::fs::write(
        root.join("live_x/run.sh"),
        "# s.bind((\"127.0.0.1\", 0)) is not asked here\nport=\"$(\"$py\" -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])')\"\n",
    )
    .expect("write");
    std::fs::write(
        root.join("live_x/driver.py"),
        "def free_port():\n    with socket.socket() as s:\n        s.bind(('127.0.0.1', 0))\n        return s.getsockname()[1]\nfor s in ss: s.bind((\"127.0.0.1\",0))\n",
    )
    .expect("write");
    std::fs::write(
        root.join("ports.py"),
        "s.bind(addr)\ns.bind((\"127.0.0.1\", 0))\n",
    )
    .expect("write");
    let found = ephemeral_picks(root);
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with("live_x/driver.py:3:"), "{found:?}");
    assert!(found[1].starts_with("live_x/driver.py:5:"), "{found:?}");
    assert!(found[2].starts_with("live_x/run.sh:2:"), "{found:?}");
}

/// What the picker gives: distinct ports, each outside this machine's ephemeral range.
#[test]
fn the_picker_gives_distinct_ports_outside_the_ephemeral_range() {
    let root = repo_root();
    let out =
        Command::new(std::env::var("KVLOWER_TEST_PYTHON").unwrap_or_else(|_| "python3".into()))
            .args(["-m", "kvlower_scripts.ports", "4"])
            .env("PYTHONPATH", root.join("scripts"))
            .output()
            .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ports: Vec<u32> = String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .split(',')
        .map(|p| p.parse().expect("a port"))
        .collect();
    let (lo, hi) = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| {
            let mut it = t.split_whitespace().map(|v| v.parse::<u32>().ok());
            Some((it.next()??, it.next()??))
        })
        .unwrap_or((32768, 60999));
    let mut seen = ports.clone();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!((ports.len(), seen.len()), (4, 4), "{ports:?}");
    assert!(
        ports.iter().all(|p| !(lo..=hi).contains(p) && *p >= 1024),
        "{ports:?} (ephemeral {lo}-{hi})"
    );
}
