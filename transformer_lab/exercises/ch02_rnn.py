"""Checkers for chapter 2, the RNN bottleneck: the simple RNN's recurrence."""

from __future__ import annotations

import torch
from torch import nn

from .runner import CheckResult, call, compare, need_tensor, run_check

__all__ = ["check_rnn"]


def check_rnn(fn, *, strict: bool = False, verbose: bool = True, seed: int = 0) -> CheckResult:
    """Check ``fn(x, h0, W, U, b)`` -> all states ``[batch, pos, d_hidden]`` of the simple
    RNN ``h_t = tanh(W h_{t-1} + U x_t + b)`` for ``x [batch, pos, d_in]``, ``h0 [batch,
    d_hidden]``, against ``torch.nn.RNN`` with the same weights."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for batch, pos, d_in, d_hidden in [(2, 5, 3, 4), (1, 1, 4, 4), (3, 7, 2, 6)]:
            x = torch.randn(batch, pos, d_in, generator=gen)
            h0 = torch.randn(batch, d_hidden, generator=gen)
            W = torch.randn(d_hidden, d_hidden, generator=gen) / d_hidden**0.5
            U = torch.randn(d_hidden, d_in, generator=gen)
            b = torch.randn(d_hidden, generator=gen)
            reference = nn.RNN(d_in, d_hidden, batch_first=True)
            with torch.no_grad():
                reference.weight_hh_l0.copy_(W)
                reference.weight_ih_l0.copy_(U)
                reference.bias_ih_l0.copy_(b)
                reference.bias_hh_l0.zero_()
                want, _ = reference(x, h0[None])
            describe = f"x {tuple(x.shape)}, h0 {tuple(h0.shape)}"
            got = need_tensor(call(fn, (x, h0, W, U, b), describe))
            linear, fixed_h, no_tanh, states = [], [], [h0], [h0]
            for t in range(pos):
                linear.append(states[-1] @ W.T + x[:, t] @ U.T + b)
                states.append(torch.tanh(linear[-1]))
                fixed_h.append(torch.tanh(h0 @ W.T + x[:, t] @ U.T + b))
                no_tanh.append(no_tanh[-1] @ W.T + x[:, t] @ U.T + b)
            mistakes = [
                (
                    "you returned only the last state; return the state after every step",
                    want[:, -1],
                ),
                (
                    "the states include h0 as the first position; return h_1 .. h_n only",
                    torch.stack(states[:-1], 1),
                ),
                ("the tanh is missing (or applied in the wrong place)", torch.stack(linear, 1)),
                (
                    "the tanh is missing: h_t = tanh(W h_{t-1} + U x_t + b)",
                    torch.stack(no_tanh[1:], 1),
                ),
                (
                    "every step starts from h0: feed each new state back in as h_{t-1}",
                    torch.stack(fixed_h, 1),
                ),
            ]
            compare(got, want, describe, mistakes)
        return "your RNN matches torch.nn.RNN on 3 random inputs."

    return run_check("check_rnn", body, strict, verbose)
