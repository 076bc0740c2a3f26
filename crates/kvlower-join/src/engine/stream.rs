//! The per-stream checks every event passes before it touches a block: sequence
//! numbers and timestamps (a gap or a step back is a lost event), the cache instance
//! it belongs to (rank, window, publisher), and the cache identity it carries (block
//! size, hash encoding, adapter). Each failure is a stream-level ambiguity that
//! taints every claim not yet judged; events of an instance the registry did not
//! select are counted and left out.

use super::Engine;
use crate::document::{EventRef, IgnoredGroup, IgnoredInstance, Reason};
use crate::events::{BatchMeta, BlockHash, Decoded, StoredBlock};
use crate::registry::{AdapterIdentity, EventFormat};

/// The cache instance an event belongs to, as far as the event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CacheInstance {
    /// Data-parallel rank (`attention_dp_rank`), when the event carries one.
    rank: Option<i64>,
    /// Attention window size, when the event carries one.
    window: Option<i64>,
    /// The publisher (capture rank): each endpoint is an engine's own cache, even
    /// when two engines report the same data-parallel rank.
    publisher: u16,
}

impl Engine<'_> {
    /// Counts one event of a KV-cache group other than 0, which is not joined.
    pub(super) fn ignore_group(&mut self, group: i64, kind: Option<String>) {
        let list = &mut self.summary.ignored_groups;
        match list.iter_mut().find(|g| g.group_idx == group) {
            Some(g) => {
                g.events += 1;
                if g.kind.is_none() {
                    g.kind = kind;
                }
            }
            None => {
                list.push(IgnoredGroup {
                    group_idx: group,
                    kind,
                    events: 1,
                    why: "claims are judged on KV-cache group 0 (full attention); other groups' blocks are separate caches".into(),
                });
                list.sort_by_key(|g| g.group_idx);
            }
        }
    }

    /// Counts one event of a cache instance the registry did not select.
    pub(super) fn ignore_instance(&mut self, rank: Option<i64>, window_size: Option<i64>) {
        let list = &mut self.summary.ignored_instances;
        match list
            .iter_mut()
            .find(|i| i.rank == rank && i.window_size == window_size)
        {
            Some(i) => i.events += 1,
            None => {
                list.push(IgnoredInstance {
                    rank,
                    window_size,
                    events: 1,
                });
                list.sort_by_key(|i| (i.rank, i.window_size));
            }
        }
    }

    /// Sequence numbers, timestamps and cache-instance keys (rank, window). Returns
    /// whether the event belongs to the cache instance the registry selects (always,
    /// when it selects none: then a second instance is an ambiguity).
    pub(super) fn check_order(&mut self, d: &Decoded, here: EventRef) -> bool {
        match self.format {
            EventFormat::Trtllm => {
                self.summary.sequence_checked = true;
                if let Some(last) = self.last_index {
                    let expected = last.saturating_add(1);
                    if d.index != expected {
                        self.ambiguity(Reason::SequenceGap {
                            event: here,
                            expected,
                            found: d.index,
                        });
                    }
                }
            }
            // Batch-level checks (sequence numbers) run in `batch`, once per line.
            EventFormat::Vllm | EventFormat::Sglang => {}
        }
        let identity = &self.registry.cache_identity;
        let (want_rank, want_window) = (identity.data_parallel_rank, identity.window_size);
        if want_rank.is_some_and(|r| d.rank != Some(r))
            || want_window.is_some_and(|w| d.window != Some(w))
        {
            return false;
        }
        let instance = CacheInstance {
            rank: d.rank,
            window: d.window,
            publisher: d.stream,
        };
        match self.first_instance {
            None => self.first_instance = Some(instance),
            Some(first) if first != instance => {
                self.ambiguity(Reason::MixedCacheInstances { event: here })
            }
            Some(_) => {}
        }
        true
    }

    /// Sequence numbers and timestamps of one vLLM/SGLang batch, empty or not.
    pub(super) fn batch(&mut self, b: BatchMeta) {
        let here = EventRef {
            index: b.first_index,
            line: b.line,
        };
        // Event-index claims observed before this batch are complete; a lost batch
        // found below may precede a timestamp observation point, so those wait.
        self.snapshot_due(b.first_index, None);
        let present = b.seq.is_some();
        match self.seq_present {
            None => self.seq_present = Some(present),
            Some(p) if p != present => {
                self.ambiguity(Reason::InconsistentSequenceNumbers { event: here })
            }
            Some(_) => {}
        }
        if let Some(seq) = b.seq {
            match self.last_seq.get(&b.stream) {
                Some(&last) => {
                    let expected = last.saturating_add(1);
                    if seq != expected {
                        self.ambiguity(Reason::SequenceGap {
                            event: here,
                            expected,
                            found: seq,
                        });
                    }
                }
                // Publishers number from 0 at engine start: a later first number means
                // the stream starts mid-way and the cache's initial state is unknown.
                None if seq > 0 => self.ambiguity(Reason::MissingInitialState {
                    event: here,
                    first_sequence: seq,
                }),
                None => {}
            }
            self.last_seq.insert(b.stream, seq);
        }
        self.summary.sequence_checked = self.seq_present == Some(true)
            && !self
                .stream_ambiguities
                .iter()
                .any(|r| matches!(r, Reason::InconsistentSequenceNumbers { .. }));
        if self.last_ts.is_some_and(|last| b.ts < last) {
            self.ambiguity(Reason::TimestampsNotMonotonic { event: here });
        }
        self.last_ts = Some(b.ts);
        self.snapshot_due(b.first_index, Some(b.ts));
    }

    /// A block hash must be encoded as the registry's hash domain says.
    pub(super) fn check_hash(&mut self, here: EventRef, h: &BlockHash) {
        if let Some(enc) = self.encoding
            && h.encoding() != enc
        {
            self.ambiguity(Reason::HashDomainMismatch { event: here });
        }
    }

    /// The cache identity a store carries: its hashes' encoding and its block size.
    pub(super) fn check_identity(
        &mut self,
        here: EventRef,
        parent: &Option<BlockHash>,
        blocks: &[StoredBlock],
        block_size: Option<u64>,
    ) {
        if let Some(p) = parent {
            self.check_hash(here, p);
        }
        for b in blocks {
            self.check_hash(here, &b.hash);
        }
        let Some(expected) = self.block_size.map(|b| u64::from(b.get())) else {
            return;
        };
        let carries_tokens = blocks.iter().any(|b| !b.tokens.is_empty());
        match block_size {
            // vLLM/SGLang name the block size; hash-only stores may carry 0.
            Some(bs) if carries_tokens && bs != expected => {
                self.ambiguity(Reason::BlockSizeMismatch {
                    event: here,
                    observed: bs,
                    expected,
                });
            }
            Some(_) => {}
            // TRT-LLM: each block's token count is its size. A block longer than the
            // registry's block size breaks the identity; a partial block (stored
            // routinely by storeBlocksForReuse) only concerns the claims whose prefix it
            // would complete (see `store`).
            None => {
                if let Some(b) = blocks.iter().find(|b| b.tokens.len() as u64 > expected) {
                    self.ambiguity(Reason::BlockSizeMismatch {
                        event: here,
                        observed: b.tokens.len() as u64,
                        expected,
                    });
                }
            }
        }
    }

    /// Whether a store's adapter (LoRA) identity is the one the registry names.
    pub(super) fn adapter_ok(&self, lora_id: Option<i64>, lora_name: Option<&str>) -> bool {
        match &self.registry.cache_identity.adapter {
            None => true, // already a missing-field reason on every claim
            Some(AdapterIdentity::BaseModel) => lora_id.is_none() && lora_name.is_none(),
            Some(AdapterIdentity::Lora {
                lora_id: want_id,
                lora_name: want_name,
            }) => {
                let id_ok = match want_id {
                    Some(w) => lora_id == Some(*w),
                    None => true,
                };
                let name_ok = match want_name {
                    Some(w) => lora_name == Some(w.as_str()),
                    None => true,
                };
                (lora_id.is_some() || lora_name.is_some()) && id_ok && name_ok
            }
        }
    }
}
