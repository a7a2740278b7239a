"""Evidence for the claims that a shift of positions is a rotation (chapter 4).

The measured claims fit the shift map from a table's own rows (least squares on
float64), so that a table that is not of the paper's kind gives a different
answer; the symbolic identities are proved with SymPy for symbolic m, c, θ.
A table function has the signature ``table(positions, dim) -> (len(positions), d)``,
interleaved layout (pair i in columns 2i, 2i+1).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import sympy as sp
import torch

from pe_book import sinusoidal, symbolic
from pe_book.claims import Finding, evidence

Table = Callable[[torch.Tensor, int], torch.Tensor]


def paper_table(positions: torch.Tensor, dim: int) -> torch.Tensor:
    return sinusoidal.sinusoidal_table(positions, dim, dtype=torch.float64)


#: Rows the shift map is fitted on are this far apart: 400 of them span 10,000 positions,
#: over which the slowest pair of d = 16 turns by 3.2 rad, so the fit is well conditioned
#: (condition number 1.2; on 400 consecutive rows that pair turns 0.13 rad and it is 1.6e9,
#: so a table's rounding errors would be magnified a billion times).
STRIDE = 25


def fitted_rows(start: int, count: int = 400) -> torch.Tensor:
    """The positions a shift map is fitted on: start, start + STRIDE, ... (count of them)."""
    return start + STRIDE * torch.arange(count)


def fitted_shift(table: Table, shift: int, start: int, dim: int, count: int = 400) -> torch.Tensor:
    """The d × d matrix M that best maps row m to row m + shift, for the rows
    m = start, start + STRIDE, ... (count of them)."""
    positions = fitted_rows(start, count)
    before, after = table(positions, dim), table(positions + shift, dim)  # (count, d)
    return torch.linalg.lstsq(before, after).solution.T  # after ≈ before @ Mᵀ


def fit_condition(table: Table, start: int, dim: int, count: int = 400) -> float:
    """The condition number of the rows a shift map is fitted on (1 is perfect)."""
    return float(torch.linalg.cond(table(fitted_rows(start, count), dim)))


def one_frequency_table(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """A counterfactual table: every pair turns at pair 0's frequency (one shared angle)."""
    return sinusoidal.sinusoidal_table(positions, 2, dtype=torch.float64).repeat(1, dim // 2)


def random_table(positions: torch.Tensor, dim: int) -> torch.Tensor:
    """A counterfactual table: a random learned one, row m drawn from seed m (so any
    position has its own fixed row, with nothing stored)."""
    seeds = [torch.Generator().manual_seed(int(m)) for m in positions]
    return torch.stack([torch.randn(dim, dtype=torch.float64, generator=g) for g in seeds])


def _pair_blocks(matrix: torch.Tensor) -> torch.Tensor:
    """The 2 × 2 diagonal blocks of a d × d matrix: (d/2, 2, 2)."""
    pairs = matrix.shape[0] // 2
    return torch.stack([matrix[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] for i in range(pairs)])


def _error(value: float, floor: float = 1e-5) -> str:
    """A least-squares error as printed: below ``floor`` its digits depend on the machine."""
    return f"< 1e{round(math.log10(floor))}" if value < floor else f"{value:.2g}"


def _symbolic_pair() -> tuple[sp.Symbol, sp.Symbol, sp.Symbol]:
    return sp.symbols("m c theta", real=True)


def source_identities() -> tuple[sp.Expr, sp.Expr]:
    """Source 000's right-hand sides for PE(m+c)_{2i} and PE(m+c)_{2i+1}, one pair."""
    m, c, theta = _symbolic_pair()

    def pe(position: sp.Expr, j: int) -> sp.Expr:  # coordinate j: 0 = sin, 1 = cos
        return symbolic.sinusoidal_pair(position, theta)[j]

    even = pe(m, 0) * pe(c, 1) + pe(m, 1) * pe(c, 0)
    odd = pe(m, 1) * pe(c, 1) - pe(m, 0) * pe(c, 0)
    return even, odd


def identities_on_table(identities: tuple[sp.Expr, sp.Expr], table: Table) -> float:
    """The largest difference between PE(m + c) and the right-hand sides of ``identities``
    (for dimensions 2i and 2i + 1, in sin and cos of mθ and cθ), each evaluated with the
    table's own entries PE(m) and PE(c): d = 16, c = 100, m = 0..49."""
    m, c, theta = _symbolic_pair()
    parts = sp.symbols("sin_m cos_m sin_c cos_c")
    names = dict(zip((sp.sin(m * theta), sp.cos(m * theta), sp.sin(c * theta), sp.cos(c * theta)),
                     parts, strict=True))  # fmt: skip
    rows = table(torch.arange(200), 16)  # positions 0..49 as m, 100 as c
    values = (rows[:50, 0::2], rows[:50, 1::2], rows[100, 0::2], rows[100, 1::2])
    error = 0.0
    for j, side in enumerate(identities):  # j = 0: dimension 2i (sin), 1: 2i + 1 (cos)
        side = side.xreplace(names)
        if side.free_symbols & {m, c, theta}:
            return math.inf  # not written in PE(m) and PE(c) alone
        right = sp.lambdify(parts, side, modules="math")(*values) * torch.ones_like(values[0])
        error = max(error, float((rows[100:150, j::2] - right).abs().max()))
    return error


@evidence("000-component-identities")
def component_identities(
    identities: tuple[sp.Expr, sp.Expr] | None = None, table: Table = paper_table
) -> Finding:
    """A proof: both identities for symbolic m, c, θ; the same expressions evaluated on the
    table's own PE(m) and PE(c) (d = 16, c = 100)."""
    m, c, theta = _symbolic_pair()
    even, odd = identities or source_identities()
    shifted = symbolic.sinusoidal_pair(m + c, theta)
    left = [sp.simplify(sp.expand_trig(shifted[j] - side)) for j, side in enumerate((even, odd))]
    proved = left == [0, 0]
    error = identities_on_table((even, odd), table)
    return Finding(
        holds=proved and error < 1e-12,
        shown=(
            "SymPy, symbolic m, c, θ: PE(m + c) minus the right-hand side simplifies to"
            f" {left[0]} (dimension 2i) and {left[1]} (dimension 2i+1)",
            "the same right-hand sides on the table's PE(m) and PE(c), d = 16, c = 100,"
            f" m = 0-49: largest difference from PE(m + c) {_error(error, 1e-12)}"
            " (accepted: < 1e-12)",
        ),
    )


@evidence("001-shift-is-linear")
def shift_is_linear(table: Table = paper_table) -> Finding:
    """One matrix maps PE(m) to PE(m + c) wherever m is: fitted at two places, used at a third."""
    dim, worst = 16, 0.0
    for shift in (1, 7, 100):
        positions = torch.arange(50_000, 50_400)  # neither fit saw these rows
        target = table(positions + shift, dim)
        for start in (1, 10_001):
            predicted = table(positions, dim) @ fitted_shift(table, shift, start, dim).T
            worst = max(worst, float((predicted - target).abs().max()))
    condition = max(fit_condition(table, start, dim) for start in (1, 10_001))
    return Finding(
        holds=worst < 1e-4,  # float64 least squares on well-conditioned rows: ~1e-12 here
        shown=(
            f"d = 16, c = 1, 7, 100: M fitted on 400 rows {STRIDE} apart from position 1,"
            " or from 10,001, maps rows 50,000-50,399 c places on with largest error"
            f" {_error(worst, 1e-9)} (accepted: < 1e-4); the fitted rows' condition number"
            f" is {condition:.2g}, so the error is the table's, not the fit's",
        ),
    )


@evidence("001-rotation-matrix")
def rotation_matrix(table: Table = paper_table) -> Finding:
    """The fitted shift map is block-diagonal, and each 2 × 2 block is a rotation
    (orthogonal, determinant 1) by −cθ_i: clockwise in the paper's (sin, cos) order."""
    dim, worst, turn = 16, 0.0, 0.0
    for shift in (1, 7, 100):
        matrix = fitted_shift(table, shift, 1, dim)
        blocks = _pair_blocks(matrix)
        off_diagonal = matrix - torch.block_diag(*blocks)
        orthogonal = blocks.transpose(1, 2) @ blocks - torch.eye(2, dtype=torch.float64)
        determinant = torch.linalg.det(blocks) - 1
        worst = max(worst, *(float(t.abs().max()) for t in (off_diagonal, orthogonal, determinant)))
        angle = torch.atan2(blocks[:, 1, 0], blocks[:, 0, 0])  # R(φ) has sin φ at [1, 0]
        expected = -shift * sinusoidal.frequencies(dim)  # float64
        missed = torch.remainder(angle - expected + math.pi, 2 * math.pi) - math.pi
        turn = max(turn, float(missed.abs().max()))
    return Finding(
        holds=max(worst, turn) < 1e-4,
        shown=(
            "d = 16, c = 1, 7, 100: the fitted map's largest entry off its 2 × 2 blocks, and"
            " its blocks' largest departure from orthogonal with determinant 1:"
            f" {_error(worst, 1e-9)};"
            f" block i's angle minus −cθ_i (clockwise): {_error(turn, 1e-9)} rad"
            " (accepted: < 1e-4 each)",
        ),
    )


def pair_maps(table: Table, shift: int, dim: int) -> torch.Tensor:
    """Each pair's own 2 × 2 map from row m to row m + shift, fitted by least squares on the
    rows m = 1, 1 + STRIDE, ... (400 of them): shape (d/2, 2, 2)."""
    positions = fitted_rows(1)
    before = table(positions, dim).view(len(positions), dim // 2, 2).transpose(0, 1)
    after = table(positions + shift, dim).view(len(positions), dim // 2, 2).transpose(0, 1)
    return torch.linalg.lstsq(before, after).solution.transpose(1, 2)  # after ≈ before @ Bᵀ


def closest_angles(angles: torch.Tensor) -> tuple[float, list[int]]:
    """The smallest distance around the circle between two of ``angles`` (wrapping through
    2π), and the indices of those two."""
    ring, order = torch.sort(torch.remainder(angles, 2 * math.pi))
    steps = torch.cat((ring.diff(), ring[:1] + 2 * math.pi - ring[-1:]))
    at = int(steps.argmin())  # the last step goes around, through 2π
    return float(steps[at]), sorted([int(order[at]), int(order[(at + 1) % len(ring)])])


@evidence("001-no-global-rotation")
def no_global_rotation(table: Table = paper_table) -> Finding:
    """Each pair's own map, fitted on the table (d = 512), is a rotation, and for each shift
    c = 1..10 the 256 rotations turn by different angles. (That the whole map has nothing
    off its 2 × 2 blocks is 001-rotation-matrix's evidence.)"""
    dim, worst, gaps = 512, 0.0, []
    held_out = torch.arange(50_000, 50_400)  # rows no fit saw
    for shift in range(1, 11):
        blocks = pair_maps(table, shift, dim)  # (d/2, 2, 2)
        pairs = table(held_out, dim).view(len(held_out), dim // 2, 2).transpose(0, 1)
        moved = table(held_out + shift, dim).view(len(held_out), dim // 2, 2).transpose(0, 1)
        orthogonal = blocks.transpose(1, 2) @ blocks - torch.eye(2, dtype=blocks.dtype)
        worst = max(
            worst,
            float((pairs @ blocks.transpose(1, 2) - moved).abs().max()),
            float(orthogonal.abs().max()),
            float((torch.linalg.det(blocks) - 1).abs().max()),
        )
        gaps.append(closest_angles(torch.atan2(blocks[:, 1, 0], blocks[:, 0, 0])))
    smallest, pairs_at = min(gaps)
    at_shift = gaps.index((smallest, pairs_at)) + 1
    return Finding(
        holds=worst < 1e-4 and smallest > 1e-12,
        shown=(
            f"d = {dim}, c = 1..10: each pair's own 2 × 2 map, fitted on 400 rows"
            f" {STRIDE} apart, moves rows 50,000-50,399 c places on and is orthogonal with"
            f" determinant 1 to within {_error(worst, 1e-9)} (accepted: < 1e-4):"
            f" {'a rotation' if worst < 1e-4 else 'no rotation'};"
            f" the two of the {dim // 2} rotation angles (mod 2π) that are closest still"
            f" differ by {smallest:.2g} rad (at c = {at_shift}, pairs {pairs_at[0]} and"
            f" {pairs_at[1]}; one shared angle would be < 1e-12)",
        ),
    )
