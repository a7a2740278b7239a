"""pe_book.xpos: the paper's Algorithm 1, the relative property, the decay per pair, the float
range, the reduction to RoPE and the cross-check against rotary-embedding-torch's use_xpos."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import rope, xpos
from pe_book.sinusoidal import LAYOUTS, layout_permutation

dims = st.integers(1, 16).map(lambda h: 2 * h)
layouts = st.sampled_from(LAYOUTS)
seeds = st.integers(0, 2**16)


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def algorithm_1(x, positions, role, gamma=0.4, scale_base=512.0, base=10000.0):
    """Sun et al. (2022), Algorithm 1, interleaved pairs, with ζ̂ = ζ^(1/B) (torchscale), by hand:
    rot(x) = [-x1, x0, -x3, x2, ...], Q = (Q·C + rot(Q)·S)·T, K = (K·C + rot(K)·S)·T⁻¹."""
    dim = x.shape[-1]
    out = torch.empty_like(x)
    for row, m in enumerate(positions):
        for i in range(dim // 2):
            zeta = (i / (dim / 2) + gamma) / (1 + gamma)
            t = (zeta ** (1 / scale_base)) ** m
            t = t if role == "query" else 1 / t
            c, s = math.cos(m * base ** (-2 * i / dim)), math.sin(m * base ** (-2 * i / dim))
            x0, x1 = float(x[row, 2 * i]), float(x[row, 2 * i + 1])
            out[row, 2 * i] = (x0 * c - x1 * s) * t
            out[row, 2 * i + 1] = (x1 * c + x0 * s) * t
    return out


def pair_products(a, b, layout):
    """(L_a, L_b, d/2): pair i's part of a_m · b_n."""
    half = a.shape[-1] // 2
    if layout == "interleaved":
        a, b = a.unflatten(-1, (half, 2)), b.unflatten(-1, (half, 2))
        return torch.einsum("mic,nic->mni", a, b)
    a, b = a.unflatten(-1, (2, half)), b.unflatten(-1, (2, half))
    return torch.einsum("mci,nci->mni", a, b)


