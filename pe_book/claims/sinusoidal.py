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
    spread = float((steps.max(0).values - steps.min(0).values).max())
    lam = 2 * math.pi / steps[0]
    ratios = lam[1:] / lam[:-1]
    ratio_spread = float((ratios.max() - ratios.min()) / ratios.mean())
    shortest = float(lam[0])
    top = float(lam[-1]) / (10000 * 2 * math.pi)
    consistent, geometric = spread < 1e-9, ratio_spread < 1e-9
    starts = abs(shortest - 2 * math.pi) < 1e-9

    def within(value: float) -> str:
        return "< 1e-9" if value < 1e-9 else f"{value:.2g}"

    return Finding(
        holds=consistent and geometric and starts and 0.5 < top < 1.01,
        caveat=None if top > 0.99 else "the longest is 2π·b^(1−2/d)",
        shown=(
            f"d = {dim}, measured from the table's rows 0-3: each pair's step varies by"
            f" {within(spread)} rad between rows; neighbouring wavelengths' ratio"
            f" {float(ratios.mean()):.6f}, varying by {within(ratio_spread)} (relative);"
            f" shortest {shortest:.6f} (2π = {2 * math.pi:.6f});"
            f" longest / (10000·2π) = {top:.4f}",
        ),
    )


#: The windows (numbers of positions) over which chapter 3 sorts pairs into fast and slow.
WINDOWS = (64, 512, 4096, 65_536)


