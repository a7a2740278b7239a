"""Chapter 3 (the sinusoidal encoding): the table, its wavelengths, its two layouts."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pe_book import sinusoidal
from pe_book.exercises.grading import (
    Case,
    ExerciseMismatch,
    attempt,
    check,
    grader,
    growing_error_hint,
)

__all__ = [
    "check_base_for_wavelength",
    "check_layout_permutation",
    "check_longest_wavelength",
    "check_sinusoidal_table",
]

_TABLE_SIZES = [
    (1, 2, 10000.0),
    (5, 4, 10000.0),
    (16, 8, 100.0),
    (50, 64, 10000.0),
    (7, 10, 500000.0),
    (2000, 16, 10000.0),  # positions in the thousands: float32 angles show
]


def check_sinusoidal_table(reader: Callable[[int, int, float], torch.Tensor]) -> None:
    """Chapter 3: ``reader(seq_len, dim, base)`` must return the paper's (interleaved) table."""

    def reference(seq_len: int, dim: int, base: float) -> torch.Tensor:
        return sinusoidal.sinusoidal_table(seq_len, dim, base, dtype=torch.float64)

    cases = [
        Case(size, f"seq_len={size[0]}, dim={size[1]}, base={size[2]:g}") for size in _TABLE_SIZES
    ]
    check(
        "sinusoidal_table",
        reader,
        reference,
        cases,
        atol=1e-5,  # a float32 table is fine: rounding the values costs < 1e-7
        as_tensor=torch.float64,
        diagnose=lambda case, answer: growing_error_hint(
            reference(*case.args), answer, torch.arange(case.args[0])
        ),
    )


def check_longest_wavelength(reader: Callable[[int, float], float]) -> None:
    """Chapter 3: ``reader(dim, base)`` must return the longest wavelength λ_(d/2-1), a float."""

    def reference(dim: int, base: float) -> float:
        return float(sinusoidal.wavelengths(dim, base)[-1])

    sizes = [(2, 10000.0), (8, 10000.0), (128, 10000.0), (512, 10000.0), (64, 500000.0)]
    check(
        "longest_wavelength",
        reader,
        reference,
        [Case(size, f"dim={size[0]}, base={size[1]:g}") for size in sizes],
    )


def check_layout_permutation(reader: Callable[[int], list[int]]) -> None:
    """Chapter 3: ``reader(dim)`` must return perm with half == interleaved[:, perm]."""
    cases = [Case((dim,), f"dim={dim}") for dim in (2, 4, 6, 8, 16)]
    check(
        "layout_permutation",
        lambda dim: [int(j) for j in reader(dim)],
        sinusoidal.layout_permutation,
        cases,
    )


@grader
def check_base_for_wavelength(reader: Callable[[int, float], float]) -> str:
    """Chapter 3: ``reader(dim, longest)`` returns the base with that longest wavelength.

    Graded by the wavelength the reader's base gives (``sinusoidal.wavelengths``), so a
    mismatch names the wavelength reached, not only the base.
    """
    targets = [(8, 1000.0), (128, 2 * math.pi * 10000), (512, 60000.0), (64, 1e6)]
    for dim, longest in targets:
        base = float(attempt(reader, dim, longest))
        reached = float(sinusoidal.wavelengths(dim, base)[-1])
        if not math.isclose(reached, longest, rel_tol=1e-9):
            raise ExerciseMismatch(
                f"dim={dim}, longest={longest:g}: your base {base:g} makes the slowest pair"
                f" turn once in {reached:,.6g} positions, not {longest:,.6g}"
            )
    return f"all {len(targets)} bases give the wanted longest wavelength."
