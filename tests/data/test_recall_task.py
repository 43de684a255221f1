"""The recall task: entries, look-ups and targets say what the module's docstring says."""

import torch

from transformer_lab.data.recall import IGNORE_INDEX, RecallTask


def test_a_batch_is_a_dictionary_then_its_look_ups():
    task = RecallTask(n_keys=10, n_values=5)
    b = task.batch(4, 32, torch.Generator().manual_seed(0), n_queries=6)
    assert b.keys.shape == b.values.shape == b.targets.shape == (32, 10)
    assert len(b) == 32 and b.n_pairs == 4
    for keys, values, targets in zip(b.keys, b.values, b.targets, strict=True):
        entries = dict(zip(keys[:4].tolist(), values[:4].tolist(), strict=True))
        assert len(entries) == 4  # distinct keys
        assert all(0 <= v < 5 for v in entries.values())
        assert (targets[:4] == IGNORE_INDEX).all() and (values[4:] == task.blank).all()
        for key, target in zip(keys[4:].tolist(), targets[4:].tolist(), strict=True):
            assert entries[key] == target  # the look-up's answer is the entry's value


def test_splits_are_fixed_and_apart():
    task = RecallTask()
    a, b = task.split("validation", 8), task.split("validation", 8)
    assert torch.equal(a.keys, b.keys) and torch.equal(a.targets, b.targets)
    test = task.split("test", 8)
    assert not torch.equal(a.keys, test.keys)
    train = next(task.batches(8, 512, seed=0))
    assert not torch.equal(train.keys, a.keys) and not torch.equal(train.keys, test.keys)
    again = next(task.batches(8, 512, seed=0))
    assert torch.equal(train.values, again.values)


def test_every_key_and_value_is_drawn():
    task = RecallTask(n_keys=6, n_values=3)
    b = task.batch(6, 400, torch.Generator().manual_seed(1))
    assert set(b.keys[:, :6].flatten().tolist()) == set(range(6))
    assert set(b.targets[:, 6:].flatten().tolist()) == {0, 1, 2}
