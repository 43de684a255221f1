"""Bad inputs to the recall task, its models, its recipe, interventions and ablations.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

import torch
from bad_input_support import RECORDS, case, gpt

from transformer_lab import hooks as HK
from transformer_lab.analysis import ablation as AB
from transformer_lab.data import recall as RD
from transformer_lab.models import recall as RM
from transformer_lab.training import recall as RT
from transformer_lab.training.run import Run

RECORDS.add(RD.RecallBatch)
TASK = RD.RecallTask(n_keys=8, n_values=4)


def small(kind="gpt"):
    return RM.RecallLM(RM.RecallConfig(kind, n_keys=8, n_values=4, d_model=8, n_ctx=8,
                                       n_heads=2))  # fmt: skip


def batch(n_pairs=2):
    return TASK.batch(n_pairs, 3, torch.Generator().manual_seed(0))


case(RD.RecallTask, lambda: RD.RecallTask(n_keys=1), ValueError, "n_keys must be an int >= 2")
case(
    RD.RecallTask,
    lambda: RD.RecallTask(n_values=1.5),
    TypeError,
    "n_values must be an int, got float",
)
case(RD.RecallTask, lambda: TASK.batch(9, 2, torch.Generator()), ValueError,
     "n_pairs=9 is more than the task's n_keys=8")  # fmt: skip
case(RD.RecallTask, lambda: TASK.batch(0, 2, torch.Generator()), ValueError, "n_pairs")
case(RD.RecallTask, lambda: TASK.split("train", 2), ValueError, "name")
case(RD.RecallTask, lambda: next(TASK.batches(2, 2, seed=1.5)), TypeError, "seed must be an int")

case(RM.RecallConfig, lambda: RM.RecallConfig("rnn"), ValueError, "kind")
case(RM.RecallConfig, lambda: RM.RecallConfig("gpt", d_model=10, n_heads=4), ValueError,
     "d_model=10 is not divisible by n_heads=4")  # fmt: skip
case(RM.RecallConfig, lambda: RM.RecallConfig("gru", d_model=0), ValueError, "d_model")
case(RM.RecallLM, lambda: RM.RecallLM({"kind": "gpt"}), TypeError, "config must be a RecallConfig")
case(RM.RecallLM, lambda: small()(torch.zeros(2, 3, dtype=torch.long),
                                  torch.zeros(2, 4, dtype=torch.long)),
     ValueError, "keys and values must be [batch, pos] of one shape")  # fmt: skip
case(RM.RecallLM, lambda: small()(torch.full((1, 3), 8), torch.zeros(1, 3, dtype=torch.long)),
     ValueError, "keys must be in [0, 8)")  # fmt: skip
case(RM.RecallLM, lambda: small("gru")(torch.zeros(1, 3, dtype=torch.long),
                                       torch.full((1, 3), 5)),
     ValueError, "values must be in [0, 5)")  # fmt: skip
case(RM.RecallLM, lambda: small()(torch.zeros(1, 9, dtype=torch.long),
                                  torch.zeros(1, 9, dtype=torch.long)),
     ValueError, "9 positions but the model's n_ctx=8")  # fmt: skip
case(RM.RecallLM, lambda: small()([1, 2], [1, 2]), TypeError, "keys and values must be tensors")
case(RM.matched_width, lambda: RM.matched_width("gpt", 100), ValueError, "kind")
case(RM.matched_width, lambda: RM.matched_width("gru", 0), ValueError, "n_params")

case(RT.recall_loss, lambda: RT.recall_loss(small(), (1, 2)), TypeError, "batch must be")
case(RT.recall_accuracy, lambda: RT.recall_accuracy(small(), (1, 2)), TypeError,
     "batch must be")  # fmt: skip
case(RT.new_model, lambda: RT.new_model("transformer", TASK), ValueError, "kind")
RECIPE = RT.RecallRecipe(lr=1e-3)
case(RT.train_recall, lambda: RT.train_recall(gpt(), TASK, 2, RECIPE, Run(steps=1)), TypeError,
     "model must be")  # fmt: skip
case(RT.train_recall, lambda: RT.train_recall(small(), TASK, 2, RECIPE, Run(steps=0)), ValueError,
     "steps")  # fmt: skip
case(RT.train_recall, lambda: RT.train_recall(small(), TASK, 9, RECIPE, Run(steps=1)), ValueError,
     "n_pairs=9 is more than")  # fmt: skip
case(RT.train_recall, lambda: RT.train_recall(small(), TASK, 2, 1e-3, Run(steps=1)), TypeError,
     "recipe must be a RecallRecipe, got float")  # fmt: skip
case(RT.train_recall, lambda: RT.train_recall(small(), TASK, 2, RECIPE, Run()), ValueError,
     "train_recall needs Run(steps=...)")  # fmt: skip
case(RT.RecallRecipe, lambda: RT.RecallRecipe(lr=0.0), ValueError,
     "lr must be a positive finite number, got 0.0")  # fmt: skip
case(RT.RecallRecipe, lambda: RT.RecallRecipe(lr=1e-3, batch_size=0), ValueError,
     "batch_size must be a positive int, got 0")  # fmt: skip
case(RT.RecallRecipe, lambda: RT.RecallRecipe(lr=1e-3, evals=0), ValueError,
     "evals must be a positive int, got 0")  # fmt: skip
case(RT.choose_lr, lambda: RT.choose_lr("gpt", TASK, 2, steps=1, lrs=(-1.0,)), ValueError, "lr")

case(HK.intervene, lambda: HK.intervene(small(), {"blocks.9.attn.z": abs}).__enter__(),
     ValueError, "no hook named ['blocks.9.attn.z']")  # fmt: skip
case(HK.intervene, lambda: HK.intervene(small(), {"blocks.0.attn.z": 3}).__enter__(),
     TypeError, "edits must be a dict of hook name -> function")  # fmt: skip
case(HK.intervene, lambda: HK.intervene("model", {}).__enter__(), TypeError,
     "model must be an nn.Module")  # fmt: skip


def _shrunk():
    model, b = small(), batch()
    with HK.intervene(model, {"blocks.0.attn.z": lambda z: z[..., :2]}):
        model(b.keys, b.values)


case(HK.intervene, _shrunk, ValueError, "the intervention on blocks.0.attn.z must return")
case(AB.ablate_heads, lambda: AB.ablate_heads(small(), {2: [0]}).__enter__(), ValueError,
     "layer=2 is not a block of the model (0..1)")  # fmt: skip
case(AB.ablate_heads, lambda: AB.ablate_heads(small(), {0: [2]}).__enter__(), ValueError,
     "head=2 is not a head of block 0 (0..1)")  # fmt: skip
case(AB.ablate_heads, lambda: AB.ablate_heads(small("gru"), {0: [0]}).__enter__(), TypeError,
     "model must have blocks")  # fmt: skip
case(AB.ablate_heads, lambda: AB.ablate_heads(small(), [0]).__enter__(), TypeError,
     "heads must be")  # fmt: skip
