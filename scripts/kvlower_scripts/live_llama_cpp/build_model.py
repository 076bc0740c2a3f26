"""The tiny model of the llama.cpp campaign, built offline and deterministically.

A 2-layer random-weight llama (n_embd 128, 4 heads, 2 KV heads, all F32) with a 416-entry
SentencePiece-style vocabulary (<unk> <s> </s>, 256 byte-fallback tokens, every prefix of
'▁' + word for a fixed word list), written with PyPI `gguf` only: no download. Two builds
give the same bytes (the campaign records the SHA-256). Judged code: it decides what the
engine computes, so it is in the campaign's source digest.

    python build_model.py OUT.gguf
"""
import sys

import gguf
import numpy as np

if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
    print("usage: build_model.py OUT.gguf", file=sys.stderr)
    sys.exit(0 if sys.argv[1:] in (["--help"], ["-h"]) else 2)
OUT = sys.argv[1]
SEED = 20260522
WORDS = ("the system prompt of agent keeps a cache block for every tenant and each request reuses its prefix "
         "when the scheduler admits it under pressure alpha beta gamma delta epsilon zeta eta theta").split()
toks, scores, types = ["<unk>", "<s>", "</s>"], [0.0, 0.0, 0.0], [2, 3, 3]
for b in range(256):
    toks.append(f"<0x{b:02X}>")
    scores.append(0.0)
    types.append(6)
pieces = set()
for w in WORDS:
    s = "\u2581" + w
    for i in range(1, len(s) + 1):
        pieces.add(s[:i])
    for c in w:
        pieces.add(c)
for p in sorted(pieces, key=lambda p: (len(p), p)):
    toks.append(p)
    scores.append(float(len(p)))  # longer piece = higher merge priority
    types.append(1)
n_vocab = len(toks)
n_embd, n_ff, n_layer, n_head, n_kv, hd, ctx = 128, 256, 2, 4, 2, 32, 4096
w = gguf.GGUFWriter(OUT, "llama")
w.add_name("kvlower-tiny-llama-spm")
w.add_context_length(ctx)
w.add_embedding_length(n_embd)
w.add_block_count(n_layer)
w.add_feed_forward_length(n_ff)
w.add_head_count(n_head)
w.add_head_count_kv(n_kv)
w.add_rope_dimension_count(hd)
w.add_layer_norm_rms_eps(1e-5)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_vocab_size(n_vocab)
w.add_tokenizer_model("llama")
w.add_tokenizer_pre("default")
w.add_token_list(toks)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(2)
w.add_unk_token_id(0)
w.add_add_bos_token(True)
w.add_add_eos_token(False)
rng = np.random.default_rng(SEED)
def t(name, *shape, ones=False):
    w.add_tensor(name, np.ones(shape, np.float32) if ones else (rng.standard_normal(shape).astype(np.float32) * 0.02))
t("token_embd.weight", n_vocab, n_embd)
for i in range(n_layer):
    t(f"blk.{i}.attn_norm.weight", n_embd, ones=True)
    t(f"blk.{i}.attn_q.weight", n_head*hd, n_embd)
    t(f"blk.{i}.attn_k.weight", n_kv*hd, n_embd)
    t(f"blk.{i}.attn_v.weight", n_kv*hd, n_embd)
    t(f"blk.{i}.attn_output.weight", n_embd, n_head*hd)
    t(f"blk.{i}.ffn_norm.weight", n_embd, ones=True)
    t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
    t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
    t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
t("output_norm.weight", n_embd, ones=True)
t("output.weight", n_vocab, n_embd)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
print("wrote", OUT, "n_vocab", n_vocab)
