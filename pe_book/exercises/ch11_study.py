"""Chapter 11 (extrapolation): perplexity, the early-token share, degradation, verdicts."""

from __future__ import annotations

import math
from collections.abc import Callable

from pe_book import evaluation, intervals, results
from pe_book.exercises.grading import Case, check

__all__ = [
    "check_context_effect",
    "check_degradation",
    "check_perplexity",
    "check_short_context_fraction",
]


def check_perplexity(reader: Callable[[list[float]], float]) -> None:
    """Chapter 11: ``reader(losses)``: perplexity from per-prediction losses in nats, to a
    relative 1e-6 (float32 is enough)."""
    cases = [
        Case(([0.0],), "losses [0.0] nats: one prediction made with certainty", kind="one loss"),
        Case(
            ([math.log(4.0)] * 3,),
            "losses [ln 4, ln 4, ln 4] nats: three at probability 1/4",
            kind="equal losses",
        ),
        Case(
            ([0.1, 0.2, 3.0],),
            "losses [0.1, 0.2, 3.0] nats",
            kind="skewed losses: their mean is neither their median nor their midrange",
        ),
        Case(([0.5, 1.5, 2.5],), "losses [0.5, 1.5, 2.5] nats", kind="symmetric losses"),
    ]
    check("perplexity", reader, evaluation.perplexity, cases, atol=0.0, rtol=1e-6)


def check_short_context_fraction(reader: Callable[[int, int], float]) -> None:
    """Chapter 11: ``reader(seq_len, context)``: share of a window's predictions with
    at most ``context`` tokens to condition on (prediction i, 1-based, sees i tokens)."""
    cases = [
        Case(args, f"seq_len={args[0]}, context={args[1]}")
        for args in [(1000, 100), (2000, 100), (64, 100), (64, 0), (7, 3)]
    ]
    check(
        "short_context_fraction",
        reader,
        evaluation.short_context_fraction,
        cases,
        atol=1e-12,
    )


def check_degradation(reader: Callable[[dict[str, float | None], int], float | None]) -> None:
    """Chapter 11: ``reader(perplexity, train_len)``: perplexity at the longest length
    divided by perplexity at train_len; None if the model cannot run the longest.

    The perplexity tables are fixtures (round numbers shaped like a study record's
    ``"perplexity"`` field), not the study's results.
    """
    table = {"64": 4.0, "128": 5.0, "1024": 10.0}
    cases = [
        Case((table, 64), "4.0 at 64 ... 10.0 at 1024"),
        Case(({"32": 2.0, "64": 1.5}, 32), "2.0 at 32, 1.5 at 64"),
        Case(({"64": 3.6, "128": None, "1024": None}, 64), "cannot run past 64"),
        Case(({"1024": 8.0, "64": 4.0}, 64), "lengths in another order"),
    ]

    def answer(perplexity: dict[str, float | None], train_len: int) -> float | None:
        got = reader(dict(perplexity), train_len)
        return None if got is None else float(got)

    check("degradation", answer, results.degradation, cases, atol=1e-12)


def check_context_effect(reader: Callable[[float, float, float], str]) -> None:
    """Chapter 11: ``reader(low, high, margin)``: the verdict on the extra context from
    the ends of its cost's interval: "uses it", "keeps its quality", "hurt by it" or
    "inconclusive" (section 11.3's rules, :func:`pe_book.intervals.context_effect`)."""

    def reference(low: float, high: float, margin: float) -> str:
        found = intervals.Interval((low + high) / 2, low, high, 10.0, 0.95, "seeds and text")
        return str(intervals.context_effect(found, margin))

    rows = [
        ((-0.05, -0.02, 0.01), "the whole interval below minus the margin"),
        ((-0.05, 0.01, 0.01), "the upper end exactly at the margin"),
        ((-0.03, -0.01, 0.01), "the upper end exactly at minus the margin"),
        ((-0.01, 0.005, 0.01), "inside the margin on both sides"),
        ((0.015, 0.03, 0.01), "the whole interval above the margin"),
        ((0.01, 0.03, 0.01), "the lower end exactly at the margin"),
        ((0.005, 0.03, 0.01), "across the margin, its mean above it"),
        ((-0.02, 0.02, 0.005), "wider than both margins"),
        ((-0.001, 0.0, 0.0), "a zero margin"),
    ]
    cases = [
        Case(args, f"low={args[0]}, high={args[1]}, margin={args[2]}", kind=kind)
        for args, kind in rows
    ]
    check("context_effect", reader, reference, cases)
