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
