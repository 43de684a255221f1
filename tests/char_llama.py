"""A small random Llama and a character tokenizer for the tests of LoRA answers and greedy
answering (tests/training/test_lora_recipe.py, tests/generation/test_answers.py)."""

from __future__ import annotations

import torch

from transformer_lab.models.llama import Llama, LlamaConfig


class CharTokenizer:
    """One token per character of a small alphabet; id 0 is the end of text."""

    alphabet = "\0 =\nabcdefghijklmnopqrstuvwxyz0123456789"
    eos_id = 0

    def encode(self, text):
        return [self.alphabet.index(c) for c in text]

    def decode(self, ids):
        return "".join(self.alphabet[i] for i in ids)


TOK = CharTokenizer()


def small_llama(seed=0):
    torch.manual_seed(seed)
    config = LlamaConfig(d_vocab=len(TOK.alphabet), n_ctx=64, n_layers=2, n_heads=4,
                         n_kv_heads=2, d_model=32, d_mlp=64, init_std=0.3)  # fmt: skip
    return Llama(config).eval()
