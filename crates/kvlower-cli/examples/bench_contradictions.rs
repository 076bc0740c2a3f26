//! Benchmark (not a test): `kvlower matrix` and `kvlower check` on one
//! descriptor with N `supported` items plus one `missing` item for the same
//! obligation — the shape that made the contradiction scan quadratic.
//!
//! ```text
//! cargo run --release -p kvlower-cli --example bench_contradictions -- [N]
//! ```
//! N defaults to 20000. Prints wall time per command (best of 3).

#![expect(clippy::print_stdout, reason = "it prints what it measured or saw")]

use std::time::{Duration, Instant};

fn main() -> std::io::Result<()> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = tempfile::tempdir()?;
    for sub in [
        "modes",
        "capabilities",
        "results",
        "schemas",
        "bad_lowering",
    ] {
        std::fs::create_dir_all(dir.path().join(sub))?;
    }
    std::fs::copy(
        root.join("modes/modes.yaml"),
        dir.path().join("modes/modes.yaml"),
    )?;
    for entry in std::fs::read_dir(root.join("bad_lowering"))? {
        let entry = entry?;
        std::fs::copy(
            entry.path(),
            dir.path().join("bad_lowering").join(entry.file_name()),
        )?;
    }
    let mut text = String::from(
        "runtime: {name: bench, version: '1', source: simulator, reviewed: 2026-01-01, identity: [{kind: other, version: '1'}]}\nnon_claims: {default: a benchmark fixture}\nnative:\n",
    );
    let anchor = "{kind: paper, section: \"§6\", note: benchmark item, preserves_order: true, preserves_claim_scope: true}";
    for _ in 0..n {
        text.push_str(&format!(
            "  - {{obligation: claim_identity, status: supported, scope: litmus_trace, anchor: {anchor}, modes: all}}\n"
        ));
    }
    text.push_str(&format!(
        "  - {{obligation: claim_identity, status: missing, scope: litmus_trace, anchor: {anchor}}}\n"
    ));
    std::fs::write(dir.path().join("capabilities/bench.yaml"), &text)?;
    let root_arg = dir.path().display().to_string();
    println!(
        "descriptor: {n} supported + 1 missing item ({} KB)",
        text.len() / 1024
    );
    for cmd in ["matrix", "check"] {
        let mut best = Duration::MAX;
        let mut code = 0;
        for _ in 0..3 {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let start = Instant::now();
            code =
                kvlower_cli::run(["kvlower", cmd, "--root", &root_arg], &mut out, &mut err).as_u8();
            best = best.min(start.elapsed());
        }
        println!(
            "kvlower {cmd}: {:.3} s (best of 3, exit {code})",
            best.as_secs_f64()
        );
    }
    Ok(())
}
