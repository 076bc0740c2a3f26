//! The committed fixtures under `tests/fixtures/traces/scenarios/` are the builder's
//! scenarios written out (the CLI tests read them). Regenerate with
//! `KVLOWER_WRITE_FIXTURES=1 cargo test -p kvlower-trace --test trace fixtures`.

use std::path::PathBuf;

use crate::common;

fn scenario_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/traces/scenarios")
}

#[test]
fn scenario_fixtures_are_fresh() {
    let dir = scenario_dir();
    let write = std::env::var_os("KVLOWER_WRITE_FIXTURES").is_some();
    for (name, trace) in common::all_scenarios() {
        let path = dir.join(format!("{name}.jsonl"));
        let text = trace.jsonl();
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else {
            let on_disk = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; regenerate (see module doc)", path.display()));
            assert_eq!(
                on_disk,
                text,
                "{} is stale; regenerate (see module doc)",
                path.display()
            );
        }
    }
}
