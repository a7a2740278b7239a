"""One figure style for the whole book: small PNGs (dpi <= 100), labelled, readable.

Every chapter from chapter 1 on draws its figures with it.

Call :func:`use_book_style` once at the top of a chapter. Every figure in the
book has a title that states its question, labelled axes with units, and a
legend or colour bar; :func:`heatmap` does this for the matrices most chapters show.
The ``plot_*`` functions draw chapters' recurring figures from arrays the chapter
computes with the method modules; this module imports none of them.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

__all__ = [
    "DPI",
    "heatmap",
    "line_styles",
    "plot_alibi_slopes",
    "plot_bias_weights",
    "plot_decay",
    "plot_pair_turning",
    "plot_rope_scaling",
    "plot_wavelengths",
    "use_book_style",
    "use_slide_style",
]

DPI = 80  #: stored PNGs stay small; the design caps dpi at 100

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


#: The lecture decks' figures (slides/, tools/decks.py): drawn at the size they are shown
#: on reveal.js's 1280x720 canvas (1180x460 px by default, one pixel per canvas pixel),
#: with text large enough to read from the back of a room.
_SLIDE_STYLE = {
    **_STYLE,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.figsize": (11.8, 4.6),
    "font.size": 16,
    "axes.titlesize": 17,
    "axes.labelsize": 16,
    "xtick.labelsize": 14,
    "ytick.labelsize": 14,
    "legend.fontsize": 14,
    "lines.linewidth": 2.0,
    "lines.markersize": 7,
}


def use_slide_style() -> None:
    """The book's style at projection size, for the lecture decks (slides/).

    A figure is drawn at the pixel size the deck shows it (no scaling in the
    browser): 100 dpi on a 1280x720 canvas, default 11.8 x 4.6 inches, fonts
    14 to 17 pt; tests/test_decks.py checks every figure is shown 1:1 and whole.
    """
    import matplotlib.pyplot  # noqa: F401 - as in use_book_style

    mpl.rcParams.update(_SLIDE_STYLE)


#: Ten colours (matplotlib's tab10) and fourteen markers: enough for every method of the
#: chapter 11 study to have a line of its own.
_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "h", "<", ">", "p", "d", "8")


def line_styles(names) -> dict[str, dict]:
    """One line style per name, no two alike, for a figure of many lines (chapter 11's
    fourteen methods; the lecture decks): a colour of matplotlib's ten, solid for the first
    ten names and dashed after, and a marker of its own, so each line differs from every
    other in its marker and from all but one in its colour. Pass the same names in the same
    order to every figure and a method keeps its style across them. Up to 14 names."""
    names = list(names)
    if len(names) > len(_MARKERS) or len(set(names)) != len(names):
        raise ValueError(f"names must be at most {len(_MARKERS)} distinct names, got {names}")
    return {
        name: {"color": f"C{i % 10}", "ls": "-" if i < 10 else "--", "marker": _MARKERS[i]}
        for i, name in enumerate(names)
    }


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
    ``xticklabels``/``yticklabels`` name the columns/rows (e.g. the tokens). Entries are
    drawn as blocks (``interpolation="nearest"``) unless ``interpolation`` says otherwise:
    a matrix with more entries than the axes has pixels needs "antialiased", which
    averages them instead of dropping most (and aliasing any fine stripes).
    """
    imshow_kwargs.setdefault("interpolation", "nearest")  # "antialiased" for a matrix
    image = ax.imshow(_array(values), aspect="auto", **imshow_kwargs)  # wider than the axes
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


