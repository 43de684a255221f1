"""Toy tasks and the tiny model of the Transformer chapters: targets, shapes, hooks,
permutation equivariance without positions, determinism of training and bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from transformer_lab.data.toy import IGNORE_INDEX, TASKS, neighbours, previous_token, toy_batches
from transformer_lab.device import num_threads
from transformer_lab.hooks import run_with_cache
from transformer_lab.models.toy import TinyTransformer, ToyConfig
from transformer_lab.training.run import Run
from transformer_lab.training.toy import ToyRecipe, position_accuracy, toy_loss, train_toy


@pytest.fixture(autouse=True)
def _one_thread():
    """These models are tiny: one thread is faster, and much faster on a busy machine."""
    with num_threads(1):
        yield


def test_previous_token_targets():
    x, y = previous_token(4, 6, 10, torch.Generator().manual_seed(0))
    assert x.shape == (4, 6) and y.shape == (4, 6, 1)
    assert torch.all(y[:, 0, 0] == IGNORE_INDEX)
    assert torch.equal(y[:, 1:, 0], x[:, :-1])
    assert x.min() >= 0 and x.max() < 10


def test_neighbours_targets():
    x, y = neighbours(3, 5, 7, torch.Generator().manual_seed(1))
    assert y.shape == (3, 5, 2)
    assert torch.equal(y[:, 1:, 0], x[:, :-1]) and torch.all(y[:, 0, 0] == IGNORE_INDEX)
    assert torch.equal(y[:, :-1, 1], x[:, 1:]) and torch.all(y[:, -1, 1] == IGNORE_INDEX)


def test_tasks_are_deterministic_given_a_generator():
    for make, _ in TASKS.values():
        a = make(2, 5, 9, torch.Generator().manual_seed(3))
        b = make(2, 5, 9, torch.Generator().manual_seed(3))
        assert all(torch.equal(s, t) for s, t in zip(a, b, strict=True))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"n": 1}, "at least 2"), ({"batch": 0}, "batch"), ({"d_vocab": -1}, "d_vocab")],
)
def test_task_bad_input(kwargs, message):
    args = {"batch": 2, "n": 5, "d_vocab": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        previous_token(args["batch"], args["n"], args["d_vocab"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"d_model": 30, "n_heads": 4}, "divisible"),
        ({"positional": "rotary"}, "positional"),
        ({"d_vocab": 0}, "d_vocab"),
        ({"n_layers": -1}, "n_layers"),
    ],
)
def test_config_validation_names_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ToyConfig(**kwargs)


@pytest.mark.parametrize("positional", [None, "sinusoidal", "learned"])
def test_model_shapes_and_hooks(positional):
    model = TinyTransformer(ToyConfig(n_answers=2, n_layers=2, positional=positional))
    x = torch.randint(16, (3, 7))
    logits, cache = run_with_cache(model, x)
    assert logits.shape == (3, 7, 2, 16)
    for name in ("embed", "blocks.0.attn_out", "blocks.1.mlp_out", "blocks.1.resid_post"):
        assert cache[name].shape == (3, 7, 32), name
    # pre-LN: the top of the stream is the sum of the writes into it
    writes = sum(
        cache[n]
        for n in (
            "embed",
            "blocks.0.attn_out",
            "blocks.0.mlp_out",
            "blocks.1.attn_out",
            "blocks.1.mlp_out",
        )
    )
    torch.testing.assert_close(writes, cache["blocks.1.resid_post"], atol=1e-5, rtol=1e-5)


def test_model_rejects_float_input():
    with pytest.raises(TypeError, match=r"integer (tensor of )?token ids"):
        TinyTransformer(ToyConfig())(torch.randn(2, 5))


@settings(max_examples=15, deadline=None)
@given(st.permutations(list(range(6))))
def test_without_positions_the_model_is_permutation_equivariant(perm):
    torch.manual_seed(0)
    model = TinyTransformer(ToyConfig(positional=None, n_layers=2)).eval()
    x = torch.randint(16, (2, 6), generator=torch.Generator().manual_seed(1))
    perm = torch.tensor(perm)
    with torch.no_grad():
        torch.testing.assert_close(model(x[:, perm]), model(x)[:, perm], atol=1e-5, rtol=1e-5)


def test_with_positions_order_matters():
    torch.manual_seed(0)
    model = TinyTransformer(ToyConfig(positional="sinusoidal")).eval()
    x = torch.tensor([[1, 2, 3, 4, 5]])
    perm = torch.tensor([4, 3, 2, 1, 0])
    with torch.no_grad():
        assert not torch.allclose(model(x[:, perm]), model(x)[:, perm], atol=1e-3)


def test_causal_model_ignores_the_future():
    torch.manual_seed(0)
    model = TinyTransformer(ToyConfig(causal=True)).eval()
    x = torch.randint(16, (1, 8))
    changed = x.clone()
    changed[0, 5:] = (changed[0, 5:] + 1) % 16
    with torch.no_grad():
        torch.testing.assert_close(model(x)[:, :5], model(changed)[:, :5])


def test_batches_draw_lengths_from_the_list():
    batches = toy_batches("previous_token", 8, batch_size=2, lengths=[3, 9], seed=0)
    lengths = {next(batches)[0].shape[1] for _ in range(40)}
    assert lengths == {3, 9}
    with pytest.raises(ValueError, match="task must be one of"):
        next(toy_batches("sorting", 8))
    with pytest.raises(ValueError, match="lengths"):
        next(toy_batches("previous_token", 8, lengths=[1]))


def test_loss_ignores_unanswered_positions():
    model = TinyTransformer(ToyConfig())
    x, y = previous_token(2, 5, 16)
    loss = toy_loss(model, (x, y))
    logits = model(x)[:, 1:, 0]  # position 0 has no answer
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, 16), y[:, 1:, 0].reshape(-1))
    torch.testing.assert_close(loss, expected)


def test_training_is_reproducible():
    runs = []
    for _ in range(2):
        torch.manual_seed(0)
        runs.append(
            train_toy(
                TinyTransformer(ToyConfig(d_vocab=8)), recipe=ToyRecipe(lengths=6), run=Run(steps=5)
            ).losses
        )
    assert runs[0] == runs[1] and len(runs[0]) == 5


def test_training_learns_the_previous_token_task():
    torch.manual_seed(0)
    model = TinyTransformer(ToyConfig(d_vocab=8, d_model=16, d_mlp=32))
    recipe = ToyRecipe(batch_size=32, lengths=6, lr=1e-2)
    result = train_toy(model, "previous_token", recipe, Run(steps=80))
    assert result.losses[-1] < 0.3 * result.losses[0]
    acc = position_accuracy(model, "previous_token", n=6)
    assert acc.shape == (6, 1) and torch.isnan(acc[0, 0])
    assert acc[1:].mean() > 0.9


def test_training_runs_on_one_thread_and_restores_the_count():
    torch.set_num_threads(3)  # the autouse fixture restores the original count afterwards
    seen = []
    train_toy(
        TinyTransformer(ToyConfig()),
        recipe=ToyRecipe(lengths=4),
        run=Run(
            steps=2, eval_fn=lambda m: seen.append(torch.get_num_threads()) or 0.0, eval_every=1
        ),
    )
    assert seen == [1, 1]  # an evaluation after each of the two steps
    assert torch.get_num_threads() == 3
