"""Greedy answers (transformer_lab.generation.answers) on a small random Llama with a
character tokenizer: batched answers equal one-at-a-time answers and uncached, unpadded
greedy decoding by hand, with and without a shared prefix; LoRA adapters stay unmerged."""

from __future__ import annotations

import torch
from char_llama import TOK, small_llama

from transformer_lab.generation.answers import greedy_answers
from transformer_lab.nn.lora import add_lora, lora_modules


def test_batched_greedy_equals_one_at_a_time():
    model = small_llama(3)
    prompts = ["abc =", "z =", "hello world ="]
    for prefix in ("", "q = 1\nrs = 22\n"):
        together = greedy_answers(model, TOK, prompts, prefix=prefix, max_new_tokens=5)
        alone = [greedy_answers(model, TOK, [p], prefix=prefix, max_new_tokens=5)[0]
                 for p in prompts]  # fmt: skip
        assert together == alone
        assert greedy_answers(model, TOK, prompts, prefix=prefix, max_new_tokens=5,
                              batch_size=2) == together  # fmt: skip
        full = []  # uncached, unpadded greedy decoding by hand
        for p in prompts:
            ids = TOK.encode(prefix + p)
            out = []
            for _ in range(5):
                t = int(model(torch.tensor([ids]))[0, -1].argmax())
                out.append(t)
                ids.append(t)
                if t == TOK.eos_id or "\n" in TOK.decode(out):
                    break
            full.append(TOK.decode([t for t in out if t]).split("\n")[0])
        assert together == full


def test_answers_leave_lora_weights_untouched():
    model = small_llama(1)
    add_lora(model, ["W_Q", "W_V"], rank=2, alpha=4, seed=0)
    for _, lora in lora_modules(model):
        torch.nn.init.normal_(lora.B, std=0.5)  # a change dW that is not zero
    before = {n: t.clone() for n, t in model.state_dict().items()}
    model.train()
    greedy_answers(model, TOK, ["ab =", "c ="], max_new_tokens=3)
    assert model.training  # eval mode for the call only
    assert not any(lora.merged for _, lora in lora_modules(model))
    after = model.state_dict()
    assert all(torch.equal(before[n], after[n]) for n in before)
