"""Evidence for the claims about longer contexts for RoPE (chapter 8)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import rope_scaling
from pe_book.claims import Finding, evidence

#: (dim, factor κ, trained length L_orig, current length L) -> the frequencies θ'_i used at L.
DynamicFrequencies = Callable[[int, float, int, int], torch.Tensor]


def pe_book_dynamic(dim: int, factor: float, original: int, seq_len: int) -> torch.Tensor:
    """pe_book's dynamic NTK frequencies (the formula transformers uses, compared in the tests)."""
    scaling = rope_scaling.DynamicNTKScaling(factor, original)
    return rope_scaling.scaled_frequencies(dim, scaling=scaling, seq_len=seq_len)[0]


@evidence("yarn-dynamic-scale")
def dynamic_scale(frequencies: DynamicFrequencies = pe_book_dynamic) -> Finding:
    """The paper's s = max(1, L/L_orig) is its definition; what the code most models run does.

    transformers' ``dynamic`` type (pe_book's DynamicNTKScaling reproduces it, a
    reference test) divides the slowest pair by κ·L/L_orig − (κ − 1) with a
    configured factor κ; by algebra that is L/L_orig only for κ = 1. Measured: the
    division at L = 4·L_orig for the factors configs set.
    """
    dim, original = 128, 2048
    slowest = float(rope_scaling.scaled_frequencies(dim)[0][-1])
    factors = (1.0, 2.0, 4.0, 8.0)
    divided = {
        factor: slowest / float(frequencies(dim, factor, original, 4 * original)[-1])
        for factor in factors
    }
    departs = [f for f in factors if abs(divided[f] - 4) > 1e-6]
    shown = (
        f"d = {dim}, L_orig = {original:,}, input L = 4·L_orig: the code divides the slowest"
        " pair by "
        + ", ".join(f"{divided[f]:.3g} (κ = {f:g})" for f in factors)
        + "; the paper's s = max(1, L/L_orig) = 4",
    )
    caveat = None
    if departs:
        example = 4.0 if 4.0 in departs else departs[0]
        caveat = (
            "with a configured factor κ the code divides by κ·L/L_orig − (κ − 1):"
            f" {divided[example]:.3g}, not 4, for κ = {example:g}"
        )
    return Finding(holds=True, shown=shown, caveat=caveat)  # the paper's own definition


#: (h_i, positions s) -> a bound on |a(s) - a_linear(s)| between the neighbouring integers.
ChordBound = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def theorem_bound(coefficients: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Chen et al.'s Theorem 2.1 as stated: d·max|h_i|·(s − s1)(s2 − s)/(8 ln b), b = 10^4."""
    return rope_scaling.interpolation_bound(coefficients, positions, rule="paper")


@evidence("chen2023-theorem-2.1")
def interpolation_theorem(bound: ChordBound = theorem_bound) -> Finding:
    """The theorem's inequality tried on equal coefficients h_i = 1 (q = k) at s = 1/2.

    The statement is for any complex h_i, so one case above the bound decides it; the
    case is the one the proof's inequality (b^x <= 1 + x ln b, which holds the other way
    round) gets wrong: equal h_i, where |a''| = max|h_i|·Σθ_i² is reached.
    """
    middle = torch.tensor([0.5], dtype=torch.float64)
    rows = {}
    for dim in (16, 64, 128, 512):
        equal = torch.ones(dim // 2, dtype=torch.complex128)  # h_i = 1
        gap = float(rope_scaling.interpolation_gap(equal, middle)[0])
        rows[dim] = (gap, float(bound(equal, middle)[0]))
    exceeded = [dim for dim, (gap, limit) in rows.items() if gap > limit]
    return Finding(
        holds=not exceeded,
        shown=(
            "h_i = 1 (q = k), b = 10^4, s = 1/2 (s1 = 0, s2 = 1): |a − a_linear| against the"
            " bound: "
            + ", ".join(f"d = {d}: {gap:.4f} vs {limit:.4f}" for d, (gap, limit) in rows.items()),
            f"above the bound for d = {', '.join(map(str, exceeded)) or 'none'}",
        ),
    )
