"""Checkers for chapter 2, the RNN bottleneck: the simple RNN's recurrence, and the chain
of dependent matrix products of a stacked GRU."""

from __future__ import annotations

import math

import torch
from torch import nn

from transformer_lab.analysis.sequential_depth import is_matrix_product, longest_chain
from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    as_number,
    call,
    compare,
    need_tensor,
    run_check,
)

__all__ = ["check_rnn", "check_gru_chain"]


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


def _measured_gru_chain(n: int, n_layers: int) -> int:
    """Matrix products on the longest chain of ``nn.GRU(4, 4, num_layers=n_layers)`` over n
    words, measured in the autograd graph (on the CPU, where PyTorch runs the steps one by
    one in the graph)."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        gru = nn.GRU(4, 4, num_layers=n_layers, batch_first=True)
        out, _ = gru(torch.randn(1, n, 4))
    return longest_chain(out, count=is_matrix_product)


def check_gru_chain(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n, n_layers)`` -> the number of matrix products on the longest chain of
    dependent operations of ``torch.nn.GRU(d, d, num_layers=n_layers)`` reading n words,
    against ``longest_chain`` of the layer's autograd graph."""

    def body():
        for n, n_layers in [(1, 1), (6, 1), (5, 2), (9, 3), (3, 4), (12, 2)]:
            describe = f"n={n}, n_layers={n_layers}"
            out = call(fn, (n, n_layers), describe)
            got = as_number(out)
            if got is None or not math.isfinite(got) or got != int(got):
                raise WrongAnswer(
                    f"your function returned {out!r} for {describe}; it should return a whole "
                    "number of matrix products."
                )
            got = int(got)
            want = _measured_gru_chain(n, n_layers)
            if got == want:
                continue
            mistakes = {
                n: "your count does not grow with the layers: layer 2 reads layer 1's states, "
                "so its chain of steps comes after layer 1's",
                n + n_layers - 1: "that is the shortest chain possible in principle, with layer "
                "2 starting on word t as soon as layer 1 has finished it; PyTorch's nn.GRU runs "
                "each layer over the whole sequence before the next one starts",
                n_layers * n + n_layers - 1: "one product too many per extra layer: a layer's "
                "input product (all words at once) and its first step's W h_0 run side by side, "
                "so they add one product to the chain, not two",
                n_layers * (n + 1): "one product too many per layer: the input products U x_t "
                "of all words are one product computed beside the chain (alongside the first "
                "step's W h_0), not an extra step",
                3 * n * n_layers: "the three gates' products in a step run side by side (PyTorch "
                "even does them as one product), so each step adds one product to the chain",
                6 * n * n_layers: "the six products of a step (three gates, input and state) "
                "do not wait for each other; each step adds one product to the chain",
            }
            hint = mistakes.get(int(got), "")
            raise WrongAnswer(
                f"for {describe} the longest chain has {want} matrix products, your function "
                f"says {got}" + (f": {hint}." if hint else ". Measure a few with longest_chain.")
            )
        return "your count matches the chain measured in the autograd graph for 6 GRUs."

    return run_check("check_gru_chain", body, strict, verbose)
