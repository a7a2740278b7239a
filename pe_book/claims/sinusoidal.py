"""Evidence for the claims about the sinusoidal encoding itself (chapters 3 and 5).

The measured claims read what they need off a *table* (rows = positions), the way
one would audit someone else's implementation: the angle each pair turns per
position is measured with atan2 from the table's own numbers, not taken from the
formula. A table function has the signature ``table(seq_len, dim) -> (L, d)``;
``layout`` says which columns form pair i.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from pe_book import exhibits, papers, sinusoidal
from pe_book.claims import Finding, evidence

Table = Callable[[int, int], torch.Tensor | np.ndarray]
Distances = Callable[[torch.Tensor], torch.Tensor]


def paper_table(seq_len: int, dim: int) -> torch.Tensor:
    """pe_book's table of the paper's encoding, float64, interleaved."""
    return sinusoidal.sinusoidal_table(seq_len, dim, dtype=torch.float64)


def _pairs(table: Table, seq_len: int, dim: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(sin, cos) columns of every pair, each (L, d/2), float64."""
    values = torch.as_tensor(table(seq_len, dim), dtype=torch.float64)
    if layout == "interleaved":
        return values[:, 0::2], values[:, 1::2]
    return values[:, : dim // 2], values[:, dim // 2 :]


def measured_steps(
    table: Table, seq_len: int, dim: int, layout: str = "interleaved"
) -> torch.Tensor:
    """The angle each pair turns from one row to the next, read off the table: (L-1, d/2).

    For a table of the paper's kind every row gives the same step θ_i per pair.
    """
    sin, cos = _pairs(table, seq_len, dim, layout)
    angle = torch.atan2(sin, cos)  # (L, d/2)
    return torch.remainder(angle[1:] - angle[:-1], 2 * math.pi)  # (L-1, d/2)


@evidence("vaswani-wavelength-range")
def wavelength_range(table: Table = paper_table, layout: str = "interleaved") -> Finding:
    """Wavelengths measured from the table: one per pair, geometric, from 2π to ~10000·2π."""
    dim = 512
    steps = measured_steps(table, 4, dim, layout)  # rows 0-3 of a d = 512 table
    consistent = bool((steps.max(0).values - steps.min(0).values).max() < 1e-9)
    lam = 2 * math.pi / steps[0]
    ratios = lam[1:] / lam[:-1]
    geometric = bool((ratios.max() - ratios.min()) / ratios.mean() < 1e-9)
    starts = abs(float(lam[0]) - 2 * math.pi) < 1e-9
    top = float(lam[-1]) / (10000 * 2 * math.pi)
    return Finding(
        holds=consistent and geometric and starts and 0.5 < top < 1.01,
        caveat=None if top > 0.99 else "the longest is 2π·b^(1−2/d)",
        shown=(
            f"d = {dim}, measured from the table: one step per pair: {consistent};"
            f" geometric: {geometric}; shortest 2π: {starts};"
            f" longest / (10000·2π) = {top:.4f}",
        ),
    )


@evidence("001-low-dims-fast-high-dims-slow")
def low_fast_high_slow(table: Table = paper_table, layout: str = "interleaved") -> Finding:
    """Over a 512-position window: which pairs turn fully (local) and which do not (global)."""
    dim, seq_len = 512, 512
    steps = measured_steps(table, seq_len, dim, layout)  # (L-1, d/2)
    turned = steps.sum(0)  # total angle each pair turns across the window
    wraps = (turned >= 2 * math.pi).tolist()
    fast = sum(wraps)
    prefix = 0 < fast < dim // 2 and wraps == [True] * fast + [False] * (dim // 2 - fast)
    sin, cos = _pairs(table, seq_len, dim, layout)
    neighbour = torch.hypot(sin.diff(dim=0), cos.diff(dim=0)).mean(0)  # (d/2,)
    return Finding(
        holds=bool(prefix),
        shown=(
            f"window of {seq_len} positions, d = {dim}: pairs 0-{fast - 1} turn at least once"
            " (each point recurs: they resolve small differences, not where in the window);"
            f" pairs {fast}-{dim // 2 - 1} turn less than once (their angle fixes the position"
            f" in the window); the fast pairs form a prefix: {prefix}",
            f"mean step between neighbours: pair 0 {float(neighbour[0]):.3f},"
            f" pair {dim // 2 - 1} {float(neighbour[-1]):.1e}",
        ),
    )


def _closest_offset(distances: Distances, count: int) -> tuple[int, float]:
    offsets = torch.arange(1, count)
    values = distances(offsets)
    return int(offsets[values.argmin()]), float(values.min())


def _distinct_in_bfloat16(count: int, dim: int) -> int:
    rows = exhibits.low_precision_table(count, dim, dtype=torch.bfloat16).float()
    return torch.unique(rows, dim=0).shape[0]


def _apart(distances: Distances | None, dim: int) -> Finding:
    """No two of the first 100,000 positions closer than neighbours; 16-bit angles merge them."""
    count = 100_000
    distances = distances or (lambda offsets: sinusoidal.offset_distances(offsets, dim))
    closest, value = _closest_offset(distances, count)
    distinct = _distinct_in_bfloat16(count, dim)
    return Finding(
        holds=closest == 1,
        caveat="16-bit angles merge positions" if distinct < count else None,
        shown=(
            f"d = {dim}, positions 0-99,999: closest pair r = {closest} (D = {value:.3f});"
            f" angles computed in bfloat16: {distinct:,} distinct rows",
        ),
    )


@evidence("001-tens-of-thousands")
def tens_of_thousands(distances: Distances | None = None) -> Finding:
    return _apart(distances, 512)


@evidence("004-unique-representation")
def unique_representation(distances: Distances | None = None) -> Finding:
    return _apart(distances, 128)


@evidence("001-base-margin")
def base_margin(distances: Distances | None = None) -> Finding:
    finding = _apart(distances, 512)
    return Finding(holds=finding.holds, shown=finding.shown)  # the margin, not the dtype


@evidence("001-table3")
def table3() -> Finding:
    """Source 001's two rows against the paper's Table 3 (quoted in papers.toml)."""
    source = {"sinusoidal": (4.92, 25.7), "learned": (4.92, 25.7)}  # as source 001 prints them
    table = papers.get("vaswani2017-table3")
    paper = {"sinusoidal": table.row("base"), "learned": table.row("(E)")}
    found = {k: (row["PPL (dev)"], row["BLEU (dev)"]) for k, row in paper.items()}
    return Finding(
        holds=found == source,
        shown=(
            "paper (PPL, BLEU): "
            + ", ".join(f"{k} {v}" for k, v in found.items())
            + "; source 001: "
            + ", ".join(f"{k} {v}" for k, v in source.items()),
        ),
    )


def _departures(table: np.ndarray | torch.Tensor) -> list[str]:
    return sinusoidal.departures_from_paper(torch.as_tensor(table, dtype=torch.float64))


@evidence("003-question-code")
def question_code(table: Table = exhibits.question_table) -> Finding:
    """The question's table, audited against the paper's formula (10 positions, d = 100)."""
    problems = _departures(table(10, 100))
    return Finding(holds=not problems, shown=(f"departures from the paper: {len(problems)}",))


@evidence("003-answer1-code")
def answer1_code(table: Table = exhibits.answer1_table) -> Finding:
    """Answer 1's rows 1-9 against the paper's (row 0 is its deliberate padding row)."""
    rows = torch.as_tensor(table(10, 100), dtype=torch.float64)[1:]
    same = bool(torch.allclose(rows, paper_table(10, 100)[1:]))
    return Finding(holds=same, shown=(f"rows 1-9 equal the paper's: {same}",))


def paper_frequencies(dim: int) -> torch.Tensor:
    return sinusoidal.frequencies(dim)


@evidence("003-answer2-frequency-range")
def answer2_frequency_range(
    frequencies: Callable[[int], torch.Tensor] = paper_frequencies,
) -> Finding:
    """Frequencies fall from 1 to a very small number; the exponent stops below 1 (d = 512)."""
    theta = frequencies(512)
    exponent = -math.log(float(theta[-1])) / math.log(10000)  # the largest 2i/d
    return Finding(
        holds=float(theta[0]) == 1.0 and float(theta[-1]) < 1e-3,
        caveat="the exponent stops below 1" if exponent < 1 else None,
        shown=(
            f"θ from {float(theta[0]):g} to {float(theta[-1]):.3e}; largest exponent"
            f" 2i/d = {exponent:.4f}",
        ),
    )


@evidence("003-answer2-high-dims-insensitive")
def high_dims_insensitive(table: Table = paper_table, layout: str = "interleaved") -> Finding:
    """Over positions 0-100 (d = 512), how far each pair moves from its position-0 point."""
    sin, cos = _pairs(table, 101, 512, layout)
    moved = torch.hypot(sin - sin[:1], cos - cos[:1]).max(0).values  # (d/2,)
    slow, fast = float(moved[-8:].max()), float(moved[0])
    return Finding(
        holds=slow < 0.02 and fast > 1.99,
        shown=(f"largest move, m <= 100: pair 0 {fast:.4f}; last 8 pairs at most {slow:.4f}",),
    )
