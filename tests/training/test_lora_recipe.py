"""The LoRA recipe (transformer_lab.training.lora) on a small random Llama with a
character tokenizer: the loss counts answer tokens only and names a model that takes no
padding mask, answers are scored after stripping spaces, and training through the loop
moves only the adapters and learns a fixed answer (read by greedy answers)."""

from __future__ import annotations

import pytest
import torch
from char_llama import TOK, small_llama

from transformer_lab.checks import IGNORE_INDEX
from transformer_lab.generation.answers import greedy_answers
from transformer_lab.nn.lora import add_lora, lora_modules
from transformer_lab.training import lora as R
from transformer_lab.training.run import Run


def test_answer_batch_marks_answer_tokens_only():
    batch = R.answer_batch(TOK, ["ab =", "c ="], [" 1\n", " 223\n"])
    assert batch.input_ids.shape == (2, 8)
    assert TOK.decode(batch.input_ids[1].tolist()) == "c = 223\n"
    assert batch.attention_mask[0].tolist() == [1] * 7 + [0]
    assert (batch.targets[0] != IGNORE_INDEX).nonzero().flatten().tolist() == [4, 5, 6]
    with pytest.raises(ValueError, match="pair up"):
        R.answer_batch(TOK, ["a ="], [" 1\n", " 2\n"])


def test_loss_ignores_prompt_and_padding():
    model = small_llama()
    batch = R.answer_batch(TOK, ["ab =", "c ="], [" 1\n", " 223\n"])
    loss = R.answer_loss(model, batch)
    logits = model(batch.input_ids, attention_mask=batch.attention_mask)
    picks = [(r, t) for r in range(2) for t in range(1, 8) if batch.targets[r, t] != IGNORE_INDEX]
    logp = torch.log_softmax(logits, -1)
    by_hand = -torch.stack([logp[r, t - 1, batch.targets[r, t]] for r, t in picks]).mean()
    torch.testing.assert_close(loss, by_hand)


def test_answer_exact_match():
    assert R.answer_exact_match([" 12", "3", "4 "], ["12", "3", "5"]) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="pair up"):
        R.answer_exact_match(["1"], ["1", "2"])


def test_answer_loss_names_a_model_without_attention_mask():
    from transformer_lab.models.gpt import GPT, GPTConfig

    gpt = GPT(GPTConfig(d_vocab=len(TOK.alphabet), n_ctx=16, n_layers=1, n_heads=2, d_model=8))
    batch = R.answer_batch(TOK, ["ab ="], [" 1\n"])
    with pytest.raises(TypeError, match=r"GPT\.forward takes no attention_mask.*Llama"):
        R.answer_loss(gpt, batch)


def test_train_lora_learns_and_moves_only_adapters():
    model = small_llama(1)
    add_lora(model, ["W_Q", "W_K", "W_V", "W_O"], rank=4, alpha=16, seed=0)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    prompts = [f"{w} =" for w in ("ab", "cd", "ef", "gh")]
    data = R.answer_batch(TOK, prompts, [" 7\n"] * 4)
    score = lambda m: R.answer_exact_match(greedy_answers(m, TOK, prompts), ["7"] * 4)  # noqa: E731
    assert score(model) == 0
    recipe = R.LoraRecipe(steps=60, batch_size=4, lr=5e-2)
    run = R.train_lora(model, data, recipe, Run(seed=0, eval_fn=score, eval_every=30))
    assert run.steps == 60 and run.losses[-1] < run.losses[0] / 5
    assert run.evals[-1] == (60, 1.0)
    for n, p in model.named_parameters():
        if n in frozen:
            assert torch.equal(p, frozen[n]), n
    assert not any(lora.merged for _, lora in lora_modules(model))  # unmerged after answering
    again = small_llama(1)
    add_lora(again, ["W_Q", "W_K", "W_V", "W_O"], rank=4, alpha=16, seed=0)
    rerun = R.train_lora(again, data, recipe, Run(seed=0))
    assert rerun.losses == run.losses  # seeded: the same run


def test_train_lora_needs_adapters():
    with pytest.raises(ValueError, match="no LoRA adapters"):
        R.train_lora(small_llama(), R.answer_batch(TOK, ["a ="], [" 1\n"]), R.LoraRecipe(steps=1))


def test_a_short_run_is_the_start_of_a_longer_one():
    data = R.answer_batch(TOK, ["ab =", "cd =", "ef ="], [" 1\n", " 2\n", " 3\n"])
    runs = []
    for steps in (12, 5):
        model = small_llama(2)
        add_lora(model, ["W_Q", "W_V"], rank=2, alpha=4, seed=1)
        runs.append(
            R.train_lora(
                model, data, R.LoraRecipe(steps=12, batch_size=2, lr=1e-2), Run(steps=steps, seed=3)
            )
        )
    assert runs[1].losses == runs[0].losses[:5]
