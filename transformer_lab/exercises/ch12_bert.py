"""Checkers for chapter 12, BERT: a head's previous-token score, a head's bag-of-words score,
the expected counts of BERT's masking, and mean pooling over the real tokens."""

from __future__ import annotations

import torch

from transformer_lab.exercises.runner import CheckResult, call, compare, need_tensor, run_check
from transformer_lab.nn.pooling import mean_pool

__all__ = [
    "previous_token_score",
    "check_previous_token_score",
    "bag_of_words_score",
    "check_bag_of_words_score",
    "mask_counts",
    "check_mask_counts",
    "check_mean_pool",
]


def previous_token_score(pattern: torch.Tensor) -> torch.Tensor:
    """``[n_heads, pos, pos]`` attention -> ``[n_heads]``: the average weight a query
    ``i >= 1`` gives to key ``i - 1``."""
    return pattern.diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1)


def _random_pattern(gen: torch.Generator, n_heads: int, pos: int) -> torch.Tensor:
    scores = torch.randn(n_heads, pos, pos, generator=gen) * 2
    return torch.softmax(scores, dim=-1)  # [n_heads, query_pos, key_pos], rows sum to 1


def check_previous_token_score(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(pattern [n_heads, pos, pos]) -> [n_heads]``: the average, over queries
    ``i = 1 .. pos-1``, of the weight on key ``i - 1``."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for n_heads, pos in ((12, 9), (1, 2), (4, 15)):
            pattern = _random_pattern(gen, n_heads, pos)
            describe = f"pattern of shape {tuple(pattern.shape)}"
            out = need_tensor(call(fn, (pattern,), describe))
            sub = pattern.diagonal(offset=-1, dim1=-2, dim2=-1)  # [n_heads, pos - 1]
            mistakes = [
                (
                    "you read the weight on the NEXT token (key i+1); the previous token of "
                    "query i is key i-1, below the diagonal",
                    pattern.diagonal(offset=1, dim1=-2, dim2=-1).mean(-1),
                ),
                (
                    "you divided by pos; only pos-1 queries have a previous token",
                    sub.sum(-1) / pos,
                ),
                ("you summed the weights; take their mean", sub.sum(-1)),
                (
                    "you read the diagonal (each token's weight on itself)",
                    pattern.diagonal(dim1=-2, dim2=-1).mean(-1),
                ),
                ("you averaged over heads instead of over queries", sub.mean(0)),
            ]
            compare(out, previous_token_score(pattern), describe, mistakes)
        return "right for 12, 1 and 4 heads, including a 2-token sequence."

    return run_check("check_previous_token_score", body, strict, verbose)


def check_mean_pool(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(last_hidden_state [batch, pos, d_model], attention_mask [batch, pos]) ->
    [batch, d_model]``: the mean of each sequence's vectors over its real tokens."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        hidden = torch.randn(3, 6, 5, generator=gen)
        mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]])
        describe = "3 sequences of 6, 3 and 1 real tokens, d_model = 5"
        out = need_tensor(call(fn, (hidden, mask), describe))
        m = mask[..., None].float()
        mistakes = [
            ("you averaged over padding too; weight each position by its mask", hidden.mean(1)),
            (
                "you zeroed the padding but divided by pos; divide by the number of real tokens",
                (hidden * m).sum(1) / hidden.shape[1],
            ),
            ("you summed the real tokens; divide by how many there are", (hidden * m).sum(1)),
            ("you took the [CLS] vector (position 0), not the mean", hidden[:, 0]),
        ]
        compare(out, mean_pool(hidden, mask), describe, mistakes)
        return "right, padding ignored."

    return run_check("check_mean_pool", body, strict, verbose)


def bag_of_words_score(pattern: torch.Tensor) -> torch.Tensor:
    """``[n_heads, pos, pos]`` attention over ``[CLS] sentence [SEP]`` -> ``[n_heads]``: for
    each query among the ``m = pos - 2`` sentence tokens, the weight it shares with the even
    spread ``1/m`` over them, ``sum_j min(A[i, j], 1/m)``, averaged over those queries."""
    m = pattern.shape[-1] - 2
    rows = pattern[:, 1:-1, 1:-1]  # [n_heads, m, m] sentence queries and keys
    return rows.clamp(max=1.0 / m).sum(-1).mean(-1)


def check_bag_of_words_score(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(pattern [n_heads, pos, pos]) -> [n_heads]`` (:func:`bag_of_words_score`)."""

    def body():
        gen = torch.Generator().manual_seed(seed)
        for n_heads, pos in ((12, 9), (2, 4), (4, 15)):
            pattern = _random_pattern(gen, n_heads, pos)
            describe = f"pattern of shape {tuple(pattern.shape)}, [CLS] first and [SEP] last"
            out = need_tensor(call(fn, (pattern,), describe))
            m = pos - 2
            rows = pattern[:, 1:-1, 1:-1]
            mistakes = [
                (
                    "you spread 1/pos over every position; the even spread is 1/m over the "
                    "m = pos - 2 sentence tokens, [CLS] and [SEP] left out",
                    pattern.clamp(max=1.0 / pos).sum(-1).mean(-1),
                ),
                (
                    "you kept [CLS] and [SEP] as queries and keys; use the sentence tokens only",
                    pattern.clamp(max=1.0 / m).sum(-1).mean(-1),
                ),
                (
                    "you summed the rows without capping each weight at 1/m",
                    rows.sum(-1).mean(-1),
                ),
                (
                    "you summed over the queries; average them",
                    rows.clamp(max=1.0 / m).sum((-1, -2)),
                ),
            ]
            compare(out, bag_of_words_score(pattern), describe, mistakes)
        return "right for 12, 2 and 4 heads, including a sentence of two tokens."

    return run_check("check_bag_of_words_score", body, strict, verbose)


def mask_counts(
    n_tokens: int, mask_prob: float = 0.15, mask_token_prob: float = 0.8,
    random_token_prob: float = 0.1,
) -> torch.Tensor:  # fmt: skip
    """The expected numbers of picked, ``[MASK]``, random and unchanged tokens among
    ``n_tokens`` ordinary tokens, as a float tensor ``[4]``."""
    picked = n_tokens * mask_prob
    kept = 1.0 - mask_token_prob - random_token_prob
    return torch.tensor(
        [picked, picked * mask_token_prob, picked * random_token_prob, picked * kept],
        dtype=torch.float64,
    )


def check_mask_counts(fn, *, strict: bool = False, verbose: bool = True) -> CheckResult:
    """Check ``fn(n_tokens, mask_prob) -> [4]``: expected picked, [MASK], random, unchanged."""

    def body():
        for n_tokens, p in ((32 * 128, 0.15), (1000, 0.4), (7, 0.15)):
            describe = f"n_tokens={n_tokens}, mask_prob={p}"
            out = need_tensor(call(fn, (n_tokens, p), describe), "a tensor of 4 numbers")
            out = out.double()
            want = mask_counts(n_tokens, p)
            mistakes = [
                (
                    "you took 80% and 10% of all the tokens; they are shares of the picked",
                    torch.tensor([n_tokens * p, 0.8 * n_tokens, 0.1 * n_tokens, 0.1 * n_tokens]),
                ),
                ("you used 0.15 where mask_prob was asked", mask_counts(n_tokens, 0.15)),
                (
                    "the order is picked, [MASK], random, unchanged",
                    want[[1, 0, 2, 3]],
                ),
            ]
            compare(out, want, describe, mistakes)
        return "right for 4,096 tokens at 15%, 1,000 at 40% and 7 at 15%."

    return run_check("check_mask_counts", body, strict, verbose)
