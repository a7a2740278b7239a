"""Context extension for RoPE: rescaled frequencies without retraining (chapter 8).

Each method is a small frozen dataclass that names its paper and states its formula
(the style of Hugging Face's ``modeling_rope_utils``); :func:`scaled_frequencies`
turns the book's frequencies θ_i = b^(-2i/d) (``pe_book.sinusoidal.frequencies``)
into the method's θ'_i and its attention factor. ``pe_book.rope`` rotates with them.

- :class:`LinearScaling`: Position Interpolation (Chen et al., 2023);
- :class:`NTKScaling`: NTK-aware (bloc97, 2023);
- :class:`DynamicNTKScaling`: dynamic NTK (emozilla, 2023);
- :class:`YaRNScaling`: YaRN (Peng et al., 2023);
- :class:`Llama3Scaling`: Llama 3.1 (Meta, 2024);
- :class:`LongRoPEScaling`: LongRoPE (Ding et al., 2024), searched factors κ_i = θ_i / θ'_i
  (:func:`pair_factors`); partial rotary: :func:`partial_rotary_frequencies`.

Why interpolate (Chen et al., 2023, section 2.3): RoPE's score fitted at 0..L-1 is pinned
down between the integers, not beyond L; :mod:`pe_book.rope_interpolation` computes it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from pe_book._validate import (
    validate_base,
    validate_int,
    validate_positive_float,
    validate_real_vector,
)

# Chapter 8's notebook reads these as rope_scaling.<name>; they are rope_interpolation's.
from pe_book.rope_interpolation import (  # noqa: F401
    fit_rotary_score,
    interpolation_bound,
    interpolation_gap,
    rotary_score,
)
from pe_book.sinusoidal import frequencies

__all__ = [
    "DynamicNTKScaling",
    "LinearScaling",
    "Llama3Scaling",
    "LongRoPEScaling",
    "NTKScaling",
    "Scaling",
    "YaRNScaling",
    "pair_factors",
    "partial_rotary_frequencies",
    "rotary_dim",
    "scaled_frequencies",
]


def _factor(value: float) -> float:
    return validate_positive_float("factor", value)


@dataclass(frozen=True)
class LinearScaling:
    """Position Interpolation (Chen et al., 2023; kaiokendev): θ_i → θ_i / κ.

    κ is ``factor`` in every class here (the papers write s).

    Positions are squeezed by the factor κ, so L·κ positions span the angles that L did.
    """

    factor: float

    def __post_init__(self) -> None:
        _factor(self.factor)


@dataclass(frozen=True)
class NTKScaling:
    """NTK-aware scaling (bloc97, 2023): a larger base, b → b · κ^(d/(d-2)).

    The slowest pair is slowed by exactly κ, the fastest not at all.
    """

    factor: float

    def __post_init__(self) -> None:
        _factor(self.factor)


@dataclass(frozen=True)
class DynamicNTKScaling:
    """Dynamic NTK (emozilla, 2023): NTK scaling whose factor grows with the current length L.

    b → b · ((κ · L / L_orig) - (κ - 1))^(d/(d-2)) once L > L_orig; unchanged before.
    """

    factor: float
    original_max_len: int

    def __post_init__(self) -> None:
        _factor(self.factor)
        validate_int("original_max_len", self.original_max_len, minimum=1)


@dataclass(frozen=True)
class YaRNScaling:
    """YaRN (Peng et al., 2023): interpolate slow pairs, keep fast ones, ramp in between.

    With r_i = L_orig / λ_i the number of turns pair i makes over the original length,
    pairs with r_i > β_fast keep θ_i, pairs with r_i < β_slow get θ_i / κ, and a linear
    ramp (in the pair index, between the corrected boundaries) blends the two. Scores
    are scaled by the attention factor (0.1 ln κ + 1)², applied as 0.1 ln κ + 1 to cos
    and sin of both q and k.
    """

    factor: float
    original_max_len: int
    beta_fast: float = 32.0
    beta_slow: float = 1.0

    def __post_init__(self) -> None:
        _factor(self.factor)
        validate_int("original_max_len", self.original_max_len, minimum=1)

    @property
    def attention_factor(self) -> float:
        return 1.0 if self.factor <= 1 else 0.1 * math.log(self.factor) + 1.0


@dataclass(frozen=True)
class Llama3Scaling:
    """Llama 3.1's frequency-dependent scaling (Meta, 2024).

    Pairs with wavelength < L_orig / high_freq_factor keep θ_i; pairs with wavelength
    > L_orig / low_freq_factor get θ_i / κ; in between, a smooth blend in
    L_orig / λ_i. Defaults are Llama 3.1's: κ = 8, 1, 4, L_orig = 8192.
    """

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_len: int = 8192

    def __post_init__(self) -> None:
        _factor(self.factor)
        validate_int("original_max_len", self.original_max_len, minimum=1)
        if not self.high_freq_factor > self.low_freq_factor > 0:
            raise ValueError(
                "need high_freq_factor > low_freq_factor > 0, got "
                f"{self.high_freq_factor} and {self.low_freq_factor}"
            )


def _per_pair(name: str, value: object) -> tuple[float, ...]:
    """One finite factor > 0 per pair, as a tuple of floats."""
    if isinstance(value, Sequence) and any(isinstance(x, bool) for x in value):
        raise TypeError(f"{name} must be real numbers, not booleans, got {value!r}")
    factors = validate_real_vector(name, value)
    if factors.numel() == 0 or not bool((factors > 0).all()):
        raise ValueError(f"{name} must hold one factor > 0 per pair, got {factors.tolist()}")
    return tuple(factors.tolist())


@dataclass(frozen=True)
class LongRoPEScaling:
    """LongRoPE (Ding et al., 2024; "longrope" in transformers, Phi-3): θ'_i = θ_i / κ_i.

    κ_i = ``short_factor[i]`` while the current length L <= L_orig, ``long_factor[i]``
    once L > L_orig (no length: short), one per pair, as in transformers. cos and sin are
    multiplied by ``attention_factor``, by default sqrt(1 + ln κ / ln L_orig) (1 if κ <= 1),
    κ = ``factor`` = L_max / L_orig. Factors must be > 0, not >= 1: the fixed rules give
    κ_i >= 1, but published lists (MiniCPM4's) start just below 1. Chapter 8, section 8.5.
    """

    short_factor: tuple[float, ...]
    long_factor: tuple[float, ...]
    original_max_len: int
    factor: float
    attention_factor: float | None = None  # after __post_init__: the value used

    def __post_init__(self) -> None:
        short = _per_pair("short_factor", self.short_factor)
        long = _per_pair("long_factor", self.long_factor)
        if len(short) != len(long):
            raise ValueError("short_factor and long_factor must both hold one factor per pair")
        original = validate_int("original_max_len", self.original_max_len, minimum=2)
        factor = _factor(self.factor)
        if self.attention_factor is None:
            attention = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(original))
        else:
            attention = validate_positive_float("attention_factor", self.attention_factor)
        object.__setattr__(self, "short_factor", short)
        object.__setattr__(self, "long_factor", long)
        object.__setattr__(self, "attention_factor", attention)


#: Any of the scalings above: what ``set_rope_scaling`` and the study accept (chapter 8).
Scaling = (
    LinearScaling | NTKScaling | DynamicNTKScaling | YaRNScaling | Llama3Scaling | LongRoPEScaling
)


def _yarn_ramp(dim: int, base: float, scaling: YaRNScaling) -> torch.Tensor:
    """Weight of the *unscaled* frequency for each pair (1: keep θ_i, 0: θ_i / κ)."""

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


def scaled_frequencies(
    dim: int, base: float = 10000.0, scaling: Scaling | None = None, *, seq_len: int | None = None
) -> tuple[torch.Tensor, float]:
    """(θ_i for i < d/2, attention factor) after the optional context-extension ``scaling``.

    float64 frequencies; ``seq_len`` (the current length) matters for DynamicNTKScaling
    and LongRoPEScaling only.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    base = validate_base(base)
    theta = frequencies(dim, base)  # θ_i = b^(-2i/d), float64
    if scaling is None:
        return theta, 1.0
    if isinstance(scaling, LinearScaling):
        return theta / scaling.factor, 1.0
    if isinstance(scaling, NTKScaling):  # the same formula with a larger base
        return frequencies(dim, base * scaling.factor ** (dim / (dim - 2))), 1.0
    if isinstance(scaling, DynamicNTKScaling):
        length = max(seq_len or scaling.original_max_len, scaling.original_max_len)
        grown = scaling.factor * length / scaling.original_max_len - (scaling.factor - 1)
        return frequencies(dim, base * grown ** (dim / (dim - 2))), 1.0
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
    if isinstance(scaling, LongRoPEScaling):
        if len(scaling.short_factor) != dim // 2:
            raise ValueError(f"short_factor and long_factor must hold d/2 = {dim // 2} factors")
        long = seq_len is not None and seq_len > scaling.original_max_len
        factors = scaling.long_factor if long else scaling.short_factor
        return theta / torch.tensor(factors, dtype=torch.float64), scaling.attention_factor
    raise TypeError(
        f"scaling must be one of {Scaling.__args__} or None, got {type(scaling).__name__}"
    )


def pair_factors(
    dim: int, base: float = 10000.0, scaling: Scaling | None = None, *, seq_len: int | None = None
) -> torch.Tensor:
    """κ_i = θ_i / θ'_i (float64): any scaling as one factor per pair, as LongRoPE's. Chapter 8."""
    theta, _ = scaled_frequencies(dim, base)
    return theta / scaled_frequencies(dim, base, scaling, seq_len=seq_len)[0]


def rotary_dim(dim: int, fraction: float) -> int:
    """d_rot = int(d · fraction) rotated coordinates of a head; fraction in (0, 1]. Chapter 8.

    GPT-NeoX's ``rotary_pct``, transformers' ``partial_rotary_factor``; d_rot even, >= 2.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    fraction = validate_positive_float("fraction", fraction)
    rotated = int(dim * fraction)
    if fraction > 1 or rotated < 2 or rotated % 2:
        raise ValueError(f"fraction must be <= 1 and rotate an even number >= 2, got {rotated}")
    return rotated


def partial_rotary_frequencies(
    dim: int,
    fraction: float,
    base: float = 10000.0,
    scaling: Scaling | None = None,
    *,
    seq_len: int | None = None,
) -> tuple[torch.Tensor, float]:
    """(θ' of all d/2 pairs, attention factor) when d_rot = :func:`rotary_dim` rotate. Chapter 8.

    Pairs i < d_rot/2 get b^(-2i/d_rot) (GPT-NeoX's and transformers' denominator), then
    ``scaling`` (``seq_len=`` as in :func:`scaled_frequencies`); the rest get θ = 0: their
    part of q_m · k_n is a plain dot product, free of position. In the interleaved layout
    pairs i < d_rot/2 are the first d_rot coordinates, the slice GPT-NeoX rotates.
    """
    rotated = rotary_dim(dim, fraction)
    theta, attention = scaled_frequencies(rotated, base, scaling, seq_len=seq_len)
    return torch.cat((theta, torch.zeros((dim - rotated) // 2, dtype=torch.float64))), attention
