"""``transformer_lab.device()`` and ``seed_everything``."""

from __future__ import annotations

import importlib
import os
import random

import numpy as np
import pytest
import torch

import transformer_lab

DV = importlib.import_module("transformer_lab.device")  # the module, not the function


def expected_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def test_device_picks_the_best_available(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LAB_DEVICE", raising=False)
    picked = transformer_lab.device()
    assert isinstance(picked, torch.device)
    assert picked.type == expected_device()


def test_device_is_cpu_without_accelerators(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LAB_DEVICE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert transformer_lab.device() == torch.device("cpu")


def test_device_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LAB_DEVICE", raising=False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert transformer_lab.device().type == "mps"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert transformer_lab.device().type == "cuda"


def test_environment_override(monkeypatch):
    # "meta" exists on every machine, so it proves the variable is obeyed
    monkeypatch.setenv("TRANSFORMER_LAB_DEVICE", "meta")
    assert transformer_lab.device() == torch.device("meta")
    # an explicit argument beats the environment
    assert transformer_lab.device("cpu") == torch.device("cpu")


def test_bad_device_names(monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LAB_DEVICE", "gpu-please")
    with pytest.raises(
        ValueError, match=r"TRANSFORMER_LAB_DEVICE must be 'cpu', 'cuda', .*got 'gpu-please'"
    ):
        transformer_lab.device()
    with pytest.raises(ValueError, match=r"prefer must be 'cpu', 'cuda', .*got 'tpu'"):
        transformer_lab.device("tpu")


def test_a_bad_device_name_gets_a_short_message_without_torchs_list():
    with pytest.raises(ValueError) as info:
        DV.check_device("nope")
    assert str(info.value) == (
        "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'nope'"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__  # no chained list
    assert DV.check_device("cpu:0") == torch.device("cpu", 0)


def draws():
    return random.random(), float(np.random.rand()), torch.randn(3).tolist()


def test_seed_everything_reproduces_every_generator():
    transformer_lab.seed_everything(123)
    first = draws()
    transformer_lab.seed_everything(123)
    assert draws() == first
    transformer_lab.seed_everything(124)
    assert draws() != first


def test_seed_everything_returns_a_seeded_generator():
    g1 = transformer_lab.seed_everything(7)
    g2 = transformer_lab.seed_everything(7)
    assert isinstance(g1, torch.Generator)
    assert torch.equal(torch.randn(4, generator=g1), torch.randn(4, generator=g2))


def test_seed_everything_deterministic_flag(monkeypatch):
    # recorded rather than switched on: the first real call imports for seconds, and the
    # setting is global to the process
    calls = []
    monkeypatch.setattr(torch, "use_deterministic_algorithms", lambda *a, **k: calls.append((a, k)))
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    transformer_lab.seed_everything(0)
    assert calls == []
    transformer_lab.seed_everything(0, deterministic=True)
    assert calls == [((True,), {"warn_only": True})]
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"  # needed by cuBLAS


@pytest.mark.parametrize("seed", [1.5, "1", True])
def test_seed_must_be_an_int(seed):
    with pytest.raises(TypeError, match=rf"seed must be an int, got {type(seed).__name__}"):
        transformer_lab.seed_everything(seed)


def test_a_device_this_machine_lacks_is_named(monkeypatch):
    from transformer_lab.device import check_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv("TRANSFORMER_LAB_DEVICE", raising=False)
    with pytest.raises(ValueError, match=r"prefer='cuda' but CUDA is not available"):
        transformer_lab.device("cuda")
    monkeypatch.setenv("TRANSFORMER_LAB_DEVICE", "cuda:0")
    with pytest.raises(ValueError, match=r"TRANSFORMER_LAB_DEVICE='cuda:0' but CUDA is not"):
        transformer_lab.device()
    with pytest.raises(ValueError, match=r"device='cuda' but CUDA is not available"):
        check_device("cuda")
    assert check_device("cpu") == torch.device("cpu")
    assert transformer_lab.device("cpu") == torch.device("cpu")


def test_seed_everything_takes_a_numpy_integer_as_the_int_it_holds():
    transformer_lab.seed_everything(np.int64(7))
    drawn = torch.rand(3), np.random.rand(2)
    transformer_lab.seed_everything(7)
    torch.testing.assert_close(drawn[0], torch.rand(3))
    np.testing.assert_array_equal(drawn[1], np.random.rand(2))


def test_gpu_branch_is_cuda_when_there_is_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv(DV.FORCE_GPU_BRANCHES, "0")
    assert DV.gpu_branch() == torch.device("cuda")


@pytest.mark.parametrize(("forced", "expected"), [(None, None), ("0", None), ("1", "cpu")])
def test_gpu_branch_without_cuda_runs_on_the_cpu_only_when_forced(monkeypatch, forced, expected):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    if forced is None:
        monkeypatch.delenv(DV.FORCE_GPU_BRANCHES, raising=False)
    else:
        monkeypatch.setenv(DV.FORCE_GPU_BRANCHES, forced)
    got = DV.gpu_branch()
    assert got == (None if expected is None else torch.device(expected))
