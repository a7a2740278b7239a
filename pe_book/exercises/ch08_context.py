"""Chapter 8 (longer contexts for RoPE): the frequencies of the extension methods."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import rope_scaling
from pe_book.exercises.grading import Case, check

__all__ = ["check_dynamic_frequencies", "check_llama3_frequencies", "check_ntk_frequencies"]


def check_ntk_frequencies(reader: Callable[[int, float, float], torch.Tensor]) -> None:
    """Chapter 8: ``reader(dim, base, factor)`` returns NTK-aware θ_i, float64."""
    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, factor={args[2]}")
        for args in [(4, 10000.0, 2.0), (64, 10000.0, 4.0), (128, 500000.0, 8.0)]
    ]

    def reference(dim: int, base: float, factor: float) -> torch.Tensor:
        return rope_scaling.scaled_frequencies(dim, base, rope_scaling.NTKScaling(factor))[0]

    check(
        "ntk_frequencies",
        reader,
        reference,
        cases,
        atol=1e-12,
        as_tensor=torch.float64,
    )


def check_dynamic_frequencies(
    reader: Callable[[int, float, float, int, int], torch.Tensor],
) -> None:
    """Chapter 8: ``reader(dim, base, factor, original, seq_len)`` returns dynamic NTK's θ'_i."""
    settings = [
        (128, 10000.0, 4.0, 2048, 1024),  # shorter than the original: unchanged
        (128, 10000.0, 4.0, 2048, 2048),
        (128, 10000.0, 4.0, 2048, 8192),  # 4L with κ = 4: the slowest pair divided by 13
        (64, 10000.0, 2.0, 512, 700),
        (128, 500000.0, 8.0, 8192, 131072),
    ]
    cases = [
        Case(
            args,
            f"dim={args[0]}, base={args[1]:g}, factor={args[2]}, original={args[3]},"
            f" seq_len={args[4]}",
        )
        for args in settings
    ]

    def reference(
        dim: int, base: float, factor: float, original: int, seq_len: int
    ) -> torch.Tensor:
        scaling = rope_scaling.DynamicNTKScaling(factor, original)
        return rope_scaling.scaled_frequencies(dim, base, scaling, seq_len=seq_len)[0]

    check("dynamic_frequencies", reader, reference, cases, atol=1e-12, as_tensor=torch.float64)


def check_llama3_frequencies(reader: Callable[[int, float, float, int], torch.Tensor]) -> None:
    """Chapter 8: ``reader(dim, base, factor, original)``: Llama 3 θ'_i, f_low 1, f_high 4."""
    settings = [
        (128, 10000.0, 4.0, 2048),
        (128, 500000.0, 8.0, 8192),  # Meta's Llama 3.1 settings
        (64, 10000.0, 2.0, 512),
    ]
    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, factor={args[2]}, original={args[3]}")
        for args in settings
    ]

    def reference(dim: int, base: float, factor: float, original: int) -> torch.Tensor:
        scaling = rope_scaling.Llama3Scaling(factor, 1.0, 4.0, original)
        return rope_scaling.scaled_frequencies(dim, base, scaling)[0]

    check("llama3_frequencies", reader, reference, cases, atol=1e-12, as_tensor=torch.float64)
