"""Intervals and verdicts for the study of chapter 11, fixed before its runs.

The design (chapter 11 and its appendix): every method is trained with S seeds (each
seed fixes the initialisation and the order of the training text) and evaluated on
the same G validation segments. A quantity compared on the same characters, such as
the loss with the full context minus the loss with a training-length one, or method
A's loss minus method B's, gives one number y[s, g] per seed and segment. Seeds and
segments are *crossed* (every seed meets every segment), so the model is

    y[s, g] = μ + a_s + b_g + e[s, g],   Var a = σ_a², Var b = σ_b², Var e = σ_e²,

with a_s the seed's effect (training randomness), b_g the segment's (which text),
e the rest. The estimate of μ is the grand mean ȳ, with

    Var ȳ = σ_a² / S + σ_b² / G + σ_e² / (S G).

Why this interval: a t-interval over the S seed means alone would treat the G
segments as the whole population of text, and a bootstrap over segments within one
seed would treat the trained model as fixed; a reader wants both kinds of variation
(another seed, other text). The variance components come from the two-way mean squares
(expected values MS_seed = G σ_a² + σ_e², MS_seg = S σ_b² + σ_e², MS_res = σ_e²),
negative estimates truncated at zero, and the degrees of freedom from Satterthwaite's
approximation; the interval is ȳ ± t_{0.975, ν} √(Var ȳ). With one seed it covers text
only (σ_a cannot be estimated; :attr:`Interval.sources` says so).

Verdicts use one margin, :data:`EQUIVALENCE_NATS`, declared here before the runs:
two losses are *practically equal* when they differ by less than 0.01 nats per
character, 1% in perplexity. It is a judgement, not a law: chapter 11 prints how every
verdict changes at half and at twice the margin.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass

import mpmath
import numpy as np

__all__ = [
    "EQUIVALENCE_NATS",
    "LEVEL",
    "Comparison",
    "ContextEffect",
    "Interval",
    "compare",
    "context_effect",
    "crossed_interval",
    "t_quantile",
]

#: The margin for "practically equal", in nats per character (1% in perplexity).
#: Declared before the runs of the five-seed study (chapter 11); never tuned after them.
EQUIVALENCE_NATS = 0.01

#: The coverage of every interval the study reports.
LEVEL = 0.95


def t_quantile(probability: float, df: float) -> float:
    """The ``probability`` quantile of Student's t with ``df`` (> 0, real) degrees of freedom.

    Solved by bisection on the CDF, 1 - I_{df/(df+t²)}(df/2, 1/2) / 2 for t > 0 (the
    regularised incomplete beta function, from mpmath); symmetric for p < 1/2.
    """
    if not 0.0 < probability < 1.0:
        raise ValueError(f"probability must be in (0, 1), got {probability}")
    if not df > 0 or math.isinf(df) or math.isnan(df):
        raise ValueError(f"df must be a finite number > 0, got {df}")
    if probability < 0.5:
        return -t_quantile(1.0 - probability, df)
    if probability == 0.5:
        return 0.0

    def upper_tail(t: float) -> float:
        x = df / (df + t * t)
        return 0.5 * float(mpmath.betainc(df / 2, 0.5, 0, x, regularized=True))

    target = 1.0 - probability
    low, high = 0.0, 1.0
    while upper_tail(high) > target:
        high *= 2.0
    for _ in range(200):
        middle = (low + high) / 2
        if upper_tail(middle) > target:
            low = middle
        else:
            high = middle
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided interval at ``level``; ``sources`` names the variation
    covered ("seeds and text", "text" with one seed, "seeds" with one segment)."""

    mean: float
    low: float
    high: float
    df: float
    level: float
    sources: str

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def crossed_interval(
    values: Sequence[Sequence[float]] | np.ndarray, level: float = LEVEL
) -> Interval:
    """The interval for the mean of y[s, g] (seeds × segments, crossed). Chapter 11.

    ``values``: an (S, G) array of finite numbers, S >= 1 seeds, G >= 1 segments, at
    least two numbers in all. See the module docstring for the model and formula.
    """
    y = np.asarray(values, dtype=np.float64)
    if y.ndim != 2:
        raise ValueError(f"values must be a 2-D (seeds, segments) array, got shape {y.shape}")
    seeds, segments = y.shape
    if seeds * segments < 2 or min(seeds, segments) < 1:
        raise ValueError(f"values needs at least two numbers, got shape {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("values must all be finite (a method that cannot run has no losses)")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    mean = float(y.mean())
    if seeds == 1 or segments == 1:  # one source of variation: a plain t-interval
        flat = y.reshape(-1)
        terms = [(1.0 / flat.size, float(flat.var(ddof=1)), flat.size - 1)]
        sources = "text" if seeds == 1 else "seeds"
    else:
        seed_means, segment_means = y.mean(1), y.mean(0)
        ms_seed = segments * float(((seed_means - mean) ** 2).sum()) / (seeds - 1)
        ms_segment = seeds * float(((segment_means - mean) ** 2).sum()) / (segments - 1)
        residual = y - seed_means[:, None] - segment_means[None, :] + mean
        ms_residual = float((residual**2).sum()) / ((seeds - 1) * (segments - 1))
        n = seeds * segments
        # Var ȳ = σa²/S + σb²/G + σe²/(SG) with σa² = (MS_seed − MS_res)/G and
        # σb² = (MS_seg − MS_res)/S when positive (else 0): a sum Σ c·MS, each MS once
        # (a relative 1e-9 keeps rounding from switching a component on: equal mean
        # squares mean a zero component, and a shift of y must not change the interval)
        above = ms_residual * (1 + 1e-9) + 1e-300
        seed_on, segment_on = ms_seed > above, ms_segment > above
        terms = [
            ((1.0 - seed_on - segment_on) / n, ms_residual, (seeds - 1) * (segments - 1)),
            (seed_on / n, ms_seed, seeds - 1),
            (segment_on / n, ms_segment, segments - 1),
        ]
        sources = "seeds and text"
    variance = sum(c * ms for c, ms, _ in terms)
    if variance <= 0.0:
        return Interval(mean, mean, mean, math.inf, level, sources)
    # Satterthwaite: ν = (Σ c MS)² / Σ (c MS)² / df, written with each share c·MS / Σ c MS
    # (in [0, 1]) so that a tiny variance cannot underflow its square to 0
    df = 1.0 / sum((c * ms / variance) ** 2 / d for c, ms, d in terms if c)
    half = t_quantile(0.5 + level / 2, df) * math.sqrt(variance)
    return Interval(mean, mean - half, mean + half, df, level, sources)


class Comparison(enum.StrEnum):
    """The verdict on a difference of losses A − B (lower is better)."""

    BETTER = "better"  # the whole interval below −margin
    WORSE = "worse"  # the whole interval above +margin
    EQUAL = "practically equal"  # the whole interval inside ±margin
    UNDECIDED = "inconclusive"  # the interval reaches across a margin


def compare(interval: Interval, margin: float = EQUIVALENCE_NATS) -> Comparison:
    """Decide a difference of losses A − B from its interval and the margin. Chapter 11."""
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if interval.high < -margin:
        return Comparison.BETTER
    if interval.low > margin:
        return Comparison.WORSE
    if -margin <= interval.low and interval.high <= margin:
        return Comparison.EQUAL
    return Comparison.UNDECIDED


class ContextEffect(enum.StrEnum):
    """What context beyond the training length does to a model, from the interval of
    its extra-context cost (loss with the full context minus loss with a training-length
    one, the same characters)."""

    USES = "uses it"  # the whole interval below −margin: the extra context helps
    KEEPS = "keeps its quality"  # the whole interval at or below +margin: it does not hurt
    HURTS = "hurt by it"  # the whole interval above +margin
    UNDECIDED = "inconclusive"


def context_effect(cost: Interval, margin: float = EQUIVALENCE_NATS) -> ContextEffect:
    """Decide what the extra context does from the interval of its cost. Chapter 11.

    *Keeps its quality* is a non-inferiority verdict: the interval's upper end is at
    most the margin (a method the extra context helps keeps its quality too; when the
    interval lies wholly below −margin it *uses* the context, the stronger verdict).
    """
    if not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    if cost.high < -margin:
        return ContextEffect.USES
    if cost.high <= margin:
        return ContextEffect.KEEPS
    if cost.low > margin:
        return ContextEffect.HURTS
    return ContextEffect.UNDECIDED
