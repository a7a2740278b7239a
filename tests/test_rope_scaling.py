"""pe_book.rope_scaling's rotary score as a function of a real position (chapter 8, section 8.3).

rotary_score is RoPE's score for integer offsets; fit_rotary_score is a least-squares
fit; interpolation_gap obeys the textbook bound of linear interpolation.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import decay, rope
from pe_book.rope_scaling import fit_rotary_score, interpolation_gap, rotary_score
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
