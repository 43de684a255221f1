"""The shared training loop: stopping rules, determinism, devices, loss history."""

import pytest
import torch
from torch import nn

from transformer_lab.data.numbers import Batch
from transformer_lab.device import num_threads
from transformer_lab.training.loop import TrainResult, evaluate, to_device, train
from transformer_lab.training.losses import seq2seq_loss
from transformer_lab.training.run import Run


def regression_batches(seed=0, n=32):
    gen = torch.Generator().manual_seed(seed)
    w = torch.tensor([[2.0], [-1.0]])
    while True:
        x = torch.randn(n, 2, generator=gen)
        yield x, x @ w


def mse(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def test_loss_falls_and_history_is_recorded():
    torch.manual_seed(0)
    model = nn.Linear(2, 1)
    result = train(model, regression_batches(), mse, run=Run(steps=150), lr=0.05)
    assert isinstance(result, TrainResult)
    assert result.steps == 150 and len(result.losses) == 150 and result.stopped_by == "steps"
    assert result.losses[-1] < 0.01 * result.losses[0]
    assert not model.training  # left in eval mode
    assert len(result.smoothed(10)) == 150 and result.smoothed(10)[0] == result.losses[0]


def test_same_seeds_same_losses():
    def run():
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(2, 8), nn.Dropout(0.3), nn.Linear(8, 1))
        return train(model, regression_batches(2), mse, run=Run(steps=20, seed=5)).losses

    assert run() == run()


def test_time_budget_and_finite_data():
    model = nn.Linear(2, 1)
    result = train(model, regression_batches(), mse, run=Run(seconds=0.05))
    assert result.stopped_by == "seconds" and result.steps >= 1 and result.seconds >= 0.05
    finite = [next(regression_batches()) for _ in range(3)]
    result = train(model, finite, mse, run=Run())
    assert result.steps == 3 and result.stopped_by == "data"
    result = train(model, finite, mse, run=Run(steps=2))
    assert result.steps == 2 and result.stopped_by == "steps"


def test_eval_schedule_and_lr_schedule():
    model = nn.Linear(2, 1)
    calls = []

    def eval_fn(m):
        calls.append(m.training)
        return 1.5

    result = train(
        model,
        regression_batches(),
        mse,
        run=Run(steps=10, eval_fn=eval_fn, eval_every=4),
        lr_schedule=lambda step: 0.0,
    )
    assert result.evals == [(4, 1.5), (8, 1.5), (10, 1.5)]
    assert calls == [False, False, False]  # evaluated in eval mode
    before = model.weight.detach().clone()
    train(
        model,
        regression_batches(),
        mse,
        run=Run(steps=3),
        lr_schedule=lambda s: 0.0,
    )
    torch.testing.assert_close(model.weight, before)  # a zero learning rate changes nothing


def test_progress_bar_writes_to_stderr(capsys):
    train(nn.Linear(2, 1), regression_batches(), mse, run=Run(steps=3, desc="demo", progress=True))
    assert "demo" in capsys.readouterr().err


def test_bad_arguments():
    model = nn.Linear(2, 1)
    with pytest.raises(ValueError, match=r"needs Run\(steps=...\) or Run\(seconds=...\)"):
        train(model, regression_batches(), mse, run=Run())
    with pytest.raises(ValueError, match="steps"):
        train(model, regression_batches(), mse, run=Run(steps=-1))
    with pytest.raises(ValueError, match="seconds"):
        train(model, regression_batches(), mse, run=Run(seconds=0))
    with pytest.raises(ValueError, match="eval_every"):
        train(model, regression_batches(), mse, run=Run(steps=1, eval_every=2))
    with pytest.raises(ValueError, match="scalar"):
        train(model, regression_batches(), lambda m, b: m(b[0]), run=Run(steps=1))
    with pytest.raises(FloatingPointError, match="step 0"):
        train(
            model,
            regression_batches(),
            lambda m, b: m(b[0]).sum() * float("nan"),
            run=Run(steps=1),
        )
    frozen = nn.Linear(2, 1).requires_grad_(False)
    with pytest.raises(ValueError, match="trainable"):
        train(frozen, regression_batches(), mse, run=Run(steps=1))


class Echo(nn.Module):
    """A toy seq2seq model: logits that favour the source token at the same position."""

    def __init__(self, vocab=6):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(1.0))
        self.vocab = vocab

    def forward(self, src, tgt_in):
        return self.scale * nn.functional.one_hot(src[:, : tgt_in.shape[1]], self.vocab).float()


def test_seq2seq_loss_ignores_padding_and_evaluate_weights_batches():
    src = torch.tensor([[4, 5, 3], [5, 0, 0]])
    tgt = torch.tensor([[1, 4, 5, 3], [1, 5, 0, 0]])  # second row: padding to be ignored
    batch = Batch(src, tgt, torch.arange(2))
    model = Echo().requires_grad_(False)
    loss = seq2seq_loss(model, batch)
    logits = model(src, batch.tgt_in)
    keep = batch.tgt_out != 0
    expected = nn.functional.cross_entropy(logits[keep], batch.tgt_out[keep])
    torch.testing.assert_close(loss, expected)
    single = Batch(src[:1], tgt[:1], torch.arange(1))
    mean = evaluate(model, [batch, single])
    assert mean == pytest.approx((float(loss) * 2 + float(seq2seq_loss(model, single))) / 3)
    with pytest.raises(ValueError, match="expected \\[batch, tgt_pos, d_vocab\\]"):
        seq2seq_loss(lambda s, t: torch.zeros(2, 7, 6), batch)
    with pytest.raises(ValueError, match="no batches"):
        evaluate(model, [])


def test_to_device_handles_containers():
    x = torch.ones(2)
    moved = to_device({"a": (x, [x]), "b": 3}, "cpu")
    assert moved["b"] == 3 and isinstance(moved["a"], tuple) and isinstance(moved["a"][1], list)


def test_num_threads_restores_and_train_uses_it():
    before = torch.get_num_threads()
    seen = []

    def loss_fn(model, batch):
        seen.append(torch.get_num_threads())
        return mse(model, batch)

    with num_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with num_threads(None):
        assert torch.get_num_threads() == before
    train(nn.Linear(2, 1), regression_batches(), loss_fn, run=Run(steps=2, threads=1))
    assert seen == [1, 1] and torch.get_num_threads() == before
    with pytest.raises(ValueError, match="threads"), num_threads(0):
        pass
