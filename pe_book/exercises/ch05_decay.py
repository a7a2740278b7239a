"""Chapter 5 (decay): the dot profile, its integral limit, its reach."""

from __future__ import annotations

from collections.abc import Callable

import torch

from pe_book import decay
from pe_book.exercises.grading import Case, check
from pe_book.exercises.policy import whole_number

__all__ = ["check_dot_profile", "check_integral_profile", "check_reach"]

_PROFILE_CASES = [
    (64, 10000.0, "d = 64"),
    (128, 100.0, "a small base"),
    (512, 10000.0, "the paper's d = 512"),
    (8, 500000.0, "Llama 3's base, d = 8"),
]

#: Why the profiles of exercises 5.1 and 7.3 need float64 angles (measured: d = 64).
FLOAT32_ANGLES = (
    "form θ_i and the angles r·θ_i in float64, because offsets reach 123,456 here, where"
    " float32 angles are off by up to 3e-3 rad (a float32 result from float64 angles is fine)"
)


def _offset_grid() -> torch.Tensor:
    return torch.tensor([0, 1, 2, 5, 10, 37, 100, 999, 5000, 123456])


def _profile_cases() -> list[Case]:
    """Chapter 5's grid of offsets with each (d, b) of ``_PROFILE_CASES`` (exercises 5.1, 7.3)."""
    return [
        Case(
            (_offset_grid(), dim, base),
            f"offsets {_offset_grid().tolist()}, dim={dim}, base={base:g}",
            kind=kind,
        )
        for dim, base, kind in _PROFILE_CASES
    ]


def _check_offset_profile(
    name: str,
    reader: Callable[[torch.Tensor, int, float], torch.Tensor],
    reference: Callable[..., torch.Tensor],
) -> None:
    """Compare ``reader(offsets, dim, base)`` with ``reference`` on chapter 5's grid, to 1e-6."""
    cases = _profile_cases()
    check(
        name,
        reader,
        reference,
        cases,
        atol=1e-6,
        float32=FLOAT32_ANGLES,
        locate=lambda case, index: f"offset r = {int(case.args[0][index[0]]):,}",
        positions=lambda case: case.args[0],
    )


def check_dot_profile(reader: Callable[[torch.Tensor, int, float], torch.Tensor]) -> None:
    """Chapter 5: ``reader(offsets, dim, base)`` returns (2/d) Σ_i cos(r θ_i) per offset."""
    _check_offset_profile("dot_profile", reader, decay.dot_profile)


def check_integral_profile(reader: Callable[[float, float], float]) -> None:
    """Chapter 5: ``reader(r, base)`` returns ∫_0^1 cos(r b^(-t)) dt as a float (r >= 0),
    to within 1e-9."""
    pairs = [
        (1.0, 10000.0, "r = 1"),
        (0.0, 10000.0, "r = 0, where Ci diverges"),
        (50.0, 100.0, "a small base"),
        (3000.0, 10000.0, "r below b"),
        (2e5, 5e5, "a large r and base"),
    ]
    cases = [Case((r, b), f"r={r:g}, base={b:g}", kind=kind) for r, b, kind in pairs]
    check(
        "integral_profile",
        reader,
        lambda r, b: float(decay.integral_profile([r], b)[0]),
        cases,
        atol=1e-9,
    )


def check_reach(reader: Callable[[int, float, float], int]) -> None:
    """Chapter 5: ``reader(dim, base, level)`` returns the first offset r >= 0 with
    dot_profile(r) <= level, searching r = 0 .. 100,000 (-1 if there is none)."""
    offsets = torch.arange(100_001)

    def reference(dim: int, base: float, level: float) -> int:
        found = decay.first_offset_at_or_below(
            offsets, decay.dot_profile(offsets, dim, base), level
        )
        return -1 if found is None else found

    cases = [
        Case(args, f"dim={args[0]}, base={args[1]:g}, level={args[2]}", kind=kind)
        for *args, kind in [
            (64, 10000.0, 0.0, "level 0"),
            (128, 100.0, 0.1, "a small base"),
            (512, 10000.0, 0.5, "d = 512"),
            (16, 1e3, 0.0, "d = 16"),
            (64, 10000.0, 1.0, "a level the profile meets exactly"),
            (64, 10000.0, -1.0, "a level never reached"),
            # first reached at r = 72,347 (margins: 2e-3 above before it, 3e-4 below at it)
            (64, 10000.0, -0.419, "a level first reached far away"),
            # first reached at r = 176,152, past the search (margins 7e-3 and 3e-4)
            (16, 100.0, -0.95, "a level first reached far away"),
        ]
    ]
    check("reach", lambda *a: whole_number(reader(*a), "positions"), reference, cases, atol=0.0)
