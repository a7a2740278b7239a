"""pe_book.kerple: CPD kernels, ALiBi as a special case, the official code's bias and clamping."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book.alibi import alibi_bias, alibi_slopes
from pe_book.kerple import KerpleBias, kerple_bias

kinds = st.sampled_from(["log", "power"])


def parameters(n_heads, kind, seed):
    """Random valid (r1, r2) in float64: r1 in (0, 4), r2 in (0, 2] for power, (0, 4) for log."""
    g = torch.Generator().manual_seed(seed)
    r1 = 4 * torch.rand(n_heads, generator=g, dtype=torch.float64) + 1e-3
    top = 2.0 if kind == "power" else 4.0
    r2 = top * (1 - torch.rand(n_heads, generator=g, dtype=torch.float64))  # in (0, top]
    return r1, r2


def official_bias(seq_len, r1, r2, kind):
    """The official forward (chijames/KERPLE, megatron/mpu/layers.py) without its
    parallelism: diff = tril(m - n), then -p·log(1 + a·diff) or -a·diff^p."""
    diff = torch.tril(
        torch.arange(seq_len).view(seq_len, 1).repeat(1, seq_len) + torch.arange(0, -seq_len, -1)
    ).to(torch.float64)
    if kind == "log":
        bias_p, bias_a = r1[:, None, None], r2[:, None, None]
        return -bias_p * torch.log(1 + bias_a * diff)
    bias_a, bias_p = r1[:, None, None], r2[:, None, None]
    return -(diff.pow(bias_p)) * bias_a


def loop_bias(q_len, k_len, r1, r2, kind, start):
    out = torch.empty(len(r1), q_len, k_len, dtype=torch.float64)
    for h in range(len(r1)):
        a, b = float(r1[h]), float(r2[h])
        for i in range(q_len):
            for j in range(k_len):
                d = abs(start + i - j)
                out[h, i, j] = -a * math.log(1 + b * d) if kind == "log" else -a * d**b
    return out


@given(st.integers(1, 7), st.integers(0, 6), st.integers(1, 4), kinds, st.integers(0, 2**16))
def test_bias_equals_the_formula_by_a_loop(q_len, extra, n_heads, kind, seed):
    k_len = q_len + extra
    start = seed % (extra + 1)
    r1, r2 = parameters(n_heads, kind, seed)
    got = kerple_bias(q_len, k_len, r1, r2, kind, start=start)
    torch.testing.assert_close(
        got, loop_bias(q_len, k_len, r1, r2, kind, start), rtol=1e-14, atol=0
    )


@given(st.integers(1, 12), kinds, st.integers(0, 2**16))
def test_bias_equals_the_official_code_on_the_causal_part(seq_len, kind, seed):
    r1, r2 = parameters(3, kind, seed)
    ours = kerple_bias(seq_len, seq_len, r1, r2, kind)
    official = official_bias(seq_len, r1, r2, kind)
    causal = torch.ones(seq_len, seq_len, dtype=torch.bool).tril()
    torch.testing.assert_close(ours[:, causal], official[:, causal], rtol=1e-14, atol=0)
    # above the diagonal the official code holds 0, ours the mirrored |m - n|: masked anyway
    assert bool((official[:, ~causal] == 0).all())
    # official decoding (one query, the cache's last row) is our q_len = 1
    last = kerple_bias(1, seq_len, r1, r2, kind)
    torch.testing.assert_close(last[:, 0], official[:, seq_len - 1], rtol=1e-14, atol=0)


@pytest.mark.parametrize("n_heads", [1, 3, 8, 12])
@pytest.mark.parametrize(("q_len", "k_len", "start"), [(9, 9, None), (3, 11, None), (4, 10, 2)])
def test_power_kernel_with_exponent_one_is_alibi(n_heads, q_len, k_len, start):
    slopes = alibi_slopes(n_heads)
    power = kerple_bias(
        q_len, k_len, slopes, torch.ones(n_heads, dtype=torch.float64), "power", start
    )
    causal_alibi = alibi_bias(q_len, k_len, slopes, start=start)
    s = k_len - q_len if start is None else start
    seen = torch.arange(k_len)[None, :] <= torch.arange(q_len)[:, None] + s  # n <= m
    torch.testing.assert_close(power[:, seen], causal_alibi[:, seen], rtol=0, atol=1e-15)
    # everywhere, it is ALiBi's bidirectional bias -s_h |m - n|
    bidirectional = alibi_bias(q_len, k_len, slopes, causal=False, start=start)
    torch.testing.assert_close(power, bidirectional, rtol=0, atol=1e-15)


def smallest_eigenvalue_on_zero_sum_vectors(matrix):
    """min over c with sum(c) = 0, |c| = 1 of cᵀ K c: the eigenvalues of Qᵀ K Q, Q an
    orthonormal basis of the zero-sum subspace."""
    size = matrix.shape[0]
    basis, _ = np.linalg.qr(np.vstack([np.ones(size), np.eye(size)[:-1]]).T)
    q = basis[:, 1:]  # (size, size - 1), columns orthogonal to the all-ones vector
    return float(np.linalg.eigvalsh(q.T @ matrix @ q).min())


def cpd_tolerance(matrix):
    # The exact minimum can be 0 (r2 = 2: cᵀKc = 2 r1 (Σ c_m m)², rank one on the zero-sum
    # vectors), so rounding decides its sign. Forming QᵀKQ and eigvalsh in float64 err by
    # about size · u · max|K| with u = 2^-53 ≈ 1.1e-16; 1e-13 · size · max|K| is ~1000 times
    # that, and ~1e10 times smaller than the failures the negative controls below show.
    return 1e-13 * matrix.shape[0] * max(1.0, float(np.abs(matrix).max()))


@settings(max_examples=40)
@given(st.integers(2, 40), st.integers(1, 3), kinds, st.integers(0, 2**16))
def test_the_bias_is_a_conditionally_positive_definite_kernel(size, n_heads, kind, seed):
    # KERPLE section 3: k(m, n) = bias(m, n) is CPD: Σ c_m c_n k(m, n) >= 0 whenever Σ c_m = 0
    r1, r2 = parameters(n_heads, kind, seed)
    bias = kerple_bias(size, size, r1, r2, kind).numpy()
    for matrix in bias:
        assert smallest_eigenvalue_on_zero_sum_vectors(matrix) >= -cpd_tolerance(matrix)
    c = np.random.default_rng(seed).standard_normal(size)
    c -= c.mean()
    assert float(c @ bias[0] @ c) >= -cpd_tolerance(bias[0]) * float(c @ c)


@pytest.mark.parametrize(
    "matrix",
    [
        -(np.abs(np.subtract.outer(np.arange(3.0), np.arange(3.0))) ** 2.1),  # exponent > 2
        -(np.abs(np.subtract.outer(np.arange(10.0), np.arange(10.0))) ** 3),
        np.log1p(np.abs(np.subtract.outer(np.arange(10.0), np.arange(10.0)))),  # wrong sign
    ],
)
def test_the_cpd_check_fails_outside_the_papers_conditions(matrix):
    # negative controls: the check above can fail, and by far more than its tolerance
    assert smallest_eigenvalue_on_zero_sum_vectors(matrix) < -1e6 * cpd_tolerance(matrix)


@given(st.integers(1, 8), st.integers(0, 8), kinds, st.integers(0, 2**16))
def test_bias_depends_on_the_offset_only(q_len, start, kind, seed):
    # decoding from a cache: queries at start .. start + q_len - 1 see the rows of the full bias
    r1, r2 = parameters(2, kind, seed)
    k_len = start + q_len
    full = kerple_bias(k_len, k_len, r1, r2, kind)
    block = kerple_bias(q_len, k_len, r1, r2, kind, start=start)
    # equal up to a few ulps: pow and log1p may round differently in SIMD lanes and tails
    torch.testing.assert_close(block, full[:, start:, :], rtol=1e-14, atol=0)
    torch.testing.assert_close(full[:, 1:, 1:], full[:, :-1, :-1], rtol=1e-14, atol=0)


@given(st.integers(2, 30), kinds, st.integers(0, 2**16))
def test_bias_never_increases_with_distance(seq_len, kind, seed):
    r1, r2 = parameters(4, kind, seed)
    last_row = kerple_bias(1, seq_len, r1, r2, kind)[:, 0, :]  # keys n = 0 .. m, m = seq_len - 1
    by_distance = last_row.flip(-1)  # column r is distance r
    assert bool((by_distance[:, 1:] <= by_distance[:, :-1]).all())
    assert bool((by_distance[:, 0] == 0).all()) and bool((by_distance <= 0).all())


@pytest.mark.parametrize("kind", ["log", "power"])
def test_initialisation_draws_like_the_official_code(kind):
    torch.manual_seed(7)
    bias_p = torch.rand(6) * 2  # official: get_parameter(2, 'uniform'), then (1, 'uniform')
    bias_a = torch.rand(6)
    torch.manual_seed(7)
    module = KerpleBias(6, kind)
    multiplier, second = (bias_p, bias_a) if kind == "log" else (bias_a, bias_p)
    assert torch.equal(module.r1.detach(), multiplier) and torch.equal(module.r2.detach(), second)


@pytest.mark.parametrize("kind", ["log", "power"])
def test_an_optimiser_step_below_zero_is_clamped_back_on_the_next_forward(kind):
    torch.manual_seed(0)
    module = KerpleBias(4, kind)
    optimiser = torch.optim.SGD(module.parameters(), lr=100.0)
    module(6, 6).sum().neg().backward()  # gradient pushes r1, r2 down: the bias is <= 0
    optimiser.step()
    assert bool((module.r1 < 0).any())  # the step alone leaves them negative
    bias = module(6, 6)
    assert bool((module.r1 >= 0.01).all()) and bool((module.r2 >= 0.01).all())
    if kind == "power":
        assert bool((module.r2 <= 2).all())
    assert bool(torch.isfinite(bias).all())
    torch.testing.assert_close(bias, kerple_bias(6, 6, module.r1, module.r2, kind))


def test_power_exponent_above_two_is_clamped_to_two():
    module = KerpleBias(2, "power")
    with torch.no_grad():
        module.r2.fill_(5.0)
    module(3, 3)
    assert module.r2.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("kind", ["log", "power"])
def test_gradients_reach_both_parameters_and_are_finite(kind):
    torch.manual_seed(1)
    module = KerpleBias(3, kind)
    module(5, 8).sum().backward()
    for p in (module.r1, module.r2):
        assert (
            p.grad is not None and bool(torch.isfinite(p.grad).all()) and bool((p.grad != 0).all())
        )


def test_float32_parameters_give_float32_bias_and_decoding_matches_the_full_pass():
    torch.manual_seed(2)
    module = KerpleBias(4, "log")
    full = module(10, 10)
    assert full.dtype == torch.float32 and full.shape == (4, 10, 10)
    torch.testing.assert_close(module(1, 10), full[:, -1:, :])


_ok = torch.tensor([0.5, 1.0])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: kerple_bias(0, 4, _ok, _ok), ValueError, "q_len"),
        (lambda: kerple_bias(4, -1, _ok, _ok), ValueError, "k_len"),
        (lambda: kerple_bias(4, 4, _ok, _ok, "linear"), ValueError, "kind"),
        (lambda: kerple_bias(4, 4, _ok, _ok, start=1), ValueError, "start"),
        (lambda: kerple_bias(4, 6, _ok, _ok, start=-1), ValueError, "start"),
        (lambda: kerple_bias(4, 4, torch.tensor([0.5, 0.0]), _ok), ValueError, "r1"),
        (lambda: kerple_bias(4, 4, _ok, torch.tensor([0.5, float("nan")])), ValueError, "r2"),
        (lambda: kerple_bias(4, 4, _ok, torch.tensor([1.0, 2.5]), "power"), ValueError, "r2"),
        (lambda: kerple_bias(4, 4, _ok, torch.tensor([1.0, 1.0, 1.0])), ValueError, "r2"),
        (lambda: kerple_bias(4, 4, torch.ones(2, 1), _ok), ValueError, "r1"),
        (lambda: kerple_bias(4, 4, torch.tensor([1, 2]), _ok), TypeError, "r1"),
        (lambda: kerple_bias(4, 4, [0.5, 1.0], _ok), TypeError, "r1"),
        (lambda: KerpleBias(0), ValueError, "n_heads"),
        (lambda: KerpleBias(2.0), TypeError, "n_heads"),
        (lambda: KerpleBias(2, "alibi"), ValueError, "kind"),
        (lambda: KerpleBias(2, eps=0.0), ValueError, "eps"),
        (lambda: KerpleBias(2)(4, 6, start=3), ValueError, "start"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
