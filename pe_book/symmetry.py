"""Permutations of a sequence, and how far a layer is from ignoring them (chapter 1).

A permutation ``perm`` of n tokens reorders the rows of X (n × d) into
``X[perm]``; as a matrix, ``P @ X == X[perm]`` with P[i, perm[i]] = 1.
A layer f is *permutation-equivariant* if f(X[perm]) == f(X)[perm] for every
perm, and a read-out g is *permutation-invariant* if g(X[perm]) == g(X).
The gaps below measure how far a layer is from either: 0 up to rounding means
the layer cannot tell the two orders apart.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import torch

from pe_book._validate import validate_int, validate_tensor
from pe_book.attention import attention

__all__ = [
    "bos_share",
    "equivariance_gap",
    "invariance_gap",
    "permutation_matrix",
    "validate_permutation",
]


def validate_permutation(perm: Sequence[int] | torch.Tensor, n: int | None = None) -> list[int]:
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
    values = validate_permutation(perm)
    size = len(values)
    eye = torch.eye(size, dtype=dtype)
    return eye[values]  # (n, n): row i = e_{perm[i]}


def _orders(x: torch.Tensor, perm: Sequence[int] | None) -> list[list[int]]:
    n_tokens = x.shape[-2]
    if perm is not None:
        return [validate_permutation(perm, n_tokens)]
    if n_tokens > 8:
        raise ValueError(
            f"perm=None tries all orders; that is too many for {n_tokens} tokens (max 8)"
        )
    return [list(p) for p in itertools.permutations(range(n_tokens))]


def equivariance_gap(
    layer: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    perm: Sequence[int] | None = None,
) -> float:
    """max |layer(x[perm]) - layer(x)[perm]|; tokens along dim -2 of x.

    With ``perm=None`` the maximum is over *all* orders of the tokens (at most
    8 tokens, 40,320 orders). 0 up to rounding means the layer is equivariant:
    reordering the input only reorders the output.
    """
    validate_tensor("x", x, min_ndim=2, floating=True)
    reference = layer(x)
    return max(
        float((layer(x[..., order, :]) - reference[..., order, :]).abs().max())
        for order in _orders(x, perm)
    )


def invariance_gap(
    readout: Callable[[torch.Tensor], torch.Tensor],
    x: torch.Tensor,
    perm: Sequence[int] | None = None,
) -> float:
    """max |readout(x[perm]) - readout(x)|; tokens along dim -2 of x.

    With ``perm=None`` the maximum is over all orders of the tokens (at most 8).
    0 up to rounding means the read-out cannot tell the orders apart.
    """
    validate_tensor("x", x, min_ndim=2, floating=True)
    reference = readout(x)
    return max(
        float((readout(x[..., order, :]) - reference).abs().max()) for order in _orders(x, perm)
    )


def bos_share(seq_len: int, *, causal: bool = True) -> torch.Tensor:
    """How much attention each position pays to a first (BOS) token, with no positions at all.

    The input is a BOS token e_0 followed by ``seq_len - 1`` copies of one other
    token e_1; queries are zero, so every visible key gets the same weight.
    Returns the first coordinate of the output at each position m, i.e. the
    weight on BOS: 1 / (m + 1) with a causal mask (m + 1 keys visible), and
    1 / seq_len for every m without it. Shape (seq_len,), float64.
    A causal mask alone therefore lets a position-free layer count. Chapter 1.
    """
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    x = torch.zeros(seq_len, 2, dtype=torch.float64)  # (seq_len, 2): one token per row
    x[0, 0] = 1.0  # BOS = e_0 at m = 0
    x[1:, 1] = 1.0  # every later token is e_1
    queries = torch.zeros_like(x)  # zero scores: uniform weights over the visible keys
    return attention(queries, x, x, causal=causal)[:, 0]  # (seq_len,)
