"""Write a tiny, config-only Mixtral-style MoE model with a tokenizer built here (no hub access).

    python make_tiny_moe.py OUT_DIR

Run inside the vLLM virtual environment (it needs `tokenizers` and `transformers`). vLLM serves
it with `--load-format dummy`: random weights, so the completions are noise; the point is a real
server with its real processes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CORPUS = [
    "the quick brown fox jumps over the lazy dog",
    "triton compiles a kernel for every new specialization of its arguments",
    "a serving stack warms up then answers requests without compiling again",
    "mixture of experts routes each token to the top two experts",
] * 50


def build_tokenizer(out: Path) -> int:
    """A small byte-level BPE tokenizer trained on a fixed corpus; returns its vocabulary size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=512, special_tokens=["<unk>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>",
                                   eos_token="</s>")
    fast.model_max_length = 512
    fast.save_pretrained(str(out))
    return tokenizer.get_vocab_size()


def write_config(out: Path, vocab_size: int) -> None:
    config = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 256,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "vocab_size": max(vocab_size, 512),
        "max_position_embeddings": 512,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": 1,
        "eos_token_id": 2,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))


def main(out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    vocab_size = build_tokenizer(out)
    write_config(out, vocab_size)
    print(f"tiny MoE model in {out} (vocabulary {vocab_size})")


if __name__ == "__main__":
    main(sys.argv[1])
