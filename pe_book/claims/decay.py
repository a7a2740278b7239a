"""Evidence for the claims about the long-range decay of the sinusoidal dot product (chapter 5).

A ``profile(offsets, dim)`` returns the cosine similarity ρ_d(r) of two positions r
apart (default: pe_book's ``decay.dot_profile`` with b = 10000); an
``integral(offsets)`` returns the d → ∞ limit ρ∞(r) (default: pe_book's closed form
with mpmath's Ci).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import sympy as sp
import torch

from pe_book import decay, papers
from pe_book.claims import Finding, evidence

Profile = Callable[[torch.Tensor, int], torch.Tensor]
Integral = Callable[[torch.Tensor], torch.Tensor]


def paper_profile(offsets: torch.Tensor, dim: int) -> torch.Tensor:
    return decay.dot_profile(offsets, dim)


def envelope(profile: Profile, dim: int, decades: int = 5) -> list[float]:
    """max |ρ_d(r)| over r in [10^k, 10^(k+1)) for k = 0 .. decades - 1."""
    values = profile(torch.arange(0, 10**decades + 1), dim).abs()
    return [float(values[10**k : 10 ** (k + 1)].max()) for k in range(decades)]


@evidence("000-near-large-far-decays")
def near_large_far_decays(profile: Profile = paper_profile) -> Finding:
    """The envelope falls decade by decade (d = 1024); the curve oscillates, goes negative."""
    falls_1024 = envelope(profile, 1024)
    floor_64 = envelope(profile, 64)
    falls = all(b < a for a, b in itertools.pairwise(falls_1024))
    offsets = torch.arange(20_001)
    negative, rebounds = [], []
    for dim in (64, 256, 1024):
        values = profile(offsets, dim)
        negative.append(decay.first_offset_at_or_below(offsets, values, 0.0))
        rebounds.append(decay.largest_rebound(values)[0])
    floor = floor_64[4] >= floor_64[3]  # d = 64 stops falling after ~1,000 positions
    wavy = None not in negative and min(rebounds) > 0.05
    return Finding(
        holds=falls,
        caveat="oscillates, goes negative, rebounds; stops at a floor" if wavy and floor else None,
        shown=(
            "max |ρ| per decade of offsets, d = 1024: " + ", ".join(f"{v:.3f}" for v in falls_1024),
            "first r with ρ <= 0 for d = 64, 256, 1024: "
            + ", ".join("none" if r is None else f"{r:,}" for r in negative)
            + "; largest rebounds "
            + ", ".join(f"{v:.2f}" for v in rebounds),
        ),
    )


def paper_integral(offsets: torch.Tensor) -> torch.Tensor:
    return decay.integral_profile(offsets)


@evidence("000-oscillatory-integral")
def oscillatory_integral(
    integral: Integral = paper_integral, profile: Profile = paper_profile
) -> Finding:
    """ρ∞(r) → 0 within the bound (1 + b)/(r ln b), checked by quadrature; finite sums do not."""
    r, b = sp.symbols("r b", positive=True)
    closed = (sp.Ci(r) - sp.Ci(r / b)) / sp.log(b)
    limit_zero = sp.limit(closed, r, sp.oo) == 0  # the closed form (proved in the chapter)
    grid = torch.tensor([1.0, 10, 100, 1000, 5000, 20000])
    worst = float((integral(grid) - decay.integral_by_quadrature(grid)).abs().max())
    wide = torch.logspace(-2, 7, 400, dtype=torch.float64)  # 0.01 to 1000 b
    of_bound = float((integral(wide).abs() / ((1 + 1e4) / (wide * math.log(1e4)))).max())
    bounded = of_bound <= 1
    far = torch.arange(10**6, 2 * 10**6, 97)
    rms = float(profile(far, 64).pow(2).mean().sqrt())
    slow = float(integral(torch.tensor([1000.0]))[0]) > 0.15  # the log law, r ≪ b
    return Finding(
        holds=limit_zero and worst < 1e-12 and bounded,
        caveat="decay only logarithmic for r ≪ b; finite sums fluctuate"
        if rms > 0.05 and slow
        else None,
        shown=(
            "ρ∞ minus quadrature at r = 1 to 20,000: "
            + ("< 1e-12" if worst < 1e-12 else f"up to {worst:.2g}")
            + f"; largest |ρ∞(r)| as a share of the bound (1 + b)/(r ln b), r from 0.01 to 10^7:"
            f" {of_bound:.4f}",
            f"d = 64, r from 10^6 to 2·10^6: RMS of ρ_d = {rms:.3f} (1/√d = {64**-0.5:.3f})",
        ),
    )


@evidence("001-base-untested")
def base_untested() -> Finding:
    """The hyperparameters the paper's Table 3 varies (quoted in papers.toml)."""
    varied = papers.get("vaswani2017-table3").varied
    tested = any("base" in column for column in varied)
    return Finding(
        holds=not tested,
        shown=(f"columns varied in Table 3: {len(varied)}; the base among them: {tested}",),
    )
