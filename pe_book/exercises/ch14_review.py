"""Chapter 14 (review): which scores depend on the offset only; reading the study's results."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from pe_book import alibi, relative, results, rope, sinusoidal
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import judge, whole_number
from pe_book.exercises.secret import seeded, shuffled

__all__ = ["check_cheapest_keeper", "check_extra_context", "check_offset_only"]


def _vector(name: str, value: object) -> torch.Tensor:
    """q or k as a float64 tensor of 8 numbers (a tensor, a NumPy array or a list)."""
    try:
        vector = torch.as_tensor(np.asarray(value, dtype=np.float64))
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"score(q, k, m, n): {name} must be 8 numbers (a tensor, a NumPy array or a list),"
            f" got {type(value).__name__}"
        ) from exc
    if vector.shape != (8,):
        raise ValueError(
            f"score(q, k, m, n): {name} must hold 8 numbers, got shape {tuple(vector.shape)}"
        )
    return vector


def _position(name: str, value: object) -> int:
    """m or n as an int in 0 .. 4095 (the statement promises 0 .. 2,000)."""
    position = whole_number(value, f"positions for {name}")
    if not 0 <= position < 4096:
        raise ValueError(
            f"score(q, k, m, n): {name} = {position} is outside 0 .. 4095 (the statement"
            " asks for positions from 0 to 2,000)"
        )
    return position


def _scored(score: Callable[..., float]) -> Callable[..., float]:
    """``score`` with its arguments read leniently and checked, so that a wrong type
    is explained rather than failing deep inside a tensor operation."""

    def wrapped(q: object, k: object, m: object, n: object) -> float:
        return score(_vector("q", q), _vector("k", k), _position("m", m), _position("n", n))

    return wrapped


def _review_scores() -> list[tuple[str, Callable[..., float], bool]]:
    """(name, score(q, k, m, n), depends on m - n only?) for chapter 14's exercise."""
    dim = 8
    generator = seeded(11)
    table = torch.randn(4096, dim, generator=generator, dtype=torch.float64)
    bucket_bias = torch.randn(32, generator=generator, dtype=torch.float64)
    slope = float(alibi.alibi_slopes(4)[0])
    late = torch.zeros(4096, dim, dtype=torch.float64)  # fixture: rows 0..999 all zero
    late[1000:] = torch.randn(4096 - 1000, dim, generator=generator, dtype=torch.float64)

    def sinusoid(m: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        rows = sinusoidal.sinusoidal_table(torch.tensor([m, n]), dim, dtype=torch.float64)
        return rows[0], rows[1]

    def added(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
        p_m, p_n = sinusoid(m, n)
        return float((q + p_m) @ (k + p_n))

    def rotary(q: torch.Tensor, k: torch.Tensor, m: int, n: int) -> float:
        q_m = rope.apply_rope(q[None], torch.tensor([m]))[0]
        k_n = rope.apply_rope(k[None], torch.tensor([n]))[0]
        return float(q_m @ k_n)

    return [
        ("no position", lambda q, k, m, n: float(q @ k), True),
        ("sinusoidal, added to q and k", added, False),
        ("learned table, added", lambda q, k, m, n: float((q + table[m]) @ (k + table[n])), False),
        ("RoPE", rotary, True),
        ("ALiBi bias", lambda q, k, m, n: float(q @ k) - slope * (m - n), True),
        (
            "T5 bias",
            lambda q, k, m, n: (
                float(q @ k) + float(bucket_bias[relative.t5_bucket(torch.tensor(m - n), False)])
            ),
            True,
        ),
        ("position-weighted score", lambda q, k, m, n: float(q @ k) * (1 + 0.01 * m), False),
        # absolute position that one pair of positions, or one shift, can miss:
        (
            "a bias periodic in the query's position (period 64)",
            lambda q, k, m, n: float(q @ k) + 0.5 * math.sin(2 * math.pi * m / 64),
            False,
        ),
        (
            "a learned table whose rows differ only from position 1,000 on",
            lambda q, k, m, n: float((q + late[m]) @ (k + late[n])),
            False,
        ),
    ]


@grader
def check_offset_only(reader: Callable[[Callable[..., float]], bool]) -> str:
    """Chapter 14: ``reader(score)`` tells whether score(q, k, m, n) depends on m, n only
    through m - n (q, k: float64 vectors of 8 numbers; m, n: integers 0 .. 2000)."""
    scores = shuffled("offset_only", _review_scores())  # graded: a secret order
    for index, (label, score, expected) in enumerate(scores, start=1):
        got = attempt(reader, _scored(score))
        problem = judge(expected, got)  # numpy booleans are fine
        if problem:
            raise ExerciseMismatch(f"case {index} of {len(scores)} ({label}): {problem}")
    return f"all {len(scores)} score functions classified correctly."


def check_extra_context(reader: Callable[[dict[str, Any]], Any]) -> None:
    """Chapter 14: ``reader(record)``: each segment's extra-context cost from a study
    record (schema 2), or None if ``record["full_by_bin"]`` is None (the model cannot
    run the longest windows): the mean of ``full_by_bin`` over the bins past the first,
    minus the mean of ``capped_by_bin``, segment by segment (chapter 11.3), to 1e-12.

    The records are fixtures: the two fields a study record stores, with made-up
    losses, not the study's results.
    """

    def record(full: list[list[float]] | None, capped: list[list[float]]) -> dict[str, Any]:
        return {"full_by_bin": full, "capped_by_bin": capped}

    def reference(entry: dict[str, Any]) -> Any:
        return None if entry["full_by_bin"] is None else results.extra_context_of(entry)

    cases = [
        Case(
            (record([[9.0, 1.5, 1.9], [8.0, 2.2, 2.2]], [[1.5, 1.6], [2.1, 2.3]]),),
            "two segments, three bins; the first bin far above the others",
            kind="a first bin that must be left out",
        ),
        Case(
            (record([[3.0, 1.25], [3.0, 2.5], [3.0, 0.75]], [[1.5], [2.0], [1.0]]),),
            "three segments, two bins: costs of both signs",
            kind="per segment, signed",
        ),
        Case(
            (record([[1.0, 1.0, 1.0, 1.0]], [[1.125, 1.0, 0.875]]),),
            "one segment, four bins",
        ),
        Case((record(None, [[1.4], [1.3]]),), "a learned table: no full context"),
    ]
    check("extra_context", reader, reference, cases, atol=1e-12)


# Fixtures, not the study's results: made-up extra-context costs (nats) and step-time
# ratios to NoPE, shaped like chapters 11 and 12's, so that the checker does not move
# when the study is rerun.
_EXTRA_FIXTURE = {"alibi": 0.013, "shaw": 0.077, "t5": 0.668, "rope": 2.0}
_COST_FIXTURE = {"alibi": 1.28, "shaw": 7.23, "t5": 2.58, "rope": 1.01}


def check_cheapest_keeper(
    reader: Callable[[dict[str, float], dict[str, float], float], str | None],
) -> None:
    """Chapter 14: ``reader(extra, cost, tolerance)``: of the methods whose extra-context
    cost is at most ``tolerance`` (``extra``: method -> nats, e.g. the upper end of each
    interval), the one with the smallest ``cost`` (method -> ratio to NoPE); None if no
    method qualifies."""
    extra, cost = _EXTRA_FIXTURE, _COST_FIXTURE
    cases = [
        Case((extra, cost, 0.02), "tolerance 0.02"),
        Case((extra, cost, 0.1), "tolerance 0.1"),
        Case((extra, {**cost, "shaw": 1.1}, 0.1), "tolerance 0.1, a cheaper Shaw"),
        Case((extra, cost, 0.001), "tolerance 0.001"),
        Case(
            ({**extra, "sinusoidal": -0.4}, {**cost, "sinusoidal": 1.0}, 0.02),
            "tolerance 0.02, sinusoidal 0.4 nats *better* with the full context",
        ),
        # exactly at the tolerance (0.0625 is exact in binary): "at most" keeps Shaw
        Case(
            ({**extra, "shaw": 0.0625}, {**cost, "shaw": 1.1}, 0.0625),
            "tolerance 0.0625, a cheaper Shaw whose extra loss is 0.0625",
            kind="a method exactly at the tolerance",
        ),
    ]
    check("cheapest_keeper", reader, results.cheapest_keeper, cases)
