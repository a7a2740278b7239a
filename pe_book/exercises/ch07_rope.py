"""Chapter 7 (RoPE): the rotation, the two layouts, RoFormer's decay bound."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import decay, rope
from pe_book.exercises.ch05_decay import _check_offset_profile
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader

__all__ = ["check_decay_bound", "check_layout_conversion", "check_rope_rotation"]


def check_rope_rotation(reader: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> None:
    """Chapter 7: ``reader(x, positions)`` rotates x (L, d) with interleaved pairs, float64."""
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
    """Chapter 7: ``reader(q)`` maps q for interleaved RoPE to q' for half RoPE, same scores."""
    generator = torch.Generator().manual_seed(8)
    for dim in (2, 8, 64):
        q, k = torch.randn(2, 12, dim, generator=generator, dtype=torch.float64)
        q_half, k_half = attempt(reader, q.clone()), attempt(reader, k.clone())
        expected = rope.apply_rope(q) @ rope.apply_rope(k).T
        got = rope.apply_rope(q_half, layout="half") @ rope.apply_rope(k_half, layout="half").T
        gap = (got - expected).abs()
        worst = float(gap.max())
        if not worst <= 1e-9:  # NaN fails too
            row, col = (int(i) for i in (~(gap <= 1e-9)).nonzero()[0])
            raise ExerciseMismatch(
                f"dim={dim}: half-layout scores differ from the interleaved ones by up to"
                f" {worst:.3g}; first at query {row}, key {col}: interleaved"
                f" {float(expected[row, col]):.10g}, yours {float(got[row, col]):.10g}"
            )
    return "for d = 2, 8, 64 half layout = interleaved scores."


def check_decay_bound(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 7: ``reader(offsets, dim, base)`` returns (1/(d/2)) Σ_ℓ |S_ℓ| per offset."""
    _check_offset_profile("decay_bound", reader, decay.rope_decay_bound)
