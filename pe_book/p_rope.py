"""p-RoPE: only the fastest pairs rotate, the slowest become position-free (Chapter 10).

Barbero, Vitvitskyi, Perivolaropoulos, Pascanu and Veličković, *Round and Round We Go! What
makes Rotary Positional Encodings useful?* (arXiv 2410.06205, ICLR 2025), section 6.1. A trained
Gemma uses RoPE's highest frequencies for positional heads and its lowest as "semantic
channels", which rotation makes fragile over long contexts (their Theorem 6.1); p-RoPE keeps
the fraction p of the pairs with the highest frequencies and sets the others' to zero:

    θ'_i = θ_i = b^(-2i/d)   for i < k = ⌊p · d/2⌋,        θ'_i = 0   for k <= i < d/2,

so p = 1 is RoPE and p = 0 is NoPE, and the unrotated pairs add their plain q · k to the
score at every offset. The kept pairs keep RoPE's exact frequencies θ_0 .. θ_(k-1): the
longest wavelength drops from 2π b^(1-2/d) to 2π b^(2(k-1)/d). The rounding ⌊p · d/2⌋ is
transformers' ``"proportional"`` RoPE (``int(partial_rotary_factor * head_dim // 2)``), which
Gemma 4 uses with p = 0.25 on its global layers; tests/test_p_rope.py checks the frequencies
against it.

Not GPT-NeoX's partial rotary (:func:`pe_book.rope_scaling.partial_rotary_frequencies`):
NeoX and Phi rotate d_rot = p · d coordinates with frequencies re-spread over them,
b^(-2i/d_rot), which spans RoPE's whole range of wavelengths with fewer pairs
(:func:`contrast_with_partial_rotary`; the paper's appendix relates the two).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
from torch import nn

from pe_book._validate import (
    validate_bool,
    validate_choice,
    validate_finite,
    validate_int,
    validate_pairs,
    validate_tensor,
)
from pe_book.positions import ModelConfig, PositionMethod, register
from pe_book.rope import Rope, apply_rope
from pe_book.rope_scaling import partial_rotary_frequencies
from pe_book.sinusoidal import LAYOUTS, frequencies

__all__ = [
    "PRope",
    "PRopePositions",
    "RotaryContrast",
    "apply_p_rope",
    "contrast_with_partial_rotary",
    "p_rope_frequencies",
    "rotated_pairs",
]


def _validate_p(p: object) -> float:
    """p: a real number in [0, 1], the fraction of the pairs that keep rotating."""
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"p must be a real number in [0, 1], got {type(p).__name__} {p!r}")
    p = float(p)
    if not 0.0 <= p <= 1.0:  # also refuses NaN
        raise ValueError(f"p must be in [0, 1] (the fraction of pairs that rotate), got {p}")
    return p


def rotated_pairs(dim: int, p: float) -> int:
    """k = ⌊p · d/2⌋, the number of pairs p-RoPE rotates (the first k, fastest). Chapter 10.

    p · d/2 is the float product, as a reader's own ``math.floor(p * dim / 2)`` computes
    it: p = 1/3 at d = 96 gives 16, but p = 0.7 at d = 180 gives 62, not the 63 of exact
    decimals, because the float 0.7 lies just below 0.7.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    return math.floor(_validate_p(p) * dim / 2)