def plot_decay(
    ax, offsets, profile, limit_offsets, limit, *, dim: int, base: float
) -> None:
    """Chapter 5's figure: the dot profile (2/d) Σ_i cos(r θ_i) against the offset r,
    and its integral limit (d → ∞) on coarser offsets ``limit_offsets``."""
    ax.plot(_array(offsets), _array(profile), lw=0.8, label=f"(2/d) Σ cos(rθ_i), d = {dim}")
    ax.plot(_array(limit_offsets), _array(limit), "k--", label="integral (d → ∞)")
    ax.axhline(0.0, color="grey", lw=0.6)
    ax.set_xlabel("offset r = m − n (positions)")
    ax.set_ylabel("normalised dot product")
    ax.set_title(f"How fast does similarity decay? base = {base:g}, d = {dim}")
    ax.legend(loc="upper right")


def plot_wavelengths(ax, wavelengths, *, base: float) -> dict[str, float]:
    """Chapter 3's figure: the wavelength λ_i = 2π b^(2i/d) of every pair i, log scale.

    Returns the shortest and longest wavelengths (positions) the figure shows.
    """
    lam = _array(wavelengths)
    dim = 2 * len(lam)
    ax.semilogy(range(len(lam)), lam, ".-", label=f"d = {dim}, b = {base:g}")
    ax.axhline(2 * np.pi * base, color="C3", lw=1.5, ls="--", label="2π · b (never reached)")
    ax.set_ylim(top=20 * np.pi * base)  # room above the line
    ax.set_xlabel("pair index i")
    ax.set_ylabel("wavelength λ_i (positions, log scale)")
    ax.set_title("Wavelengths of the sinusoidal pairs")
    ax.legend(loc="lower right")
    return {"shortest": float(lam[0]), "longest": float(lam[-1])}


def plot_rope_scaling(
    ax, wavelength, ratios, *, factor: float, original_max_len: int
) -> dict[str, tuple[float, float, float]]:
    """Chapter 8's figure: θ'_i / θ_i against the wavelength of pair i, one curve per
    context-extension method (``ratios``: method name -> ratio per pair), and a dotted
    line, labelled in the legend, at the wavelength ``original_max_len``.

    Returns, per method, the ratio at the fastest pair, at the pair whose wavelength
    is closest to ``original_max_len``, and at the slowest pair.
    """
    wavelength = _array(wavelength)
    middle = int(np.abs(wavelength - original_max_len).argmin())
    found = {}
    for name, ratio in ratios.items():
        ratio = _array(ratio)
        ax.semilogx(wavelength, ratio, label=name)
        found[name] = (float(ratio[0]), float(ratio[middle]), float(ratio[-1]))
    ax.axvline(
        original_max_len, color="grey", lw=1, ls=":", label=f"λ_i = L_orig = {original_max_len}"
    )
    ax.set_xlabel("wavelength λ_i of the pair (positions, log scale)")
    ax.set_ylabel("θ'_i / θ_i")
    ax.set_title(f"Which pairs does each method slow down? κ = {factor:g}")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))  # beside the curves
    return found


def plot_alibi_slopes(ax, slopes, reach, *, nats: float = 10.0) -> dict[str, list]:
    """Chapter 9's figure: each head's reach (penalty >= ``nats``) and 1/s_h, head by head.

    Returns the slopes' log2 and the reaches, head by head (official order).
    """
    slopes, reach = _array(slopes), _array(reach)
    heads = np.arange(1, len(slopes) + 1)
    ax.semilogy(heads, reach, "o", label=f"reach ({nats:g} nats)")
    ax.semilogy(heads, 1 / slopes, "x", label="1 / s_h")
    ax.set_xlabel("head h (official order)")
    ax.set_ylabel("distance (tokens, log scale)")
    ax.set_title(f"ALiBi with {len(slopes)} heads: how far each head sees")
    ax.legend()
    return {
        "log2 slope": [round(float(v), 3) for v in np.log2(slopes)],
        "reach": [int(r) for r in reach],
    }


