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


def test_explorer_figures_return_the_numbers_they_draw():
    import math

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pe_book.plotting import plot_alibi_slopes, plot_rope_scaling, plot_wavelengths

    _, ax = plt.subplots()
    lam = plot_wavelengths(ax, 128, 10000.0)
    assert math.isclose(lam["shortest"], 2 * math.pi)
    assert math.isclose(lam["longest"], 2 * math.pi * 10000 ** (1 - 2 / 128), rel_tol=1e-12)
    ratios = plot_rope_scaling(ax, 4.0)
    assert ratios["Position Interpolation"] == (0.25, 0.25, 0.25)
    assert ratios["NTK-aware"][0] == 1.0 and math.isclose(ratios["NTK-aware"][2], 0.25)
    from pe_book.plotting import plot_bias_weights

    head = plot_bias_weights(ax, 0.5, m=2000)
    assert head["reach"] == 20 and math.isclose(head["mean distance"], 1 / (math.e**0.5 - 1))
    slopes = plot_alibi_slopes(ax, 12)
    assert slopes["log2 slope"][8] == -0.5 and slopes["reach"][:2] == [20, 40]
    plt.close("all")
