"""The recall recipe: a GPT learns a small dictionary in a few hundred steps; the learning
rate chosen is the best one measured; interventions and ablations act only while active."""

import pytest
import torch

from transformer_lab.analysis.ablation import ablate_heads
from transformer_lab.data.recall import RecallTask
from transformer_lab.hooks import capture, intervene
from transformer_lab.models.recall import RecallConfig, RecallLM
from transformer_lab.training import recall as RT
from transformer_lab.training.run import Run


@pytest.mark.usefixtures("one_thread")
def test_the_gpt_learns_to_recall_four_pairs():
    task = RecallTask(n_keys=16, n_values=8)
    model = RT.new_model("gpt", task, n_ctx=8, d_model=32)
    recipe = RT.RecallRecipe(lr=3e-3, batch_size=32, evals=2)
    run = RT.train_recall(model, task, 4, recipe, Run(steps=200))
    assert [step for step, _ in run.evals] == [100, 200]
    assert RT.recall_accuracy(model, task.split("test", 4)) > 0.9
    assert RT.recall_loss(model, task.split("test", 4)) < 0.5


def test_choose_lr_takes_the_best_validation_accuracy(monkeypatch):
    scores = {1e-3: 0.5, 3e-3: 0.9, 1e-2: 0.9}

    class Run:
        def __init__(self, lr):
            self.evals = [(1, scores[lr])]

    monkeypatch.setattr(RT, "train_recall", lambda model, task, n, recipe, run: Run(recipe.lr))
    best, measured = RT.choose_lr("gru", RecallTask(n_keys=8, n_values=4), 2, steps=1)
    assert best == 3e-3 and measured == scores  # a tie goes to the smaller rate


def test_new_model_sizes_are_equal():
    task = RecallTask()
    counts = {k: RT.new_model(k, task).num_params() for k in ("gpt", "gru", "lstm")}
    assert max(counts.values()) / min(counts.values()) < 1.01


def _small():
    torch.manual_seed(0)
    config = RecallConfig("gpt", n_keys=8, n_values=4, d_model=16, n_ctx=8, n_heads=4)
    return RecallLM(config).eval(), RecallTask(n_keys=8, n_values=4).split("test", 3, size=4)


def test_ablating_every_head_of_a_block_leaves_only_the_output_bias():
    model, b = _small()
    before = model(b.keys, b.values)
    with ablate_heads(model, {0: [0, 1, 2, 3]}), capture(model, "blocks.0.attn.out") as c:
        ablated = model(b.keys, b.values)
    bias = model.blocks[0].attn.b_O
    torch.testing.assert_close(c["blocks.0.attn.out"], bias.expand_as(c["blocks.0.attn.out"]))
    assert not torch.allclose(ablated, before)
    torch.testing.assert_close(model(b.keys, b.values), before)  # restored on leaving


def test_ablating_one_head_zeroes_its_slice_only():
    model, b = _small()
    with capture(model, "blocks.1.attn.z") as c:
        model(b.keys, b.values)
    z = c["blocks.1.attn.z"]
    with ablate_heads(model, {1: [2]}), capture(model, "blocks.1.attn.z") as c:
        model(b.keys, b.values)
    ablated = c["blocks.1.attn.z"]  # a capture stores the value the model went on with
    assert (ablated[..., 8:12] == 0).all()
    torch.testing.assert_close(ablated[..., :8], z[..., :8])
    torch.testing.assert_close(ablated[..., 12:], z[..., 12:])


def test_intervene_changes_the_output_and_nests():
    model, b = _small()
    before = model(b.keys, b.values)
    double = {"blocks.1.attn.out": lambda x: 2 * x}
    with intervene(model, double):
        with intervene(model, {"blocks.0.attn.out": lambda x: x}):
            inner = model(b.keys, b.values)
        outer = model(b.keys, b.values)
    torch.testing.assert_close(inner, outer)
    assert not torch.allclose(outer, before)
    torch.testing.assert_close(model(b.keys, b.values), before)
