"""Chapter 9 (ALiBi): the slopes, the bias while decoding, how far a head sees."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from pe_book import alibi
from pe_book import attention as attn
from pe_book.exercises.grading import Case, ExerciseMismatch, attempt, check, grader
from pe_book.exercises.policy import judge, show
from pe_book.exercises.secret import drawn_args

__all__ = ["check_alibi_slopes", "check_decoding_bias", "check_mean_distance"]


def check_alibi_slopes(reader: Callable[[int], Any]) -> None:
    """Chapter 9: ``reader(n_heads)`` returns the n_heads slopes s_h (any sequence of
    floats), to within 1e-7 (float32 is enough)."""
    cases = [
        Case((n,), f"n_heads={n}", kind=kind)
        for n, kind in [
            (8, "a power of two"),
            (1, "one head"),
            (2, "two heads"),
            (4, "four heads"),
            (16, "sixteen heads"),
            (3, "not a power of two"),
            (6, "not a power of two"),
            (12, "not a power of two"),
            (20, "not a power of two"),
        ]
    ]
    check(
        "alibi_slopes",
        reader,
        alibi.alibi_slopes,
        cases,
        atol=1e-7,
        locate=lambda case, index: f"head h = {index[0] + 1}",
    )


@grader
def check_decoding_bias(reader: Callable[[int, int, torch.Tensor], torch.Tensor]) -> str:
    """Chapter 9: ``reader(q_len, k_len, slopes)`` returns the causal bias (H, q_len, k_len).

    The queries are the last q_len of the k_len positions (decoding with a KV cache).
    Only entries a query can see (key position <= query position) are compared, to
    within 1e-6.
    """
    settings = [
        (3, 3, 4),
        (1, 1, 1),
        (1, 6, 2),
        (2, 9, 3),
        (4, 10, 8),
        (3, 20, 16),  # slopes 2^(-h/2): a 16-bit bias misses (the others are powers of two)
        *drawn_args("decoding_bias"),
    ]
    for q_len, k_len, heads in settings:
        slopes = alibi.alibi_slopes(heads)
        got = attempt(reader, q_len, k_len, slopes.clone())
        if isinstance(got, np.ndarray) and got.dtype.kind == "f":
            got = torch.from_numpy(got)  # an array is as good as a tensor
        expected = alibi.alibi_bias(q_len, k_len, slopes)
        where = f"q_len={q_len}, k_len={k_len}, {heads} heads"
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else show(got)
            raise ExerciseMismatch(
                f"{where}: expected a tensor of shape {tuple(expected.shape)}, got {shape}"
            )
        visible = attn.causal_mask(q_len, k_len)  # the entries compared; the rest set to 0
        problem = judge(
            expected.masked_fill(~visible, 0.0),
            got.detach().masked_fill(~visible, 0),  # in its own dtype, which a miss names
            atol=1e-6,
            locate=lambda index, start=k_len - q_len: (
                f"head {index[0] + 1}, query m = {start + index[1]}, key n = {index[2]}"
            ),
        )
        if problem:
            raise ExerciseMismatch(f"{where}: on the entries each query sees, {problem}")
    return f"all {len(settings)} cases agree on the entries each query sees, to within 1e-6."


def check_mean_distance(reader: Callable[[float, int], float]) -> None:
    """Chapter 9: ``reader(slope, m)``: mean distance m - n under the bias-only weights,
    to within 1e-9 (slopes down to 1e-9)."""

    def reference(slope: float, m: int) -> float:
        return float(alibi.mean_distance(torch.tensor([slope], dtype=torch.float64), m)[0])

    cases = [
        Case(args, f"slope={args[0]}, m={args[1]}", kind=kind)
        for *args, kind in [
            (0.5, 100, "a steep head"),
            (0.5, 0, "the first position"),
            (1 / 256, 100, "a shallow head, m below its reach"),
            (1 / 256, 5000, "a shallow head far into the text"),
            (0.0, 10, "slope 0: uniform weights"),
            (1e-9, 10, "a tiny slope, where 1/(e^s - 1) is about 10^9"),
        ]
    ]
    check("mean_distance", reader, reference, cases, atol=1e-9)
