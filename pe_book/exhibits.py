"""Exhibits: other people's sinusoidal tables, kept to be dissected in chapter 3. DO NOT USE.

Each function re-types, as faithfully as NumPy allows, code shown in source
``003_12a40a9c21488c38.txt`` (a question-and-answer thread), or a well-known
variant, so the chapter can run it and show exactly where it departs from the
paper's formula (``pe_book.sinusoidal.departures_from_paper``). Only
:func:`tensor2tensor_timing_signal` is a legitimate encoding (a different,
documented choice of frequencies); the others are bugs.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from pe_book.reading import body

__all__ = [
    "answer1_table",
    "low_precision_table",
    "question_table",
    "source",
    "tensor2tensor_timing_signal",
]


def source(exhibit) -> str:
    """The body of an exhibit, without its docstring, for a chapter to print."""
    return body(exhibit)


def question_table(seq_len: int, dim: int) -> np.ndarray:
    """Exhibit A, the question's code (buggy). Shape (seq_len, dim).

    It raises (pos / 10000) to the power 2i/d instead of dividing pos by
    10000^(2i/d), lets i run over all d dimensions instead of the d/2 pairs,
    and puts cos in the even columns and sin in the odd ones (the paper has the
    opposite).
    """
    # Matrix of [[0, ..., d-1], [0, ..., d-1], ...]
    i = np.tile(np.expand_dims(range(dim), 0), [seq_len, 1])
    # Matrix of [[0, ..., 0], [1, ..., 1], ...]
    pos = np.tile(np.expand_dims(range(seq_len), 1), [1, dim])
    # Apply the intermediate functions
    pos = np.multiply(pos, 1 / 10000.0)
    i = np.multiply(i, 2.0 / dim)
    matrix = np.power(pos, i)
    # Apply the sine function to the even columns
    matrix[:, 1::2] = np.sin(matrix[:, 1::2])  # even
    # Apply the cosine function to the odd columns
    matrix[:, ::2] = np.cos(matrix[:, ::2])  # odd
    return matrix


def answer1_table(seq_len: int, dim: int) -> np.ndarray:
    """Exhibit B, answer 1's code (buggy). Shape (seq_len, dim).

    Each *dimension* j gets its own frequency 10000^(-2j/d), so columns 2i and
    2i+1 no longer share one (the paper's pairs are broken), and the
    frequencies run down to 10000^(-2(d-1)/d), almost 10^-8. Row 0 is all
    zeros on purpose: a padding convention, not part of the paper.
    """
    # fmt: off
    # keep dim 0 for padding token position encoding zero vector
    position_enc = np.array([
        [pos / np.power(10000, 2 * i / dim) for i in range(dim)]
        if pos != 0 else np.zeros(dim) for pos in range(seq_len)])
    # fmt: on
    position_enc[1:, 0::2] = np.sin(position_enc[1:, 0::2])  # dim 2i
    position_enc[1:, 1::2] = np.cos(position_enc[1:, 1::2])  # dim 2i+1
    return position_enc


def tensor2tensor_timing_signal(
    seq_len: int, dim: int, min_timescale: float = 1.0, max_timescale: float = 1.0e4
) -> np.ndarray:
    """Exhibit C, tensor2tensor's ``get_timing_signal_1d``: a legitimate variant. (seq_len, dim).

    Frequencies θ_i = min_timescale · (max/min)^(-i / (d/2 - 1)), i = 0..d/2-1, as the code
    computes them (t2t multiplies by min_timescale; with the default 1 it makes no
    difference), so the longest wavelength is exactly 2π · 10000 (the paper's is
    2π · 10000^(1 - 2/d));
    layout: all sines, then all cosines (the "half" layout).
    """
    position = np.arange(seq_len, dtype=np.float64)
    num_timescales = dim // 2
    log_timescale_increment = math.log(max_timescale / min_timescale) / (num_timescales - 1)
    inv_timescales = min_timescale * np.exp(np.arange(num_timescales) * -log_timescale_increment)
    scaled_time = position[:, None] * inv_timescales[None, :]
    return np.concatenate([np.sin(scaled_time), np.cos(scaled_time)], axis=1)


def low_precision_table(
    seq_len: int, dim: int, base: float = 10000.0, *, dtype: torch.dtype = torch.float16
) -> torch.Tensor:
    """Exhibit D, the paper's formula computed *in* a low-precision dtype (buggy).

    Positions and angles are formed in ``dtype``, as in
    ``torch.arange(L, dtype=torch.float16)[:, None] * inv_freq.half()``: integers
    stop being representable (bfloat16 above 256, float16 above 2048) and float16
    overflows past 65504, so distinct positions merge or become NaN. pe_book forms
    the angles in float64 and rounds only the finished table.
    """
    pos = torch.arange(seq_len, dtype=dtype)[:, None]  # positions rounded to dtype
    inv_freq = (base ** (-torch.arange(0, dim, 2, dtype=torch.float64) / dim)).to(dtype)
    angles = pos * inv_freq[None, :]  # (L, dim/2), in dtype
    return torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)
