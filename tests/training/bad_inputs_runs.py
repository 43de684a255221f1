"""Bad inputs to what keeps a run safe: atomic writes, writable folders, checkpoints' plain
values and the settings a resumed run records.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

from pathlib import Path

import numpy as np
from bad_input_support import CACHE, CK, TRN, case, gpt, torch

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
    lambda: TRN.train(gpt(), [1], steps=1, checkpoint="c.pt", run_config={"lr": np.float32(1)}),
    TypeError,
    "run_config['lr'] is a numpy.float32",
)

case(
    TRN.train,
    lambda: TRN.train(gpt(), [1], steps=1, checkpoint=Path(__file__).parent),
    ValueError,
    "checkpoint must be a file path, got the folder",
)
