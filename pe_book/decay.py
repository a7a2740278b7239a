"""Long-range decay of the sinusoidal dot product, its integral, and RoFormer's bound (chapter 5).

For an offset r between two positions (chapter 4: the dot product depends on r only),

    dot_profile(r)      = (2/d) Σ_i cos(r θ_i),   θ_i = b^(-2i/d), i = 0..d/2-1,
    integral_profile(r) = ∫_0^1 cos(r b^(-t)) dt = (Ci(r) - Ci(r/b)) / ln b,

the second being the limit d → ∞ of the first (t = 2i/d, a Riemann sum). Ci is the
cosine integral; it is evaluated with mpmath (already installed with SymPy), whose
``ci`` is accurate to double precision for every argument, so no SciPy is needed.

RoFormer (Su et al., 2021, section 3.4.3) bounds a rotary score by Abel summation:
with h_i = q_i conj(k_i) (pair i of q and k as complex numbers, h_{d/2} = 0) and
S_j = Σ_{i<j} e^{𝗂 r θ_i},

    |Σ_i h_i e^{𝗂 r θ_i}| = |Σ_j S_{j+1}(h_{j+1} - h_j)|
                         <= max_j |h_{j+1} - h_j| · Σ_{j=1}^{d/2} |S_j|,

and plots the "relative upper bound" (1/(d/2)) Σ_{j=1}^{d/2} |S_j| (:func:`rope_decay_bound`).
"""

from __future__ import annotations

import math

import mpmath
import torch

from pe_book._validate import (
    validate_base,
    validate_positive_float,
    validate_real_vector,
    validate_tensor,
)
from pe_book.sinusoidal import frequencies

__all__ = [
    "abel_bound",
    "dot_profile",
    "first_offset_at_or_below",
    "integral_by_quadrature",
    "integral_profile",
    "integral_reach",
    "largest_rebound",
    "log_window_mean",
    "profile_from_frequencies",
    "rope_decay_bound",
    "rotated_scores",
]


def _offsets(offsets: object) -> torch.Tensor:
    """Offsets as a 1-D float64 tensor (any real values; position offsets are integers)."""
    return validate_real_vector("offsets", offsets)


def dot_profile(offsets: object, dim: int, base: float = 10000.0) -> torch.Tensor:
    """(2/d) Σ_i cos(r θ_i) = PE(m)·PE(m + r) / ‖PE‖² for each offset r; float64. Chapter 5."""
    return profile_from_frequencies(offsets, frequencies(dim, base))


def profile_from_frequencies(offsets: object, theta: torch.Tensor) -> torch.Tensor:
    """mean_i cos(r θ_i) for any frequencies θ (e.g. after RoPE scaling, chapter 8); float64."""
    validate_tensor("theta", theta, ndim=1, floating=True)
    r = _offsets(offsets)
    return torch.cos(r[:, None] * theta.to(torch.float64)[None, :]).mean(-1)  # (len(r),)


def integral_profile(offsets: object, base: float = 10000.0) -> torch.Tensor:
    """∫_0^1 cos(r b^(-t)) dt = (Ci(|r|) - Ci(|r|/b)) / ln b, and 1 at r = 0; float64. Chapter 5."""
    r = _offsets(offsets).abs()
    base = validate_base(base)
    log_base = math.log(base)
    values = [
        1.0 if x == 0 else float((mpmath.ci(x) - mpmath.ci(x / base)) / log_base)
        for x in r.tolist()
    ]
    return torch.tensor(values, dtype=torch.float64)


