"""plotting.plot_pair_turning (chapter 4's picture of a pair turning): it measures what it draws."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch

from pe_book.plotting import plot_pair_turning, use_book_style
from pe_book.sinusoidal import frequencies, sinusoidal_table


@pytest.mark.parametrize(("pair", "shift"), [(0, 1), (1, 4), (3, 4)])
def test_every_arc_of_a_shift_turns_its_pair_by_c_theta(pair, shift):
    use_book_style()
    table = sinusoidal_table(20, 16, dtype=torch.float64)[:, 2 * pair : 2 * pair + 2]
    _, ax = plt.subplots()
    angles = plot_pair_turning(ax, table, shift=shift, starts=[0, 3, 7], title="Which way?")
    expected = math.fmod(shift * float(frequencies(16)[pair]), 2 * math.pi)
    assert angles == pytest.approx([expected] * 3, abs=1e-12)
    assert ax.get_xlabel() == "sin mθ" and ax.get_ylabel() == "cos mθ"
    assert ax.get_title() == "Which way?" and ax.get_legend() is not None
    plt.close("all")


def test_the_points_turn_clockwise_from_the_top():
    use_book_style()
    quarter = torch.tensor([[0.0, 1.0], [1.0, 0.0]])  # (sin, cos) at 0 and a quarter turn
    _, ax = plt.subplots()
    turned = plot_pair_turning(ax, quarter, shift=1, starts=[0], title="t")
    assert turned == pytest.approx([math.pi / 2], abs=1e-12)
    plt.close("all")
