"""The sinusoidal position encoding of *Attention Is All You Need* (chapters 3 and 4).

For a position m, a dimension d (even) and a base b (10000 in the paper), pair
i = 0, ..., d/2 - 1 has the frequency and wavelength

    θ_i = b^(-2i/d),        λ_i = 2π / θ_i,

and contributes the two coordinates sin(m θ_i) and cos(m θ_i). Two layouts
place them in the vector:

- ``"interleaved"`` (the paper): PE[m, 2i] = sin(m θ_i), PE[m, 2i+1] = cos(m θ_i);
- ``"half"`` (tensor2tensor-style sin|cos halves): PE[m, i] = sin(m θ_i),
  PE[m, d/2 + i] = cos(m θ_i).

They hold the same numbers in a different order: ``half = interleaved[:, layout_permutation(d)]``.

Angles are computed from integer positions in float64 whatever the output
dtype, then the table is rounded once to ``dtype`` (computing m θ_i in half
precision merges distant positions; chapter 3 measures it).

A shift by k positions is a rotation of every pair: PE(m + k) = M_k PE(m) with
M_k block-diagonal, block i = [[cos kθ_i, sin kθ_i], [-sin kθ_i, cos kθ_i]] in the
interleaved layout (chapter 4, :func:`shift_matrix`).
"""

from __future__ import annotations

import math

import torch

from pe_book._cached_table import CachedTable
from pe_book._validate import (
    validate_base,
    validate_choice,
    validate_int,
    validate_positions,
    validate_positive_float,
    validate_tensor,
)
from pe_book.positions import ModelConfig, PositionMethod, register

__all__ = [
    "LAYOUTS",
    "SinusoidalEncoding",
    "departures_from_paper",
    "frequencies",
    "layout_permutation",
    "offset_distances",
    "pair_fractions",
    "position_angles",
    "shift_matrix",
    "sinusoidal_table",
    "wavelengths",
]

#: The two layouts of the pairs: (2i, 2i+1) and (i, i + d/2) (chapter 3).
LAYOUTS = ("interleaved", "half")


def pair_fractions(dim: int) -> torch.Tensor:
    """2i/d for the pairs i = 0, ..., d/2 - 1 (from 0 up to 1 - 2/d); float64, (dim/2,).

    Where pair i sits along the dimension: the exponent of θ_i = b^(-2i/d) (chapter 3),
    and xPos's decay ratios ζ_i (chapter 10) are built from it too.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    return torch.arange(0, dim, 2, dtype=torch.float64) / dim


def frequencies(dim: int, base: float = 10000.0) -> torch.Tensor:
    """θ_i = base^(-2i/d) for i = 0, ..., d/2 - 1; float64, shape (dim/2,). Chapter 3."""
    exponents = pair_fractions(dim)  # validates dim
    return validate_base(base) ** (-exponents)


def wavelengths(dim: int, base: float = 10000.0) -> torch.Tensor:
    """λ_i = 2π / θ_i = 2π · base^(2i/d); float64, shape (dim/2,); from 2π to 2π · base^(1-2/d)."""
    return 2 * math.pi / frequencies(dim, base)


def position_angles(positions: int | torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    """The angles m θ_i, float64, shape (len(positions), dim/2).

    ``positions`` is either a length L (positions 0..L-1) or a 1-D integer tensor.
    Integers up to 2^53 are exact in float64, so m θ_i is rounded once. Chapter 3.
    """
    m = validate_positions(positions).to(torch.float64)
    return m[:, None] * frequencies(dim, base)[None, :]  # (L, dim/2)


def layout_permutation(dim: int) -> list[int]:
    """The column order that turns the interleaved table into the half one.

    ``sinusoidal_table(..., layout="half") == sinusoidal_table(..., layout="interleaved")[:, perm]``
    with perm = [0, 2, 4, ..., d-2, 1, 3, ..., d-1]: first every sine, then every cosine.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    return list(range(0, dim, 2)) + list(range(1, dim, 2))


