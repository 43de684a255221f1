"""Bad inputs to transformer_lab.training.lora (run by ``tests/test_bad_inputs.py``)."""

from bad_input_support import DigitTokenizer, case, gpt, tiny_llama, torch

from transformer_lab.training import lora as TL
from transformer_lab.training.run import Run


def _adapted():
    from transformer_lab.nn.lora import add_lora

    model = tiny_llama()
    add_lora(model, ["W_Q"], rank=2, alpha=2)
    return model


def _data():
    return TL.answer_batch(DigitTokenizer(), ["ab"], ["c"])


z = torch.zeros(2, 3, dtype=torch.long)
case(TL.AnswerBatch, lambda: TL.AnswerBatch(z, z[:1], z), ValueError, "attention_mask must be")
case(TL.AnswerBatch, lambda: TL.AnswerBatch(z.float(), z, z), TypeError, "input_ids")
case(
    TL.AnswerBatch,
    lambda: TL.AnswerBatch(z, z + 2, z),
    ValueError,
    "attention_mask must hold only 0 (padding) and 1 (real token)",
)
case(
    TL.answer_batch,
    lambda: TL.answer_batch(DigitTokenizer(), "ab", ["c"]),
    TypeError,
    "prompts must",
)
case(
    TL.answer_batch,
    lambda: TL.answer_batch(DigitTokenizer(), ["a"], ["b", "c"]),
    ValueError,
    "pair up",
)
case(
    TL.answer_batch,
    lambda: TL.answer_batch(DigitTokenizer(), ["a"], [""]),
    ValueError,
    "at least one",
)
case(TL.answer_batch, lambda: TL.answer_batch(object(), ["a"], ["b"]), TypeError, "tokenizer")
case(TL.answer_batches, lambda: next(TL.answer_batches(_data(), 0, 0)), ValueError, "batch_size")
case(TL.answer_batches, lambda: TL.answer_batches([1], 2, 0), TypeError, "data must be")
case(TL.answer_loss, lambda: TL.answer_loss(tiny_llama(), "batch"), TypeError, "batch must be")
case(TL.answer_loss, lambda: TL.answer_loss(None, _data()), TypeError, "model must be")
case(
    TL.answer_loss,
    lambda: TL.answer_loss(gpt(), _data()),
    TypeError,
    "GPT.forward takes no attention_mask: LoRA answers need a model whose forward takes "
    "attention_mask (the book's Llama or SmolLM2)",
)
case(TL.answer_exact_match, lambda: TL.answer_exact_match("12", "12"), TypeError,
     "lists of strings")  # fmt: skip
case(TL.answer_exact_match, lambda: TL.answer_exact_match([], []), ValueError, "not be empty")
case(TL.answer_exact_match, lambda: TL.answer_exact_match([None], ["1"]), TypeError,
     "predictions must hold only strings, got NoneType: None")  # fmt: skip
case(
    TL.train_lora,
    lambda: TL.train_lora(tiny_llama(), _data(), TL.LoraRecipe(steps=1)),
    ValueError,
    "no LoRA",
)
case(
    TL.train_lora,
    lambda: TL.train_lora(_adapted(), _data(), TL.LoraRecipe(steps=3), Run(steps=5)),
    ValueError,
    "run.steps must be in [1, 3] (the recipe's schedule), got 5",
)
case(
    TL.train_lora,
    lambda: TL.train_lora(_adapted(), _data(), {"steps": 3}),
    TypeError,
    "recipe must be a LoraRecipe, got dict",
)
case(
    TL.LoraRecipe, lambda: TL.LoraRecipe(steps=0), ValueError, "steps must be a positive int, got 0"
)
case(
    TL.LoraRecipe,
    lambda: TL.LoraRecipe(steps=2, batch_size=1.5),
    TypeError,
    "batch_size must be an int, got float",
)
case(TL.LoraRecipe, lambda: TL.LoraRecipe(steps=2, lr=float("nan")), ValueError,
     "lr must be a positive finite number, got nan")  # fmt: skip
case(TL.LoraRecipe, lambda: TL.LoraRecipe(steps=2, lr=1e30), ValueError,
     "lr must be at most 1, got 1e+30: AdamW moves every adapter weight")  # fmt: skip
case(TL.LoraRecipe, lambda: TL.LoraRecipe(steps=2, weight_decay=-0.1), ValueError,
     "weight_decay must be a non-negative finite number, got -0.1")  # fmt: skip
case(TL.LoraRecipe, lambda: TL.LoraRecipe(steps=2, warmup=1.0), ValueError,
     "warmup must be in [0, 1), got 1.0")  # fmt: skip
