"""Learning-rate schedules: the one shape, and the book's three schedules built from it,
each equal to the formula it replaced (the GPT recipe's factors as the same floats)."""

from __future__ import annotations

import math

import pytest
import torch

from transformer_lab.training.bert_pretraining import TinyBertRecipe
from transformer_lab.training.gpt import PRESETS, TrainRecipe, lr_factor
from transformer_lab.training.schedules import (
    transformer_peak_lr,
    warmup_cosine,
    warmup_decay,
    warmup_inverse_sqrt,
    warmup_linear,
)


def gpt_factor_as_written(step: int, recipe: TrainRecipe) -> float:
    """The GPT recipe's schedule as nanoGPT writes it: warm-up, then a half cosine."""
    if step < recipe.warmup:
        return (step + 1) / recipe.warmup
    progress = min(1.0, (step - recipe.warmup) / max(1, recipe.steps - 1 - recipe.warmup))
    m = recipe.min_lr_ratio
    return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * progress))


RECIPES = [recipe for _, recipe in PRESETS.values()] + [
    TrainRecipe(batch_size=4, steps=steps, warmup=warmup, min_lr_ratio=floor)
    for steps, warmup in ((1, 0), (1, 1), (8, 3), (12, 12), (300, 20))
    for floor in (0.0, 0.1, 0.7, 1.0)
]


@pytest.mark.parametrize("recipe", RECIPES, ids=str)
def test_gpt_schedule_gives_the_same_floats(recipe):
    for step in range(recipe.steps + 2):  # LambdaLR asks once more after the last step
        assert lr_factor(step, recipe) == gpt_factor_as_written(step, recipe), step


def test_gpt_schedule_warms_up_then_decays_to_the_floor():
    recipe = TrainRecipe(batch_size=4, steps=100, warmup=10, min_lr_ratio=0.1)
    factors = [lr_factor(s, recipe) for s in range(recipe.steps)]
    assert factors[:10] == [(s + 1) / 10 for s in range(10)]
    assert all(a >= b for a, b in zip(factors[9:], factors[10:], strict=False))
    assert factors[-1] == pytest.approx(0.1)


def test_warmup_linear_is_berts_schedule():
    f = warmup_linear(10, warmup=0.2)  # two warm-up steps, then down to 0 after step 9
    assert [f(s) for s in range(11)] == [
        0.5, 1.0, 1.0, 0.875, 0.75, 0.625, 0.5, 0.375, 0.25, 0.125, 0.0
    ]  # fmt: skip
    assert warmup_linear(5, warmup=0.0)(0) == 1.0  # at least one warm-up step


def test_warmup_cosine_is_the_tiny_berts_schedule():
    recipe = TinyBertRecipe()
    f = warmup_cosine(recipe.steps, recipe.warmup)
    for step in range(0, recipe.steps + 1, 7):
        written = (
            min(1.0, (step + 1) / recipe.warmup)
            * 0.5
            * (1 + math.cos(math.pi * step / recipe.steps))
        )
        assert f(step) == pytest.approx(written, rel=0, abs=1e-15)  # the last bit may differ
        assert recipe.lr_factor(step) == f(step)


def test_the_shape_multiplies_warmup_and_decay_where_they_overlap():
    f = warmup_decay(4, 0, 8, "linear")
    assert [f(s) for s in range(4)] == [0.25 * 1.0, 0.5 * 0.875, 0.75 * 0.75, 1.0 * 0.625]
    g = warmup_decay(0, 2, 6, "linear", floor=0.5)  # no warm-up; 1 until step 2, then down
    assert [g(s) for s in range(9)] == [1.0, 1.0, 1.0, 0.875, 0.75, 0.625, 0.5, 0.5, 0.5]


def test_schedules_are_plain_functions_so_checkpoints_hold_no_schedule_state():
    """LambdaLR saves the attributes of a callable object but nothing for a function."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    recipe = TrainRecipe(batch_size=4, steps=8, warmup=2)
    for schedule in (warmup_linear(8), warmup_cosine(8, 2), lambda s: lr_factor(s, recipe)):
        state = torch.optim.lr_scheduler.LambdaLR(opt, schedule).state_dict()
        assert state["lr_lambdas"] == [None]


def test_bad_arguments():
    with pytest.raises(ValueError, match="decay must be one of"):
        warmup_decay(1, 1, 5, "exponential")
    with pytest.raises(ValueError, match=r"floor must be in \[0, 1\]"):
        warmup_decay(1, 1, 5, floor=1.5)
    with pytest.raises(TypeError, match="warmup must be an int, got bool"):
        warmup_decay(True, 1, 5)
    with pytest.raises(ValueError, match="step must be a non-negative int, got -1"):
        warmup_decay(1, 1, 5)(-1)
    with pytest.raises(ValueError, match="steps must be a positive int"):
        warmup_cosine(0, 1)
    with pytest.raises(TypeError, match="recipe must be a TrainRecipe"):
        lr_factor(0, TinyBertRecipe())


def test_warmup_inverse_sqrt_is_the_2017_formula():
    """The factor times transformer_peak_lr is the learning rate of Vaswani et al. (5.3):
    d_model**-0.5 * min(s**-0.5, s * warmup**-1.5) with s = step + 1."""
    d_model, warmup = 512, 4000
    factor, peak = warmup_inverse_sqrt(warmup), transformer_peak_lr(d_model, warmup)
    for step in [0, 1, 100, 3998, 3999, 4000, 10_000, 100_000]:
        s = step + 1
        paper = d_model**-0.5 * min(s**-0.5, s * warmup**-1.5)
        assert peak * factor(step) == pytest.approx(paper, rel=1e-12)
    assert factor(warmup - 1) == 1.0  # the peak ends the warm-up
    assert factor(4 * warmup - 1) == pytest.approx(0.5)  # four times the steps: half the rate
    rising = [factor(s) for s in range(warmup)]
    assert rising == sorted(rising) and rising[0] == 1 / warmup
    with pytest.raises(ValueError, match="warmup must be a positive int, got 0"):
        warmup_inverse_sqrt(0)
    with pytest.raises(ValueError, match="step must be"):
        factor(-1)
