"""Context extension for RoPE: rescaled frequencies without retraining (chapter 8).

Each method is a small frozen dataclass that names its paper and states its formula
(the style of Hugging Face's ``modeling_rope_utils``); :func:`scaled_frequencies`
turns the book's frequencies θ_i = b^(-2i/d) (``pe_book.sinusoidal.frequencies``)
into the method's θ'_i and its attention factor. ``pe_book.rope`` rotates with them.

- :class:`LinearScaling`: Position Interpolation (Chen et al., 2023);
- :class:`NTKScaling`: NTK-aware (bloc97, 2023);
- :class:`DynamicNTKScaling`: dynamic NTK (emozilla, 2023);
- :class:`YaRNScaling`: YaRN (Peng et al., 2023);
- :class:`Llama3Scaling`: Llama 3.1 (Meta, 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from pe_book._validate import validate_int, validate_positive_float
from pe_book.sinusoidal import frequencies

__all__ = [
    "DynamicNTKScaling",
    "LinearScaling",
    "Llama3Scaling",
    "NTKScaling",
    "Scaling",
    "YaRNScaling",
    "scaled_frequencies",
]


def _factor(value: float) -> float:
    return validate_positive_float("factor", value)


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
        validate_int("original_max_len", self.original_max_len, minimum=1)


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
        validate_int("original_max_len", self.original_max_len, minimum=1)

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
        validate_int("original_max_len", self.original_max_len, minimum=1)
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


def scaled_frequencies(
    dim: int, base: float = 10000.0, scaling: Scaling | None = None, *, seq_len: int | None = None
) -> tuple[torch.Tensor, float]:
    """(θ_i for i < d/2, attention factor) after the optional context-extension ``scaling``.

    float64 frequencies; ``seq_len`` (the current length) matters for DynamicNTKScaling only.
    """
    dim = validate_int("dim", dim, minimum=2, even=True)
    base = validate_positive_float("base", base, above=1.0)
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
    raise TypeError(
        f"scaling must be one of {Scaling.__args__} or None, got {type(scaling).__name__}"
    )
