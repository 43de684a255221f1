"""Checkers for chapter 1, from words to vectors: one-hot vectors, the embedding lookup,
cosine similarity and the 2-D map of word vectors (PCA)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from transformer_lab.exercises.runner import (
    CheckResult,
    WrongAnswer,
    call,
    compare,
    describe_shapes,
    need_tensor,
    run_check,
)

__all__ = ["check_one_hot", "check_embedding_lookup", "check_cosine_similarity", "check_pca_2d"]


def check_one_hot(fn, *, strict: bool = False, verbose: bool = True, seed: int = 0) -> CheckResult:
    """Check ``fn(indices, vocab_size)``: one-hot vectors for integer token indices.

    ``indices`` is a LongTensor of any shape ``[...]`` with values in ``0 .. vocab_size-1``;
    ``fn`` must return a **float** tensor ``[..., vocab_size]`` with a single 1 in each
    vector, at the position given by the index (counting from 0).
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for shape, V, ends in [((6,), 10, True), ((2, 5), 7, True), ((3, 1, 4), 13, False)]:
            idx = torch.randint(V - 2, shape, generator=gen)
            if ends:  # both ends of the vocabulary; the last case leaves out the top index
                idx.view(-1)[:2] = torch.tensor([0, V - 1])
            describe = f"indices of shape {shape}, vocab_size={V}"
            out = need_tensor(call(fn, (idx, V), describe, batch_hint=len(shape) > 1))
            want = F.one_hot(idx, V).float()
            got_shape = tuple(out.shape)
            if got_shape == (*shape, int(idx.max()) + 1) and int(idx.max()) + 1 < V:
                raise WrongAnswer(
                    f"the vectors have length max(index) + 1 = {int(idx.max()) + 1}, not "
                    f"vocab_size={V}; with F.one_hot pass num_classes=vocab_size ({describe})."
                )
            if got_shape == (V, *shape):
                raise WrongAnswer(
                    f"expected shape {tuple(want.shape)}, got {got_shape}: one row per word, "
                    "the vocabulary along the last axis."
                )
            if got_shape == tuple(want.shape) and not out.is_floating_point():
                raise WrongAnswer(
                    f"your vectors have dtype {out.dtype}; make them float (e.g. .float()) so "
                    "they can multiply the float embedding matrix E."
                )
            shifted = [
                ("the 1 sits one place too far right: indices count from 0", want.roll(1, -1)),
                ("the 1 sits one place too far left: indices count from 0", want.roll(-1, -1)),
            ]
            compare(out, want, describe, shifted)
        return "correct on 3 random inputs (shapes (6,), (2, 5) and (3, 1, 4))."

    return run_check("check_one_hot", body, strict, verbose)


