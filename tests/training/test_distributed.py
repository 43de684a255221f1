"""Data-parallel training: the helpers, and two gloo processes launched by torchrun that must
end where one process ends (same global batches, same steps), and resume exactly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from transformer_lab.training import distributed as D
from transformer_lab.training.checkpoint import load_checkpoint

# a tiny run: book-cpu's shape (414,592 parameters), 5 steps of a global batch of 8 windows
RUN = ["--preset", "book-cpu", "--batch-size", "8", "--eval-tokens", "2000", "--sample", "0"]
RUN += ["--no-progress", "--device", "cpu", "--threads", "1"]


def _start(out, steps: int, nproc: int, *extra: str) -> subprocess.Popen:
    """Start ``python -m transformer_lab.training.train_gpt`` in one process or under
    torchrun."""
    if nproc == 1:
        cmd = [sys.executable, "-m", "transformer_lab.training.train_gpt"]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
        cmd += [f"--nproc_per_node={nproc}", "-m", "transformer_lab.training.train_gpt"]
    cmd += RUN + ["--steps", str(steps), "--out", str(out), *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait(*started: subprocess.Popen) -> None:
    for process in started:
        try:
            out, err = process.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        assert process.returncode == 0, out[-3000:] + err[-3000:]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The three runs that do not depend on each other start together (most of each is
    starting Python and importing torch); the resumption waits for its interrupted run."""
    root = tmp_path_factory.mktemp("ddp")
    _wait(
        _start(root / "one", 5, 1),
        _start(root / "two", 5, 2),
        _start(root / "two_resumed", 5, 2, "--until", "3"),  # interrupted after 3 steps
    )
    _wait(_start(root / "two_resumed", 5, 2, "--resume"))
    return {
        name: load_checkpoint(root / name / "checkpoint.pt")
        for name in ("one", "two", "two_resumed")
    }


def test_two_processes_take_the_steps_of_one(runs):
    one, two = runs["one"], runs["two"]
    assert one["step"] == two["step"] == 5
    assert len(two["rng"]) == 2 and len(one["rng"]) == 1  # each rank saved its generators
    # the losses are the global batch's, averaged over the two ranks
    torch.testing.assert_close(
        torch.tensor(two["losses"]), torch.tensor(one["losses"]), rtol=1e-6, atol=1e-6
    )
    start = _initial_weights()
    moved = max(float((p - start[name]).abs().max()) for name, p in one["model"].items())
    for name, p in one["model"].items():
        # float32 rounding: the two ranks add their halves' gradients in another order than
        # one process does, and Adam divides by the gradients' size, so the rounding of tiny
        # gradients grows; it stays far below how far the five steps moved the weights
        torch.testing.assert_close(two["model"][name], p, rtol=1e-4, atol=5e-5)
    differ = max(float((two["model"][n] - p).abs().max()) for n, p in one["model"].items())
    assert differ < 0.01 * moved, (differ, moved)
    # the optimizer's moments agree too
    for s1, s2 in zip(
        one["optimizer"]["state"].values(), two["optimizer"]["state"].values(), strict=True
    ):
        torch.testing.assert_close(s2["exp_avg"], s1["exp_avg"], rtol=1e-3, atol=1e-6)


def test_two_processes_resume_exactly(runs):
    two, resumed = runs["two"], runs["two_resumed"]
    assert resumed["step"] == 5
    assert resumed["losses"] == two["losses"]
    for name, p in two["model"].items():
        assert torch.equal(resumed["model"][name], p), name


def _initial_weights():
    from transformer_lab.data import shakespeare
    from transformer_lab.models.gpt import GPT
    from transformer_lab.training.gpt import preset

    config, _ = preset("book-cpu", shakespeare.char_tokenizer().vocab_size)
    torch.manual_seed(0)
    return GPT(config).state_dict()


# --- the helpers in one process ---------------------------------------------------------


