"""pe_book.decay: closed form vs quadrature, monotone where it should be, RoFormer's bound holds."""

import math

import mpmath
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import decay
from pe_book.sinusoidal import sinusoidal_table

dims = st.integers(1, 64).map(lambda half: 2 * half)
bases = st.floats(2.0, 1e6)


@pytest.mark.parametrize("base", [100.0, 1e4, 5e5])
@pytest.mark.parametrize("r", [0.0, 0.3, 1.0, 7.5, 100.0, 2500.0, 40000.0])
def test_closed_form_matches_quadrature(r, base):
    """Tolerance 1e-12 absolute: both are double-precision evaluations of one integral."""
    closed = float(decay.integral_profile([r], base)[0])
    quadrature = float(decay.integral_by_quadrature([r], base)[0])
    assert abs(closed - quadrature) < 1e-12


def test_closed_form_keeps_double_precision_for_python_floats():
    r = 287.5622090844461  # not a float32 number
    expected = (mpmath.ci(r) - mpmath.ci(r / 1e4)) / math.log(1e4)
    assert abs(float(decay.integral_profile([r])[0]) - float(expected)) < 1e-15


@given(st.lists(st.integers(-(10**6), 10**6), min_size=1, max_size=30), dims, bases)
def test_dot_profile_is_the_normalised_gram_entry(offsets, dim, base):
    rows = sinusoidal_table(
        torch.tensor([5 * 10**6 + o for o in offsets] + [5 * 10**6]), dim, base, dtype=torch.float64
    )
    expected = rows[:-1] @ rows[-1] / (dim / 2)
    torch.testing.assert_close(decay.dot_profile(offsets, dim, base), expected, rtol=0, atol=1e-9)


@given(dims, bases)
def test_profiles_decrease_strictly_up_to_pi(dim, base):
    r = torch.linspace(0, math.pi, 200, dtype=torch.float64)
    assert bool((decay.dot_profile(r, dim, base).diff() < 0).all())
    assert bool((decay.integral_profile(r[::10], base).diff() < 0).all())


@given(st.integers(0, 2**16), st.integers(1, 32).map(lambda h: 2 * h), bases)
def test_roformer_bound_holds_on_random_queries_and_keys(seed, dim, base):
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, dim, generator=generator, dtype=torch.float64)
    offsets = torch.arange(0, 3000, 7)
    score = decay.rotated_scores(q, k, offsets, base).abs()
    assert bool((score <= decay.abel_bound(q, k, offsets, base) * (1 + 1e-12) + 1e-12).all())


def test_relative_bound_starts_at_the_mean_of_1_to_d_over_2():
    assert float(decay.rope_decay_bound([0], 128)[0]) == pytest.approx(32.5)


def test_rotated_scores_are_the_dot_product_of_rotated_vectors():
    q, k = torch.randn(2, 8, dtype=torch.float64)
    theta = 10000.0 ** (-torch.arange(0, 8, 2, dtype=torch.float64) / 8)
    for r in (0, 3, 40):
        c, s = torch.cos(r * theta), torch.sin(r * theta)
        x, y = q[0::2], q[1::2]
        rotated = torch.stack((c * x - s * y, s * x + c * y), dim=-1).flatten()
        assert float(decay.rotated_scores(q, k, [r])[0]) == pytest.approx(float(rotated @ k))


def test_first_offset_and_rebound_helpers():
    values = torch.tensor([1.0, 0.5, 0.2, 0.45, 0.1, 0.3], dtype=torch.float64)
    assert decay.first_offset_at_or_below(torch.arange(6), values, 0.2) == 2
    assert decay.first_offset_at_or_below(torch.arange(6), values, -1) is None
    assert decay.largest_rebound(values) == (pytest.approx(0.25), 3)
    assert decay.largest_rebound(torch.tensor([3.0, 2.0, 1.0])) == (0.0, 0)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: decay.dot_profile([[1, 2]], 8), ValueError, "offsets must have rank 1"),
        (lambda: decay.dot_profile([1], 7), ValueError, "dim must be even"),
        (lambda: decay.dot_profile([float("nan")], 8), ValueError, "offsets must be finite"),
        (
            lambda: decay.integral_profile([1.0], base=1.0),
            ValueError,
            "base must be a finite number > 1",
        ),
        (
            lambda: decay.rotated_scores(torch.zeros(3), torch.zeros(3), [0]),
            ValueError,
            "even last",
        ),
        (lambda: decay.first_offset_at_or_below([0, 1], torch.zeros(3), 0.0), ValueError, "match"),
        (lambda: decay.dot_profile(torch.tensor([True]), 8), TypeError, "real numbers"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("factor", [1.0, 4.0])
def test_profile_from_frequencies_is_the_rotated_score_of_a_pair_aligned_query(factor):
    # q = (1, 0, 1, 0, ...) puts one unit per pair on its first axis, so
    # q · R_r q / |q|² = mean_i cos(r θ_i) for the frequencies RoPE actually uses.
    from pe_book import rope, rope_scaling

    dim, offsets = 16, torch.tensor([0, 1, 5, 300, 7000])
    scaling = None if factor == 1.0 else rope_scaling.NTKScaling(factor)
    theta = rope_scaling.scaled_frequencies(dim, scaling=scaling)[0].to(torch.float64)
    q = torch.zeros(len(offsets), dim, dtype=torch.float64)
    q[:, 0::2] = 1.0
    rotated = rope.apply_rope(q, offsets, scaling=scaling)
    scores = (rotated * q).sum(-1) / (q * q).sum(-1)
    assert torch.allclose(decay.profile_from_frequencies(offsets, theta), scores, atol=1e-6)


def test_profile_from_frequencies_rejects_a_matrix_of_frequencies():
    with pytest.raises((ValueError, TypeError), match="theta"):
        decay.profile_from_frequencies([1, 2], torch.ones(2, 2))


def test_log_window_mean_averages_the_window_r_over_ratio_to_r_times_ratio():
    values = torch.arange(100, dtype=torch.float64)  # values[r] = r
    shown = torch.tensor([1, 10, 40])
    got = decay.log_window_mean(values, shown, ratio=2.0)
    # windows 0..2, 5..20, 20..80: means of consecutive integers
    torch.testing.assert_close(got, torch.tensor([1.0, 12.5, 50.0], dtype=torch.float64))
    constant = decay.log_window_mean(torch.full((50,), 0.3), torch.arange(1, 30), ratio=1.5)
    torch.testing.assert_close(constant, torch.full((29,), 0.3, dtype=torch.float64))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: decay.log_window_mean(torch.zeros(10), torch.tensor([8])), ValueError, "needs 11"),
        (lambda: decay.log_window_mean(torch.zeros(10), torch.tensor([1.5])), TypeError, "integer"),
        (lambda: decay.log_window_mean(torch.zeros(10), torch.tensor([-1])), ValueError, ">= 0"),
        (
            lambda: decay.log_window_mean(torch.zeros(10), torch.tensor([1]), 1.0),
            ValueError,
            "ratio",
        ),
    ],
)
def test_log_window_mean_refuses_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()