def sinusoidal_table(
    seq_len: int | torch.Tensor,
    dim: int,
    base: float = 10000.0,
    layout: str = "interleaved",
    *,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """The encoding PE of shape (L, dim): row m is the vector added to token m.

    interleaved: PE[m, 2i] = sin(m θ_i), PE[m, 2i+1] = cos(m θ_i) (Vaswani et al., 2017, §3.5);
    half:        PE[m, i] = sin(m θ_i),  PE[m, d/2 + i] = cos(m θ_i).
    ``seq_len`` may also be a 1-D integer tensor of positions. Computed in float64,
    rounded once to ``dtype``. Chapter 3.
    """
    layout = validate_choice("layout", layout, LAYOUTS)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype!r}")
    angles = position_angles(seq_len, dim, base)  # (L, dim/2), float64
    sin, cos = torch.sin(angles), torch.cos(angles)
    if layout == "interleaved":
        table = torch.stack((sin, cos), dim=-1).flatten(-2)  # (L, dim): sin, cos, sin, cos, ...
    else:
        table = torch.cat((sin, cos), dim=-1)  # (L, dim): all sines, then all cosines
    return table.to(dtype)


def shift_matrix(shift: int, dim: int, base: float = 10000.0) -> torch.Tensor:
    """M_c (dim × dim, float64) with PE(m + c) = M_c PE(m) for every m, interleaved layout.

    ``shift`` is c, the shift applied to every position (not an offset r = m − n).
    Block i (rows and columns 2i, 2i+1) is [[cos cθ_i, sin cθ_i], [-sin cθ_i, cos cθ_i]]:
    in the (sin, cos) order of the pair this turns the point by -cθ_i. M_c depends on
    c only, and it is orthogonal. Chapter 4.
    """
    shift = validate_int("shift", shift)
    angle = shift * frequencies(dim, base)  # (dim/2,)
    cos, sin = torch.cos(angle), torch.sin(angle)
    blocks = torch.stack((torch.stack((cos, sin), -1), torch.stack((-sin, cos), -1)), -2)
    return torch.block_diag(*blocks)  # (dim, dim)


def offset_distances(offsets: torch.Tensor, dim: int, base: float = 10000.0) -> torch.Tensor:
    """‖PE(m + r) − PE(m)‖ for each offset r, exactly (float64); the same for every m.

    ‖PE(m + r) − PE(m)‖² = Σ_i 2 − 2 cos(r θ_i) = 4 Σ_i sin²(r θ_i / 2), computed in the
    sin² form, which keeps its accuracy when the distance is small. Chapter 3.
    """
    r = (
        validate_positions(offsets)
        if isinstance(offsets, torch.Tensor)
        else validate_positions(int(offsets))
    ).to(torch.float64)
    half_angles = r[:, None] * frequencies(dim, base)[None, :] / 2  # (len, dim/2)
    return 2 * torch.sin(half_angles).pow(2).sum(-1).sqrt()


