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
    """How much the slowest pair is slowed at each length, against s = max(1, L/L_orig)."""
    dim, original = 128, 2048
    slowest = float(rope_scaling.scaled_frequencies(dim)[0][-1])
    lengths = [original // 2, original, 3 * original // 2, 4 * original, 16 * original]
    divided = [slowest / float(frequencies(dim, 1.0, original, n)[-1]) for n in lengths]
    paper = [max(1.0, n / original) for n in lengths]
    holds = all(abs(a - b) < 1e-9 * b for a, b in zip(divided, paper, strict=True))
    at_4x = slowest / float(frequencies(dim, 4.0, original, 4 * original)[-1])
    shown = (
        f"configured factor 1, d = {dim}, L_orig = {original}: slowest pair divided by "
        + ", ".join(f"{d:.3g}" for d in divided)
        + f" at L = {', '.join(f'{n:,}' for n in lengths)}; max(1, L/L_orig) gives "
        + ", ".join(f"{p:.3g}" for p in paper),
        f"configured factor 4 at L = 4·L_orig: divided by {at_4x:.3g}",
    )
    caveat = None
    if abs(at_4x - 4) > 1e-6:
        caveat = (
            f"with a configured factor κ = 4 the code divides by κ·L/L_orig − (κ − 1) ="
            f" {at_4x:.3g} at L = 4·L_orig, not by L/L_orig = 4"
        )
    return Finding(holds=holds, shown=shown, caveat=caveat)
