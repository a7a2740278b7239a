"""Chapter 8 (longer contexts for RoPE): the frequencies of the extension methods."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import rope_scaling
from pe_book.exercises.grading import Case, check

__all__ = ["check_dynamic_frequencies", "check_llama3_frequencies", "check_ntk_frequencies"]

#: Why frequencies are checked to a relative 1e-9 (here and in chapter 10): RoPE
#: multiplies them by positions, and at 10^5 float32's relative error of 5e-8 in θ_i
#: moves an angle by about 3e-3 rad (measured: d = 128, b = 10^4).
FLOAT32_FREQUENCIES = (
    "compute θ'_i in float64, because RoPE multiplies them by positions, and at position"
    " 100,000 float32's relative error of 5e-8 moves an angle by about 3e-3 rad"
)

#: A relative tolerance: float64 arithmetic in any order meets it, float32 does not.
RTOL = 1e-9


def _pair(case: Case, index: tuple[int, ...]) -> str:
    return f"pair i = {index[0]}"


def check_ntk_frequencies(reader: Callable[[int, float, float], torch.Tensor]) -> None:
    """Chapter 8: ``reader(dim, base, factor)`` returns NTK-aware θ'_i, to a relative 1e-9."""
    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, factor={args[2]}", kind=kind)
        for *args, kind in [
            (64, 10000.0, 4.0, "κ = 4"),
            (4, 10000.0, 2.0, "d = 4: two pairs"),
            (128, 500000.0, 8.0, "Llama 3.1's base and κ"),
        ]
    ]

    def reference(dim: int, base: float, factor: float) -> torch.Tensor:
        return rope_scaling.scaled_frequencies(dim, base, rope_scaling.NTKScaling(factor))[0]

    check(
        "ntk_frequencies",
        reader,
        reference,
        cases,
        atol=0.0,
        rtol=RTOL,
        float32=FLOAT32_FREQUENCIES,
        locate=_pair,
    )


def check_dynamic_frequencies(
    reader: Callable[[int, float, float, int, int], torch.Tensor],
) -> None:
    """Chapter 8: ``reader(dim, base, factor, original, seq_len)`` returns dynamic NTK's θ'_i,
    to a relative 1e-9."""
    settings = [
        (128, 10000.0, 4.0, 2048, 8192, "L = 4 L_orig with κ = 4"),
        (128, 10000.0, 4.0, 2048, 1024, "shorter than the original: unchanged"),
        (128, 10000.0, 4.0, 2048, 2048, "exactly the original length"),
        (64, 10000.0, 2.0, 512, 700, "a little past the original length"),
        (128, 500000.0, 8.0, 8192, 131072, "Llama 3.1's settings"),
    ]
    cases = [
        Case(
            args,
            f"dim={args[0]}, base={args[1]:g}, factor={args[2]}, original={args[3]},"
            f" seq_len={args[4]}",
            kind=kind,
        )
        for *args, kind in settings
    ]

    def reference(
        dim: int, base: float, factor: float, original: int, seq_len: int
    ) -> torch.Tensor:
        scaling = rope_scaling.DynamicNTKScaling(factor, original)
        return rope_scaling.scaled_frequencies(dim, base, scaling, seq_len=seq_len)[0]

    check(
        "dynamic_frequencies",
        reader,
        reference,
        cases,
        atol=0.0,
        rtol=RTOL,
        float32=FLOAT32_FREQUENCIES,
        locate=_pair,
    )


def check_llama3_frequencies(reader: Callable[[int, float, float, int], torch.Tensor]) -> None:
    """Chapter 8: ``reader(dim, base, factor, original)``: Llama 3 θ'_i, f_low 1, f_high 4,
    to a relative 1e-9."""
    settings = [
        (128, 10000.0, 4.0, 2048, "pairs in all three bands"),
        (128, 500000.0, 8.0, 8192, "Meta's Llama 3.1 settings"),
        (64, 10000.0, 2.0, 512, "d = 64"),
    ]
    cases = [
        Case(
            args,
            f"dim={args[0]}, base={args[1]:g}, factor={args[2]}, original={args[3]}",
            kind=kind,
        )
        for *args, kind in settings
    ]

    def reference(dim: int, base: float, factor: float, original: int) -> torch.Tensor:
        scaling = rope_scaling.Llama3Scaling(factor, 1.0, 4.0, original)
        return rope_scaling.scaled_frequencies(dim, base, scaling)[0]

    check(
        "llama3_frequencies",
        reader,
        reference,
        cases,
        atol=0.0,
        rtol=RTOL,
        float32=FLOAT32_FREQUENCIES,
        locate=_pair,
    )