def _pair_columns(dim: int, layout: str) -> tuple[list[int], list[int]]:
    """Columns holding sin and cos of pair i, for i = 0..d/2-1."""
    if layout == "interleaved":
        return list(range(0, dim, 2)), list(range(1, dim, 2))
    return list(range(dim // 2)), list(range(dim // 2, dim))


def departures_from_paper(
    table: torch.Tensor,
    base: float = 10000.0,
    layout: str = "interleaved",
    *,
    atol: float = 1e-6,
) -> list[str]:
    """Every way ``table`` (L × d, L >= 2) departs from the paper's encoding; [] if none.

    Checks, in this order: row 0 is sin(0) = 0, cos(0) = 1 in every pair; the two
    columns of each pair hold the sine and cosine of one angle (sin² + cos² = 1),
    i.e. they share a frequency; pair i turns by θ_i = base^(-2i/d) per position
    (read off row 1); every entry equals the formula, all to within ``atol``
    (raise it to the rounding step when auditing a low-precision table).
    Chapter 3 runs it on the exhibits of ``pe_book.exhibits``.
    """
    atol = validate_positive_float("atol", atol)
    layout = validate_choice("layout", layout, LAYOUTS)
    table = torch.as_tensor(table, dtype=torch.float64)
    validate_tensor("table", table, ndim=2)
    seq_len, dim = table.shape
    if dim % 2 or seq_len < 2:
        raise ValueError(
            f"table must have an even number of columns and >= 2 rows, got {(seq_len, dim)}"
        )
    sin_cols, cos_cols = _pair_columns(dim, layout)
    sin, cos = table[:, sin_cols], table[:, cos_cols]  # (L, d/2) each
    found = []
    row0 = float(torch.cat((sin[0].abs(), (cos[0] - 1).abs())).max())
    if row0 > atol:
        found.append(f"row 0 is not (sin 0, cos 0) = (0, 1) in every pair (off by {row0:.3g})")
    circle = float((sin[1:] ** 2 + cos[1:] ** 2 - 1).abs().max())
    if circle > atol:
        found.append(
            f"a pair's columns are not (sin, cos) of one angle: they do not\n"
            f"  share a frequency (sin² + cos² is off 1 by up to {circle:.3g})"
        )
    expected = frequencies(dim, base)
    read_off = torch.atan2(sin[1], cos[1])  # θ_i itself, since 0 < θ_i <= 1 < π
    wrong = int(((read_off - expected).abs() > atol).sum())
    if wrong:
        found.append(
            f"{wrong} of {dim // 2} pairs do not turn by base^(-2i/d) per position\n"
            f"  (last pair: {float(read_off[-1]):.3g} instead of {float(expected[-1]):.3g})"
        )
    formula = sinusoidal_table(seq_len, dim, base, layout, dtype=torch.float64)
    entries = float((table - formula).abs().max())
    if entries > atol:
        found.append(f"entries differ from the paper's formula by up to {entries:.3g}")
    return found


class SinusoidalEncoding(CachedTable):
    """Adds the sinusoidal encoding to token vectors: ``x + PE[start : start + L]``.

    The table is built once (float64 angles, rounded to ``dtype``) and kept as a
    non-persistent buffer, so it follows ``.to(device)`` and stays out of
    checkpoints. A longer input grows it (to the next power of two) once; nothing
    is recomputed per call. ``start`` is the position of the first token, for
    decoding with a cache. Shapes: x (..., L, dim) -> (..., L, dim). Chapter 3.
    """

    table: torch.Tensor

    def __init__(
        self,
        dim: int,
        base: float = 10000.0,
        layout: str = "interleaved",
        *,
        max_len: int = 512,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__(dim, base, max_len)
        self.layout = validate_choice("layout", layout, LAYOUTS)
        self._dtype = dtype
        self._register_tables()

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        dtype = self.table.dtype if "table" in self._buffers else self._dtype
        return {"table": sinusoidal_table(length, self.dim, self.base, self.layout, dtype=dtype)}

    def positions(self, seq_len: int, start: int = 0) -> torch.Tensor:
        """Rows start .. start + seq_len - 1 of the table, shape (seq_len, dim)."""
        seq_len = validate_int("seq_len", seq_len, minimum=0)
        start = validate_int("start", start, minimum=0)
        self._ensure(start + seq_len)
        return self.table[start : start + seq_len]

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        validate_tensor("x", x, min_ndim=2, floating=True, last_dim=self.dim)
        return x + self.positions(x.shape[-2], start).to(x.dtype)


@register("sinusoidal")
class SinusoidalPositions(PositionMethod):
    """Chapter 3's table added to the token vectors in chapter 11's model (a buffer)."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.encoding = SinusoidalEncoding(config.dim, max_len=config.train_len)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoding(x)
