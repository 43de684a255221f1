"""Chapter 2's checker of the simple RNN passes a right answer and names the usual mistakes."""

from __future__ import annotations

import pytest
import torch
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch02_rnn import check_gru_chain, check_rnn


def right(x, h0, W, U, b):
    h, out = h0, []
    for t in range(x.shape[1]):
        h = torch.tanh(h @ W.T + x[:, t] @ U.T + b)
        out.append(h)
    return torch.stack(out, dim=1)


def test_check_rnn_accepts_a_right_answer_and_names_mistakes():
    def no_feedback(x, h0, W, U, b):
        return torch.stack([torch.tanh(h0 @ W.T + x[:, t] @ U.T + b) for t in range(x.shape[1])], 1)

    def last_only(x, h0, W, U, b):
        return right(x, h0, W, U, b)[:, -1]

    def with_h0(x, h0, W, U, b):
        return torch.cat([h0[:, None], right(x, h0, W, U, b)[:, :-1]], dim=1)

    def no_tanh(x, h0, W, U, b):
        h, out = h0, []
        for t in range(x.shape[1]):
            h = h @ W.T + x[:, t] @ U.T + b
            out.append(h)
        return torch.stack(out, dim=1)

    assert verdict(check_rnn, right).passed
    assert_fails(verdict(check_rnn, no_feedback), "feed each new state back")
    assert_fails(verdict(check_rnn, last_only), "only the last state")
    assert_fails(verdict(check_rnn, with_h0), "include h0")
    assert_fails(verdict(check_rnn, no_tanh), "tanh is missing")

    def stub(*args):
        raise NotImplementedError

    assert_fails(verdict(check_rnn, stub), "not written yet")
    with pytest.raises(AssertionError, match="last state"):
        check_rnn(last_only, strict=True, verbose=False)


def test_check_gru_chain_accepts_the_measured_count_and_names_mistakes():
    assert verdict(check_gru_chain, lambda n, n_layers: n_layers * n).passed
    assert verdict(check_gru_chain, lambda n, n_layers: torch.tensor(n_layers * n)).passed
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: n), "does not grow with the layers")
    assert_fails(
        verdict(check_gru_chain, lambda n, n_layers: n + n_layers - 1), "shortest chain possible"
    )
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: n_layers * (n + 1)), "input products")
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: 3 * n * n_layers), "three gates")
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: 7), "longest_chain")
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: "n"), "whole number")
    assert_fails(verdict(check_gru_chain, lambda n, n_layers: n * 0.5), "whole number")

    def stub(n, n_layers):
        raise NotImplementedError

    assert_fails(verdict(check_gru_chain, stub), "not written yet")
    with pytest.raises(AssertionError, match="grow with the layers"):
        check_gru_chain(lambda n, n_layers: n, strict=True, verbose=False)
