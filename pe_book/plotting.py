"""One figure style for the whole book: small PNGs (dpi <= 100), labelled, readable.

Call :func:`use_book_style` once at the top of a chapter. Every figure in the
book has a title that states its question, labelled axes with units, and a
legend or colour bar; :func:`heatmap` does this for the matrices most chapters show.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

__all__ = [
    "DPI",
    "heatmap",
    "plot_alibi_slopes",
    "plot_bias_weights",
    "plot_decay",
    "plot_rope_scaling",
    "plot_wavelengths",
    "use_book_style",
]

DPI = 80  # stored PNGs stay small; the design caps dpi at 100

_STYLE = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.figsize": (6.4, 3.6),
    "figure.autolayout": True,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "image.cmap": "viridis",
    "legend.frameon": False,
    "svg.hashsalt": "pe_book",  # reproducible SVG ids if anyone saves one
}


def use_book_style() -> None:
    """Apply the book's matplotlib settings (after the notebook backend set its own)."""
    import matplotlib.pyplot  # noqa: F401 - importing pyplot first lets our rc win over the inline backend's

    mpl.rcParams.update(_STYLE)


def heatmap(
    ax,
    values,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    colorbar_label: str,
    xticklabels=None,
    yticklabels=None,
    **imshow_kwargs,
):
    """Draw a labelled matrix with a colour bar on ``ax``; returns the image.

    ``values`` is anything NumPy can convert (a tensor is converted with .numpy());
    ``xticklabels``/``yticklabels`` name the columns/rows (e.g. the tokens).
    """
    array = values.detach().cpu().numpy() if hasattr(values, "detach") else np.asarray(values)
    image = ax.imshow(array, aspect="auto", interpolation="nearest", **imshow_kwargs)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(False)
    if xticklabels is not None:
        ax.set_xticks(range(len(xticklabels)), xticklabels, rotation=45)
    if yticklabels is not None:
        ax.set_yticks(range(len(yticklabels)), yticklabels)
    ax.figure.colorbar(image, ax=ax, label=colorbar_label)
    return image


