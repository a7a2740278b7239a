"""Chapter 10 (beyond RoPE and ALiBi): KERPLE's log bias, p-RoPE's frequencies, MLA's cache."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from pe_book import kerple, mla, p_rope
from pe_book.exercises.grading import Case, check

__all__ = ["check_kerple_log", "check_mla_cache_ratio", "check_p_rope_frequencies"]


def _kerple_log(offsets: torch.Tensor, r1: float, r2: float) -> torch.Tensor:
    """pe_book's bias read at the offsets: a query at m = max(offsets), keys n = m - r."""
    last = int(offsets.max())
    as_head = {"dtype": torch.float64}
    bias = kerple.kerple_bias(
        1, last + 1, torch.tensor([r1], **as_head), torch.tensor([r2], **as_head), "log"
    )[0, 0]  # (last + 1,): key n = 0 .. last of the query at m = last
    return bias[last - offsets]


def check_kerple_log(reader: Callable[[torch.Tensor, float, float], Any]) -> None:
    """Chapter 10: ``reader(offsets, r1, r2)`` returns one head's -r1 log(1 + r2 r), float64.

    ``offsets`` is a 1-D int64 tensor of distances r = m - n >= 0; the answer is
    compared with :func:`pe_book.kerple.kerple_bias` (kind "log") at those distances.
    The cases' parameters are fixtures of the exercise.
    """
    cases = [
        Case((torch.arange(8), r1, r2), f"offsets 0..7, r1={r1}, r2={r2}")
        for r1, r2 in [(1.0, 1.0), (2.0, 0.5), (0.5, 3.0)]
    ]
    far = torch.tensor([0, 1, 10, 1000, 100_000])
    cases.append(Case((far, 1.5, 0.01), "offsets 0, 1, 10, 1000, 100000, r1=1.5, r2=0.01"))
    check("kerple_log", reader, _kerple_log, cases, atol=1e-9, dtype=torch.float64)


def check_p_rope_frequencies(reader: Callable[[int, float, float], Any]) -> None:
    """Chapter 10: ``reader(dim, p, base)`` returns p-RoPE's θ'_i, float64, shape (dim/2,).

    Compared with :func:`pe_book.p_rope.p_rope_frequencies`: the fastest ⌊p·d/2⌋ pairs keep
    θ_i = b^(-2i/d), the others get 0. The cases catch NeoX's re-spread frequencies (d = 128,
    p = 1/4), rounding instead of flooring (p = 0.3 at d = 10) and keeping the slow pairs.
    """
    settings = [
        (128, 0.25, 10000.0),
        (64, 0.5, 10000.0),
        (10, 0.3, 500000.0),
        (8, 1.0, 10000.0),
        (8, 0.0, 10000.0),
        (128, 0.999, 10000.0),
    ]
    cases = [Case(args, f"dim={args[0]}, p={args[1]}, base={args[2]:g}") for args in settings]
    check(
        "p_rope_frequencies",
        reader,
        p_rope.p_rope_frequencies,
        cases,
        atol=1e-12,
        dtype=torch.float64,
    )


def check_mla_cache_ratio(reader: Callable[[int, int, int, int], Any]) -> None:
    """Chapter 10: ``reader(n_heads, d_head, d_latent, d_rope)``: MHA's cache over MLA's.

    Per token and layer, multi-head attention caches 2 H d_h numbers
    (:func:`pe_book.mla.mha_cache_floats`) and MLA d_c + d_h^R
    (:func:`pe_book.mla.mla_cache_floats`). The first case has DeepSeek-V2's sizes; the
    others are fixtures that tell apart the usual slips (no k^R, one k^R per head, no 2).
    """

    def reference(n_heads: int, d_head: int, d_latent: int, d_rope: int) -> float:
        return mla.mha_cache_floats(n_heads, d_head) / mla.mla_cache_floats(d_latent, d_rope)

    settings = [(128, 128, 512, 64), (16, 128, 512, 64), (32, 64, 256, 32), (1, 8, 8, 2)]
    cases = [
        Case(args, "n_heads={}, d_head={}, d_latent={}, d_rope={}".format(*args))
        for args in settings
    ]
    check("mla_cache_ratio", lambda *a: float(reader(*a)), reference, cases, atol=1e-9)
