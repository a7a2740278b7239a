"""Why Position Interpolation works: RoPE's score between the integers (chapter 8, section 8.3).

Chen et al. (2023, section 2.3) argue for squeezing positions rather than extrapolating
them. RoPE's score at a real offset s is a(s) = Re Σ_i h_i e^{𝗂 s θ_i}
(:func:`rotary_score`), with θ_i = b^(-2i/d) and h_i one complex number per pair. Fitted
at the integers 0..L-1 (:func:`fit_rotary_score`), a may reach values far outside the
targets' range beyond L, while between two integers it stays near the chord through them
(:func:`interpolation_gap`); their Theorem 2.1 bounds that gap, with a constant too
small (:func:`interpolation_bound` gives the paper's, a corrected and a textbook rule).
The scalings themselves are in :mod:`pe_book.rope_scaling`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from pe_book._validate import (
    validate_base,
    validate_choice,
    validate_int,
    validate_positive_float,
    validate_real_vector,
    validate_tensor,
)
from pe_book.sinusoidal import frequencies

__all__ = [
    "fit_rotary_score",
    "interpolation_bound",
    "interpolation_gap",
    "rotary_score",
]


def _coefficients(coefficients: object) -> torch.Tensor:
    """h_i, one complex number per pair, as a 1-D complex128 tensor."""
    coefficients = validate_tensor("coefficients", coefficients, ndim=1)
    if not coefficients.is_complex():
        raise TypeError(
            "coefficients must be a complex tensor (one h_i per pair), "
            f"got dtype {coefficients.dtype}"
        )
    if coefficients.numel() == 0:
        raise ValueError("coefficients must hold at least one h_i (d/2 >= 1)")
    return coefficients.to(torch.complex128)


def rotary_score(
    coefficients: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | float,
    base: float = 10000.0,
) -> torch.Tensor:
    """a(s) = Re Σ_i h_i e^{𝗂 s θ_i}, θ_i = b^(-2i/d), at real positions s. Chapter 8.

    ``coefficients`` holds h_i for the d/2 pairs (complex, so d = 2·len); at an integer
    offset s = m - n with h_i = q_i conj(k_i) this is RoPE's score q_m · k_n
    (:func:`pe_book.decay.rotated_scores`). Positions may be any finite reals (the
    PI paper's argument evaluates a between and beyond the integers). Returns float64.
    """
    h = _coefficients(coefficients)
    s = validate_real_vector("positions", positions)  # any finite reals
    base = validate_base(base)
    phases = s[:, None] * frequencies(2 * h.shape[0], base)[None, :]
    return (h[None, :] * torch.polar(torch.ones_like(phases), phases)).sum(-1).real


def fit_rotary_score(
    targets: torch.Tensor, dim: int, base: float = 10000.0, *, rcond: float | None = None
) -> torch.Tensor:
    """Least-squares h_i (complex, d/2 of them) with a(s) ≈ targets[s] at s = 0..L-1. Chapter 8.

    Minimises Σ_s (a(s) - targets[s])² over the d real numbers Re h_i, Im h_i, as
    a(s) = Σ_i Re h_i cos(sθ_i) - Im h_i sin(sθ_i) (torch.linalg.lstsq, SVD driver
    ``gelsd``, smallest-norm solution). Singular values below ``rcond`` times the largest
    count as zero (None: machine precision times max(L, d)); the slow pairs barely
    turn over L positions, so many are tiny, and ``rcond`` picks among near-equal fits.
    """
    validate_tensor("targets", targets, ndim=1, floating=True)
    if targets.numel() == 0 or not bool(torch.isfinite(targets).all()):
        raise ValueError("targets must hold at least one value, all finite")
    dim = validate_int("dim", dim, minimum=2, even=True)
    base = validate_base(base)
    if rcond is not None:
        rcond = validate_positive_float("rcond", rcond)
    s = torch.arange(targets.shape[0], dtype=torch.float64)[:, None]
    theta = frequencies(dim, base)[None, :]
    design = torch.cat((torch.cos(s * theta), -torch.sin(s * theta)), dim=1)  # (L, d)
    y = targets.detach().to("cpu", torch.float64)[:, None]
    solution = torch.linalg.lstsq(design, y, rcond=rcond, driver="gelsd").solution[:, 0]
    return torch.complex(solution[: dim // 2], solution[dim // 2 :])


def interpolation_gap(
    coefficients: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | float,
    base: float = 10000.0,
) -> torch.Tensor:
    """|a(s) - a_lin(s)|: how far a strays from the chord through a(⌊s⌋) and a(⌊s⌋ + 1).

    a_lin(s) = (1 - t) a(⌊s⌋) + t a(⌊s⌋ + 1), t = s - ⌊s⌋; zero at the integers; bounded
    by :func:`interpolation_bound`. Float64. Chapter 8.
    """
    s = validate_real_vector("positions", positions)  # any finite reals
    below = torch.floor(s)
    chord = torch.lerp(
        rotary_score(coefficients, below, base),
        rotary_score(coefficients, below + 1, base),
        s - below,
    )
    return (rotary_score(coefficients, s, base) - chord).abs()


def interpolation_bound(
    coefficients: torch.Tensor, positions: object, base: float = 10000.0, *, rule: str = "paper"
) -> torch.Tensor:
    """A bound on |a(s) - a_lin(s)| (:func:`interpolation_gap`), s1 = ⌊s⌋, s2 = s1 + 1. Chapter 8.

    "paper": Chen et al.'s Theorem 2.1 (2023, eq. 5), d max_i |h_i| (s - s1)(s2 - s) / (8 ln b).
    "corrected": the theorem's form with the constant its proof supports,
    max_i |h_i| (Σ_i θ_i²) (s - s1)(s2 - s) / 2, where Σ_i θ_i² = (1 - b^-2) / (1 - b^(-4/d))
    and Σ_i θ_i² / 2 ≈ d / (8 ln b) + 1/4; it holds.
    "textbook": (Σ_i |h_i| θ_i²) (s - s1)(s2 - s) / 2, from |a''| <= Σ_i |h_i| θ_i²; it holds.
    The paper's proof (Appendix A) bounds Σ_i θ_i² by d / (4 ln b) with b^x <= 1 + x ln b for
    x < 0, which holds the other way round (e^y >= 1 + y): its constant is too small, by an
    additive 1/4 (2.6 times at d = 16); h_i = 1 at s = 1/2 exceeds it (section 8.3). Float64.
    """
    h, s = _coefficients(coefficients), validate_real_vector("positions", positions)
    base = validate_base(base)
    rule = validate_choice("rule", rule, ("paper", "corrected", "textbook"))
    t = s - torch.floor(s)
    if rule == "paper":
        return 2 * h.shape[0] * h.abs().max() * t * (1 - t) / (8 * math.log(base))
    squares = frequencies(2 * h.shape[0], base) ** 2  # θ_i²
    if rule == "corrected":
        return h.abs().max() * squares.sum() * t * (1 - t) / 2
    return (h.abs() * squares).sum() * t * (1 - t) / 2
