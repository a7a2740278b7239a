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

Why interpolate rather than extrapolate (Chen et al., 2023, section 2.3): a rotary
score as a function of a real offset s, a(s) = Re Σ_i h_i e^{𝗂 s θ_i}
(:func:`rotary_score`), fitted at the integers 0..L-1 (:func:`fit_rotary_score`), is
pinned down between those integers (:func:`interpolation_gap`) but not beyond L.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from pe_book._validate import (
    validate_int,
    validate_positive_float,
    validate_real_vector,
    validate_tensor,
)
from pe_book.sinusoidal import frequencies

__all__ = [
    "DynamicNTKScaling",
    "LinearScaling",
    "Llama3Scaling",
    "NTKScaling",
    "Scaling",
    "YaRNScaling",
    "fit_rotary_score",
    "interpolation_gap",
    "rotary_score",
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


Scaling = LinearScaling | NTKScaling | DynamicNTKScaling | YaRNScaling | Llama3Scaling


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


def _real_positions(positions: torch.Tensor | Sequence[float] | float) -> torch.Tensor:
    """Real positions s (any finite values, not only integers) as a 1-D float64 tensor."""
    return validate_real_vector("positions", positions)


def _coefficients(coefficients: object) -> torch.Tensor:
    """h_i, one complex number per pair, as a 1-D complex128 tensor."""
    coefficients = validate_tensor("coefficients", coefficients, ndim=1)
    if not coefficients.is_complex():
        raise TypeError(
            "coefficients must be a complex tensor (one h_i per pair), "
            f"got dtype {coefficients.dtype}"
        )
    if coefficients.numel() == 0:
        raise ValueError("coefficients must hold at least one h_i (d/2 >= 1)")
    return coefficients.to(torch.complex128)


def rotary_score(
    coefficients: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | float,
    base: float = 10000.0,
) -> torch.Tensor:
    """a(s) = Re Σ_i h_i e^{𝗂 s θ_i}, θ_i = b^(-2i/d), at real positions s. Chapter 8.

    ``coefficients`` holds h_i for the d/2 pairs (complex, so d = 2·len); at an integer
    offset s = m - n with h_i = q_i conj(k_i) this is RoPE's score q_m · k_n
    (:func:`pe_book.decay.rotated_scores`). Positions may be any finite reals (the
    PI paper's argument evaluates a between and beyond the integers). Returns float64.
    """
    h = _coefficients(coefficients)
    s = _real_positions(positions)
    base = validate_positive_float("base", base, above=1.0)
    phases = s[:, None] * frequencies(2 * h.shape[0], base)[None, :]
    return (h[None, :] * torch.polar(torch.ones_like(phases), phases)).sum(-1).real


def fit_rotary_score(
    targets: torch.Tensor, dim: int, base: float = 10000.0, *, rcond: float | None = None
) -> torch.Tensor:
    """Least-squares h_i (complex, d/2 of them) with a(s) ≈ targets[s] at s = 0..L-1. Chapter 8.

    Minimises Σ_s (a(s) - targets[s])² over the d real numbers Re h_i, Im h_i, as
    a(s) = Σ_i Re h_i cos(sθ_i) - Im h_i sin(sθ_i) (torch.linalg.lstsq, SVD driver
    ``gelsd``, smallest-norm solution). Singular values below ``rcond`` times the largest
    count as zero (None: machine precision times max(L, d)); the slow pairs barely
    turn over L positions, so many are tiny, and ``rcond`` picks among near-equal fits.
    """
    validate_tensor("targets", targets, ndim=1, floating=True)
    if targets.numel() == 0 or not bool(torch.isfinite(targets).all()):
        raise ValueError("targets must hold at least one value, all finite")
    dim = validate_int("dim", dim, minimum=2, even=True)
    base = validate_positive_float("base", base, above=1.0)
    if rcond is not None:
        rcond = validate_positive_float("rcond", rcond)
    s = torch.arange(targets.shape[0], dtype=torch.float64)[:, None]
    theta = frequencies(dim, base)[None, :]
    design = torch.cat((torch.cos(s * theta), -torch.sin(s * theta)), dim=1)  # (L, d)
    y = targets.detach().to("cpu", torch.float64)[:, None]
    solution = torch.linalg.lstsq(design, y, rcond=rcond, driver="gelsd").solution[:, 0]
    return torch.complex(solution[: dim // 2], solution[dim // 2 :])


def interpolation_gap(
    coefficients: torch.Tensor,
    positions: torch.Tensor | Sequence[float] | float,
    base: float = 10000.0,
) -> torch.Tensor:
    """|a(s) - a_lin(s)|: how far a strays from the chord through a(⌊s⌋) and a(⌊s⌋ + 1).

    a_lin(s) = (1 - t) a(⌊s⌋) + t a(⌊s⌋ + 1), t = s - ⌊s⌋; zero at the integers. Chen et
    al.'s Theorem 2.1 (2023) bounds it; the textbook error of linear interpolation gives
    |a(s) - a_lin(s)| <= (Σ_i |h_i| θ_i²) t (1 - t) / 2. Float64. Chapter 8.
    """
    s = _real_positions(positions)
    below = torch.floor(s)
    chord = torch.lerp(
        rotary_score(coefficients, below, base),
        rotary_score(coefficients, below + 1, base),
        s - below,
    )
    return (rotary_score(coefficients, s, base) - chord).abs()
