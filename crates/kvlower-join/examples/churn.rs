//! Writes a synthetic vLLM (map encoding) event stream for the memory benchmark:
//! the events of `tests/fixtures/join/vllm/events-map.jsonl`, then N batches that
//! store and remove blocks no claim needs. Memory of `kvlower join` must stay flat
//! as N grows (it tracks live blocks, not the stream).
//!
//! ```text
//! cargo run --release -p kvlower-join --example churn -- 1000000 > /tmp/churn.jsonl
//! /usr/bin/time -f "maxrss_kb=%M elapsed=%e" target/release/kvlower join \
//!   --registry tests/fixtures/join/vllm/registry.yaml --events /tmp/churn.jsonl \
//!   --events-format vllm --format json > /dev/null
//! ```

use std::io::{BufWriter, Write};

fn main() -> std::io::Result<()> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/join/vllm/events-map.jsonl");
    let head = std::fs::read_to_string(fixture)?;
    let mut out = BufWriter::new(std::io::stdout().lock());
    out.write_all(head.as_bytes())?;
    for i in 0..n {
        let hash = 1_000_000 + i;
        let token = 50_000 + (i % 10_000) * 4;
        let ts = 2.0 + i as f64 * 1e-6;
        let event = if i % 2 == 0 {
            format!(
                "{{\"type\":\"BlockStored\",\"block_hashes\":[{hash}],\"parent_block_hash\":null,\"token_ids\":[{},{},{},{}],\"block_size\":4,\"lora_id\":null,\"medium\":\"GPU\",\"lora_name\":null}}",
                token,
                token + 1,
                token + 2,
                token + 3
            )
        } else {
            format!(
                "{{\"type\":\"BlockRemoved\",\"block_hashes\":[{}],\"medium\":\"GPU\"}}",
                hash - 1
            )
        };
        writeln!(
            out,
            "{{\"ts\":{ts},\"events\":[{event}],\"data_parallel_rank\":null}}"
        )?;
    }
    out.flush()
}
