"""Bad inputs to what keeps a run safe: atomic writes, writable folders, checkpoints' plain
values and the settings a resumed run records.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from pathlib import Path

import numpy as np
from bad_input_support import CACHE, CK, TRAINING_LOSSES, TRN, case, gpt, torch

from transformer_lab.training.run import Run

case(
    CACHE.write_atomically,
    lambda: CACHE.write_atomically(None, lambda f: None),
    TypeError,
    "path must be a file path, got NoneType",
)

case(
    CACHE.write_atomically,
    lambda: CACHE.write_atomically("x.bin", b"data"),
    TypeError,
    "write must be a function file -> None, got bytes",
)

case(
    CACHE.write_atomically,
    lambda: CACHE.write_atomically(Path(__file__).parent, lambda f: None),
    ValueError,
    "is a folder; give the path of a file inside it",
)

case(
    CACHE.folder_lock,
    lambda: CACHE.folder_lock(3).__enter__(),
    TypeError,
    "folder must be a folder path, got int",
)
case(
    CACHE.check_writable,
    lambda: CACHE.check_writable(3),
    TypeError,
    "folder must be a folder path, got int",
)

case(
    CACHE.check_writable,
    lambda: CACHE.check_writable(__file__),
    ValueError,
    "is a file, not a folder",
)


def _save(**extra):
    model = gpt()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    return CK.save_checkpoint("never-written.pt", model=model, optimizer=opt, step=0, **extra)


case(
    CK.save_checkpoint,
    lambda: _save(extra={"seed": np.int64(3)}),
    TypeError,
    "extra['seed'] is a numpy.int64, which load_checkpoint (weights_only=True) would refuse",
)

case(
    CK.save_checkpoint,
    lambda: _save(extra={"out": [Path("runs")]}),
    TypeError,
    "extra['out'][0] is a pathlib.",
)

case(
    CK.save_checkpoint,
    lambda: _save(config="lr=0.1"),
    TypeError,
    "config must be a dict of plain values, got str",
)

case(
    TRN.train,
    lambda: TRN.train(
        gpt(), [1], run=Run(steps=1, checkpoint="c.pt", config={"lr": np.float32(1)})
    ),
    TypeError,
    "config['lr'] is a numpy.float32",
)

case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], run=Run(steps=1, checkpoint=Path(__file__).parent)),
    ValueError,
    "checkpoint must be a file path, got the folder",
)


def _resume_before_the_saved_step():
    """A 5-step run saved in a temporary folder, then resumed with steps=3."""
    import tempfile

    batches = [(torch.ones(4, 2), torch.zeros(4, 1))] * 5

    def mse(model, batch):
        return torch.nn.functional.mse_loss(model(batch[0]), batch[1])

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.pt"
        TRN.train(torch.nn.Linear(2, 1), batches, mse, Run(steps=5, seed=0, checkpoint=path))
        run = Run(steps=3, seed=0, checkpoint=path, resume=True)
        TRN.train(torch.nn.Linear(2, 1), batches, mse, run)


case(
    TRN.train,
    _resume_before_the_saved_step,
    ValueError,
    "run.pt is at step 5, past the run's steps=3: ask for more steps to go on, or start a new "
    "run without resume",
)

case(Run, lambda: Run(steps=-1), ValueError, "steps must be a non-negative int, got -1")
case(Run, lambda: Run(seconds=0), ValueError, "seconds must be")
case(Run, lambda: Run(progress=1), TypeError, "progress must be True or False")
case(Run, lambda: Run(threads=0), ValueError, "threads must be a positive int, got 0")
case(Run, lambda: Run(eval_every=0), ValueError, "eval_every must be a positive int, got 0")
case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], TRAINING_LOSSES.lm_loss, Run(eval_every=5)),
    ValueError,
    "eval_every needs an eval_fn",
)
case(Run, lambda: Run(eval_fn=3), TypeError, "eval_fn must be a function")
case(Run, lambda: Run(checkpoint_every=2), ValueError, "checkpoint_every needs a checkpoint")
case(Run, lambda: Run(resume=True), ValueError, "resume=True needs the checkpoint path")
case(Run, lambda: Run(device="gpu"), ValueError, "gpu")
case(
    Run,
    lambda: Run(checkpoint="c.pt", config={"lr": np.float32(1)}),
    TypeError,
    "config['lr'] is a numpy.float32",
)
case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], TRAINING_LOSSES.lm_loss, "fast"),
    TypeError,
    "run must be a transformer_lab.training.run.Run",
)
case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], TRAINING_LOSSES.lm_loss, lr=1e300),
    ValueError,
    "lr must be below float32's largest value (3.4e38), got 1e+300",
)
