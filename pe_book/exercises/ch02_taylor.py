"""Chapter 2 (Taylor expansion): the six terms, the circle solution, the leak of a diagonal H."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch

from pe_book import taylor
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import float32_note
from pe_book.exercises.secret import drawn_args, seeded

__all__ = ["check_circle_solution", "check_diagonal_leak", "check_taylor_terms"]


def _readout(a: torch.Tensor, b: torch.Tensor, *, weights: list, w_o: torch.Tensor) -> torch.Tensor:
    return taylor.attention_readout(a, b, *weights, w_o)


def _squared_dot(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return (a * b).sum() ** 2


def _readout_cases() -> list[Case]:
    generator = seeded(2)
    cases = []
    for d, kind in [
        (1, "d = 1: every block is a number"),
        (2, "d = 2: a mixed block that is not symmetric"),
        (3, "d = 3"),
    ]:
        weights = [torch.randn(d, d, generator=generator, dtype=torch.float64) for _ in range(3)]
        w_o = torch.randn(d, generator=generator, dtype=torch.float64)

        f = functools.partial(_readout, weights=weights, w_o=w_o)  # picklable: graded mode
        points = [torch.randn(d, generator=generator, dtype=torch.float64) for _ in range(4)]
        cases.append(
            Case((f, *points), f"attention read-out with random weights, d={d}", kind=kind)
        )
    cases.append(
        Case(
            (_squared_dot, *[torch.ones(2, dtype=torch.float64)] * 4),
            "f(x_m, x_n) = (x_m·x_n)², all inputs 1",
            kind="a polynomial",
        )
    )
    return cases


def check_taylor_terms(reader: Callable[..., Any]) -> None:
    """Chapter 2: ``reader(f, x_m, x_n, p_m, p_n)`` returns the six terms, in TERM_NAMES order."""
    check(
        "taylor_terms",
        reader,
        taylor.taylor_terms,
        _readout_cases(),
        atol=1e-6,
        rtol=1e-6,  # float32 autograd is enough
        locate=lambda case, index: f"term {index[0]}, {taylor.TERM_NAMES[index[0]]}",
    )


def check_circle_solution(reader: Callable[[int, float], torch.Tensor]) -> None:
    """Chapter 2: ``reader(seq_len, theta)`` returns p_m = (cos mθ, sin mθ), shape (L, 2)."""
    cases = [
        Case(args, f"seq_len={args[0]}, theta={args[1]}", kind=kind)
        for *args, kind in [
            (5, 0.5, "a few positions"),
            (1, 1.0, "one position"),
            (12, 0.1, "a slow turn"),
            (30, 2.0, "more than a turn every 4 positions"),
        ]
    ]
    check(
        "circle_solution",
        reader,
        taylor.circle_solution,
        cases,
        atol=1e-5,  # float32 is enough
        locate=lambda case, index: f"position m = {index[0]}, coordinate {index[1]}",
    )


@grader
def check_diagonal_leak(reader: Callable[[float, float], tuple]) -> str:
    """Chapter 2: ``reader(h1, h2)`` returns (A, B) with, for the paper's order
    p_m = (sin mθ, cos mθ), p_mᵀ diag(h1, h2) p_n = A cos((m − n)θ) + B cos((m + n)θ)
    (to 1e-6)."""
    p = taylor.circle_solution(20, 0.3).flip(-1)  # (20, 2): (sin mθ, cos mθ)
    m = torch.arange(20, dtype=torch.float64)
    diff, total = (m[:, None] - m[None, :]) * 0.3, (m[:, None] + m[None, :]) * 0.3
    settings = [(1.0, 0.0), (0.3, -2.0), (1.0, 1.0), (2.5, 0.5), *drawn_args("diagonal_leak")]
    for index, (h1, h2) in enumerate(settings, 1):
        answer = attempt(reader, h1, h2)
        coef_diff, coef_total = (float(c) for c in answer)
        actual = p @ torch.diag(torch.tensor([h1, h2], dtype=torch.float64)) @ p.T
        claimed = coef_diff * torch.cos(diff) + coef_total * torch.cos(total)
        worst = float((claimed - actual).abs().max())
        if not worst <= 1e-6:
            problem = (
                f"case {index} of {len(settings)} (h1={h1}, h2={h2}): your (A, B) = "
                f"({coef_diff:.6g}, {coef_total:.6g}) misses p_mᵀHp_n by up to {worst:.2g}"
            )
            note = float32_note(answer, answer) if worst <= 1e-3 else None
            raise ExerciseMismatch(f"{problem}. {note}" if note else problem)
    return f"all {len(settings)} matrices agree with p_mᵀ H p_n from pe_book to within 1e-6."
