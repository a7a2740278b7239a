"""Measurements of score matrices (chapters 2 and 4 onwards).

A position score S[m, n] is *relative* when it depends on m - n only, i.e. S is
constant along every diagonal (a Toeplitz matrix). :func:`toeplitz_deviation`
measures how far a matrix is from that: 0 up to rounding means relative.
:func:`exact_singular_values` measures the sinusoidal table itself beyond float64.
"""

from __future__ import annotations

import mpmath
import torch

from pe_book._validate import validate_base, validate_int, validate_tensor

__all__ = ["exact_singular_values", "toeplitz_deviation"]


def toeplitz_deviation(scores: torch.Tensor) -> float:
    """max over diagonals r of (max - min of S[m, m - r]): 0 iff S[m, n] depends on m - n only."""
    validate_tensor("scores", scores, ndim=2)
    rows, cols = scores.shape
    spreads = [
        float(diagonal.max() - diagonal.min())
        for r in range(-(rows - 1), cols)
        if (diagonal := scores.diagonal(r)).numel() > 1
    ]
    return max(spreads, default=0.0)


def exact_singular_values(
    seq_len: int, dim: int, base: float = 10000.0, *, digits: int = 30
) -> list[float]:
    """Singular values, largest first, of the d × L matrix [p_0 ... p_{L-1}] of the sinusoidal
    encoding (pair i: sin mθ_i, cos mθ_i, θ_i = b^(-2i/d)), computed with ``digits``
    significant digits (mpmath) instead of float64's 16: chapter 4 shows with it that the
    matrix's numerical rank at L = 64 is the positions' shortfall, not double precision's.
    Slow (seconds at L = d = 64): for small matrices."""
    seq_len = validate_int("seq_len", seq_len, minimum=1)
    dim = validate_int("dim", dim, minimum=2, even=True)
    base = validate_base(base)
    digits = validate_int("digits", digits, minimum=16)
    with mpmath.workdps(digits):
        columns = mpmath.matrix(dim, seq_len)
        for i in range(dim // 2):
            theta = mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / dim)
            for m in range(seq_len):
                columns[2 * i, m] = mpmath.sin(m * theta)
                columns[2 * i + 1, m] = mpmath.cos(m * theta)
        sigma = mpmath.svd_r(columns, compute_uv=False)
        return sorted((float(s) for s in sigma), reverse=True)