@evidence("001-low-dims-fast-high-dims-slow")
def low_fast_high_slow(table: Table = paper_table, layout: str = "interleaved") -> Finding:
    """Which pairs turn at least once (local) and which less than once (global), per window.

    The step of each pair is read off the table (rows 0-1); over a window of W
    positions pair i turns (W − 1)·step_i. "Global" needs a pair that turns less
    than once; "low dimensions fast" needs the fast pairs to be the first ones.
    """
    dim = 512
    step = measured_steps(table, 2, dim, layout)[0]  # (d/2,): radians per position
    fast, prefix = {}, True
    for window in WINDOWS:
        wraps = ((window - 1) * step >= 2 * math.pi).tolist()
        fast[window] = sum(wraps)
        prefix &= wraps == [True] * fast[window] + [False] * (dim // 2 - fast[window])
    local_and_global = [w for w in WINDOWS if 0 < fast[w] < dim // 2]
    longest = 2 * math.pi / float(step.min())
    sin, cos = _pairs(table, 2, dim, layout)
    neighbour = torch.hypot(sin[1] - sin[0], cos[1] - cos[0])  # (d/2,)
    return Finding(
        holds=bool(prefix) and bool(local_and_global),
        caveat=None
        if len(local_and_global) == len(WINDOWS)
        else "past the longest wavelength every pair turns: none is global alone",
        shown=(
            f"d = {dim}, pairs (of {dim // 2}) that turn at least once across a window of W"
            " positions (the rest turn less than once, so their angle fixes the position in"
            " the window): "
            + ", ".join(f"W = {w:,}: {fast[w]}" for w in WINDOWS)
            + f"; the fast pairs are the first ones in every window: {prefix}",
            f"longest wavelength {longest:,.0f} positions; step between neighbours:"
            f" pair 0 {float(neighbour[0]):.3f}, pair {dim // 2 - 1} {float(neighbour[-1]):.1e}",
        ),
    )


def _closest_offset(distances: Distances, count: int) -> tuple[int, float]:
    offsets = torch.arange(1, count)
    values = distances(offsets)
    return int(offsets[values.argmin()]), float(values.min())


def _distinct_in_bfloat16(count: int, dim: int) -> int:
    rows = exhibits.low_precision_table(count, dim, dtype=torch.bfloat16).float()
    return torch.unique(rows, dim=0).shape[0]


def _apart(distances: Distances | None, dim: int) -> tuple[int, float, int]:
    """Closest offset and its distance among the first 100,000 positions; bfloat16's count."""
    count = 100_000
    distances = distances or (lambda offsets: sinusoidal.offset_distances(offsets, dim))
    closest, value = _closest_offset(distances, count)
    return closest, value, _distinct_in_bfloat16(count, dim)


@evidence("001-tens-of-thousands")
def tens_of_thousands(distances: Distances | None = None) -> Finding:
    """Positions 0-99,999 stay apart (d = 512); also with b = 100, whose longest is 617."""
    dim = 512
    closest, value, distinct = _apart(distances, dim)
    small_base = 100.0
    small_closest, small_value = _closest_offset(
        lambda offsets: sinusoidal.offset_distances(offsets, dim, small_base), 100_000
    )
    small_longest = float(sinusoidal.wavelengths(dim, small_base)[-1])
    caveats = []
    if small_closest == 1:
        caveats.append(
            f"b = {small_base:g} (longest {small_longest:.0f}) keeps them apart too:"
            " the longest wavelength is not what does it"
        )
    if distinct < 100_000:
        caveats.append("16-bit angles merge positions")
    return Finding(
        holds=closest == 1,
        caveat="; ".join(caveats) or None,
        shown=(
            f"d = {dim}, positions 0-99,999: closest pair r = {closest} apart (D = {value:.3f});"
            f" with b = {small_base:g} (longest wavelength {small_longest:.0f} positions):"
            f" closest pair r = {small_closest} apart (D = {small_value:.3f})",
            f"angles computed in bfloat16: {distinct:,} distinct rows of 100,000",
        ),
    )


@evidence("004-unique-representation")
def unique_representation(distances: Distances | None = None) -> Finding:
    closest, value, distinct = _apart(distances, 128)
    return Finding(
        holds=closest == 1,
        caveat="16-bit angles merge positions" if distinct < 100_000 else None,
        shown=(
            f"d = 128, positions 0-99,999: closest pair r = {closest} apart (D = {value:.3f});"
            f" angles computed in bfloat16: {distinct:,} distinct rows",
        ),
    )


#: (seq_len, dim, base) -> the paper's table with that base.
BaseTable = Callable[[int, int, float], torch.Tensor]


def based_table(seq_len: int, dim: int, base: float) -> torch.Tensor:
    return sinusoidal.sinusoidal_table(seq_len, dim, base, dtype=torch.float64)


@evidence("001-base-margin")
def base_margin(table: BaseTable = based_table) -> Finding:
    """How far the slowest pair turns over a few thousand positions, for b = 100 to 10,000.

    Within half a turn, the slowest pair's chord distance grows with the offset
    over the whole sequence: it alone orders every pair of positions, with room to
    spare when it turns much less. Measured from each table's rows 0-1 (d = 512,
    4,096 positions, the longest of the paper's "hundreds to a few thousand").
    """
    dim, seq_len, bases = 512, 4096, (100.0, 1000.0, 10000.0)
    turns, distinct = {}, {}
    for base in bases:
        step = measured_steps(lambda n, d, b=base: table(n, d, b), 2, dim)[0, -1]
        turns[base] = float(step) * (seq_len - 1) / (2 * math.pi)
        rows = exhibits.low_precision_table(seq_len, dim, base, dtype=torch.bfloat16)
        distinct[base] = torch.unique(rows.float(), dim=0).shape[0]
    same = len(set(distinct.values())) == 1
    return Finding(
        holds=turns[10000.0] < 0.5,
        caveat="16-bit angles merge positions whatever the base"
        if distinct[10000.0] < seq_len
        else None,
        shown=(
            f"d = {dim}, {seq_len:,} positions: turns of the slowest pair "
            + ", ".join(f"b = {b:,.0f}: {turns[b]:.3g}" for b in bases)
            + f" (within half a turn: it orders every pair; b = 10,000 uses"
            f" {turns[10000.0] / 0.5:.0%} of that)",
            "angles computed in bfloat16: distinct rows "
            + ", ".join(f"b = {b:,.0f}: {distinct[b]:,}" for b in bases)
            + f" of {seq_len:,}"
            + (" (the same for every base)" if same else ""),
        ),
    )


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
    return Finding(
        holds=not problems,
        shown=(
            f"10 positions, d = 100: {len(problems)} departures from the paper: "
            + "; ".join(" ".join(p.split()) for p in problems),
        ),
    )


@evidence("003-answer1-code")
def answer1_code(table: Table = exhibits.answer1_table) -> Finding:
    """Answer 1's rows 1-9 against the paper's (row 0 is its deliberate padding row)."""
    full = table(10, 100)
    rows = torch.as_tensor(full, dtype=torch.float64)[1:]
    difference = float((rows - paper_table(10, 100)[1:]).abs().max())
    problems = [  # row 0 is its padding row; the entries' difference is printed first
        p for p in _departures(full) if not p.startswith(("row 0", "entries differ"))
    ]
    return Finding(
        holds=difference < 1e-8,
        shown=(
            f"rows 1-9 (d = 100) differ from the paper's by up to {difference:.3g}"
            " (equal would be < 1e-8): " + "; ".join(" ".join(p.split()) for p in problems),
        ),
    )


def paper_frequencies(dim: int) -> torch.Tensor:
    return sinusoidal.frequencies(dim)


@evidence("003-answer2-frequency-range")
def answer2_frequency_range(
    frequencies: Callable[[int], torch.Tensor] = paper_frequencies,
) -> Finding:
    """The range the answer states (exponent 0 to 2, θ down to 10^-8) against the table's."""
    theta = frequencies(512)
    exponent = -math.log(float(theta[-1])) / math.log(10000)  # the largest 2i/d
    stated = 10000.0**-2  # where the answer's exponent 2 would take θ
    return Finding(
        holds=float(theta[0]) == 1.0 and abs(exponent - 2) < 0.05,
        shown=(
            f"d = 512: θ falls from {float(theta[0]):g} to {float(theta[-1]):.3e};"
            f" largest exponent 2i/d = {exponent:.4f}, not 2; the answer's θ would end at"
            f" {stated:.0e}, {float(theta[-1]) / stated:,.0f} times below the smallest θ",
        ),
    )


@evidence("003-answer2-high-dims-insensitive")
def high_dims_insensitive(table: Table = paper_table, layout: str = "interleaved") -> Finding:
    """How far each pair moves from its position-0 point up to m = 100 and 1,000 (d = 512).

    "Hardly": less than a tenth of the largest move a pair can make (2, the
    diameter of its unit circle). The highest pairs must stay that still; if the
    upper half (pairs 128 on) does not, only the highest few do: the caveat.
    """
    dim = 512
    sin, cos = _pairs(table, 1001, dim, layout)
    moved = {}
    for last in (100, 1000):
        part = slice(0, last + 1)
        moved[last] = torch.hypot(sin[part] - sin[:1], cos[part] - cos[:1]).max(0).values
    slow = {last: float(m[-8:].max()) for last, m in moved.items()}
    still = {last: int((m < 0.2).sum()) for last, m in moved.items()}
    half = dim // 4  # the first pair of the upper half of the dimensions
    return Finding(
        holds=max(slow.values()) < 0.2 and float(moved[100][0]) > 1.99,
        caveat=None
        if bool((moved[1000][half:] < 0.2).all())
        else f"only the highest pairs: pair {half}, the first of the upper half, moves"
        f" {float(moved[100][half]):.4f} by m = 100 and {float(moved[1000][half]):.4f} by"
        " m = 1,000",
        shown=(
            f"largest move from position 0 (of at most 2): pair 0 {float(moved[100][0]):.4f}"
            " by m = 100; the last 8 pairs at most "
            + " and ".join(f"{slow[m]:.4f} by m = {m:,}" for m in slow),
            "pairs that move less than 0.2 (of 256): "
            + ", ".join(f"{still[m]} by m = {m:,}" for m in still),
        ),
    )