def _rotated_mask(dim: int, pairs: int, layout: str) -> torch.Tensor:
    """(dim,) bool: the coordinates of pairs 0 .. pairs-1 in ``layout``."""
    kept = torch.arange(dim // 2) < pairs  # (d/2,)
    if layout == "interleaved":  # pair i = (2i, 2i+1)
        return kept.repeat_interleave(2)
    return torch.cat((kept, kept))  # pair i = (i, i + d/2)


def p_rope_frequencies(dim: int, p: float, base: float = 10000.0) -> torch.Tensor:
    """θ'_i = b^(-2i/d) for i < ⌊p·d/2⌋, else 0; float64, shape (dim/2,). Chapter 10.

    Barbero et al. (2024, arXiv 2410.06205, section 6.1): the lowest (1 - p) fraction of the
    frequencies is truncated; the rest are :func:`pe_book.sinusoidal.frequencies` unchanged.
    """
    theta = frequencies(dim, base)
    return torch.where(torch.arange(dim // 2) < rotated_pairs(dim, p), theta, 0.0)


def apply_p_rope(
    x: torch.Tensor,
    p: float,
    start: int = 0,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
) -> torch.Tensor:
    """p-RoPE of x (..., L, d) at positions start .. start + L - 1; same shape. Chapter 10.

    Pairs i < ⌊p·d/2⌋ are rotated by m θ_i exactly as :func:`pe_book.rope.apply_rope` does
    (bit for bit: p = 1 is RoPE); the others are copied, θ'_i = 0 (p = 0 is NoPE).
    """
    dim = validate_pairs("x", x)
    layout = validate_choice("layout", layout, LAYOUTS)
    start = validate_int("start", start, minimum=0)
    pairs = rotated_pairs(dim, p)
    if pairs == 0:
        return x.clone()
    rotated = apply_rope(x, torch.arange(start, start + x.shape[-2]), base=base, layout=layout)
    if pairs == x.shape[-1] // 2:
        return rotated
    return torch.where(_rotated_mask(x.shape[-1], pairs, layout).to(x.device), rotated, x)


class _RestingRope(Rope):
    """RoPE's cached tables with cos 1 and sin 0 from pair ``pairs`` on: the rotation by θ'_i,
    so the resting pairs are copied by the same single pass of RoPE's kernel (chapter 12)."""

    def __init__(self, dim: int, pairs: int, base: float, layout: str, *, max_len: int) -> None:
        self.pairs = pairs  # read by _tables, which Rope's constructor calls
        super().__init__(dim, base, layout, max_len=max_len)

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        tables = super()._tables(length)  # fresh tensors: cos, sin, cos64, sin64
        for name, table in tables.items():
            table[:, self.pairs :] = 1.0 if name.startswith("cos") else 0.0
        return tables


class PRope(nn.Module):
    """p-RoPE for a head of size ``dim``: ``forward(x, start=0)`` for x (..., L, dim). Chapter 10.

    ``fused=False``: the rotation is a cached :class:`pe_book.rope.Rope` (same tables, same
    start convention) of every pair, and a boolean buffer ``rotated`` selects the rotated
    coordinates, keeping the others as they were: two passes, the rotation in one place.
    ``fused=True`` (chapter 12): RoPE's tables with cos 1 and sin 0 for the resting pairs,
    one pass of RoPE's kernel that turns the first ⌊p·d/2⌋ pairs and copies the rest.
    """

    rotated: torch.Tensor

    def __init__(
        self,
        dim: int,
        p: float,
        base: float = 10000.0,
        layout: str = "interleaved",
        *,
        max_len: int = 2048,
        fused: bool = True,
    ) -> None:
        super().__init__()
        self.dim = validate_int("dim", dim, minimum=2, even=True)
        self.p = _validate_p(p)
        self.layout = validate_choice("layout", layout, LAYOUTS)
        self.pairs = rotated_pairs(dim, p)
        self.fused = validate_bool("fused", fused)
        if self.fused:
            self.rope: Rope = _RestingRope(dim, self.pairs, base, layout, max_len=max_len)
        else:
            self.rope = Rope(dim, base, layout, max_len=max_len, fused=False)
        self.register_buffer("rotated", _rotated_mask(dim, self.pairs, layout), persistent=False)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        validate_tensor("x", x, min_ndim=2, floating=True, last_dim=self.dim)
        start = validate_int("start", start, minimum=0)
        if self.fused:
            return self.rope(x, start)  # resting pairs: cos 1, sin 0
        if self.pairs == 0:  # NoPE
            return x.clone()
        rotated = self.rope(x, start)
        return rotated if self.pairs == self.dim // 2 else torch.where(self.rotated, rotated, x)


@dataclass(frozen=True)
class RotaryContrast:
    """The frequencies (float64, (d/2,) each, 0 = not rotated) of p-RoPE and GPT-NeoX's
    partial rotary for one (dim, p, base). Built by :func:`contrast_with_partial_rotary`."""

    p_rope: torch.Tensor
    partial_rotary: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("p_rope", "partial_rotary"):
            theta = validate_tensor(name, getattr(self, name), ndim=1, floating=True)
            validate_finite(name, theta, allow_inf=False)
            if bool((theta < 0).any()):
                raise ValueError(f"{name} must hold frequencies >= 0 (0 = not rotated)")
        if self.p_rope.shape != self.partial_rotary.shape:
            raise ValueError(
                "p_rope and partial_rotary must have one frequency per pair each, got "
                f"{tuple(self.p_rope.shape)} and {tuple(self.partial_rotary.shape)}"
            )

    @staticmethod
    def _longest(theta: torch.Tensor) -> float:
        kept = theta[theta > 0]
        return float(2 * math.pi / kept.min()) if kept.numel() else math.inf

    @property
    def rotated_pairs(self) -> tuple[int, int]:
        """(p-RoPE's, NeoX's) number of rotated pairs."""
        return int((self.p_rope > 0).sum()), int((self.partial_rotary > 0).sum())

    @property
    def longest_wavelengths(self) -> tuple[float, float]:
        """(p-RoPE's, NeoX's) longest rotated wavelength 2π/θ, in positions (inf: none)."""
        return self._longest(self.p_rope), self._longest(self.partial_rotary)


def contrast_with_partial_rotary(dim: int, p: float, base: float = 10000.0) -> RotaryContrast:
    """p-RoPE's θ'_i next to GPT-NeoX/Phi partial rotary's, for a fraction p. Chapter 10.

    p-RoPE: θ_i = b^(-2i/d) for i < ⌊p·d/2⌋ (a subset of RoPE's frequencies: only fast pairs).
    NeoX (``rotary_pct``, transformers' ``partial_rotary_factor``): b^(-2i/d_rot) for
    i < d_rot/2, d_rot = int(p·d) (:func:`pe_book.rope_scaling.partial_rotary_frequencies`),
    the whole range of wavelengths, more coarsely sampled. For d = 128, p = 1/4 both rotate 16
    pairs; p-RoPE's longest wavelength is 2π b^(30/128) ≈ 54, NeoX's 2π b^(30/32) ≈ 35,000.
    """
    p_rope = p_rope_frequencies(dim, p, base)  # validates dim, p and base
    try:
        theta, _ = partial_rotary_frequencies(dim, p, base)
    except ValueError as error:  # p = 0, or int(p d) odd: NeoX cannot rotate that
        raise ValueError(f"p must be a fraction NeoX's partial rotary takes: {error}") from error
    return RotaryContrast(p_rope, theta)


@register("p_rope")
class PRopePositions(PositionMethod):
    """p-RoPE in chapter 11's model with p = 3/4: the slowest quarter of the pairs rests.

    p = 3/4 is a choice of this book (the paper compares several fractions; chapter 10).
    """

    fraction = 0.75
    fast_path = "resting pairs as cos 1, sin 0: one pass of RoPE's kernel"

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.rope = PRope(config.dim // config.n_heads, self.fraction, fused=self.fused)

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rope(q), self.rope(k)
