"""Chapter 7 (RoPE): the rotation, the two layouts, NTK-aware frequencies."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import rope, rope_scaling
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader

__all__ = ["check_layout_conversion", "check_ntk_frequencies", "check_rope_rotation"]


def check_rope_rotation(reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 07: ``reader(x, positions)`` rotates x (L, d) with interleaved pairs, float64."""
    generator = torch.Generator().manual_seed(7)
    cases = []
    for length, dim, start in [(1, 2, 0), (4, 4, 0), (5, 8, 100), (3, 16, 30000)]:
        x = torch.randn(length, dim, generator=generator, dtype=torch.float64)
        positions = torch.arange(start, start + length)
        cases.append(Case((x, positions), f"x {tuple(x.shape)}, positions {positions.tolist()}"))
    check(
        "rope_rotation",
        reader,
        lambda x, positions: rope.apply_rope(x, positions),
        cases,
        atol=1e-9,
        as_tensor=torch.float64,
    )


@grader
def check_layout_conversion(reader: Callable[[torch.Tensor], torch.Tensor]) -> str:
    """Chapter 07: ``reader(q)`` maps q for interleaved RoPE to q' for half RoPE, same scores."""
    generator = torch.Generator().manual_seed(8)
    for dim in (2, 8, 64):
        q, k = torch.randn(2, 12, dim, generator=generator, dtype=torch.float64)
        q_half, k_half = attempt(reader, q.clone()), attempt(reader, k.clone())
        expected = rope.apply_rope(q) @ rope.apply_rope(k).T
        got = rope.apply_rope(q_half, layout="half") @ rope.apply_rope(k_half, layout="half").T
        worst = float((got - expected).abs().max())
        if worst > 1e-9:
            raise ExerciseMismatch(f"dim={dim}: half-layout scores differ by up to {worst:.3g}")
    return "for d = 2, 8, 64 half layout = interleaved scores."


def check_ntk_frequencies(reader: Callable[[int, float, float], torch.Tensor]) -> None:
    """Chapter 07: ``reader(dim, base, factor)`` returns NTK-aware θ_i, float64."""
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
