"""rope_interpolation.interpolation_bound(rule="corrected"): Theorem 2.1 with the constant its
proof supports (chapter 8, section 8.3), max_i |h_i| (Σ_i θ_i²) (s - s1)(s2 - s) / 2."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book.rope_interpolation import interpolation_bound, interpolation_gap
from pe_book.sinusoidal import frequencies


@settings(deadline=None, max_examples=30)
@given(
    dim=st.sampled_from([2, 8, 16, 64, 128]),
    base=st.floats(min_value=2.0, max_value=1e6),
    seed=st.integers(0, 2**16),
)
def test_the_corrected_bound_always_holds(dim, base, seed):
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(dim // 2, dtype=torch.complex128, generator=generator)
    s = 1000 * torch.rand(50, dtype=torch.float64, generator=generator)
    bound = interpolation_bound(h, s, base, rule="corrected")
    assert bool((interpolation_gap(h, s, base) <= bound + 1e-9).all())
    # never below the textbook bound, which weighs each θ_i² by its own |h_i|
    assert bool((bound >= interpolation_bound(h, s, base, rule="textbook") - 1e-12).all())


def test_the_corrected_constant_is_the_papers_plus_about_a_quarter():
    ones = torch.ones(8, dtype=torch.complex128)  # d = 16, max |h_i| = 1
    corrected = float(interpolation_bound(ones, 0.5, rule="corrected")[0]) * 4  # t(1-t) = 1/4
    paper = float(interpolation_bound(ones, 0.5)[0]) * 4
    assert paper == pytest.approx(16 / (8 * math.log(10000.0)))
    assert corrected == pytest.approx((1 - 1e-8) / (2 * (1 - 10000.0 ** (-1 / 4))))
    assert corrected / paper == pytest.approx(2.56, abs=0.01)  # at d = 16
    # x / (1 - e^-x) lies between 1 + x/2 and 1 + x/2 + x²/12, x = 4 ln b / d
    assert 0.25 - 1e-6 < corrected - paper <= 0.25 + math.log(10000.0) / (6 * 16)


def test_equal_pairs_exceed_the_papers_constant_but_not_the_corrected_one():
    ones = torch.ones(64, dtype=torch.complex128)
    gap = float(interpolation_gap(ones, 0.5)[0])
    assert float(interpolation_bound(ones, 0.5)[0]) < gap
    assert gap <= float(interpolation_bound(ones, 0.5, rule="corrected")[0])
    assert float((frequencies(128) ** 2).sum()) / 2 > 128 / (8 * math.log(10000.0))
