"""The training command: a resumed run is the run it says it is, an unwritable --out is
found before any training, and a half-configured launch across processes does not run."""

from __future__ import annotations

import json

import pytest
from disk_faults import read_only

from transformer_lab.training import train_gpt as TG
from transformer_lab.training.checkpoint import load_checkpoint

# book-cpu's shape, 4 steps of 2 windows: a second per run
RUN = ["--preset", "book-cpu", "--steps", "4", "--batch-size", "2", "--lr", "0.005"]
RUN += ["--eval-tokens", "200", "--sample", "0", "--no-progress", "--device", "cpu"]


def _main(out, *extra: str) -> dict:
    return TG.main(RUN + ["--out", str(out), *extra])


def _with(flag: str, value: str | None) -> list[str]:
    """RUN with ``flag`` set to ``value`` (a switch when ``value`` is None)."""
    args = list(RUN)
    if flag in args:
        args[args.index(flag) + 1] = value
        return args
    return args + [flag] + ([] if value is None else [value])


@pytest.fixture(scope="module")
def stopped(tmp_path_factory):
    """A run stopped after 2 of its 4 steps."""
    out = tmp_path_factory.mktemp("gpt")
    _main(out, "--until", "2")
    return out


@pytest.mark.parametrize(
    "flag, value, changes",
    [
        ("--lr", "0.01", ["recipe.lr: 0.005 -> 0.01", "optimizer.groups[0].lr: 0.005 -> 0.01"]),
        ("--seed", "1", ["seed: 0 -> 1"]),
        ("--batch-size", "4", ["recipe.batch_size: 2 -> 4"]),
        ("--steps", "6", ["recipe.steps: 4 -> 6"]),
        (
            "--preset",
            "nanogpt-cpu",
            ["preset: 'book-cpu' -> 'nanogpt-cpu'", "model.n_layers: 2 -> 4"],
        ),
        ("--bf16", None, ["bf16: False -> True", "loop.loss_fn: "]),
    ],
)
def test_a_resume_with_another_flag_is_refused_naming_the_change(stopped, flag, value, changes):
    before = (stopped / "checkpoint.pt").read_bytes(), (stopped / "summary.json").read_text()
    with pytest.raises(ValueError, match="holds a run with other settings") as info:
        TG.main(_with(flag, value) + ["--out", str(stopped), "--resume"])
    for change in changes:
        assert change in str(info.value)
    after = (stopped / "checkpoint.pt").read_bytes(), (stopped / "summary.json").read_text()
    assert after == before  # nothing ran, nothing was written


def test_the_same_flags_resume_and_the_summary_records_what_ran(stopped, tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    for name in ("checkpoint.pt", "summary.json"):
        (out / name).write_bytes((stopped / name).read_bytes())
    # settings that do not change the steps may differ
    summary = _main(out, "--resume", "--eval-every", "1", "--threads", "2")
    saved = json.loads((out / "summary.json").read_text())
    assert saved["steps"] == 4 and saved["resumed_from"] == 2 and saved["until"] is None
    assert saved["recipe"]["lr"] == 0.005 and saved["seed"] == 0
    assert saved["final_train_loss"] == summary["final_train_loss"]
    assert load_checkpoint(out / "checkpoint.pt")["config"]["recipe"] == saved["recipe"]
    whole = _main(tmp_path / "whole")
    assert whole["final_train_loss"] == saved["final_train_loss"]  # the same run


def test_an_unwritable_out_is_found_before_any_training(tmp_path, monkeypatch):
    out = tmp_path / "ro"
    read_only(out, monkeypatch)

    def never(*args, **kwargs):
        raise AssertionError("trained although --out cannot be written")

    monkeypatch.setattr(TG, "train_gpt", never)
    with pytest.raises(PermissionError, match=f"cannot write in {out}: Permission denied"):
        _main(out)


def test_a_half_configured_launch_does_not_train_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.delenv("MASTER_PORT", raising=False)
    with pytest.raises(ValueError, match="MASTER_ADDR, MASTER_PORT are missing"):
        _main(tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_two_runs_on_one_folder_the_second_is_refused_and_a_killed_one_is_taken_over(tmp_path):
    """A run holds its --out; a second run at the same time is refused naming the first; after
    the first is killed (SIGKILL: no clean-up), the next run takes the folder over."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from transformer_lab.data.cache import LOCK_NAME

    def command(steps):
        return [sys.executable, "-m", "transformer_lab.training.train_gpt", "--preset", "book-cpu",
                "--steps", str(steps), "--device", "cpu", "--threads", "1", "--eval-every", "0",
                "--sample", "0", "--no-progress", "--out", str(tmp_path)]  # fmt: skip

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    first = subprocess.Popen(command(100000), env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / LOCK_NAME).exists():
            assert first.poll() is None and time.monotonic() < deadline, (
                "the first run did not start"
            )
            time.sleep(0.2)
        second = subprocess.run(command(2), env=env, capture_output=True, text=True, timeout=300)
        assert second.returncode != 0
        assert f"is in use by train_gpt (process {first.pid} on " in second.stderr, second.stderr
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    third = subprocess.run(command(2), env=env, capture_output=True, text=True, timeout=300)
    assert third.returncode == 0, third.stderr
    assert f"taking over the lock of a job that has ended (process {first.pid}" in third.stderr
    assert not (tmp_path / LOCK_NAME).exists() and (tmp_path / "summary.json").is_file()