def test_setup_without_torchrun_is_one_process(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    assert not D.launched()
    place = D.setup("cpu")
    assert place == D.DistInfo(device=torch.device("cpu"))
    assert place.is_main and not place.distributed
    assert D.info() == D.DistInfo()
    D.teardown()  # nothing joined: nothing to leave


def test_shards_put_back_in_order_are_the_global_batch():
    x = torch.arange(24).reshape(8, 3)
    y = x + 100
    parts = [D.shard((x, y), r, 4) for r in range(4)]
    assert torch.equal(torch.cat([p[0] for p in parts]), x)
    assert torch.equal(torch.cat([p[1] for p in parts]), y)
    assert torch.equal(D.shard({"ids": x}, 1, 2)["ids"], x[4:])
    assert isinstance(D.shard([x, y], 0, 2), list)
    assert torch.equal(D.shard(x, 0, 1), x)


@pytest.mark.parametrize(
    "args, error, fragment",
    [
        ((torch.zeros(5, 2), 0, 2), ValueError, "5 rows does not split evenly over 2"),
        ((torch.zeros(4), 2, 2), ValueError, "rank=2, world_size=2"),
        ((torch.zeros(4), 0, 0), ValueError, "rank=0, world_size=0"),
        ((torch.tensor(1.0), 0, 1), ValueError, "0-d tensor"),
        (("text", 0, 1), TypeError, "got str"),
        ((torch.zeros(4), 0.0, 1), TypeError, "rank must be an int"),
    ],
)
def test_shard_rejects_bad_input(args, error, fragment):
    with pytest.raises(error, match=None) as info:
        D.shard(*args)
    assert fragment in str(info.value)


def test_setup_rejects_a_backend_it_does_not_know():
    with pytest.raises(ValueError, match="backend must be"):
        D.setup("cpu", backend="mpi")


def test_setup_reads_a_bad_rank_clearly(monkeypatch):
    env = {
        "RANK": "zero",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "localhost",
        "MASTER_PORT": "29500",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert D.launched()
    with pytest.raises(ValueError, match="RANK must be an integer, got 'zero'"):
        D.setup("cpu")


@pytest.mark.parametrize("n", [1, 2, 3, 4, 7])
def test_ring_all_reduce_sums_and_sends_2_n_minus_1_over_n(n):
    gen = torch.Generator().manual_seed(n)
    tensors = [torch.randn(5, 6, generator=gen) for _ in range(n)]
    before = [t.clone() for t in tensors]
    results, sent = D.ring_all_reduce(tensors)
    total = torch.stack(tensors).sum(0)
    for r in results:
        torch.testing.assert_close(r, total)
    assert all(torch.equal(a, b) for a, b in zip(tensors, before, strict=True))
    # 30 elements in n chunks: each rank sends 2(n-1) chunks, 2(n-1)/n of the tensor in all
    assert sum(sent) == 2 * (n - 1) * 30
    assert max(sent) - min(sent) <= 2 * (n - 1)  # chunks differ by at most one element


def test_ring_all_reduce_rejects_bad_input():
    with pytest.raises(ValueError, match="non-empty list"):
        D.ring_all_reduce([])
    with pytest.raises(ValueError, match="same shape"):
        D.ring_all_reduce([torch.zeros(2), torch.zeros(3)])
    with pytest.raises(TypeError, match="torch.Tensor"):
        D.ring_all_reduce([torch.zeros(2), [0.0, 0.0]])


LAUNCH = {
    "RANK": "1",
    "WORLD_SIZE": "2",
    "LOCAL_RANK": "1",
    "MASTER_ADDR": "localhost",
    "MASTER_PORT": "29500",
}


def _would_wait(*args, **kwargs):
    raise AssertionError("joined a process group that would wait for partners")


@pytest.mark.parametrize(
    "unset",
    [("MASTER_ADDR", "MASTER_PORT"), ("RANK",), ("WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")],
)
def test_a_partial_launch_is_an_error_naming_what_is_missing(monkeypatch, unset):
    for name, value in LAUNCH.items():
        monkeypatch.setenv(name, value)
    for name in unset:
        monkeypatch.delenv(name)
    assert not D.launched()
    with pytest.raises(ValueError) as info:
        D.setup("cpu")
    message = str(info.value)
    assert f"{', '.join(unset)} {'is' if len(unset) == 1 else 'are'} missing" in message
    assert "start with torchrun, or unset" in message


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"RANK": "2"}, "RANK=2 is outside the world of WORLD_SIZE=2 processes"),
        ({"RANK": "-1"}, "RANK=-1 is outside the world"),
        ({"WORLD_SIZE": "0", "RANK": "0", "LOCAL_RANK": "0"}, "WORLD_SIZE must be at least 1"),
        ({"LOCAL_RANK": "2"}, "LOCAL_RANK must be in 0..RANK=1, got 2"),
        ({"MASTER_PORT": "70000"}, "MASTER_PORT must be a port number in 1..65535"),
    ],
)
def test_an_inconsistent_launch_is_an_error_not_a_wait(monkeypatch, changes, fragment):
    for name, value in {**LAUNCH, **changes}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(D.dist, "init_process_group", _would_wait)
    with pytest.raises(ValueError, match=None) as info:
        D.setup("cpu")
    assert fragment in str(info.value)


def test_a_rank_outside_the_world_ends_at_once():
    """In its own process, so that a setup that waits for partners fails this test by its
    time limit instead of hanging the suite."""
    code = "from transformer_lab.training import distributed as D; D.setup('cpu')"
    env = {**os.environ, **LAUNCH, "RANK": "2", "MASTER_PORT": "29517"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
        )
    except subprocess.TimeoutExpired:
        pytest.fail("setup with RANK=2 of WORLD_SIZE=2 waited instead of refusing")
    assert done.returncode != 0
    assert "RANK=2 is outside the world of WORLD_SIZE=2 processes" in done.stderr
