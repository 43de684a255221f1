"""Bad inputs to the modules at the top of the package.

Each case: a callable, a call that must fail, the error type and a fragment of the
message (run by ``tests/test_bad_inputs.py``)."""

import os

import torch
from bad_input_support import (  # noqa: F401
    DV,
    H,
    case,
    gpt,
    ids,
    nn,
)

from transformer_lab import checks as CH

case(
    DV.device,
    lambda: DV.device("gpu"),
    ValueError,
    "prefer must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'gpu'",
)

case(DV.device, lambda: DV.device("cuda:99"), ValueError, "prefer='cuda:99' but ")

case(
    DV.device,
    lambda: DV.device(3),
    TypeError,
    "prefer must be a device name such as 'cpu', got int",
)


def _gpu_branch_with(value: str):
    """gpu_branch() with TRANSFORMER_LAB_FORCE_GPU_BRANCHES set to ``value`` for the call."""
    old = os.environ.get(DV.FORCE_GPU_BRANCHES)
    os.environ[DV.FORCE_GPU_BRANCHES] = value
    try:
        return DV.gpu_branch()
    finally:
        if old is None:
            del os.environ[DV.FORCE_GPU_BRANCHES]
        else:
            os.environ[DV.FORCE_GPU_BRANCHES] = old


case(
    DV.gpu_branch,
    lambda: _gpu_branch_with("yes"),
    ValueError,
    "TRANSFORMER_LAB_FORCE_GPU_BRANCHES must be 0 or 1, got 'yes'",
)

case(
    DV.seed_everything, lambda: DV.seed_everything(1.5), TypeError, "seed must be an int, got float"
)

case(
    DV.seed_everything,
    lambda: DV.seed_everything(-1),
    ValueError,
    "seed must be a non-negative int, got -1",
)

case(
    DV.check_device,
    lambda: DV.check_device("tpu:x"),
    ValueError,
    "device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got 'tpu:x'",
)

for choice in ("nope", "cuda:-1", ""):  # torch's own message lists every kind it knows
    case(
        DV.check_device,
        lambda choice=choice: DV.check_device(choice),
        ValueError,
        f"device must be 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device, got {choice!r}",
    )

case(H.Hook, lambda: H.Hook()(None), TypeError, "a hook passes tensors through, got NoneType")

case(
    H.capture,
    lambda: H.capture(None).__enter__(),
    TypeError,
    "model must be an nn.Module, got NoneType",
)

case(
    H.capture,
    lambda: H.capture(gpt(), "no.such.hook").__enter__(),
    ValueError,
    "no hook matches ['no.such.hook']; available: ['blocks.0.attn.q',",
)

case(
    H.run_with_cache,
    lambda: H.run_with_cache(gpt(), ids([1, 2]), names=["nope"]),
    ValueError,
    "no hook matches ['nope']; available: ['blocks.0.attn.q',",
)


# --- the shared argument checks and evaluation mode ------------------------------------------

case(CH.integer, lambda: CH.integer(1.5, "n"), TypeError, "n must be an int, got float")
case(CH.integer, lambda: CH.integer(True, "n"), TypeError, "n must be an int, got bool")
case(CH.integer, lambda: CH.integer(2, "n", minimum=3), ValueError, "n must be an int >= 3, got 2")
case(
    CH.integer,
    lambda: CH.integer(0, "d_model", minimum=1),
    ValueError,
    "d_model must be a positive int, got 0",
)
case(
    CH.integer,
    lambda: CH.integer(True, "d_model", minimum=1),
    TypeError,
    "d_model must be an int, got bool",
)
case(CH.integer, lambda: CH.integer(-1, "k", minimum=0), ValueError,
     "k must be a non-negative int, got -1")  # fmt: skip
case(CH.integer, lambda: CH.integer(2**63, "n", minimum=1), ValueError,
     "n must be an int of at most 63 bits")  # fmt: skip
case(
    CH.finite_number,
    lambda: CH.finite_number(0.0, "lr", above=0),
    ValueError,
    "lr must be a positive finite number, got 0.0",
)
case(CH.finite_number, lambda: CH.finite_number(10**400, "lr", above=0), ValueError,
     "lr must be a positive finite number")  # fmt: skip
