"""Chapter 9 (ALiBi): the slopes, the bias while decoding, how far a head sees."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pe_book import alibi
from pe_book import attention as attn
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader, show

__all__ = ["check_alibi_slopes", "check_decoding_bias", "check_mean_distance"]


def check_alibi_slopes(reader: Callable[[int], Any]) -> None:
    """Chapter 9: ``reader(n_heads)`` returns the n_heads slopes s_h (any sequence of floats)."""
    cases = [Case((n,), f"n_heads={n}") for n in (1, 2, 4, 8, 16, 3, 6, 12, 20)]
    check(
        "alibi_slopes",
        reader,
        alibi.alibi_slopes,
        cases,
        atol=1e-7,
        as_tensor=torch.float64,
    )


@grader
def check_decoding_bias(reader: Callable[[int, int, torch.Tensor], torch.Tensor]) -> str:
    """Chapter 9: ``reader(q_len, k_len, slopes)`` returns the causal bias (H, q_len, k_len).

    The queries are the last q_len of the k_len positions (decoding with a KV cache).
    Only entries a query can see (key position <= query position) are compared.
    """
    for q_len, k_len, heads in [(1, 1, 1), (1, 6, 2), (3, 3, 4), (2, 9, 3), (4, 10, 8)]:
        slopes = alibi.alibi_slopes(heads)
        got = attempt(reader, q_len, k_len, slopes.clone())
        expected = alibi.alibi_bias(q_len, k_len, slopes)
        where = f"q_len={q_len}, k_len={k_len}, {heads} heads"
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            raise ExerciseMismatch(f"{where}: expected shape {tuple(expected.shape)}, got {shape}")
        visible = attn.causal_mask(q_len, k_len)
        worst = float((got.double() - expected).abs()[:, visible].max())
        if not worst <= 1e-9:  # also catches NaN
            raise ExerciseMismatch(
                f"{where}: visible entries differ by up to {worst:.3g}\n"
                f"expected {show(expected)}\ngot {show(got)}"
            )
    return "all 5 cases agree on the entries each query sees."


def check_mean_distance(reader: Callable[[float, int], float]) -> None:
    """Chapter 9: ``reader(slope, m)``: mean distance m - n under the bias-only weights."""

    def reference(slope: float, m: int) -> float:
        return float(alibi.mean_distance(torch.tensor([slope], dtype=torch.float64), m)[0])

    cases = [
        Case(args, f"slope={args[0]}, m={args[1]}")
        for args in [(0.5, 0), (0.5, 100), (1 / 256, 100), (1 / 256, 5000), (0.0, 10)]
    ]
    check("mean_distance", lambda s, m: float(reader(s, m)), reference, cases, atol=1e-9)
