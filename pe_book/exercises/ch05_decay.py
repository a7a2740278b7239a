"""Chapter 5 (decay): the dot profile, its integral limit, its reach."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import decay
from pe_book.exercises.grading import Case, check, growing_error_hint, whole_number

__all__ = ["check_dot_profile", "check_integral_profile", "check_reach"]

_PROFILE_CASES = [(64, 10000.0), (128, 100.0), (512, 10000.0), (8, 500000.0)]


def _offset_grid() -> torch.Tensor:
    return torch.tensor([0, 1, 2, 5, 10, 37, 100, 999, 5000, 123456])


def _check_offset_profile(
    name: str,
    reader: Callable[[torch.Tensor, int, float], torch.Tensor],
    reference: Callable[..., torch.Tensor],
) -> None:
    """Compare ``reader(offsets, dim, base)`` with ``reference`` on chapter 5's grid."""
    cases = [
        Case(
            (_offset_grid(), dim, base),
            f"offsets {_offset_grid().tolist()}, dim={dim}, base={base:g}",
        )
        for dim, base in _PROFILE_CASES
    ]
    check(
        name,
        reader,
        reference,
        cases,
        atol=1e-6,
        dtype=torch.float64,  # the statements ask for float64
        diagnose=lambda case, answer: growing_error_hint(
            reference(*case.args), answer, case.args[0]
        ),
    )


def check_dot_profile(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 5: ``reader(offsets, dim, base)`` returns (2/d) Σ_i cos(r θ_i) per offset."""
    _check_offset_profile("dot_profile", reader, decay.dot_profile)


def check_integral_profile(reader: Callable[[float, float], float]) -> None:
    """Chapter 5: ``reader(r, base)`` returns ∫_0^1 cos(r b^(-t)) dt as a float (r >= 0)."""
    pairs = [(0.0, 10000.0), (1.0, 10000.0), (50.0, 100.0), (3000.0, 10000.0), (2e5, 5e5)]
    cases = [Case(pair, f"r={pair[0]:g}, base={pair[1]:g}") for pair in pairs]
    check(
        "integral_profile",
        lambda r, b: float(reader(r, b)),
        lambda r, b: float(decay.integral_profile([r], b)[0]),
        cases,
        atol=1e-9,
    )


def check_reach(reader: Callable[[int, float, float], int]) -> None:
    """Chapter 5: ``reader(dim, base, level)`` returns the first offset r >= 0 with
    dot_profile(r) <= level (searching r = 0 .. 100,000)."""
    offsets = torch.arange(100_001)

    def reference(dim: int, base: float, level: float) -> int:
        found = decay.first_offset_at_or_below(
            offsets, decay.dot_profile(offsets, dim, base), level
        )
        return -1 if found is None else found

    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, level={args[2]}")
        for args in [
            (64, 10000.0, 0.0),
            (128, 100.0, 0.1),
            (512, 10000.0, 0.5),
            (16, 1e3, 0.0),
            (64, 10000.0, 1.0),  # the profile is exactly 1 at r = 0: '<=' finds it, '<' does not
            (64, 10000.0, -1.0),  # never reached: the answer is -1
        ]
    ]
    check("reach", lambda *a: whole_number(reader(*a), "positions"), reference, cases)
