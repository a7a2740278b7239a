"""pe_book.intervals: Student's t, the crossed-design interval's coverage, the verdict rules."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import intervals
from pe_book.intervals import Comparison, ContextEffect, Interval, compare, context_effect


@pytest.mark.parametrize(
    ("df", "quantile"),  # tables of Student's t, two-sided 95%
    [(1, 12.7062), (4, 2.7764), (10, 2.2281), (30, 2.0423), (1e7, 1.9600)],
)
def test_t_quantile_matches_the_tables(df, quantile):
    assert intervals.t_quantile(0.975, df) == pytest.approx(quantile, abs=1e-4)
    assert intervals.t_quantile(0.025, df) == pytest.approx(-quantile, abs=1e-4)


def coverage(sigma_seed, sigma_segment, seeds=5, segments=64, trials=600, seed=0):
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        y = (
            sigma_seed * rng.standard_normal((seeds, 1))
            + sigma_segment * rng.standard_normal((1, segments))
            + 0.2 * rng.standard_normal((seeds, segments))
        )
        found = intervals.crossed_interval(y)
        hits += found.low <= 0.0 <= found.high
    return hits / trials


@pytest.mark.parametrize(("sigma_seed", "sigma_segment"), [(0.3, 0.5), (0.5, 0.0), (0.0, 0.5)])
def test_the_crossed_interval_covers_the_mean_95_percent_of_the_time(sigma_seed, sigma_segment):
    # 600 simulated studies: a binomial 95% band around 0.95 is about 0.93-0.97
    assert 0.92 <= coverage(sigma_seed, sigma_segment) <= 0.98


def test_ignoring_the_seeds_would_undercover():
    """The reason for the crossed design: a t-interval over segments alone, with the seed
    effect present, covers far less than 95%."""
    rng = np.random.default_rng(1)
    hits = 0
    for _ in range(300):
        y = 0.3 * rng.standard_normal((5, 1)) + 0.2 * rng.standard_normal((5, 64))
        flat = y.mean(0)  # segments only, seeds averaged away
        half = intervals.t_quantile(0.975, 63) * flat.std(ddof=1) / math.sqrt(64)
        hits += abs(flat.mean()) <= half
    assert hits / 300 < 0.5


def test_one_seed_covers_text_only_and_says_so():
    found = intervals.crossed_interval([[1.0, 2.0, 3.0, 4.0]])
    assert found.sources == "text" and found.df == 3
    assert found.mean == 2.5 and found.low < 2.5 < found.high


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.lists(st.floats(-5, 5), min_size=3, max_size=3), min_size=2, max_size=4),
    st.floats(-3, 3),
)
def test_a_shift_moves_the_interval_and_keeps_its_width(values, shift):
    base = intervals.crossed_interval(values)
    moved = intervals.crossed_interval(np.asarray(values) + shift)
    assert moved.mean == pytest.approx(base.mean + shift, abs=1e-9)
    assert moved.half_width == pytest.approx(base.half_width, rel=1e-6, abs=1e-9)


def test_bad_values_are_refused_by_name():
    with pytest.raises(ValueError, match="values must be a 2-D"):
        intervals.crossed_interval([1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        intervals.crossed_interval([[1.0, float("nan")]])
    with pytest.raises(ValueError, match="at least two"):
        intervals.crossed_interval([[1.0]])
    with pytest.raises(ValueError, match="df must be"):
        intervals.t_quantile(0.975, 0)


def around(low, high):
    return Interval((low + high) / 2, low, high, 10.0, 0.95, "seeds and text")


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (-0.05, -0.02, Comparison.BETTER),
        (0.02, 0.05, Comparison.WORSE),
        (-0.008, 0.009, Comparison.EQUAL),
        (-0.005, 0.015, Comparison.UNDECIDED),
        (-0.03, -0.005, Comparison.UNDECIDED),  # below zero, not below the margin
    ],
)
def test_compare_uses_the_margin_on_both_sides(low, high, verdict):
    assert compare(around(low, high), 0.01) is verdict


@pytest.mark.parametrize(
    ("low", "high", "effect"),
    [
        (-0.05, -0.02, ContextEffect.USES),
        (-0.05, 0.01, ContextEffect.KEEPS),  # no worse than the margin
        (0.005, 0.009, ContextEffect.KEEPS),
        (0.015, 0.03, ContextEffect.HURTS),  # ALiBi-like: reliably 1.5% worse or more
        (0.005, 0.03, ContextEffect.UNDECIDED),
    ],
)
def test_context_effect_is_non_inferiority_with_the_margin(low, high, effect):
    assert context_effect(around(low, high), 0.01) is effect


def test_the_margin_is_declared_once():
    assert intervals.EQUIVALENCE_NATS == 0.01 and intervals.LEVEL == 0.95


def test_a_variance_too_small_to_square_still_gives_an_interval():
    # hypothesis found it: the variance's square underflowed to 0 in Satterthwaite's ν
    tiny = intervals.crossed_interval([[0.0, 0.0, 0.0], [0.0, 0.0, 9.454341632239602e-158]])
    assert tiny.low <= tiny.mean <= tiny.high and tiny.df > 0
