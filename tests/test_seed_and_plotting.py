"""pe_book.seed makes cells repeatable; pe_book.plotting keeps figures small and labelled."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from pe_book.plotting import DPI, heatmap, use_book_style
from pe_book.seed import seed_everything


def test_seed_everything_repeats_every_generator():
    seed_everything(3)
    first = (torch.randn(4), np.random.rand(4))  # noqa: NPY002 - the legacy generator is what it seeds
    generator = seed_everything(3)
    second = (torch.randn(4), np.random.rand(4))  # noqa: NPY002
    torch.testing.assert_close(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])
    assert torch.get_num_threads() == 1
    assert torch.are_deterministic_algorithms_enabled()
    assert generator.initial_seed() == 3
    torch.use_deterministic_algorithms(False)


def test_seed_everything_rejects_bad_arguments():
    with pytest.raises(ValueError, match="seed must be an int >= 0"):
        seed_everything(-1)
    with pytest.raises(ValueError, match="threads must be an int >= 1"):
        seed_everything(0, threads=0)


def test_book_style_keeps_figures_small():
    use_book_style()
    assert matplotlib.rcParams["figure.dpi"] == DPI <= 100
    assert matplotlib.rcParams["savefig.dpi"] == DPI


def test_heatmap_labels_everything():
    use_book_style()
    fig, ax = plt.subplots()
    heatmap(
        ax, torch.eye(3), xlabel="key n", ylabel="query m", title="Which?", colorbar_label="weight"
    )
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == ("key n", "query m", "Which?")
    assert fig.axes[1].get_ylabel() == "weight"  # the colour bar
    plt.close(fig)


def test_figures_return_the_numbers_they_draw_and_label_everything():
    from pe_book import alibi, decay, rope_scaling, sinusoidal
    from pe_book.plotting import (
        plot_alibi_slopes,
        plot_bias_weights,
        plot_decay,
        plot_rope_scaling,
        plot_wavelengths,
    )

    use_book_style()
    _, ax = plt.subplots()
    lam = sinusoidal.wavelengths(128, 10000.0)
    assert plot_wavelengths(ax, lam, base=10000.0) == {
        "shortest": float(lam[0]),
        "longest": float(lam[-1]),
    }
    theta, _ = rope_scaling.scaled_frequencies(128)
    pi = rope_scaling.scaled_frequencies(128, scaling=rope_scaling.LinearScaling(4.0))[0]
    ratios = plot_rope_scaling(
        ax, 2 * torch.pi / theta, {"PI": pi / theta}, factor=4.0, original_max_len=2048
    )
    assert ratios == {"PI": (0.25, 0.25, 0.25)}
    slopes = alibi.alibi_slopes(12)
    found = plot_alibi_slopes(ax, slopes, alibi.alibi_reach(slopes))
    assert found["log2 slope"][8] == -0.5 and found["reach"][:2] == [20, 40]
    offsets = torch.arange(101)
    plot_decay(
        ax,
        offsets,
        decay.dot_profile(offsets, 64),
        offsets[::10],
        decay.integral_profile(offsets[::10], 10000.0),
        dim=64,
        base=10000.0,
    )
    one = torch.tensor([0.5], dtype=torch.float64)
    plot_bias_weights(
        ax, alibi.bias_only_weights(one, 100)[0], slope=0.5, mean=1.54, reach=20
    )
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    assert ax.get_legend() is not None
    plt.close("all")


def test_plotting_imports_no_method_module():
    """plotting draws arrays the chapters compute; it depends on matplotlib and NumPy only."""
    import ast
    from pathlib import Path

    import pe_book.plotting

    tree = ast.parse(Path(pe_book.plotting.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "matplotlib", "numpy"}, imported
