"""Bad inputs to transformer_lab.generation.answers (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import case, torch

from transformer_lab.generation import answers as GA
from transformer_lab.models.llama import Llama, LlamaConfig


class _Tok:
    eos_id = 0

    def encode(self, text):
        return [1 + ord(c) % 9 for c in text]

    def decode(self, ids):
        return "".join(chr(48 + i) for i in ids)


def _llama():
    torch.manual_seed(0)
    c = LlamaConfig(d_vocab=11, n_ctx=16, n_layers=1, n_heads=2, n_kv_heads=1, d_model=8, d_mlp=12)
    return Llama(c)


case(GA.greedy_answers, lambda: GA.greedy_answers(_llama(), _Tok(), []), TypeError, "prompts")
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(_llama(), _Tok(), "ab ="),
    TypeError,
    "prompts must be a non-empty list of strings",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(_llama(), _Tok(), ["a"], max_new_tokens=0),
    ValueError,
    "max_new_tokens",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(_llama(), object(), ["a"]),
    TypeError,
    "tokenizer must have encode and decode, got object",
)
case(GA.greedy_answers, lambda: GA.greedy_answers(None, _Tok(), ["a"]), TypeError, "model must")
