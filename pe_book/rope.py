"""Rotary position embedding, RoPE (Su et al., RoFormer, 2021; chapter 7).

Pair i of a query or key at position m is turned by the angle m θ_i, θ_i = b^(-2i/d):

    (x_a, x_b) -> (x_a cos mθ_i - x_b sin mθ_i,  x_a sin mθ_i + x_b cos mθ_i),

so q_m · k_n depends on m - n only. Two layouts decide which coordinates form pair i:

- ``"interleaved"``: (2i, 2i+1), as in RoFormer and GPT-J; computed as a complex
  multiply x_pair · e^{i m θ_i} on a complex view of x;
- ``"half"``: (i, i + d/2), as in GPT-NeoX and Hugging Face's Llama ``rotate_half``
  (Meta's reference Llama code is interleaved); computed
  by a fused C loop (:mod:`pe_book.rope_kernel`) for CPU float32/float64 inputs,
  otherwise as x·cos over whole rows plus one in-place multiply-add per half.

Angles come from integer positions and float64 frequencies, whatever the input
dtype; cos and sin are rounded once to float32 (bfloat16/float16 inputs are
rotated in float32 and rounded back), which avoids the precision bugs of
transformers PR #29285 and gpt-neox issue #1003.

Context extension (``scaling=``), each a small dataclass documenting its paper:
:class:`LinearScaling` (Position Interpolation), :class:`NTKScaling`,
:class:`DynamicNTKScaling`, :class:`YaRNScaling`, :class:`Llama3Scaling`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from pe_book._checks import (
    check_bool,
    check_choice,
    check_int,
    check_positive_float,
    check_tensor,
)
from pe_book.rope_kernel import can_fuse, rotate_half_fused

__all__ = [
    "LAYOUTS",
    "DynamicNTKScaling",
    "LinearScaling",
    "Llama3Scaling",
    "NTKScaling",
    "Rope",
    "YaRNScaling",
    "apply_rope",
    "inverse_frequencies",
    "rope_angles",
    "rope_cos_sin",
]

LAYOUTS = ("interleaved", "half")


def _factor(value: float) -> float:
    return check_positive_float("factor", value)


@dataclass(frozen=True)
class LinearScaling:
    """Position Interpolation (Chen et al., 2023; kaiokendev): θ_i → θ_i / s.

    Positions are squeezed by the factor s, so L·s positions span the angles that L did.
    """

    factor: float

    def __post_init__(self) -> None:
        _factor(self.factor)


@dataclass(frozen=True)
class NTKScaling:
    """NTK-aware scaling (bloc97, 2023): a larger base, b → b · s^(d/(d-2)).

    The slowest pair is slowed by exactly s, the fastest not at all.
    """

    factor: float

    def __post_init__(self) -> None:
        _factor(self.factor)


@dataclass(frozen=True)
class DynamicNTKScaling:
    """Dynamic NTK (emozilla, 2023): NTK scaling whose factor grows with the current length L.

    b → b · ((s · L / L_orig) - (s - 1))^(d/(d-2)) once L > L_orig; unchanged before.
    """

    factor: float
    original_max_len: int

    def __post_init__(self) -> None:
        _factor(self.factor)
        check_int("original_max_len", self.original_max_len, minimum=1)


@dataclass(frozen=True)
class YaRNScaling:
    """YaRN (Peng et al., 2023): interpolate slow pairs, keep fast ones, ramp in between.

    With r_i = L_orig / λ_i the number of turns pair i makes over the original length,
    pairs with r_i > β_fast keep θ_i, pairs with r_i < β_slow get θ_i / s, and a linear
    ramp (in the pair index, between the corrected boundaries) blends the two. Scores
    are scaled by the attention factor (0.1 ln s + 1)², applied as 0.1 ln s + 1 to cos
    and sin of both q and k.
    """

    factor: float
    original_max_len: int
    beta_fast: float = 32.0
    beta_slow: float = 1.0

    def __post_init__(self) -> None:
        _factor(self.factor)
        check_int("original_max_len", self.original_max_len, minimum=1)

    @property
    def attention_factor(self) -> float:
        return 1.0 if self.factor <= 1 else 0.1 * math.log(self.factor) + 1.0


@dataclass(frozen=True)
class Llama3Scaling:
    """Llama 3.1's frequency-dependent scaling (Meta, 2024).

    Pairs with wavelength < L_orig / high_freq_factor keep θ_i; pairs with wavelength
    > L_orig / low_freq_factor get θ_i / s; in between, a smooth blend in
    L_orig / λ_i. Defaults are Llama 3.1's: s = 8, 1, 4, L_orig = 8192.
    """

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_len: int = 8192

    def __post_init__(self) -> None:
        _factor(self.factor)
        check_int("original_max_len", self.original_max_len, minimum=1)
        if not self.high_freq_factor > self.low_freq_factor > 0:
            raise ValueError(
                "need high_freq_factor > low_freq_factor > 0, got "
                f"{self.high_freq_factor} and {self.low_freq_factor}"
            )


Scaling = LinearScaling | NTKScaling | DynamicNTKScaling | YaRNScaling | Llama3Scaling


def _yarn_ramp(dim: int, base: float, scaling: YaRNScaling) -> torch.Tensor:
    """Weight of the *unscaled* frequency for each pair (1: keep θ_i, 0: θ_i / s)."""

    def correction_dim(turns: float) -> float:  # pair index where L_orig / λ = turns
        return (
            dim * math.log(scaling.original_max_len / (turns * 2 * math.pi)) / (2 * math.log(base))
        )

    low = max(math.floor(correction_dim(scaling.beta_fast)), 0)
    high = min(math.ceil(correction_dim(scaling.beta_slow)), dim - 1)
    if low == high:
        high += 0.001
    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - low) / (high - low)).clamp(0, 1)
    return 1 - ramp


def inverse_frequencies(
    dim: int, base: float = 10000.0, scaling: Scaling | None = None, *, seq_len: int | None = None
) -> tuple[torch.Tensor, float]:
    """(θ_i for i < d/2, attention factor) after the optional context-extension ``scaling``.

    float64 frequencies; ``seq_len`` (the current length) matters for DynamicNTKScaling only.
    """
    dim = check_int("dim", dim, minimum=2, even=True)
    base = check_positive_float("base", base, above=1.0)
    exponents = torch.arange(0, dim, 2, dtype=torch.float64) / dim  # 2i/d
    theta = base ** (-exponents)
    if scaling is None:
        return theta, 1.0
    if isinstance(scaling, LinearScaling):
        return theta / scaling.factor, 1.0
    if isinstance(scaling, NTKScaling):
        return (base * scaling.factor ** (dim / (dim - 2))) ** (-exponents), 1.0
    if isinstance(scaling, DynamicNTKScaling):
        length = max(seq_len or scaling.original_max_len, scaling.original_max_len)
        grown = scaling.factor * length / scaling.original_max_len - (scaling.factor - 1)
        return (base * grown ** (dim / (dim - 2))) ** (-exponents), 1.0
    if isinstance(scaling, YaRNScaling):
        keep = _yarn_ramp(dim, base, scaling)
        return theta * keep + theta / scaling.factor * (1 - keep), scaling.attention_factor
    if isinstance(scaling, Llama3Scaling):
        wavelength = 2 * math.pi / theta
        ratio = scaling.original_max_len / wavelength  # turns over the original length
        smooth = (ratio - scaling.low_freq_factor) / (
            scaling.high_freq_factor - scaling.low_freq_factor
        )
        scaled = torch.where(smooth <= 0, theta / scaling.factor, theta)  # slow: divide
        blended = (1 - smooth) * theta / scaling.factor + smooth * theta
        medium = (smooth > 0) & (smooth < 1)
        return torch.where(medium, blended, scaled), 1.0
    raise TypeError(
        f"scaling must be one of {Scaling.__args__} or None, got {type(scaling).__name__}"
    )


def _positions(positions: torch.Tensor | int) -> torch.Tensor:
    if isinstance(positions, int) and not isinstance(positions, bool):
        return torch.arange(check_int("seq_len", positions, minimum=0))
    check_tensor("positions", positions, ndim=1)
    if positions.is_floating_point() or positions.dtype == torch.bool:
        raise TypeError(f"positions must be an integer tensor, got {positions.dtype}")
    return positions


def rope_angles(
    positions: torch.Tensor | int, dim: int, base: float = 10000.0, scaling: Scaling | None = None
) -> torch.Tensor:
    """m θ_i for each position m (integer tensor, or a length L for 0..L-1): float64, (L, d/2)."""
    m = _positions(positions)
    seq_len = int(m.max()) + 1 if m.numel() else 0
    theta, _ = inverse_frequencies(dim, base, scaling, seq_len=seq_len)
    return m.to(torch.float64)[:, None] * theta[None, :]


def rope_cos_sin(
    positions: torch.Tensor | int,
    dim: int,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin of the angles (times the attention factor), each (L, d/2).

    Computed in float64 and rounded once to ``dtype`` (float32 or float64).
    """
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    m = _positions(positions)
    seq_len = int(m.max()) + 1 if m.numel() else 0
    _, attention_factor = inverse_frequencies(dim, base, scaling, seq_len=seq_len)
    angles = rope_angles(m, dim, base, scaling)
    return (
        (torch.cos(angles) * attention_factor).to(dtype),
        (torch.sin(angles) * attention_factor).to(dtype),
    )