def integral_reach(level: float, base: float = 10000.0) -> float | None:
    """The first r > 0 where the integral profile falls to ``level`` (a root, to ~1e-9 relative).

    Scans r on a geometric grid (1% steps) from 10^-3 to 100 b for the first sign
    change of ρ∞(r) - level, then refines it by bisection with mpmath. None if
    the profile stays above ``level`` on that range. Chapter 5.
    """
    base = validate_base(base)
    log_base = mpmath.log(base)

    def excess(r: float) -> float:
        return float((mpmath.ci(r) - mpmath.ci(r / base)) / log_base) - level

    r, previous = 1e-3, excess(1e-3)
    while r < 100 * base:
        nxt = r * 1.01
        value = excess(nxt)
        if previous > 0 >= value:
            return float(mpmath.findroot(excess, (r, nxt), solver="bisect", tol=1e-18))
        r, previous = nxt, value
    return None


def integral_by_quadrature(
    offsets: object, base: float = 10000.0, *, radians_per_panel: float = 0.5
) -> torch.Tensor:
    """∫_0^1 cos(r b^(-t)) dt by composite 8-point Gauss–Legendre, without the closed form.

    The phase r b^(-t) changes by at most r ln b per unit of t, so [0, 1] is cut into
    enough panels that it turns by at most ``radians_per_panel`` in each. An
    independent check of :func:`integral_profile` (chapter 5); float64.
    """
    r = _offsets(offsets).abs()
    base = validate_base(base)
    nodes, weights = (torch.tensor(v, dtype=torch.float64) for v in _gauss_legendre_8())
    results = []
    for x in r.tolist():
        panels = max(16, math.ceil(x * math.log(base) / radians_per_panel))
        left = torch.arange(panels, dtype=torch.float64) / panels  # (panels,)
        t = left[:, None] + (nodes[None, :] + 1) / (2 * panels)  # (panels, 8)
        integrand = torch.cos(x * base ** (-t))
        results.append(float((integrand * weights).sum() / (2 * panels)))
    return torch.tensor(results, dtype=torch.float64)


def _gauss_legendre_8() -> tuple[list[float], list[float]]:
    nodes, weights = [], []
    for k in range(1, 9):  # roots of P_8 by Newton from Chebyshev guesses
        x = math.cos(math.pi * (k - 0.25) / 8.5)
        for _ in range(100):
            p0, p1 = 1.0, x
            for n in range(2, 9):
                p0, p1 = p1, ((2 * n - 1) * x * p1 - (n - 1) * p0) / n
            derivative = 8 * (x * p1 - p0) / (x * x - 1)
            step = p1 / derivative
            x -= step
            if abs(step) < 1e-16:
                break
        nodes.append(x)
        weights.append(2 / ((1 - x * x) * derivative * derivative))
    return nodes, weights


def _partial_sums(r: torch.Tensor, dim: int, base: float) -> torch.Tensor:
    """S_j = Σ_{i<j} e^{𝗂 r θ_i} for j = 1..d/2: complex128, shape (len(r), d/2)."""
    phases = r[:, None] * frequencies(dim, base)[None, :]  # (len(r), d/2)
    return torch.polar(torch.ones_like(phases), phases).cumsum(dim=-1)


def rope_decay_bound(offsets: object, dim: int, base: float = 10000.0) -> torch.Tensor:
    """RoFormer's relative upper bound (1/(d/2)) Σ_{j=1}^{d/2} |S_j| for each offset r (ch. 5)."""
    r = _offsets(offsets)
    return _partial_sums(r, dim, base).abs().mean(-1)


def _pairs_as_complex(x: torch.Tensor, name: str) -> torch.Tensor:
    validate_tensor(name, x, min_ndim=1, floating=True)
    if x.shape[-1] % 2:
        raise ValueError(f"{name} must have an even last dimension, got {x.shape[-1]}")
    x = x.to(torch.float64)
    return torch.complex(x[..., 0::2], x[..., 1::2])  # pair i = (x_2i, x_2i+1) -> x_2i + i x_2i+1


