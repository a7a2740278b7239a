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
