"""One figure style for the whole book: small PNGs (dpi <= 100), labelled, readable.

Call :func:`use_book_style` once at the top of a chapter. Every figure in the
book has a title that states its question, labelled axes with units, and a
legend or colour bar; :func:`heatmap` does this for the matrices most chapters show.
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

__all__ = ["DPI", "heatmap", "use_book_style"]

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
