"""Checkpoints: a run saved part-way and resumed ends exactly where an uninterrupted run ends,
and checkpoints load with weights_only=True."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.training.checkpoint import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from transformer_lab.training.gpt import TrainRecipe, train_gpt
from transformer_lab.training.loop import train

CONFIG = GPTConfig(d_vocab=13, n_ctx=8, n_layers=1, n_heads=2, d_model=16, dropout=0.2)
RECIPE = TrainRecipe(batch_size=4, steps=8, lr=1e-2, warmup=3)
IDS = torch.arange(200) % 13


def _model(seed: int) -> GPT:
    torch.manual_seed(seed)
    return GPT(CONFIG)


def test_resumed_gpt_run_equals_the_uninterrupted_one(tmp_path):
    full = _model(0)
    whole = train_gpt(full, IDS, RECIPE, seed=3)
    path = tmp_path / "run.pt"
    part = train_gpt(_model(0), IDS, RECIPE, seed=3, checkpoint=path, until=5)
    assert part.steps == 5 and load_checkpoint(path)["step"] == 5
    # another initialisation and another seed: everything must come from the checkpoint
    resumed_model = _model(7)
    resumed = train_gpt(resumed_model, IDS, RECIPE, seed=3, checkpoint=path, resume=True)
    assert resumed.first_step == 5 and resumed.steps == 8
    assert resumed.losses == whole.losses  # dropout masks and batches continue exactly
    for (name, p), q in zip(full.named_parameters(), resumed_model.parameters(), strict=True):
        assert torch.equal(p, q), name


def test_without_the_saved_generators_dropout_would_differ(tmp_path):
    """The test above can fail: resuming with fresh generators changes the losses."""
    whole = train_gpt(_model(0), IDS, RECIPE, seed=3)
    path = tmp_path / "run.pt"
    train_gpt(_model(0), IDS, RECIPE, seed=3, checkpoint=path, until=5)
    state = load_checkpoint(path)
    torch.manual_seed(123)
    state["rng"] = [rng_state()]
    torch.save(state, path)
    resumed = train_gpt(_model(0), IDS, RECIPE, seed=3, checkpoint=path, resume=True)
    assert resumed.losses[:5] == whole.losses[:5]
    assert resumed.losses[5:] != whole.losses[5:]


def test_train_saves_every_k_steps_and_resumes_any_loss_fn(tmp_path):
    torch.manual_seed(0)
    data = [(torch.randn(6, 3), torch.randn(6, 1)) for _ in range(10)]

    def loss_fn(model, batch):
        x, y = batch
        return torch.nn.functional.mse_loss(model(x), y)

    def net():
        torch.manual_seed(1)
        return torch.nn.Sequential(
            torch.nn.Linear(3, 8), torch.nn.Dropout(0.3), torch.nn.Linear(8, 1)
        )

    path = tmp_path / "lin.pt"
    a = net()
    whole = train(a, data, loss_fn, steps=10, lr=1e-2, seed=0, progress=False)
    b = net()
    first = train(
        b,
        data,
        loss_fn,
        steps=4,
        lr=1e-2,
        seed=0,
        progress=False,
        checkpoint=path,
        checkpoint_every=2,
    )
    assert first.losses == whole.losses[:4] and load_checkpoint(path)["step"] == 4
    c = net()
    rest = train(
        c, data, loss_fn, steps=10, lr=1e-2, seed=0, progress=False, checkpoint=path, resume=True
    )
    assert rest.losses == whole.losses
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), c.parameters(), strict=True))


def test_checkpoints_hold_only_safe_types(tmp_path):
    model = _model(0)
    opt = torch.optim.AdamW(model.parameters())
    model(IDS[:8][None]).sum().backward()
    opt.step()
    path = save_checkpoint(tmp_path / "c.pt", model=model, optimizer=opt, step=1, extra={"a": 1})
    state = torch.load(path, weights_only=True)  # would raise on pickled objects
    assert state["extra"] == {"a": 1} and state["step"] == 1
    assert not (tmp_path / "c.pt.tmp").exists()  # written atomically


def test_rng_state_round_trip():
    state = rng_state()
    a = (random.random(), np.random.rand(), torch.rand(2))
    set_rng_state(state)
    b = (random.random(), np.random.rand(), torch.rand(2))
    assert a[0] == b[0] and a[1] == b[1] and torch.equal(a[2], b[2])


def test_bad_checkpoints_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint at"):
        load_checkpoint(tmp_path / "missing.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a transformer_lab checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(ValueError, match="resume=True needs the checkpoint path"):
        train(_model(0), [1], lambda m, b: m.W_E.weight.sum(), resume=True)
    with pytest.raises(ValueError, match="until must be an int in"):
        train_gpt(_model(0), IDS, RECIPE, until=9)
    with pytest.raises(ValueError, match="checkpoint_every needs a checkpoint path"):
        train(_model(0), [1], lambda m, b: m.W_E.weight.sum(), checkpoint_every=2)