def plot_bias_weights(
    ax, weights, *, slope: float, mean: float, reach: int, nats: float = 10.0
) -> None:
    """Chapter 9's figure: one head's bias-only attention weights w(r) ∝ e^(-s r) over the
    distances r = 0..m, with its mean distance and its reach (first r with s r >= ``nats``)."""
    weights = _array(weights)
    m = len(weights) - 1
    ax.plot(np.arange(m + 1), weights, label=f"s = {slope:.4g}")
    ax.axvline(mean, color="grey", ls="--", lw=1, label=f"mean distance {mean:.1f}")
    if reach <= m:
        ax.axvline(reach, color="black", ls=":", lw=1, label=f"reach ({nats:g} nats) {reach}")
    ax.set_xlabel("distance r = m − n (tokens)")
    ax.set_ylabel("attention weight from the bias alone")
    ax.set_title(f"One ALiBi head, query at position {m}, equal content scores")
    ax.legend()


def plot_pair_turning(
    ax, pair, *, shift: int, starts, title: str, labelled=None
) -> list[float]:
    """Chapter 4's figure: one (sin mθ, cos mθ) pair of the encoding on the unit circle.

    ``pair`` holds the pair at m = 0, 1, ... (rows; sin drawn horizontally, cos vertically,
    so position 0 is at the top and the points turn clockwise). Each position is a dot,
    labelled m if m is in ``labelled`` (default: every one); for each m in ``starts`` an
    arc just outside the circle runs from the point of m to that of m + ``shift``.
    Returns each arc's angle in radians (clockwise positive, in [0, 2π)), measured from
    the points drawn.
    """
    pair = _array(pair).astype(np.float64)
    along = np.linspace(0, 2 * np.pi, 200)
    ax.plot(np.sin(along), np.cos(along), color="grey", lw=0.6)
    ax.plot(pair[:, 0], pair[:, 1], "o", ms=4, color="C0", label="PE(m), one pair")
    for m, (x, y) in enumerate(pair):
        if labelled is not None and m not in labelled:
            continue
        ax.annotate(str(m), (x, y), xytext=(1.18 * x, 1.18 * y), ha="center", va="center",
                    fontsize=7, textcoords="data")
    angles = []
    for k, m in enumerate(starts):
        begin = np.arctan2(pair[m, 0], pair[m, 1])  # clockwise from the top
        turn = float(np.mod(np.arctan2(pair[m + shift, 0], pair[m + shift, 1]) - begin,
                            2 * np.pi))
        angles.append(turn)
        arc = begin + np.linspace(0, turn, 50)
        radius = 1.35 + 0.08 * k
        ax.plot(radius * np.sin(arc), radius * np.cos(arc), color="C3", lw=1.2,
                label=f"m → m + {shift}" if k == 0 else None)
        ax.annotate("", xy=(radius * np.sin(arc[-1]), radius * np.cos(arc[-1])),
                    xytext=(radius * np.sin(arc[-3]), radius * np.cos(arc[-3])),
                    arrowprops={"arrowstyle": "->", "color": "C3"})
        middle = arc[len(arc) // 2]  # the arc's name, outside its middle
        ax.annotate(f"{m}→{m + shift}", (0, 0), fontsize=7, color="C3", ha="center",
                    va="center", xytext=((radius + 0.17) * np.sin(middle),
                                         (radius + 0.17) * np.cos(middle)))
        for at, filled in ((m, "C3"), (m + shift, "none")):  # where it starts and ends
            ax.plot(*pair[at], "o", ms=7, mfc=filled, mec="C3",
                    label=("start m" if filled != "none" else f"end m + {shift}")
                    if k == 0 else None)
    ax.set_aspect("equal")
    ax.set(xlim=(-1.9, 1.9), ylim=(-1.9, 1.9), xlabel="sin mθ", ylabel="cos mθ", title=title)
    ax.legend(loc="lower left", fontsize=7)
    return angles


def _array(values) -> np.ndarray:
    """A tensor (detached, on the CPU) or anything NumPy converts, as an array."""
    return values.detach().cpu().numpy() if hasattr(values, "detach") else np.asarray(values)
