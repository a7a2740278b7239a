"""pe_book.taylor: autograd terms match hand derivatives; circle solution dot products."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import taylor


def test_six_terms_of_a_polynomial_are_exact():
    """f = x_m·x_n + (x_m·x_m)(x_n·x_n): every term computed by hand."""

    def f(a, b):
        return a @ b + (a @ a) * (b @ b)

    x_m, x_n = (
        torch.tensor([1.0, 2.0], dtype=torch.float64),
        torch.tensor([0.5, -1.0], dtype=torch.float64),
    )
    p_m, p_n = (
        torch.tensor([0.1, 0.0], dtype=torch.float64),
        torch.tensor([0.0, 0.2], dtype=torch.float64),
    )
    terms = taylor.taylor_terms(f, x_m, x_n, p_m, p_n)
    aa, bb = float(x_m @ x_m), float(x_n @ x_n)
    grad_m = x_n + 2 * bb * x_m  # ∂f/∂x_m
    grad_n = x_m + 2 * aa * x_n
    h_mm = 2 * bb * torch.eye(2, dtype=torch.float64)
    h_nn = 2 * aa * torch.eye(2, dtype=torch.float64)
    h_mn = torch.eye(2, dtype=torch.float64) + 4 * torch.outer(x_m, x_n)
    expected = torch.stack(
        (
            f(x_m, x_n),
            p_m @ grad_m,
            p_n @ grad_n,
            p_m @ h_mm @ p_m / 2,
            p_n @ h_nn @ p_n / 2,
            p_m @ h_mn @ p_n,
        )
    )
    torch.testing.assert_close(terms, expected)


@pytest.mark.parametrize("d", [1, 2, 4])
@pytest.mark.parametrize("seed", range(5))
def test_second_order_error_is_of_third_order(d, seed):
    """Shrinking ε tenfold must shrink the error at least a hundredfold (order > 2).

    Fixed seeds, not hypothesis: a rare cancellation between the ε³ and ε⁴ terms could
    make any fixed-threshold convergence check flaky.
    """
    generator = torch.Generator().manual_seed(seed)
    weights = [torch.randn(d, d, generator=generator, dtype=torch.float64) / 2 for _ in range(3)]
    w_o = torch.randn(d, generator=generator, dtype=torch.float64)
    point = [torch.randn(d, generator=generator, dtype=torch.float64) for _ in range(4)]

    def f(a, b):
        return taylor.attention_readout(a, b, *weights, w_o)

    def error(eps):
        approx = taylor.taylor_terms(f, point[0], point[1], eps * point[2], eps * point[3]).sum()
        return float((f(point[0] + eps * point[2], point[1] + eps * point[3]) - approx).abs())

    assert error(1e-2) <= error(1e-1) * 1e-2 + 1e-12


def test_attention_readout_is_the_first_output_row_projected():
    x_m, x_n = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    eye = torch.eye(2)
    value = taylor.attention_readout(x_m, x_n, eye, eye, eye, torch.tensor([1.0, 0.0]))
    weight_on_self = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    assert math.isclose(float(value), weight_on_self, rel_tol=1e-6)


@given(st.integers(0, 100), st.floats(-3, 3))
def test_circle_solution_dot_products_depend_on_the_offset(seq_len, theta):
    p = taylor.circle_solution(seq_len, theta)
    assert p.shape == (seq_len, 2)
    offsets = torch.arange(seq_len)[:, None] - torch.arange(seq_len)[None, :]
    torch.testing.assert_close(p @ p.T, torch.cos(offsets.double() * theta), rtol=0, atol=1e-12)


def test_taylor_terms_refuses_mismatched_shapes():
    def f(a, b):
        return a @ b

    with pytest.raises(ValueError, match="same shape"):
        taylor.taylor_terms(f, torch.zeros(2), torch.zeros(2), torch.zeros(3), torch.zeros(2))
    with pytest.raises(ValueError, match="x_m must have rank 1"):
        taylor.taylor_terms(f, torch.zeros(2, 2), torch.zeros(2), torch.zeros(2), torch.zeros(2))
