"""Chapter 3 (the sinusoidal encoding): the table, its wavelengths, its two layouts."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from pe_book import sinusoidal
from pe_book.exercises.grading import Case, check

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
        atol=1e-5,  # float32 answers are fine (angles up to 50 rad: about 4e-6 off)
        as_tensor=torch.float64,
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


def check_base_for_wavelength(reader: Callable[[int, float], float]) -> None:
    """Chapter 3: ``reader(dim, longest)`` returns the base with that longest wavelength."""
    targets = [(8, 1000.0), (128, 2 * math.pi * 10000), (512, 60000.0), (64, 1e6)]
    cases = [
        Case(target, f"dim={target[0]}, longest={target[1]:g}", expected=target[1])
        for target in targets
    ]

    def longest_for(dim: int, longest: float) -> float:
        return float(sinusoidal.wavelengths(dim, reader(dim, longest))[-1])

    check("base_for_wavelength", longest_for, None, cases)
