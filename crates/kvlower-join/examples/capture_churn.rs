//! Writes a synthetic capture file (`docs/capture-format.md`) of N KV events for the
//! throughput and memory benchmark of `kvlower join` on captures: one vLLM >= 0.24
//! batch per frame (`[ts, [event], 0]`, events maps tagged `type`), sequence numbers
//! from 0, alternating stores and removals of blocks no claim needs. Memory must stay
//! flat as N grows; the figures are in the README. With a third argument `live`, every
//! event is a store and none is removed: the capture leaves N blocks live (the memory
//! per live block benchmark, `bench/join-vs-dynamo/`).
//!
//! ```text
//! cargo run --release -p kvlower-join --example capture_churn -- 1000000 /tmp/churn.kvcap
//! /usr/bin/time -f "maxrss_kb=%M elapsed=%e" target/release/kvlower join \
//!   --registry tests/fixtures/join/vllm/registry.yaml --events /tmp/churn.kvcap \
//!   --events-format vllm --format json > /dev/null
//! ```

use std::collections::BTreeMap;
use std::io::BufWriter;

use kvlower_capture::{CaptureHeader, CaptureWriter, Endpoint};
use rmp::encode as mp;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let out = args.next().unwrap_or_else(|| "churn.kvcap".into());
    let live = args.next().as_deref() == Some("live");
    let header = CaptureHeader::new(
        vec![Endpoint {
            rank: 0,
            endpoint: "tcp://127.0.0.1:5557".into(),
        }],
        BTreeMap::from([
            ("engine".into(), "synthetic (capture_churn example)".into()),
            ("kv_cache_report_mode".into(), "incremental".into()),
        ]),
        "capture_churn example".into(),
    );
    let file = std::fs::File::create(&out)?;
    let mut w = CaptureWriter::new(BufWriter::new(file), &header)?;
    let mut p = Vec::with_capacity(256);
    for i in 0..n {
        p.clear();
        let hash = 1_000_000 + i;
        let token = 50_000 + (i % 10_000) as u32 * 4;
        let store = live || i % 2 == 0;
        mp::write_array_len(&mut p, 3)?;
        mp::write_f64(&mut p, 2.0 + i as f64 * 1e-6)?;
        mp::write_array_len(&mut p, 1)?;
        if store {
            mp::write_map_len(&mut p, 8)?;
            mp::write_str(&mut p, "type")?;
            mp::write_str(&mut p, "BlockStored")?;
            mp::write_str(&mut p, "block_hashes")?;
            mp::write_array_len(&mut p, 1)?;
            mp::write_uint(&mut p, hash)?;
            mp::write_str(&mut p, "parent_block_hash")?;
            mp::write_nil(&mut p)?;
            mp::write_str(&mut p, "token_ids")?;
            mp::write_array_len(&mut p, 4)?;
            for t in token..token + 4 {
                mp::write_uint(&mut p, u64::from(t))?;
            }
            mp::write_str(&mut p, "block_size")?;
            mp::write_uint(&mut p, 4)?;
            mp::write_str(&mut p, "lora_id")?;
            mp::write_nil(&mut p)?;
            mp::write_str(&mut p, "medium")?;
            mp::write_str(&mut p, "GPU")?;
            mp::write_str(&mut p, "lora_name")?;
            mp::write_nil(&mut p)?;
        } else {
            mp::write_map_len(&mut p, 3)?;
            mp::write_str(&mut p, "type")?;
            mp::write_str(&mut p, "BlockRemoved")?;
            mp::write_str(&mut p, "block_hashes")?;
            mp::write_array_len(&mut p, 1)?;
            mp::write_uint(&mut p, hash - 1)?;
            mp::write_str(&mut p, "medium")?;
            mp::write_str(&mut p, "GPU")?;
        }
        mp::write_uint(&mut p, 0)?;
        w.frame(
            0,
            1_700_000_000_000_000_000 + i * 1000,
            &[b"kv-events", &i.to_be_bytes(), &p],
        )?;
    }
    w.finish()?;
    Ok(())
}
