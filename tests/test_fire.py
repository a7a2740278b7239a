"""pe_book.fire: the normalised input, the two regimes, the paper's listing, KERPLE as a case."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from pe_book.fire import FireBias, fire_bias, fire_input
from pe_book.kerple import kerple_bias


class ListingFIRE(nn.Module):
    """The PyTorch listing published with FIRE (arXiv 2310.04418), transcribed: the
    reference we compare against. Its forward takes x of shape (bsz, H, seq_len, d)
    and returns the bias (1, H, seq_len, seq_len) for queries and keys 0 .. seq_len - 1."""

    def __init__(self, num_heads=12, mlp_width=32, init_c=0.1, init_L=512.0, eps=1e-6):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(1, mlp_width), nn.ReLU(), nn.Linear(mlp_width, num_heads)
        )
        self.c = nn.Parameter(torch.tensor(init_c))
        self.init_L = nn.Parameter(torch.tensor(init_L), requires_grad=False)
        self.L_multiplier = nn.Parameter(torch.tensor(1.0))
        self.eps = eps

    def forward(self, x):
        seq_length = x.size(2)
        positions = torch.arange(seq_length, dtype=torch.float, device=x.device)
        rel_distance = positions[:, None] - positions[None, :]
        threshold = torch.abs(self.L_multiplier * self.init_L)
        pos_normalizer = torch.max(positions, threshold)
        pos_normalizer = pos_normalizer[:, None]
        rel_distance = torch.log(torch.abs(self.c * rel_distance) + 1)
        pos_normalizer = torch.log(torch.abs(self.c * pos_normalizer) + 1) + self.eps
        normalized_distance = rel_distance / pos_normalizer
        fire_bias = self.mlp(normalized_distance.unsqueeze(-1))
        return fire_bias.unsqueeze(0).permute(0, 3, 1, 2)


def numpy_fire(module, q_len, k_len, start):
    """FIRE by hand in float64 numpy: ψ(x) = log(c x + 1), input ψ(|m-n|)/(ψ(max(m, L)) + eps),
    then ReLU(x w1 + b1) W2ᵀ + b2."""
    w1, b1 = (p.detach().double().numpy() for p in (module.mlp[0].weight, module.mlp[0].bias))
    w2, b2 = (p.detach().double().numpy() for p in (module.mlp[2].weight, module.mlp[2].bias))
    c = abs(float(module.c.detach()))
    threshold = abs(float(module.L_multiplier.detach()) * float(module.init_L))
    m = start + np.arange(q_len)[:, None]
    n = np.arange(k_len)[None, :]
    x = np.log(c * np.abs(m - n) + 1) / (np.log(c * np.maximum(m, threshold) + 1) + module.eps)
    hidden = np.maximum(x[..., None] * w1[:, 0] + b1, 0.0)  # (q, k, hidden)
    return np.moveaxis(hidden @ w2.T + b2, -1, 0)  # (H, q, k)


def seeded(n_heads=4, seed=0, **kwargs):
    torch.manual_seed(seed)
    return FireBias(n_heads, **kwargs)


@given(
    st.floats(1e-3, 10.0),
    st.floats(0.0, 4096.0),
    st.integers(1, 40),
    st.integers(0, 40),
    st.integers(0, 2**16),
    st.sampled_from([torch.float32, torch.float64]),
)
def test_normalised_input_lies_in_the_unit_interval_for_keys_up_to_the_query(
    c, threshold, q_len, extra, seed, dtype
):
    k_len, start = q_len + extra, seed % (extra + 1)
    x = fire_input(
        q_len,
        k_len,
        torch.tensor(c, dtype=dtype),
        torch.tensor(threshold, dtype=dtype),
        start=start,
    )
    assert x.dtype == dtype and bool(torch.isfinite(x).all())
    seen = torch.arange(k_len)[None, :] <= torch.arange(q_len)[:, None] + start  # n <= m
    assert bool((x[seen] >= 0).all()) and bool((x[seen] <= 1).all())


@pytest.mark.parametrize(
    ("q_len", "k_len", "start", "init_threshold"),
    [(12, 12, None, 512.0), (12, 40, None, 8.0), (5, 30, 3, 6.0), (1, 1, None, 512.0)],
)
def test_bias_equals_an_independent_numpy_computation(q_len, k_len, start, init_threshold):
    module = seeded(3, seed=q_len, init_c=0.37, init_threshold=init_threshold).double()
    with torch.no_grad():
        module.L_multiplier.fill_(-1.25)  # the threshold is |ℓ L0|
    got = module(q_len, k_len, start).detach().numpy()
    s = k_len - q_len if start is None else start
    np.testing.assert_allclose(got, numpy_fire(module, q_len, k_len, s), rtol=1e-12, atol=1e-13)


def test_below_the_threshold_the_bias_depends_on_the_offset_only():
    module = seeded(4, seed=1, init_threshold=50.0).double()
    bias = module(40, 40)  # every query m <= 39 < L = 50
    torch.testing.assert_close(bias[:, 1:, 1:], bias[:, :-1, :-1], rtol=0, atol=1e-13)


def test_past_the_threshold_it_interpolates_the_whole_context_onto_the_unit_interval():
    module = seeded(4, seed=1, init_threshold=5.0).double()
    bias = module(40, 40).detach()
    # rows m >= L: no longer constant along diagonals ...
    assert float((bias[:, 6:, 6:] - bias[:, 5:-1, 5:-1]).abs().max()) > 1e-3
    # ... but the farthest key n = 0 always sits at input ψ(m)/(ψ(m) + eps) ≈ 1: f(1)
    f_of_one = module.mlp(torch.ones(1, dtype=torch.float64)).detach()  # (H,)
    torch.testing.assert_close(bias[:, 5:, 0], f_of_one[:, None].expand(4, 35), rtol=0, atol=1e-5)


@pytest.mark.parametrize("seq_len", [1, 7, 64])
def test_bias_equals_the_papers_listing(seq_len):
    listing = seeded(6, seed=seq_len)  # the same seed draws the same MLP in both modules
    torch.manual_seed(seq_len)
    reference = ListingFIRE(num_heads=6)
    expected = reference(torch.zeros(1, 6, seq_len, 8))[0]
    torch.testing.assert_close(listing(seq_len, seq_len), expected, rtol=1e-5, atol=1e-6)


def test_the_listings_state_dict_loads_and_signs_of_c_and_l_do_not_matter():
    torch.manual_seed(3)
    reference = ListingFIRE(num_heads=4, init_c=0.2, init_L=16.0)
    with torch.no_grad():
        reference.c.fill_(-0.2)  # after a step that flipped the signs
        reference.L_multiplier.fill_(-0.5)
    ours = seeded(4, seed=99)
    ours.load_state_dict(reference.state_dict())
    assert float(ours.threshold.detach()) == 8.0
    expected = reference(torch.zeros(1, 4, 30, 8))[0]
    torch.testing.assert_close(ours(30, 30), expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("start", [None, 5])
def test_a_linear_f_below_the_threshold_is_kerples_logarithmic_bias(start):
    # FIRE represents KERPLE (paper, section 3): f_h(x) = -w_h x and m <= L give
    # -w_h log(1 + c (m - n)) / (ψ(L) + eps): KERPLE-log with r1 = w_h / (ψ(L) + eps), r2 = c.
    c, threshold, w = 0.3, 100.0, torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64)
    module = FireBias(3, hidden=4, init_c=c, init_threshold=threshold).double()
    with torch.no_grad():
        for p in module.mlp.parameters():
            p.zero_()
        module.mlp[0].weight[0, 0] = 1.0  # ReLU(x) = x on inputs x >= 0
        module.mlp[2].weight[:, 0] = -w
    c = float(module.c.detach())  # 0.3 as stored in float32, then widened
    r1 = w / (math.log1p(c * threshold) + module.eps)
    r2 = torch.full((3,), c, dtype=torch.float64)
    fire = module(20, 30, start)
    torch.testing.assert_close(fire, kerple_bias(20, 30, r1, r2, "log", start), rtol=1e-12, atol=0)
    # past the threshold (queries up to m = 299 > L) the two part ways
    assert not torch.allclose(module(300, 300), kerple_bias(300, 300, r1, r2, "log"))


def test_gradients_reach_c_the_threshold_and_the_mlp():
    module = seeded(4, seed=2)
    weights = torch.randn(4, 16, 16, generator=torch.Generator().manual_seed(0))
    (module(16, 16) * weights).sum().backward()
    for name, p in module.named_parameters():
        assert p.grad is not None and bool(torch.isfinite(p.grad).all()), name
        assert bool((p.grad != 0).any()), name
    assert module.init_L.requires_grad is False


@pytest.mark.parametrize(("q_len", "k_len", "start"), [(1, 1, None), (3, 10, 4), (1, 9, None)])
def test_outputs_are_finite_and_decoding_reads_rows_of_the_full_bias(q_len, k_len, start):
    module = seeded(2, seed=4)
    block = module(q_len, k_len, start)
    assert block.shape == (2, q_len, k_len) and block.dtype == torch.float32
    assert bool(torch.isfinite(block).all())
    s = k_len - q_len if start is None else start
    torch.testing.assert_close(block, module(k_len, k_len)[:, s : s + q_len, :])


def test_a_zero_threshold_at_position_zero_is_still_finite():
    module = seeded(2, seed=5)
    with torch.no_grad():
        module.L_multiplier.zero_()
    assert float(fire_input(1, 1, module.c, module.threshold).detach()[0, 0]) == 0.0  # 0 / eps
    assert bool(torch.isfinite(module(1, 1)).all())


def test_keys_after_the_query_hold_the_mirrored_offset_and_are_finite():
    x = fire_input(6, 6, 0.5, 2.0)
    m, n = 1, 5
    expected = math.log1p(0.5 * 4) / (math.log1p(0.5 * 2.0) + 1e-6)  # |m - n| = 4 > max(m, L)
    assert math.isclose(float(x[m, n]), expected, rel_tol=1e-6) and float(x[m, n]) > 1


class _Flat(nn.Module):
    def forward(self, x):
        return x[..., 0]


class _NaN(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1, 2)

    def forward(self, x):
        return self.linear(x) * float("nan")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: FireBias(0), ValueError, "n_heads"),
        (lambda: FireBias(2.0), TypeError, "n_heads"),
        (lambda: FireBias(2, hidden=0), ValueError, "hidden"),
        (lambda: FireBias(2, init_c=0.0), ValueError, "init_c"),
        (lambda: FireBias(2, init_c=float("nan")), ValueError, "init_c"),
        (lambda: FireBias(2, init_threshold=-1.0), ValueError, "init_threshold"),
        (lambda: FireBias(2, eps=0.0), ValueError, "eps"),
        (lambda: FireBias(2)(0, 4), ValueError, "q_len"),
        (lambda: FireBias(2)(4, 0), ValueError, "k_len"),
        (lambda: FireBias(2)(4, 6, start=3), ValueError, "start"),
        (lambda: fire_input(4, 4, -0.1, 10.0), ValueError, "c"),
        (lambda: fire_input(4, 4, float("inf"), 10.0), ValueError, "c"),
        (lambda: fire_input(4, 4, 0.1, torch.tensor(float("nan"))), ValueError, "threshold"),
        (lambda: fire_input(4, 4, 0.1, torch.tensor([10.0])), ValueError, "threshold"),
        (lambda: fire_input(4, 4, 0.1, torch.tensor(10)), TypeError, "threshold"),
        (lambda: fire_input(4, 4, "0.1", 10.0), TypeError, "c"),
        (lambda: fire_input(4, 4, 0.1, 10.0, eps=-1.0), ValueError, "eps"),
        (lambda: fire_bias(4, 4, lambda x: x, 0.1, 10.0), TypeError, "mlp"),
        (lambda: fire_bias(4, 4, _Flat(), 0.1, 10.0), ValueError, "mlp"),
        (lambda: fire_bias(4, 4, _NaN(), 0.1, 10.0), ValueError, "NaN"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