def _complex_viewable(x: torch.Tensor) -> bool:
    """Whether view_as_complex can pair x's last dimension in place (what it requires)."""
    return (
        x.stride(-1) == 1
        and x.storage_offset() % 2 == 0
        and all(
            stride % 2 == 0
            for size, stride in zip(x.shape[:-1], x.stride()[:-1], strict=True)
            if size > 1
        )
    )


def _rotate(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, fused: bool = True
) -> torch.Tensor:
    """Rotate x (..., L, d) with cos, sin (L, d/2) in float32 or wider; returns x's dtype."""
    work = x if x.dtype in (torch.float32, torch.float64) else x.float()
    cos, sin = cos.to(work.dtype), sin.to(work.dtype)
    half = x.shape[-1] // 2
    if layout == "interleaved":  # pairs (2i, 2i+1): multiply by e^{i m θ}
        if not _complex_viewable(work):  # e.g. a slice starting at an odd column
            work = work.contiguous()
        pairs = torch.view_as_complex(work.reshape(*work.shape[:-1], half, 2))
        rotated = torch.view_as_real(pairs * torch.complex(cos, sin)).flatten(-2)
    elif fused and can_fuse(work, cos, sin):  # pairs (i, i + d/2): one pass in C (rope_kernel)
        rotated = rotate_half_fused(work, cos, sin)
    else:  # the same in plain PyTorch: one full pass of x cos, then a multiply-add per half
        x1, x2 = work[..., :half], work[..., half:]
        rotated = work * torch.cat((cos, cos), dim=-1)  # x cos, both halves
        rotated[..., :half].addcmul_(x2, sin, value=-1)  # x1 cos - x2 sin
        rotated[..., half:].addcmul_(x1, sin)  # x2 cos + x1 sin
    return rotated.to(x.dtype)