def rotated_scores(
    q: torch.Tensor, k: torch.Tensor, offsets: object, base: float = 10000.0
) -> torch.Tensor:
    """Re Σ_i h_i e^{𝗂 r θ_i}, h_i = q_i conj(k_i): the dot product of q turned by r θ_i and k.

    For q at position m and k at n, rotating every pair i of each by its position
    times θ_i (RoPE, interleaved pairs, chapter 7) gives this with r = m - n.
    q, k: (..., d); returns (..., len(offsets)), float64. Chapter 5.
    """
    h = _pairs_as_complex(q, "q") * _pairs_as_complex(k, "k").conj()  # (..., d/2)
    r = _offsets(offsets)
    dim = 2 * h.shape[-1]
    phases = r[:, None] * frequencies(dim, base)[None, :]  # (len(r), d/2)
    rotations = torch.polar(torch.ones_like(phases), phases)  # e^{𝗂 r θ_i}
    return (h[..., None, :] * rotations).sum(-1).real


def abel_bound(
    q: torch.Tensor, k: torch.Tensor, offsets: object, base: float = 10000.0
) -> torch.Tensor:
    """max_j |h_{j+1} - h_j| · Σ_{j=1}^{d/2} |S_j| (with h_{d/2} = 0): RoFormer's bound on |score|.

    q, k: (d,); returns (len(offsets),), float64. Chapter 7 (section 7.5).
    """
    h = _pairs_as_complex(q, "q") * _pairs_as_complex(k, "k").conj()  # (d/2,)
    if h.ndim != 1:
        raise ValueError("abel_bound takes one q and one k, each of shape (d,)")
    steps = torch.diff(h, append=torch.zeros(1, dtype=h.dtype)).abs()  # |h_{j+1} - h_j|
    r = _offsets(offsets)
    return steps.max() * _partial_sums(r, 2 * h.shape[0], base).abs().sum(-1)


def first_offset_at_or_below(offsets: object, values: torch.Tensor, level: float) -> int | None:
    """The first offset whose value is <= level (offsets in increasing order), or None."""
    r = _offsets(offsets)
    validate_tensor("values", values, ndim=1)
    if values.shape != r.shape:
        raise ValueError(
            f"values must match offsets, got {tuple(values.shape)} and {tuple(r.shape)}"
        )
    hits = torch.nonzero(values <= level)
    return None if hits.numel() == 0 else int(r[hits[0, 0]])


def largest_rebound(values: torch.Tensor) -> tuple[float, int]:
    """The largest rise of a curve above its running minimum, and the index where it happens.

    0 for a curve that never goes up again (monotone non-increasing).
    """
    validate_tensor("values", values, ndim=1)
    rise = values - torch.cummin(values, dim=0).values
    index = int(rise.argmax())
    return float(rise[index]), index


def log_window_mean(
    values: torch.Tensor, shown: torch.Tensor, ratio: float = 2**0.5
) -> torch.Tensor:
    """For each offset r in ``shown``, the mean of ``values`` over the offsets r/ratio .. r·ratio.

    ``values[r]`` is a profile at offsets 0, 1, 2, ...; it must reach r·ratio for the
    largest r shown. A window that grows with r smooths an oscillating profile evenly
    on a log axis (chapter 8's profiles). float64, one entry per shown offset.
    """
    validate_tensor("values", values, ndim=1)
    validate_tensor("shown", shown, ndim=1)
    ratio = validate_positive_float("ratio", ratio, above=1.0)
    if shown.is_floating_point() or shown.dtype == torch.bool:
        raise TypeError(f"shown must hold integer offsets, got dtype {shown.dtype}")
    if shown.numel() and int(shown.min()) < 0:
        raise ValueError(f"shown must be offsets >= 0, got {int(shown.min())}")
    low = (shown.double() / ratio).long()
    high = (shown.double() * ratio).long()
    if high.numel() and int(high.max()) >= len(values):
        raise ValueError(
            f"values reach offset {len(values) - 1}, but the window of offset"
            f" {int(shown.max())} needs {int(high.max())}"
        )
    total = torch.cat([values.new_zeros(1, dtype=torch.float64), values.double().cumsum(0)])
    return (total[high + 1] - total[low]) / (high - low + 1)
