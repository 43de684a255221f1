"""Chapter 1's checkers pass right answers and name each typical mistake."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from checker_helpers import assert_fails, verdict

from transformer_lab.exercises.ch01_embeddings import (
    check_cosine_similarity,
    check_embedding_lookup,
    check_one_hot,
    check_pca_2d,
)


def test_one_hot():
    assert verdict(check_one_hot, lambda i, V: F.one_hot(i, V).float()).passed
    assert verdict(check_one_hot, lambda i, V: torch.eye(V)[i]).passed
    assert_fails(verdict(check_one_hot, lambda i, V: F.one_hot(i, V)), "dtype torch.int64")
    assert_fails(verdict(check_one_hot, lambda i, V: F.one_hot(i).float()), "num_classes")
    assert_fails(verdict(check_one_hot, lambda i, V: torch.eye(V)[i - 1]), "too far left")
    assert_fails(verdict(check_one_hot, lambda i, V: torch.eye(V)[i].T), "expected shape")
    assert_fails(verdict(check_one_hot, lambda i, V: i.tolist()), "returned list")


def test_embedding_lookup():
    assert verdict(check_embedding_lookup, lambda i, E: E[i]).passed
    assert verdict(check_embedding_lookup, lambda i, E: F.one_hot(i, len(E)).float() @ E).passed
    one_hot = verdict(check_embedding_lookup, lambda i, E: F.one_hot(i, len(E)).float())
    assert_fails(one_hot, "one-hot")
    assert_fails(verdict(check_embedding_lookup, lambda i, E: E.T[:, i]), "as columns")
    assert_fails(verdict(check_embedding_lookup, lambda i, E: E[i - 1]), "row above")


def test_cosine_similarity():
    def cos(a, b):
        return (a * b).sum(-1) / (a.norm(dim=-1) * b.norm(dim=-1))

    assert verdict(check_cosine_similarity, cos).passed
    assert_fails(verdict(check_cosine_similarity, lambda a, b: (a * b).sum(-1)), "dot product")
    euclid = verdict(check_cosine_similarity, lambda a, b: (a - b).norm(dim=-1))
    assert_fails(euclid, "Euclidean distance")
    assert_fails(verdict(check_cosine_similarity, lambda a, b: 1 - cos(a, b)), "1 - cos")
    one_norm = verdict(check_cosine_similarity, lambda a, b: (a * b).sum(-1) / a.norm(dim=-1))
    assert_fails(one_norm, "only one of the two lengths")
    assert_fails(verdict(check_cosine_similarity, lambda a, b: (a * b).sum(0)), "shape")


def _pca(X):
    Xc = X - X.mean(0)
    return Xc @ torch.linalg.svd(Xc, full_matrices=False).Vh[:2].T


def test_pca_2d():
    assert verdict(check_pca_2d, _pca).passed
    assert verdict(check_pca_2d, lambda X: -_pca(X)).passed  # signs are free
    assert verdict(check_pca_2d, lambda X: _pca(X) * torch.tensor([1.0, -1.0])).passed

    def by_u_s(X):
        U, S, _ = torch.linalg.svd(X - X.mean(0), full_matrices=False)
        return U[:, :2] * S[:2]

    assert verdict(check_pca_2d, by_u_s).passed

    def uncentred(X):
        return X @ torch.linalg.svd(X, full_matrices=False).Vh[:2].T

    assert_fails(verdict(check_pca_2d, uncentred), "subtract the mean")
    assert_fails(
        verdict(
            check_pca_2d, lambda X: torch.linalg.svd(X - X.mean(0), full_matrices=False).U[:, :2]
        ),
        "U[:, :2]",
    )

    def directions(X):
        return torch.linalg.svd(X - X.mean(0), full_matrices=False).Vh[:2]

    assert_fails(verdict(check_pca_2d, directions), "two directions, not the points")
    assert_fails(verdict(check_pca_2d, lambda X: _pca(X).T), "one row per point")

    def columns(X):
        Xc = X - X.mean(0)
        return Xc @ torch.linalg.svd(Xc, full_matrices=False).Vh[:, :2]

    assert_fails(verdict(check_pca_2d, columns), "columns of Vh")

    def smallest(X):
        Xc = X - X.mean(0)
        return Xc @ torch.linalg.svd(Xc, full_matrices=False).Vh[-2:].T

    assert_fails(verdict(check_pca_2d, smallest), "smallest variance")
    assert_fails(verdict(check_pca_2d, lambda X: _pca(X) * 2), "values differ")
