"""Chapter 3 (the sinusoidal encoding): the table, the pairs that turn, the base, the layouts."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pe_book import sinusoidal
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import float32_note, whole_number
from pe_book.exercises.secret import drawn_args

__all__ = [
    "check_base_for_wavelength",
    "check_layout_permutation",
    "check_sinusoidal_table",
    "check_turning_pairs",
]

#: Why exercise 3.1 needs float64 angles (measured: the largest angle error of a
#: float32 table of 2,000 positions, d = 16, is 3.4e-5).
FLOAT32_ANGLES = (
    "form θ_i and the angles m·θ_i in float64, because positions reach 1,999 here, where"
    " float32 angles are off by up to 3e-5, more than the tolerance 1e-5 (storing the finished"
    " table in float32 is fine)"
)

_TABLE_SIZES = [
    (5, 4, 10000.0, "a few positions"),
    (1, 2, 10000.0, "one position, one pair"),
    (16, 8, 100.0, "a small base"),
    (50, 64, 10000.0, "d = 64"),
    (7, 10, 500000.0, "Llama 3's base, d/2 odd"),
    (2000, 16, 10000.0, "positions in the thousands"),
]


def _column(index: tuple[int, ...]) -> str:
    row, col = index
    return f"position m = {row}, column {col}: the {('sin', 'cos')[col % 2]} of pair {col // 2}"


def check_sinusoidal_table(reader: Callable[[int, int, float], torch.Tensor]) -> None:
    """Chapter 3: ``reader(seq_len, dim, base)`` must return the paper's (interleaved)
    table to within 1e-5 (a float32 table is fine; its angles must be float64)."""

    def reference(seq_len: int, dim: int, base: float) -> torch.Tensor:
        return sinusoidal.sinusoidal_table(seq_len, dim, base, dtype=torch.float64)

    cases = [
        Case(size, f"seq_len={size[0]}, dim={size[1]}, base={size[2]:g}", kind=kind)
        for *size, kind in _TABLE_SIZES
    ]
    check(
        "sinusoidal_table",
        reader,
        reference,
        cases,
        atol=1e-5,  # a float32 table is fine: rounding the values costs < 1e-7
        float32=FLOAT32_ANGLES,
        locate=lambda case, index: _column(index),
        positions=lambda case: torch.arange(case.args[0]),
    )


def _turning_pairs(seq_len: int, dim: int, base: float) -> int:
    """Pairs that turn a full 2π between positions 0 and L - 1: λ_i <= L - 1."""
    return int((sinusoidal.wavelengths(dim, base) <= seq_len - 1).sum())


def check_turning_pairs(reader: Callable[[int, int, float], int]) -> None:
    """Chapter 3: ``reader(seq_len, dim, base)``: how many pairs turn through at least one
    full turn between positions 0 and seq_len - 1 (an exact count, which needs float64:
    one case puts a wavelength 0.0027 below L - 1)."""
    settings = [
        (2048, 128, 10000.0, "a typical context"),
        (7, 8, 10000.0, "λ_0 = 2π lies between L - 1 and L"),
        (1, 4, 10000.0, "one position"),
        (8192, 128, 500000.0, "Llama 3's base"),
        (100_000, 512, 10000.0, "every pair but the slowest few"),
        (64, 16, 100.0, "a small base"),
        # λ_247 = 1,980,593.9973: 0.0027 below L - 1, which float32 frequencies cannot
        # resolve (their relative error, 6e-8, is 0.12 positions here); float64's is 1e-10
        (1_980_595, 512, 500000.0, "a wavelength just below L - 1: float32 frequencies miscount"),
    ]
    cases = [
        Case(args, f"seq_len={args[0]}, dim={args[1]}, base={args[2]:g}", kind=kind)
        for *args, kind in settings
    ]
    check(
        "turning_pairs",
        lambda *args: whole_number(reader(*args), "pairs"),
        _turning_pairs,
        cases,
        atol=0.0,
    )


@grader
def check_base_for_wavelength(reader: Callable[[int, float], float]) -> str:
    """Chapter 3: ``reader(dim, longest)`` returns the base with that longest wavelength.

    Graded by the wavelength the reader's base gives (``sinusoidal.wavelengths``), to a
    relative 1e-6, so a mismatch names the wavelength reached, not the base expected.
    """
    targets = [(128, 2 * math.pi * 10000), (8, 1000.0), (512, 60000.0), (64, 1e6)]
    targets += drawn_args("base_for_wavelength")
    for dim, longest in targets:
        answer = attempt(reader, dim, longest)
        base = float(answer)
        reached = float(sinusoidal.wavelengths(dim, base)[-1]) if base > 1 else math.nan
        if not math.isclose(reached, longest, rel_tol=1e-6):
            problem = (
                f"dim={dim}, longest={longest:,.6g}: your base {base:g} makes the slowest pair"
                f" turn once in {reached:,.6g} positions, not {longest:,.6g}"
            )
            close = math.isclose(reached, longest, rel_tol=1e-3)
            note = float32_note(answer, answer) if close else None
            raise ExerciseMismatch(f"{problem}. {note}" if note else problem)
    return f"all {len(targets)} bases give the wanted longest wavelength to a relative 1e-6."


def check_layout_permutation(reader: Callable[[int], list[int]]) -> None:
    """Chapter 3: ``reader(dim)`` must return perm with half == interleaved[:, perm] (exact)."""
    cases = [
        Case((dim,), f"dim={dim}", kind=kind)
        for dim, kind in [
            (8, "a permutation that is not its own inverse"),
            (2, "one pair"),
            (4, "a permutation that is its own inverse"),
            (6, "d/2 odd"),
            (16, "d = 16"),
        ]
    ]
    check(
        "layout_permutation",
        reader,
        sinusoidal.layout_permutation,
        cases,
        atol=0.0,
        locate=lambda case, index: f"column {index[0]} of the half layout",
    )