def check_embedding_lookup(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(indices, E)``: look up the embedding of each token index.

    ``indices`` is a LongTensor ``[...]`` and ``E`` the embedding matrix ``[d_vocab, d_model]``
    (one row per word); ``fn`` must return ``[..., d_model]``, row ``indices[...]`` of ``E``.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for shape, V, d in [((5,), 11, 3), ((2, 7), 20, 6), ((3, 2, 3), 9, 4)]:
            idx = torch.randint(V, shape, generator=gen)
            E = torch.randn(V, d, generator=gen)
            describe = f"indices of shape {shape}, E of shape {(V, d)}"
            out = need_tensor(call(fn, (idx, E), describe, batch_hint=len(shape) > 1))
            want = E[idx]
            if tuple(out.shape) == (*shape, V):
                raise WrongAnswer(
                    f"the output has length |V|={V} per token: that is the one-hot vector; "
                    "multiply it by E (or index E's rows) to get the embedding."
                )
            if tuple(out.shape) == (d, *shape):
                raise WrongAnswer(
                    f"expected shape {tuple(want.shape)}, got {tuple(out.shape)}: the embeddings "
                    "came out as columns; each token's embedding is a row of E, E[indices]."
                )
            shifted = [
                ("you took the row below the right one: indices count from 0", E[(idx + 1) % V]),
                ("you took the row above the right one: indices count from 0", E[idx - 1]),
            ]
            compare(out, want, describe, shifted)
        return "correct on 3 random inputs, batch dimensions included."

    return run_check("check_embedding_lookup", body, strict, verbose)


def check_cosine_similarity(
    fn, *, strict: bool = False, verbose: bool = True, seed: int = 0
) -> CheckResult:
    """Check ``fn(a, b)``: cosine similarity of vectors along the last axis.

    ``a`` and ``b`` have the same shape ``[..., d]``; ``fn`` must return ``[...]`` holding
    ``a.b / (|a| |b|)`` for each pair of vectors (a 0-d tensor for two plain vectors).
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for shape in [(5,), (4, 7), (2, 3, 6)]:
            a = torch.randn(shape, generator=gen) * 3
            b = torch.randn(shape, generator=gen) * 0.5 + 0.3 * a
            describe = describe_shapes(a=a, b=b)
            out = need_tensor(call(fn, (a, b), describe, batch_hint=len(shape) > 1))
            want = F.cosine_similarity(a, b, dim=-1)
            na, nb, dot = a.norm(dim=-1), b.norm(dim=-1), (a * b).sum(-1)
            cos = dot / (na * nb)
            mistakes = [
                ("that is the dot product a.b; divide it by |a| |b|", dot),
                ("you divided by only one of the two lengths; divide by |a| |b|", dot / na),
                ("you divided by only one of the two lengths; divide by |a| |b|", dot / nb),
                ("you divided by squared lengths; use |a| = sqrt(sum a_i^2)", dot / (na * nb) ** 2),
                ("that is the Euclidean distance |a - b|, not the cosine", (a - b).norm(dim=-1)),
                ("that is the cosine distance 1 - cos; return the cosine itself", 1 - cos),
                ("that is the angle in radians; return its cosine", torch.arccos(cos)),
            ]
            compare(out, want, describe, mistakes)
        return "correct on 3 random inputs, batch dimensions included."

    return run_check("check_cosine_similarity", body, strict, verbose)


def _align_signs(t: torch.Tensor, ref: torch.Tensor) -> torch.Tensor:
    """``t`` with each column's sign flipped to agree with ``ref`` (PCA leaves it free)."""
    if t.shape != ref.shape or not t.is_floating_point():
        return t
    signs = torch.where((t.double() * ref.double()).sum(0) < 0, -1.0, 1.0).to(t.dtype)
    return t * signs


def check_pca_2d(fn, *, strict: bool = False, verbose: bool = True, seed: int = 0) -> CheckResult:
    """Check ``fn(X)``: the 2-D PCA map of the rows of ``X [n, d]``.

    ``fn`` must return ``[n, 2]``: the centred rows ``X - X.mean(0)`` projected on the two
    directions of largest variance, the first two right singular vectors of the centred
    matrix (rows of ``Vh`` in ``torch.linalg.svd``). Each column's sign is free.
    """
    gen = torch.Generator().manual_seed(seed)

    def body():
        for n, d in [(20, 6), (9, 15), (50, 4)]:
            scales = torch.linspace(3.0, 0.3, d)  # distinct variances: unique directions
            X = torch.randn(n, d, generator=gen) * scales + 2.0 * torch.randn(d, generator=gen)
            describe = f"X of shape {(n, d)}"
            out = need_tensor(call(fn, (X,), describe), "a tensor [n, 2]")
            Xc = X - X.mean(0)
            U, S, Vh = torch.linalg.svd(Xc, full_matrices=False)
            want = Xc @ Vh[:2].T

            if n != 2 and tuple(out.shape) == (2, n):
                raise WrongAnswer(
                    f"expected shape {(n, 2)}, got {(2, n)}: one row per point (the word), "
                    f"one column per direction ({describe})."
                )
            aligned = _align_signs(out, want)

            def mistakes(X=X, Xc=Xc, U=U, Vh=Vh, aligned=aligned):
                _, _, Vh_raw = torch.linalg.svd(X, full_matrices=False)
                found = [
                    (
                        "you did not subtract the mean first: PCA looks at the spread around "
                        "the centre, X - X.mean(0)",
                        X @ Vh_raw[:2].T,
                    ),
                    (
                        "those are U[:, :2], the points divided by their singular values; "
                        "multiply by S[:2] (or project: (X - mean) @ Vh[:2].T)",
                        U[:, :2],
                    ),
                    (
                        "you returned the two directions, not the points; project the "
                        "centred rows on them: (X - mean) @ Vh[:2].T",
                        Vh[:2],
                    ),
                ]
                if Vh.shape[0] == Vh.shape[1]:  # the wrong axis of Vh fits only when n >= d
                    found.append(
                        (
                            "you took columns of Vh; the directions are its rows, "
                            "(X - mean) @ Vh[:2].T",
                            Xc @ Vh[:, :2],
                        )
                    )
                    found.append(
                        (
                            "those are the directions of the smallest variance; singular "
                            "values come largest first, take the first two",
                            Xc @ Vh[-2:].T,
                        )
                    )
                return [(m, _align_signs(t, aligned)) for m, t in found]

            compare(aligned, want, describe, mistakes)
        return "correct on 3 random inputs (each direction's sign may differ, as PCA allows)."

    return run_check("check_pca_2d", body, strict, verbose)