def test_ratios_are_equation_9():
    for dim, gamma in [(2, 0.4), (8, 0.4), (64, 0.4), (10, 3.0)]:
        expected = [(i / (dim / 2) + gamma) / (1 + gamma) for i in range(dim // 2)]
        torch.testing.assert_close(
            xpos.xpos_ratios(dim, gamma), torch.tensor(expected, dtype=torch.float64)
        )
    zeta = xpos.xpos_ratios(128)
    assert float(zeta[0]) == pytest.approx(2 / 7)  # γ / (1 + γ)
    assert bool((zeta < 1).all()) and bool((zeta.diff() > 0).all())


@given(dims, st.integers(0, 3000), seeds)
@settings(max_examples=25)
def test_queries_and_keys_follow_algorithm_1(dim, start, seed):
    x = random(4, dim, seed=seed)
    positions = list(range(start, start + 4))
    for role in xpos.ROLES:
        torch.testing.assert_close(
            xpos.apply_xpos(x, role, start), algorithm_1(x, positions, role), rtol=1e-9, atol=0
        )


@given(dims, seeds, st.sampled_from(xpos.ROLES))
def test_layouts_differ_by_a_fixed_permutation(dim, seed, role):
    x = random(7, dim, seed=seed)
    perm = layout_permutation(dim)  # half = interleaved[:, perm]
    half = xpos.apply_xpos(x[:, perm], role, 11, layout="half")
    torch.testing.assert_close(
        half[:, torch.argsort(torch.tensor(perm))], xpos.apply_xpos(x, role, 11)
    )


@given(dims, layouts, st.integers(0, 4000), st.integers(0, 4000), seeds)
@settings(max_examples=40)
def test_scores_depend_on_the_offset_only(dim, layout, start, shift, seed):
    q, k = random(6, dim, seed=seed), random(6, dim, seed=seed + 1)

    def scores(c):
        return (
            xpos.apply_xpos(q, "query", c, layout=layout)
            @ xpos.apply_xpos(k, "key", c, layout=layout).T
        )

    torch.testing.assert_close(scores(start + shift), scores(start), rtol=1e-9, atol=1e-9)


@given(dims, layouts, st.integers(0, 2000), st.integers(0, 2000), seeds)
def test_each_pair_is_ropes_term_times_zeta_to_the_offset(dim, layout, m, n, seed):
    x = random(1, dim, seed=seed)  # q = k: the same token at m and at n
    got = pair_products(
        xpos.apply_xpos(x, "query", m, layout=layout),
        xpos.apply_xpos(x, "key", n, layout=layout),
        layout,
    )[0, 0]
    plain = pair_products(
        rope.apply_rope(x, torch.tensor([m]), layout=layout),
        rope.apply_rope(x, torch.tensor([n]), layout=layout),
        layout,
    )[0, 0]
    decay = xpos.xpos_ratios(dim) ** ((m - n) / 512)
    torch.testing.assert_close(got, decay * plain, rtol=1e-9, atol=1e-12)


@given(dims, layouts, st.integers(0, 3000), seeds)
def test_pair_norms_grow_or_shrink_by_zeta_powers(dim, layout, m, seed):
    """‖pair i of q'_m‖ = ‖pair i of q‖ ζ_i^(m/B), keys ζ_i^(-m/B): the envelope of pair i's
    score is ‖q_i‖ ‖k_i‖ ζ_i^(r/B), which for r > 0 is < 1 and smallest for the fastest pair."""
    x = random(1, dim, seed=seed)
    norms = pair_products(x, x, layout)[0, 0].sqrt()
    for role, sign in (("query", 1), ("key", -1)):
        out = xpos.apply_xpos(x, role, m, layout=layout)
        got = pair_products(out, out, layout)[0, 0].sqrt()
        torch.testing.assert_close(got, norms * xpos.xpos_ratios(dim) ** (sign * m / 512))


def test_the_decay_is_below_one_and_fastest_for_low_pairs():
    envelope = xpos.xpos_ratios(64)[None, :] ** (torch.arange(1, 2000)[:, None] / 512)  # (r, i)
    assert bool((envelope < 1).all())
    assert bool((envelope.diff(dim=1) > 0).all())  # pair 0 decays fastest
    assert bool((envelope.diff(dim=0) < 0).all())  # every pair decays with the offset r


def test_large_gamma_tends_to_rope():
    x = random(3, 20, 32, seed=3)
    plain = rope.apply_rope(x, torch.arange(700, 720))
    gaps = [
        float((xpos.apply_xpos(x, "query", 700, gamma=gamma) - plain).abs().max())
        for gamma in (1e2, 1e4, 1e6)
    ]
    assert gaps[1] < gaps[0] / 50 and gaps[2] < gaps[1] / 50, gaps
    # position 0: ζ^0 = 1, xPos is RoPE exactly, whatever γ
    for role in xpos.ROLES:
        assert torch.equal(xpos.apply_xpos(x, role)[..., :1, :], rope.apply_rope(x)[..., :1, :])


def test_float_limits_stated_in_the_docstring():
    """Brute force in float64, rounded to each dtype: where ζ_0^(m/B) leaves the normal range,
    where it reaches 0, and where the key's ζ_0^(-n/B) becomes inf."""
    m = torch.arange(0, 320000, dtype=torch.float64)
    zeta0 = torch.tensor(0.4 / 1.4, dtype=torch.float64)
    found = {}
    for dtype in (torch.float16, torch.float32, torch.float64):
        up, down = (zeta0 ** (m / 512)).to(dtype), (zeta0 ** (-m / 512)).to(dtype)
        first = {
            "subnormal": int((up < torch.finfo(dtype).tiny).nonzero()[0]),
            "inf": int(torch.isinf(down).nonzero()[0]) if torch.isinf(down).any() else None,
            "zero": int((up == 0).nonzero()[0]) if (up == 0).any() else None,
        }
        assert xpos.xpos_position_limit(dtype=dtype) == first["subnormal"]
        found[dtype] = first
    assert found[torch.float32] == {"subnormal": 35695, "inf": 36261, "zero": 42494}
    assert (found[torch.float16]["subnormal"], found[torch.float16]["inf"]) == (3967, 4533)
    assert found[torch.float64]["subnormal"] == 289520
    assert xpos.xpos_position_limit(dtype=torch.bfloat16) == 35695
    for number in ("35695", "42494", "36261", "3967", "4533", "289520"):
        assert number in xpos.__doc__, number


def test_the_last_safe_position_is_finite_and_the_next_is_refused():
    limit = xpos.xpos_position_limit()
    x = random(2, 1, 16, dtype=torch.float32)
    q, k = xpos.apply_xpos(x, "query", limit - 1), xpos.apply_xpos(x, "key", limit - 1)
    assert bool(torch.isfinite(q).all() and torch.isfinite(k).all())
    with pytest.raises(ValueError, match="start"):
        xpos.apply_xpos(x, "key", limit)
    with pytest.raises(ValueError, match="start"):
        xpos.XPos(16)(x, x, start=limit)
    # float64 inputs go further
    assert bool(torch.isfinite(xpos.apply_xpos(x.double(), "key", 100000)).all())


@given(st.integers(0, 3000), st.integers(1, 30), layouts)
@settings(max_examples=20)
def test_module_decoding_from_a_start_matches_the_function(start, length, layout):
    module = xpos.XPos(16, layout=layout, max_len=8)
    q, k = random(2, start + length, 16, seed=1), random(2, start + length, 16, seed=2)
    got_q, got_k = module(q[:, start:], k[:, start:], start=start)
    full_q, full_k = module(q, k)
    torch.testing.assert_close(got_q, full_q[:, start:], rtol=1e-12, atol=0)
    torch.testing.assert_close(got_k, full_k[:, start:], rtol=1e-12, atol=0)
    expected = xpos.apply_xpos(q[:, start:], "query", start, layout=layout)
    # the module folds the decay into cos and sin (another order of the same products), so
    # an entry near 0 may differ in relative terms: compare at 1e-12 of the largest entry
    scale = float(expected.abs().max())
    torch.testing.assert_close(got_q, expected, rtol=1e-12, atol=1e-12 * scale)


def test_module_keeps_its_factors_in_float32_under_half():
    module = xpos.XPos(8).half()
    assert module.query_scale.dtype == torch.float32
    assert module.key_scale64.dtype == torch.float64
    q = random(5, 8, dtype=torch.float32).half()
    torch.testing.assert_close(module(q, q, 3)[0], xpos.apply_xpos(q, "query", 3))


def test_scores_equal_rotary_embedding_torch_use_xpos():
    """lucidrains' RotaryEmbedding(use_xpos=True).rotate_queries_and_keys centres positions
    (power (t - L//2)/B): its vectors differ from the paper's by ζ^(±(L//2)/B), its scores
    do not. Max abs difference of the scores: 5.8e-4 on scores up to 68 (its angles are
    formed in float32, pe_book's in float64)."""
    rotary = pytest.importorskip("rotary_embedding_torch")
    seq_len, dim = 512, 64
    q, k = random(2, 4, seq_len, dim, seed=5), random(2, 4, seq_len, dim, seed=6)
    ref_q, ref_k = rotary.RotaryEmbedding(dim=dim, use_xpos=True).rotate_queries_and_keys(q, k)
    got_q, got_k = xpos.apply_xpos(q, "query"), xpos.apply_xpos(k, "key")
    scores, ref_scores = got_q @ got_k.transpose(-1, -2), ref_q @ ref_k.transpose(-1, -2)
    gap = float((scores - ref_scores).abs().max())
    assert gap < 2e-3, gap
    centre = xpos.xpos_scales(torch.tensor([seq_len // 2]), dim)[0].repeat_interleave(2)
    torch.testing.assert_close(got_q, ref_q * centre, rtol=0, atol=2e-4)
    torch.testing.assert_close(got_k, ref_k / centre, rtol=0, atol=5e-4)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: xpos.xpos_ratios(7), ValueError, "dim must be even"),
        (lambda: xpos.xpos_ratios(8, 0.0), ValueError, "gamma"),
        (lambda: xpos.xpos_ratios(8, float("nan")), ValueError, "gamma"),
        (lambda: xpos.xpos_ratios(8, "0.4"), TypeError, "gamma"),
        (lambda: xpos.xpos_scales(4, 8, scale_base=0), ValueError, "scale_base"),
        (lambda: xpos.xpos_scales(4, 8, role="value"), ValueError, "role"),
        (lambda: xpos.xpos_scales(torch.tensor([0.5]), 8), TypeError, "positions"),
        (lambda: xpos.xpos_position_limit(dtype=torch.int32), TypeError, "dtype"),
        (lambda: xpos.apply_xpos(torch.zeros(3, 8), "value"), ValueError, "role"),
        (lambda: xpos.apply_xpos(torch.zeros(3, 7), "query"), ValueError, "dim must be even"),
        (lambda: xpos.apply_xpos(torch.zeros(3, 8, dtype=torch.long), "key"), TypeError, "x"),
        (lambda: xpos.apply_xpos(torch.zeros(8), "key"), ValueError, "x must have rank"),
        (lambda: xpos.apply_xpos(torch.zeros(3, 8), "key", -1), ValueError, "start"),
        (lambda: xpos.apply_xpos(torch.zeros(3, 8), "key", layout="x"), ValueError, "layout"),
        (lambda: xpos.apply_xpos(torch.zeros(3, 8).half(), "key", 3966), ValueError, "start"),
        (lambda: xpos.XPos(8, gamma=-1), ValueError, "gamma"),
        (lambda: xpos.XPos(8)(torch.zeros(3, 6), torch.zeros(3, 6)), ValueError, "dim=8"),
        (lambda: xpos.XPos(8)(torch.zeros(3, 8), torch.zeros(2, 8)), ValueError, "same"),
        (lambda: xpos.XPos(8)(torch.zeros(3, 8), torch.zeros(3, 8), True), TypeError, "start"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
