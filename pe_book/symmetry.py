"""Permutations of a sequence, and how far a layer is from ignoring them (chapter 01).

A permutation ``perm`` of n tokens reorders the rows of X (n × d) into
``X[perm]``; as a matrix, ``P @ X == X[perm]`` with P[i, perm[i]] = 1.
A layer f is *permutation-equivariant* if f(X[perm]) == f(X)[perm] for every
perm, and a read-out g is *permutation-invariant* if g(X[perm]) == g(X).
The gaps below measure how far a layer is from either: 0 up to rounding means
the layer cannot tell the two orders apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from pe_book._checks import check_tensor

__all__ = ["check_permutation", "equivariance_gap", "invariance_gap", "permutation_matrix"]


def check_permutation(perm: Sequence[int] | torch.Tensor, n: int | None = None) -> list[int]:
    """Return ``perm`` as a list after checking it is a permutation of 0..n-1."""
    if isinstance(perm, torch.Tensor):
        perm = perm.tolist()
    if isinstance(perm, str | bytes) or not isinstance(perm, Sequence):
        raise TypeError(f"perm must be a sequence of ints, got {type(perm).__name__}")
    values = list(perm)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise TypeError(f"perm must hold ints, got {values!r}")
    size = len(values) if n is None else n
    if sorted(values) != list(range(size)):
        raise ValueError(f"perm must be a permutation of 0..{size - 1}, got {values}")
    return values


def permutation_matrix(
    perm: Sequence[int] | torch.Tensor, *, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The n × n matrix P with ``P @ X == X[perm]``: row i of P is the unit vector e_{perm[i]}."""
    values = check_permutation(perm)
    size = len(values)
    eye = torch.eye(size, dtype=dtype)
    return eye[values]  # (n, n): row i = e_{perm[i]}


def _gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max())


def equivariance_gap(
    layer: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, perm: Sequence[int]
) -> float:
    """max |layer(x[perm]) - layer(x)[perm]| over all entries; tokens along dim -2.

    0 (up to rounding) means the layer is equivariant for this permutation:
    reordering the input only reorders the output.
    """
    check_tensor("x", x, min_ndim=2, floating=True)
    values = check_permutation(perm, x.shape[-2])
    return _gap(layer(x[..., values, :]), layer(x)[..., values, :])


def invariance_gap(
    readout: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, perm: Sequence[int]
) -> float:
    """max |readout(x[perm]) - readout(x)|; tokens along dim -2 of x.

    0 (up to rounding) means the read-out cannot tell the two orders apart.
    """
    check_tensor("x", x, min_ndim=2, floating=True)
    values = check_permutation(perm, x.shape[-2])
    return _gap(readout(x[..., values, :]), readout(x))