case(CH.finite_number, lambda: CH.finite_number(-(10**400), "x"), ValueError,
     "x must be a finite number")  # fmt: skip
case(
    CH.finite_number,
    lambda: CH.finite_number(float("inf"), "lr", above=0),
    ValueError,
    "lr must be a positive finite number, got inf",
)
case(
    CH.finite_number,
    lambda: CH.finite_number(-0.5, "wd", at_least=0),
    ValueError,
    "wd must be a non-negative finite number, got -0.5",
)
case(CH.finite_number, lambda: CH.finite_number("1", "lr", above=0), TypeError,
     "lr must be a number, got str")  # fmt: skip
case(CH.finite_number, lambda: CH.finite_number(float("nan"), "x"), ValueError, "x must be")
case(CH.fraction, lambda: CH.fraction(1.5, "p"), ValueError, "p must be in [0, 1], got 1.5")
case(CH.fraction, lambda: CH.fraction(1.0, "p", closed=False), ValueError, "p must be in [0, 1)")
case(
    CH.one_of,
    lambda: CH.one_of("tanh", ("relu", "gelu"), "activation"),
    ValueError,
    "activation must be one of",
)
case(CH.instance_of, lambda: CH.instance_of(3, str, "name"), TypeError, "name must be")
case(CH.torch_module, lambda: CH.torch_module(3, nn.Linear), TypeError, "Linear")
case(
    CH.torch_tensor,
    lambda: CH.torch_tensor([1, 2], "x"),
    TypeError,
    "x must be a torch.Tensor, got list",
)
case(
    CH.floating_tensor,
    lambda: CH.floating_tensor(torch.ones(2, dtype=torch.long), "x"),
    TypeError,
    "x must be a floating-point tensor",
)
case(
    CH.floating_tensor,
    lambda: CH.floating_tensor(torch.ones(2), "x", dim=2, shape="[pos, d]"),
    ValueError,
    "x must be [pos, d]",
)
case(CH.token_ids, lambda: CH.token_ids(torch.ones(2), "idx"), TypeError, "idx must be")
case(
    CH.token_batch,
    lambda: CH.token_batch(torch.ones(2, dtype=torch.long), "idx"),
    ValueError,
    "idx must be",
)
case(
    CH.check_labels,
    lambda: CH.check_labels(torch.tensor([0, 3]), 3),
    ValueError,
    "labels must be in [0, 3)",
)
case(CH.check_labels, lambda: CH.check_labels(torch.ones(2), 3), TypeError, "integer class ids")
case(
    CH.check_token_batch,
    lambda: CH.check_token_batch(torch.ones(1, 9, dtype=torch.long), 8, 10),
    ValueError,
    "8",
)
case(
    CH.check_token_range,
    lambda: CH.check_token_range(torch.tensor([0, 10]), 10),
    ValueError,
    "token ids",
)
case(
    DV.evaluating,
    lambda: DV.evaluating(None).__enter__(),
    TypeError,
    "model must be a torch.nn.Module",
)
case(
    CH.layer_input,
    lambda: CH.layer_input(torch.ones(2, 5), 4, "SwiGLU"),
    ValueError,
    "SwiGLU expects d_model=4, got shape (2, 5)",
)
case(
    CH.layer_input,
    lambda: CH.layer_input([1.0], 4, "LayerNorm"),
    TypeError,
    "LayerNorm expects a floating-point tensor, got list",
)
case(
    CH.weights_dtype,
    lambda: CH.weights_dtype(torch.ones(2, dtype=torch.float64), torch.ones(2)),
    TypeError,
    "input has dtype torch.float64 but the weights torch.float32",
)

for value, error, fragment in [
    (2**64, ValueError, "seed must be an int in [-2**63, 2**64), got 18446744073709551616"),
    (-(2**63) - 1, ValueError, "seed must be an int in [-2**63, 2**64)"),
    (1.0, TypeError, "seed must be an int, got float"),
    (True, TypeError, "seed must be an int, got bool"),
]:
    case(CH.seed_int, lambda value=value: CH.seed_int(value), error, fragment)
