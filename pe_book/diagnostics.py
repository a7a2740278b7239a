"""Measurements of score matrices (chapters 2 and 4 onwards).

A position score S[m, n] is *relative* when it depends on m - n only, i.e. S is
constant along every diagonal (a Toeplitz matrix). :func:`toeplitz_deviation`
measures how far a matrix is from that: 0 up to rounding means relative.
"""

from __future__ import annotations

import torch

from pe_book._validate import validate_tensor

__all__ = ["toeplitz_deviation"]


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