def plot_decay(ax, dim: int, base: float, max_offset: int = 5000) -> dict[str, int | None]:
    """Chapter 5's explorer: the dot profile for (dim, base) and its integral limit.

    Draws both curves on ``ax`` and returns the numbers the figure is about: the
    first offset where the profile is <= 0.1 and where it is <= 0.
    """
    import torch

    from pe_book import decay

    offsets = torch.arange(max_offset + 1)
    profile = decay.dot_profile(offsets, dim, base)
    coarse = offsets[:: max(1, max_offset // 400)]
    ax.plot(offsets.numpy(), profile.numpy(), lw=0.8, label=f"(2/d) Σ cos(rθ_i), d = {dim}")
    ax.plot(
        coarse.numpy(),
        decay.integral_profile(coarse, base).numpy(),
        "k--",
        label="integral (d → ∞)",
    )
    ax.axhline(0.0, color="grey", lw=0.6)
    ax.set_xlabel("offset r = m − n (positions)")
    ax.set_ylabel("normalised dot product")
    ax.set_title(f"How fast does similarity decay? base = {base:g}, d = {dim}")
    ax.legend(loc="upper right")
    return {
        "reach 0.1": decay.first_offset_at_or_below(offsets, profile, 0.1),
        "first zero": decay.first_offset_at_or_below(offsets, profile, 0.0),
    }


def plot_wavelengths(ax, dim: int, base: float = 10000.0) -> dict[str, float]:
    """Chapter 3's explorer: the wavelength λ_i = 2π b^(2i/d) of every pair i.

    Returns the shortest and longest wavelengths (positions) the figure shows.
    """
    from pe_book.sinusoidal import wavelengths

    lam = wavelengths(dim, base)
    ax.semilogy(range(len(lam)), lam.numpy(), ".-", label=f"d = {dim}, b = {base:g}")
    ax.axhline(2 * np.pi * base, color="grey", lw=0.6, ls=":", label="2π · b")
    ax.set_xlabel("pair index i")
    ax.set_ylabel("wavelength λ_i (positions, log scale)")
    ax.set_title("Wavelengths of the sinusoidal pairs")
    ax.legend(loc="lower right")
    return {"shortest": float(lam[0]), "longest": float(lam[-1])}


def plot_rope_scaling(
    ax, factor: float, dim: int = 128, base: float = 10000.0, original_max_len: int = 2048
) -> dict[str, tuple[float, float, float]]:
    """Chapter 7's explorer: θ'_i / θ_i against the wavelength for each context-extension method.

    Returns, per method, the ratio at the fastest pair, at the pair whose wavelength
    is closest to ``original_max_len``, and at the slowest pair.
    """
    from pe_book import rope_scaling

    theta, _ = rope_scaling.scaled_frequencies(dim, base)
    wavelength = 2 * np.pi / theta
    methods = {
        "Position Interpolation": rope_scaling.LinearScaling(factor),
        "NTK-aware": rope_scaling.NTKScaling(factor),
        "YaRN": rope_scaling.YaRNScaling(factor, original_max_len),
        "Llama 3": rope_scaling.Llama3Scaling(factor, 1.0, 4.0, original_max_len),
    }
    middle = int((wavelength - original_max_len).abs().argmin())
    ratios = {}
    for name, scaling in methods.items():
        ratio = rope_scaling.scaled_frequencies(dim, base, scaling)[0] / theta
        ax.semilogx(wavelength.numpy(), ratio.numpy(), label=name)
        ratios[name] = (float(ratio[0]), float(ratio[middle]), float(ratio[-1]))
    ax.axvline(original_max_len, color="grey", lw=0.6, ls=":")
    ax.set_xlabel("wavelength of the pair (positions, log scale)")
    ax.set_ylabel("θ'_i / θ_i")
    ax.set_title(f"Which pairs does each method slow down? s = {factor:g}")
    ax.legend()
    return ratios


def plot_alibi_slopes(ax, n_heads: int, nats: float = 10.0) -> dict[str, list]:
    """Chapter 8's explorer: each head's slope s_h and its reach (penalty >= ``nats``).

    Returns the slopes' log2 and the reaches, head by head (official order).
    """
    from pe_book import alibi

    slopes = alibi.alibi_slopes(n_heads)
    reach = alibi.alibi_reach(slopes, nats)
    heads = np.arange(1, n_heads + 1)
    ax.semilogy(heads, reach.numpy(), "o", label=f"reach ({nats:g} nats)")
    ax.semilogy(heads, (1 / slopes).numpy(), "x", label="1 / s_h")
    ax.set_xlabel("head h (official order)")
    ax.set_ylabel("distance (tokens, log scale)")
    ax.set_title(f"ALiBi with {n_heads} heads: how far each head sees")
    ax.legend()
    return {"log2 slope": [round(float(v), 3) for v in slopes.log2()], "reach": reach.tolist()}


def plot_bias_weights(ax, slope: float, m: int = 2000, nats: float = 10.0) -> dict[str, float]:
    """Chapter 8's slope explorer: the bias-only attention weights of a query at position m.

    Draws w(r) ∝ e^(-s r) over the distances r = 0..m for one head of slope ``slope``
    and returns its mean distance and its reach (first r where s r >= ``nats``).
    """
    import torch

    from pe_book import alibi

    slopes = torch.tensor([slope], dtype=torch.float64)
    weights = alibi.bias_only_weights(slopes, m)[0]
    distance = torch.arange(m + 1, dtype=torch.float64)
    mean = float((weights * distance).sum())
    reach = int(alibi.alibi_reach(slopes, nats)[0])
    ax.plot(distance.numpy(), weights.numpy(), label=f"s = {slope:.4g}")
    ax.axvline(mean, color="grey", ls="--", lw=1, label=f"mean distance {mean:.1f}")
    if reach <= m:
        ax.axvline(reach, color="black", ls=":", lw=1, label=f"reach ({nats:g} nats) {reach}")
    ax.set_xlabel("distance r = m − n (tokens)")
    ax.set_ylabel("attention weight from the bias alone")
    ax.set_title(f"One ALiBi head, query at position {m}, equal content scores")
    ax.legend()
    return {"mean distance": mean, "reach": reach}
