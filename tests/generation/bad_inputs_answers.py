"""Bad inputs to transformer_lab.generation.answers (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import DigitTokenizer, case, gpt, tiny_llama

from transformer_lab.generation import answers as GA

case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(tiny_llama(), DigitTokenizer(), []),
    TypeError,
    "prompts",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(tiny_llama(), DigitTokenizer(), "ab ="),
    TypeError,
    "prompts must be a non-empty list of strings",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(tiny_llama(), DigitTokenizer(), ["a"], max_new_tokens=0),
    ValueError,
    "max_new_tokens",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(tiny_llama(), object(), ["a"]),
    TypeError,
    "tokenizer must have encode and decode, got object",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(None, DigitTokenizer(), ["a"]),
    TypeError,
    "model must",
)
case(
    GA.greedy_answers,
    lambda: GA.greedy_answers(gpt(), DigitTokenizer(), ["a"]),
    TypeError,
    "GPT.forward takes no attention_mask: greedy answers need a model whose forward takes "
    "attention_mask (the book's Llama or SmolLM2)",
)
