"""pe_book.rope_interpolation's rotary score of a real position and rope_scaling's per-pair
factors (chapter 8).

Section 8.3: rotary_score is RoPE's score for integer offsets; fit_rotary_score is a
least-squares fit; interpolation_gap obeys the textbook bound of linear interpolation,
not always the constant of Chen et al.'s Theorem 2.1 (interpolation_bound).
Section 8.5: every fixed rule is one factor per pair (pair_factors, LongRoPEScaling);
partial rotary leaves the unrotated pairs free of position.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import decay, rope
from pe_book.rope_interpolation import (
    fit_rotary_score,
    interpolation_bound,
    interpolation_gap,
    rotary_score,
)
from pe_book.rope_scaling import (
    LinearScaling,
    Llama3Scaling,
    LongRoPEScaling,
    NTKScaling,
    YaRNScaling,
    pair_factors,
    partial_rotary_frequencies,
    rotary_dim,
    scaled_frequencies,
)
from pe_book.sinusoidal import frequencies

dims = st.sampled_from([2, 4, 8, 16, 64, 128])
bases = st.floats(min_value=10.0, max_value=1e6)
seeds = st.integers(min_value=0, max_value=2**31 - 1)


def pairs(x: torch.Tensor) -> torch.Tensor:
    """(x_2i, x_2i+1) -> x_2i + 𝗂 x_2i+1: the interleaved pairs as complex numbers."""
    return torch.complex(x[..., 0::2], x[..., 1::2])


@given(dim=dims, base=bases, seed=seeds, m=st.integers(0, 5000), n=st.integers(0, 5000))
def test_rotary_score_is_ropes_dot_product_at_integer_offsets(dim, base, seed, m, n):
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, dim, dtype=torch.float64, generator=generator)
    h = pairs(q) * pairs(k).conj()
    q_m = rope.apply_rope(q[None], torch.tensor([m]), base=base)[0]
    k_n = rope.apply_rope(k[None], torch.tensor([n]), base=base)[0]
    score = rotary_score(h, [m - n], base)
    torch.testing.assert_close(score, (q_m @ k_n)[None], rtol=0, atol=1e-9)
    torch.testing.assert_close(score, decay.rotated_scores(q, k, [m - n], base), rtol=0, atol=1e-12)


def test_rotary_score_accepts_real_positions_and_its_formula():
    h = torch.tensor([1.0 + 2.0j, -0.5j], dtype=torch.complex128)
    theta = frequencies(4, 100.0)
    s = 2.5
    expected = sum(
        (h[i] * complex(math.cos(s * theta[i]), math.sin(s * theta[i]))).real for i in range(2)
    )
    assert float(rotary_score(h, s, 100.0)[0]) == pytest.approx(float(expected), abs=1e-14)
    assert rotary_score(h, torch.tensor([0, 1, 2]), 100.0).dtype == torch.float64


@given(dim=dims, base=bases, seed=seeds, count=st.integers(1, 4))
def test_a_fit_with_few_targets_reproduces_them(dim, base, seed, count):
    # at most 4 targets and d >= 2·targets: the design matrix is well conditioned
    # (RoPE's slow pairs barely turn over a few positions; more targets than this and
    # it is numerically rank-deficient, the point of section 8.3)
    count = min(count, dim // 2)
    generator = torch.Generator().manual_seed(seed)
    targets = 2 * torch.rand(count, dtype=torch.float64, generator=generator) - 1
    h = fit_rotary_score(targets, dim, base)
    assert h.shape == (dim // 2,) and h.is_complex()
    torch.testing.assert_close(
        rotary_score(h, torch.arange(count), base), targets, rtol=0, atol=1e-8
    )


@given(dim=dims, base=bases, seed=seeds, count=st.integers(1, 300))
def test_no_nearby_coefficients_fit_better(dim, base, seed, count):
    # least squares: the residual is (up to rounding) the smallest there is
    generator = torch.Generator().manual_seed(seed)
    targets = 2 * torch.rand(count, dtype=torch.float64, generator=generator) - 1
    h = fit_rotary_score(targets, dim, base, rcond=1e-10)
    positions = torch.arange(count)

    def residual(coefficients):
        return float((rotary_score(coefficients, positions, base) - targets).norm())

    best = residual(h)
    assert best <= float(targets.norm()) + 1e-9  # no worse than h = 0
    for _ in range(5):
        step = torch.randn(dim // 2, dtype=torch.complex128, generator=generator) * 1e-3
        assert residual(h + step) >= best - 1e-9


def test_the_plain_fit_blows_up_beyond_the_fitted_range():
    # Chen et al.'s observation (2023, Figure 2), at d = 128, b = 10000, 256 targets
    generator = torch.Generator().manual_seed(0)
    targets = 2 * torch.rand(256, dtype=torch.float64, generator=generator) - 1
    h = fit_rotary_score(targets, 128)
    inside = torch.arange(255 * 16 + 1, dtype=torch.float64) / 16
    outside = 256 + torch.arange(256 * 16 + 1, dtype=torch.float64) / 16
    largest_inside = float(rotary_score(h, inside).abs().max())
    assert largest_inside < 2
    assert float(rotary_score(h, outside).abs().max()) > 1000 * largest_inside
    assert float(interpolation_gap(h, inside).max()) < 0.5


@given(dim=dims, base=bases, seed=seeds)
def test_interpolation_gap_obeys_the_linear_interpolation_bound(dim, base, seed):
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(dim // 2, dtype=torch.complex128, generator=generator)
    s = 1000 * torch.rand(50, dtype=torch.float64, generator=generator)
    t = s - s.floor()
    bound = (h.abs() * frequencies(dim, base) ** 2).sum() * t * (1 - t) / 2
    gap = interpolation_gap(h, s, base)
    assert bool((gap <= bound + 1e-9).all())
    assert float(interpolation_gap(h, torch.arange(20), base).max()) <= 1e-12


h2 = torch.ones(2, dtype=torch.complex128)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rotary_score(torch.ones(2), [0.0]), TypeError, "coefficients must be a complex"),
        (lambda: rotary_score([1j], [0.0]), TypeError, "coefficients must be a torch.Tensor"),
        (lambda: rotary_score(h2[:0], [0.0]), ValueError, "coefficients must hold"),
        (lambda: rotary_score(h2, [float("nan")]), ValueError, "positions must be finite"),
        (lambda: rotary_score(h2, torch.tensor([True])), TypeError, "positions must be real"),
        (lambda: rotary_score(h2, "ab"), TypeError, "positions must be real"),
        (lambda: rotary_score(h2, [0.0], base=1.0), ValueError, "base must be"),
        (lambda: fit_rotary_score(torch.ones(3), 5), ValueError, "dim must be even"),
        (lambda: fit_rotary_score(torch.ones(3), 4.0), TypeError, "dim must be an int"),
        (lambda: fit_rotary_score(torch.arange(3), 4), TypeError, "targets must be a floating"),
        (lambda: fit_rotary_score(torch.ones(0), 4), ValueError, "targets must hold"),
        (lambda: fit_rotary_score(torch.ones(3), 4, rcond=-1.0), ValueError, "rcond must be"),
        (lambda: interpolation_gap(h2, [[0.5]]), ValueError, "positions must have rank 1"),
    ],
)
def test_bad_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- Theorem 2.1's bound (section 8.3) ---------------------------------------------------


@given(dim=dims, base=bases, seed=seeds)
def test_the_textbook_bound_always_holds_and_is_zero_at_integers(dim, base, seed):
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(dim // 2, dtype=torch.complex128, generator=generator)
    s = 1000 * torch.rand(50, dtype=torch.float64, generator=generator)
    bound = interpolation_bound(h, s, base, rule="textbook")
    assert bool((interpolation_gap(h, s, base) <= bound + 1e-9).all())
    assert float(interpolation_bound(h, torch.arange(5), base, rule="textbook").abs().max()) == 0


def test_the_paper_rule_is_theorem_2_1_and_equal_pairs_exceed_it():
    h = torch.tensor([1.0, -2.0j, 0.5], dtype=torch.complex128)
    expected = 6 * 2.0 * 0.25 * 0.75 / (8 * math.log(100.0))
    assert float(interpolation_bound(h, 3.25, 100.0)[0]) == pytest.approx(expected, rel=1e-14)
    # h_i = 1 (q = k, equal pairs), d = 128, b = 10000, s = 1/2: the paper's constant
    # d / (4 ln b) is below Σ θ_i² = (1 - b^-2) / (1 - b^(-4/d)), and the gap exceeds it
    ones = torch.ones(64, dtype=torch.complex128)
    gap = float(interpolation_gap(ones, 0.5)[0])
    assert float(interpolation_bound(ones, 0.5)[0]) < gap
    assert gap <= float(interpolation_bound(ones, 0.5, rule="textbook")[0])
    sum_squares = float((frequencies(128, 10000.0) ** 2).sum())
    assert sum_squares == pytest.approx((1 - 10000.0**-2) / (1 - 10000.0 ** (-4 / 128)))
    assert sum_squares > 128 / (4 * math.log(10000.0))


# --- per-pair factors, LongRoPE and partial rotary (section 8.5) -------------------------

factors = st.floats(min_value=1.0, max_value=64.0)
fixed_rules = st.sampled_from(["pi", "ntk", "yarn", "llama3"])


def fixed_rule(name, factor, original=2048):
    return {
        "pi": LinearScaling(factor),
        "ntk": NTKScaling(factor),
        "yarn": YaRNScaling(factor, original),
        "llama3": Llama3Scaling(factor, 1.0, 4.0, original),
    }[name]


@given(rule=fixed_rules, factor=factors, dim=st.sampled_from([8, 64, 128]), base=bases)
def test_every_fixed_rule_is_a_longrope_factor_list(rule, factor, dim, base):
    scaling = fixed_rule(rule, factor)
    kappa = pair_factors(dim, base, scaling)
    assert bool((kappa >= 1 - 1e-12).all()) and bool((kappa <= factor * (1 + 1e-12)).all())
    longrope = LongRoPEScaling(kappa.tolist(), kappa.tolist(), 2048, factor)
    torch.testing.assert_close(
        scaled_frequencies(dim, base, longrope, seq_len=10_000)[0],
        scaled_frequencies(dim, base, scaling)[0],
        rtol=1e-12,
        atol=0,
    )


def test_longrope_switches_lists_after_the_original_length():
    short, long = [1.0, 2.0, 4.0], [1.0, 8.0, 32.0]
    scaling = LongRoPEScaling(short, long, 4096, 32.0)
    theta = frequencies(6, 10000.0)
    for seq_len, expected in [(None, short), (1, short), (4096, short), (4097, long)]:
        got, attention = scaled_frequencies(6, scaling=scaling, seq_len=seq_len)
        torch.testing.assert_close(got, theta / torch.tensor(expected, dtype=torch.float64))
        assert attention == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    assert scaling.short_factor == (1.0, 2.0, 4.0)  # stored as a tuple of floats
    assert LongRoPEScaling(short, long, 4096, 1.0).attention_factor == 1.0
    assert LongRoPEScaling(short, long, 4096, 32.0, attention_factor=1.5).attention_factor == 1.5


def test_partial_rotary_leaves_the_other_pairs_free_of_position():
    theta, attention = partial_rotary_frequencies(96, 0.25, 10000.0)
    assert rotary_dim(96, 0.25) == 24 and attention == 1.0
    torch.testing.assert_close(theta[:12], frequencies(24, 10000.0), rtol=0, atol=0)
    assert bool((theta[12:] == 0).all()) and theta.shape == (48,)
    scaled, _ = partial_rotary_frequencies(96, 0.25, 10000.0, LinearScaling(4.0))
    torch.testing.assert_close(scaled[:12], frequencies(24, 10000.0) / 4)


@given(seed=seeds, m=st.integers(0, 5000), n=st.integers(0, 5000), dim=st.sampled_from([8, 64]))
def test_a_partial_rotary_score_is_a_rotary_part_plus_a_content_part(seed, m, n, dim):
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, dim, dtype=torch.float64, generator=generator)
    rotated = rotary_dim(dim, 0.5)
    rot_q = rope.apply_rope(q[None, :rotated], torch.tensor([m]))[0]
    rot_k = rope.apply_rope(k[None, :rotated], torch.tensor([n]))[0]
    direct = rot_q @ rot_k + q[rotated:] @ k[rotated:]  # GPT-NeoX: rotate a slice, pass the rest
    theta, _ = partial_rotary_frequencies(dim, 0.5)
    h = pairs(q) * pairs(k).conj()  # interleaved pairs: i < d_rot/2 are the first d_rot
    phases = (m - n) * theta
    score = (h * torch.polar(torch.ones_like(phases), phases)).sum().real
    torch.testing.assert_close(score, direct, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: LongRoPEScaling([1.0, 0.0], [1.0, 2.0], 64, 4.0), ValueError, "short_factor"),
        (lambda: LongRoPEScaling([1.0], [float("inf")], 64, 4.0), ValueError, "long_factor"),
        (lambda: LongRoPEScaling([], [], 64, 4.0), ValueError, "short_factor must hold"),
        (lambda: LongRoPEScaling([1.0], [1.0, 2.0], 64, 4.0), ValueError, "both hold"),
        (lambda: LongRoPEScaling(["a"], [1.0], 64, 4.0), TypeError, "short_factor must be real"),
        (lambda: LongRoPEScaling([True], [1.0], 64, 4.0), TypeError, "short_factor must be real"),
        (lambda: LongRoPEScaling([1.0], [1.0], 1, 4.0), ValueError, "original_max_len"),
        (lambda: LongRoPEScaling([1.0], [1.0], 64, 0.0), ValueError, "factor must be"),
        (
            lambda: LongRoPEScaling([1.0], [1.0], 64, 4.0, attention_factor=-1.0),
            ValueError,
            "attention_factor must be",
        ),
        (
            lambda: scaled_frequencies(8, scaling=LongRoPEScaling([1.0], [1.0], 64, 4.0)),
            ValueError,
            "short_factor and long_factor must hold d/2 = 4 factors",
        ),
        (lambda: rotary_dim(64, 0.0), ValueError, "fraction must be a finite number > 0"),
        (lambda: rotary_dim(64, 1.5), ValueError, "fraction must be <= 1"),
        (lambda: rotary_dim(64, 0.01), ValueError, "rotate an even number >= 2, got"),
        (lambda: rotary_dim(64, 0.3), ValueError, "rotate an even number >= 2, got"),
        (lambda: rotary_dim(64, "half"), TypeError, "fraction must be a real number"),
        (lambda: partial_rotary_frequencies(63, 0.5), ValueError, "dim must be even"),
        (lambda: interpolation_bound(h2, [0.5], rule="exact"), ValueError, "rule must be one"),
        (lambda: interpolation_bound(torch.ones(2), [0.5]), TypeError, "coefficients must be"),
    ],
)
def test_bad_scaling_input_is_refused_by_name(call, error, message):
    with pytest.raises(error, match=message):
        call()