def apply_rope(
    x: torch.Tensor,
    positions: torch.Tensor | None = None,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    scaling: Scaling | None = None,
    fused: bool = True,
) -> torch.Tensor:
    """Rotate every pair of x (..., L, d) by m θ_i, m = positions (default 0..L-1). Chapter 7.

    ``fused=False`` keeps the half layout on the plain PyTorch path instead of the C
    loop of :mod:`pe_book.rope_kernel` (same numbers to rounding; for comparison).
    """
    check_tensor("x", x, min_ndim=2, floating=True)
    layout = check_choice("layout", layout, LAYOUTS)
    check_int("dim", x.shape[-1], minimum=2, even=True)
    if positions is None:
        positions = torch.arange(x.shape[-2])
    positions = _positions(positions)
    if positions.shape[0] != x.shape[-2]:
        raise ValueError(
            f"positions must have one entry per row of x: {x.shape[-2]}, got {positions.shape[0]}"
        )
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    cos, sin = rope_cos_sin(positions, x.shape[-1], base, scaling, dtype=work)
    return _rotate(x, cos.to(x.device), sin.to(x.device), layout, check_bool("fused", fused))


class Rope(nn.Module):
    """RoPE with cached cos/sin (non-persistent buffers, grown on demand) and a position offset.

    ``forward(x, offset=0)`` rotates x (..., L, dim) as positions offset .. offset + L - 1,
    e.g. the newest tokens while decoding with a KV cache. Angles are computed once,
    not per call. DynamicNTKScaling depends on the current length: its cache is rebuilt
    whenever the length needed changes. ``fused`` as in :func:`apply_rope`. Chapter 7.
    """

    cos: torch.Tensor
    sin: torch.Tensor
    cos64: torch.Tensor
    sin64: torch.Tensor

    def __init__(
        self,
        dim: int,
        base: float = 10000.0,
        layout: str = "interleaved",
        scaling: Scaling | None = None,
        *,
        max_len: int = 2048,
        fused: bool = True,
    ) -> None:
        super().__init__()
        self.fused = check_bool("fused", fused)
        self.dim = check_int("dim", dim, minimum=2, even=True)
        self.base = check_positive_float("base", base, above=1.0)
        self.layout = check_choice("layout", layout, LAYOUTS)
        self.scaling = scaling
        inverse_frequencies(dim, base, scaling)  # validates the scaling
        self._length = check_int("max_len", max_len, minimum=1)
        for name, value in self._tables(self._length).items():
            self.register_buffer(name, value, persistent=False)

    def _tables(self, length: int) -> dict[str, torch.Tensor]:
        """float64 cos/sin for float64 inputs, float32 for everything else."""
        cos, sin = rope_cos_sin(length, self.dim, self.base, self.scaling, dtype=torch.float64)
        return {"cos": cos.float(), "sin": sin.float(), "cos64": cos, "sin64": sin}

    def _apply(self, fn, recurse: bool = True):  # type: ignore[no-untyped-def]
        """Follow ``.to(device)`` like any buffer, but keep the tables' own precision.

        ``model.to(torch.bfloat16)`` or ``.half()`` would otherwise round the cached
        cos/sin to 16 bits (the precision bug of section 7.4); the tables are rebuilt
        in float32/float64 on whatever device the buffers moved to.
        """
        super()._apply(fn, recurse)
        device = self.cos.device
        if device.type != "meta":
            for name, value in self._tables(self._length).items():
                setattr(self, name, value.to(device))
        return self

    def _ensure(self, needed: int) -> None:
        dynamic = isinstance(self.scaling, DynamicNTKScaling)
        if needed > self._length or (dynamic and needed != self._length):
            self._length = needed if dynamic else 1 << (needed - 1).bit_length()
            for name, value in self._tables(self._length).items():
                setattr(self, name, value.to(self.cos.device))

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        check_tensor("x", x, min_ndim=2, floating=True)
        if x.shape[-1] != self.dim:
            raise ValueError(f"x must have last dimension dim={self.dim}, got {x.shape[-1]}")
        offset = check_int("offset", offset, minimum=0)
        end = offset + x.shape[-2]
        self._ensure(end)
        cos, sin = (self.cos64, self.sin64) if x.dtype == torch.float64 else (self.cos, self.sin)
        return _rotate(x, cos[offset:end], sin[offset:end], self.layout, self.fused)
