"""Builds the tiny random-weight Llama and its BPE tokenizer the live capture serves.

    PYTHONPATH=scripts python -m kvlower_scripts.live_vllm.build_model OUT_DIR

No model can be downloaded on the machines this project runs on, and the KV events do not
depend on what the model says, only on which token ids it is given: a 2-layer Llama with
random weights (fixed seed) and a 512-entry byte-level BPE trained on a generated corpus is
enough. Everything is deterministic; `fingerprint()` hashes the files so a capture records
exactly which model and tokenizer it ran.

Sizes follow the CPU backend's limits: head_dim >= 32 (here 32).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from pathlib import Path

SEED = 20260522
VOCAB_SIZE = 512
MAX_MODEL_LEN = 1024

# A fixed word list; the corpus is sentences drawn from it with a seeded RNG.
WORDS = (
    "the system prompt of agent keeps a cache block for every tenant and each request "
    "reuses its prefix when the scheduler admits it under pressure the allocator evicts "
    "least recently used blocks first retention claims name the object a runtime promised "
    "to keep resident until the observation point events report stored removed cleared "
    "blocks with hashes parents tokens and a medium that names the tier alpha beta gamma "
    "delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "
    "upsilon phi chi psi omega one two three four five six seven eight nine ten"
).split()


def corpus(n_lines: int = 4000) -> list[str]:
    rng = random.Random(SEED)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 24))) for _ in range(n_lines)]


def build_tokenizer(out: Path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=MAX_MODEL_LEN,
    )
    fast.save_pretrained(out)
    return fast


def build_model(out: Path, tokenizer) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=MAX_MODEL_LEN,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(torch.float32)
    model.save_pretrained(out, safe_serialization=True)


def fingerprint(model_dir: Path) -> dict[str, str]:
    """sha256 of every file the engine reads, by name (sorted)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(model_dir.iterdir())
        if p.is_file() and p.name != "fingerprint.json"
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: build_model.py OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(out)
    build_model(out, tokenizer)
    fp = fingerprint(out)
    (out / "fingerprint.json").write_text(json.dumps(fp, indent=2, sort_keys=True) + "\n")
    print(json.dumps(fp, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
