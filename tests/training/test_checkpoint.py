"""Checkpoints: a run saved part-way and resumed ends exactly where an uninterrupted run ends,
and checkpoints load with weights_only=True."""

from __future__ import annotations

import dataclasses
import errno
import random
from pathlib import Path

import numpy as np
import pytest
import torch
from disk_faults import full_disk, leftovers, read_only

from transformer_lab.models.gpt import GPT, GPTConfig
from transformer_lab.training.checkpoint import (
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from transformer_lab.training.gpt import TrainRecipe, train_gpt
from transformer_lab.training.loop import train
from transformer_lab.training.run import Run

CONFIG = GPTConfig(d_vocab=13, n_ctx=8, n_layers=1, n_heads=2, d_model=16, dropout=0.2)
RECIPE = TrainRecipe(batch_size=4, steps=8, lr=1e-2, warmup=3)
IDS = torch.arange(200) % 13


def _model(seed: int) -> GPT:
    torch.manual_seed(seed)
    return GPT(CONFIG)


def test_resumed_gpt_run_equals_the_uninterrupted_one(tmp_path):
    full = _model(0)
    whole = train_gpt(full, IDS, RECIPE, Run(seed=3))
    path = tmp_path / "run.pt"
    part = train_gpt(_model(0), IDS, RECIPE, Run(seed=3, checkpoint=path, steps=5))
    assert part.steps == 5 and load_checkpoint(path)["step"] == 5
    # another initialisation and another seed: everything must come from the checkpoint
    resumed_model = _model(7)
    resumed = train_gpt(resumed_model, IDS, RECIPE, Run(seed=3, checkpoint=path, resume=True))
    assert resumed.first_step == 5 and resumed.steps == 8
    assert resumed.losses == whole.losses  # dropout masks and batches continue exactly
    for (name, p), q in zip(full.named_parameters(), resumed_model.parameters(), strict=True):
        assert torch.equal(p, q), name


def test_without_the_saved_generators_dropout_would_differ(tmp_path):
    """The test above can fail: resuming with fresh generators changes the losses."""
    whole = train_gpt(_model(0), IDS, RECIPE, Run(seed=3))
    path = tmp_path / "run.pt"
    train_gpt(_model(0), IDS, RECIPE, Run(seed=3, checkpoint=path, steps=5))
    state = load_checkpoint(path)
    torch.manual_seed(123)
    state["rng"] = [rng_state()]
    torch.save(state, path)
    resumed = train_gpt(_model(0), IDS, RECIPE, Run(seed=3, checkpoint=path, resume=True))
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
    whole = train(a, data, loss_fn, run=Run(steps=10, seed=0), lr=1e-2)
    b = net()
    first = train(
        b,
        data,
        loss_fn,
        run=Run(steps=4, seed=0, checkpoint=path, checkpoint_every=2),
        lr=1e-2,
    )
    assert first.losses == whole.losses[:4] and load_checkpoint(path)["step"] == 4
    c = net()
    rest = train(
        c,
        data,
        loss_fn,
        run=Run(steps=10, seed=0, checkpoint=path, resume=True),
        lr=1e-2,
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
        train(_model(0), [1], lambda m, b: m.W_E.weight.sum(), run=Run(resume=True))
    with pytest.raises(ValueError, match=r"run.steps must be in \[1, 8\]"):
        train_gpt(_model(0), IDS, RECIPE, Run(steps=9))
    with pytest.raises(ValueError, match="checkpoint_every needs a checkpoint path"):
        train(_model(0), [1], lambda m, b: m.W_E.weight.sum(), run=Run(checkpoint_every=2))


# --- what is saved loads back; what would not load is refused when saving -----------------


@dataclasses.dataclass
class _Settings:
    lr: float = 0.1


def _save(path, **kw):
    model = _model(0)
    return save_checkpoint(path, model=model, optimizer=torch.optim.SGD(model.parameters()), **kw)


@pytest.mark.parametrize(
    "value, where, kind",
    [
        ({"seed": np.int64(3)}, "extra['seed']", "numpy.int64"),
        ({"lr": np.float64(0.1)}, "extra['lr']", "numpy.float64"),
        ({"config": _Settings()}, "extra['config']", "dataclasses.asdict"),
        ({"runs": [Path("runs")]}, "extra['runs'][0]", "str(value)"),
        ({"ids": np.arange(3)}, "extra['ids']", "numpy.ndarray"),
        ({"tags": {"a"}}, "extra['tags']", "builtins.set"),
    ],
)
def test_save_refuses_what_weights_only_loading_would_refuse(tmp_path, value, where, kind):
    with pytest.raises(TypeError) as info:
        _save(tmp_path / "c.pt", step=0, extra=value)
    assert where in str(info.value) and kind in str(info.value)
    assert "weights_only=True" in str(info.value)
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


@pytest.mark.parametrize(
    "value",
    [None, True, 3, -2.5, "text", torch.arange(3), [1, "a", None], (1, (2.0, "b")), {1: {"x": []}}],
)
def test_what_save_accepts_loads_back_with_weights_only(tmp_path, value):
    path = _save(tmp_path / "c.pt", step=2, extra={"v": value}, config={"v": value})
    state = torch.load(path, weights_only=True)
    for got in (state["extra"]["v"], load_checkpoint(path)["config"]["v"]):
        if isinstance(value, torch.Tensor):
            assert torch.equal(got, value)
        else:
            assert got == value and type(got) is type(value)


def test_a_failed_save_keeps_the_previous_checkpoint_and_no_temporary_file(tmp_path, monkeypatch):
    path = _save(tmp_path / "c.pt", step=1)
    before = path.read_bytes()
    full_disk(monkeypatch, room=5000)
    with pytest.raises(OSError, match=f"cannot write {path}: No space left on device") as info:
        _save(path, step=2)
    assert info.value.errno == errno.ENOSPC
    assert path.read_bytes() == before and load_checkpoint(path)["step"] == 1
    assert leftovers(tmp_path) == []


def test_truncated_and_foreign_files_are_refused_naming_the_file(tmp_path):
    whole = _save(tmp_path / "c.pt", step=1).read_bytes()
    (tmp_path / "cut.pt").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "notes.pt").write_text("not a checkpoint")
    for name in ("cut.pt", "notes.pt"):
        with pytest.raises(ValueError, match="is not a readable transformer_lab checkpoint") as err:
            load_checkpoint(tmp_path / name)
        assert str(tmp_path / name) in str(err.value)


def test_an_unwritable_checkpoint_folder_is_found_before_the_first_step(tmp_path, monkeypatch):
    folder = tmp_path / "ro"
    read_only(folder, monkeypatch)
    calls = []

    def loss(model, batch):
        calls.append(1)
        return model(batch).float().mean()

    data = [IDS[:8][None]] * 3
    with pytest.raises(PermissionError, match=f"cannot write in {folder}: Permission denied"):
        train(_model(0), data, loss, run=Run(steps=3, checkpoint=folder / "run.pt"))
    assert calls == []  # no step was taken, so none was lost


# --- a resumed run is the run it says it is ------------------------------------------------


def _lin_run(path, *, resume=False, steps=2, **kw):
    torch.manual_seed(1)
    model = torch.nn.Linear(3, 1)
    data = [torch.randn(4, 3) for _ in range(6)]
    args = dict(lr=1e-2, grad_clip=1.0) | {
        k: v for k, v in kw.items() if k not in ("seed", "config")
    }
    run = dict(seed=0) | {k: v for k, v in kw.items() if k in ("seed", "config")}
    return train(
        model,
        data,
        lambda m, b: m(b).pow(2).mean(),
        Run(steps=steps, checkpoint=path, resume=resume, **run),
        **args,
    )


@pytest.mark.parametrize(
    "change, fragment",
    [
        (dict(lr=2e-2), "optimizer.groups[0].lr: 0.01 -> 0.02"),
        (dict(seed=1), "loop.seed: 0 -> 1"),
        (dict(grad_clip=None), "loop.grad_clip: 1.0 -> None"),
        (dict(lr_schedule=lambda s: 1.0), "loop.lr_schedule: False -> True"),
        (dict(config={"data": "other"}), "data: '(absent)' -> 'other'"),
    ],
)
def test_a_resume_with_other_settings_is_refused_naming_each(tmp_path, change, fragment):
    path = tmp_path / "run.pt"
    _lin_run(path)
    saved = path.read_bytes()
    with pytest.raises(ValueError, match="holds a run with other settings") as info:
        _lin_run(path, resume=True, steps=4, **change)
    assert fragment in str(info.value) and str(path) in str(info.value)
    assert path.read_bytes() == saved  # refused before a step: the run is intact


def test_a_resume_may_go_on_for_more_steps(tmp_path):
    path = tmp_path / "run.pt"
    _lin_run(path)
    assert _lin_run(path, resume=True, steps=4).steps == 4


def test_a_resume_that_would_stop_before_the_saved_step_is_refused(tmp_path):
    path = tmp_path / "run.pt"
    _lin_run(path, steps=5)
    saved = path.read_bytes()
    with pytest.raises(ValueError) as info:
        _lin_run(path, resume=True, steps=3)
    assert str(info.value) == (
        f"the checkpoint {path} is at step 5, past the run's steps=3: ask for more steps to go "
        "on, or start a new run without resume"
    )
    assert path.read_bytes() == saved  # refused before a step: the run is intact
    done = _lin_run(path, resume=True, steps=5)  # the saved step itself: nothing left to do
    assert (done.first_step, done.steps, done.stopped_by) == (5, 5, "steps")
    gpt_path = tmp_path / "gpt.pt"
    train_gpt(_model(0), IDS, RECIPE, Run(seed=3, checkpoint=gpt_path, steps=5))
    with pytest.raises(ValueError, match="is at step 5, past the run's steps=4"):
        train_gpt(_model(0), IDS, RECIPE, Run(seed=3, checkpoint=gpt_path, steps=4, resume=True))


def test_a_checkpoint_of_another_process_count_or_model_is_refused(tmp_path):
    path = tmp_path / "run.pt"
    _lin_run(path)
    state = load_checkpoint(path)
    state["config"]["loop"]["world_size"] = 2
    torch.save(state, path)
    with pytest.raises(ValueError, match="loop.world_size: 2 -> 1"):
        _lin_run(path, resume=True)
    train_gpt(_model(0), IDS, RECIPE, Run(checkpoint=path, steps=2))
    wider = GPT(dataclasses.replace(CONFIG, d_model=32))
    with pytest.raises(ValueError, match="model.d_model: 16 -> 32"):
        train_gpt(wider, IDS, RECIPE, Run(checkpoint=path, resume=True))


def test_a_checkpoint_without_settings_loads_but_does_not_resume(tmp_path):
    path = tmp_path / "run.pt"
    _lin_run(path)
    state = load_checkpoint(path)
    state["format"], state["config"] = 1, None  # as the first format saved it
    torch.save(state, path)
    assert load_checkpoint(path)["step"] == 2
    with pytest.raises(ValueError, match="saved without the settings of its run"):
        _lin_run(path, resume=True)


def test_a_checkpoint_without_its_model_or_optimizer_is_named_damaged(tmp_path):
    from transformer_lab.training.checkpoint import load_checkpoint

    path = tmp_path / "bare.pt"
    torch.save({"format": 2, "step": 0}, path)
    with pytest.raises(ValueError, match="damaged checkpoint: it has no model, optimizer"):
        load_checkpoint(path)
    torch.save({"format": 2, "step": "0", "model": {}, "optimizer": {}}, path)
    with pytest.raises(ValueError, match="'model' or 'step' has the wrong type"):
        load_checkpoint(path)
