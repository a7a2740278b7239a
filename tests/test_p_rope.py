"""pe_book.p_rope: which pairs rotate, the two ends (RoPE and NoPE), the position-free pairs,
the relative property, the contrast with GPT-NeoX's partial rotary, transformers' proportional
RoPE (Gemma 4) as a reference, and bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book import p_rope, rope
from pe_book.sinusoidal import LAYOUTS, frequencies

dims = st.integers(1, 32).map(lambda h: 2 * h)
layouts = st.sampled_from(LAYOUTS)
fractions = st.floats(0.0, 1.0)
seeds = st.integers(0, 2**16)


def random(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def pair_columns(dim, i, layout):
    return (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + dim // 2)


def reference_p_rope(x, positions, p, layout, base=10000.0):
    """Pair by pair in float64: rotate pair i by m b^(-2i/d) if i < floor(p d / 2), else copy."""
    dim = x.shape[-1]
    kept = math.floor(p * dim / 2)
    out = x.clone()
    for row, m in enumerate(positions):
        for i in range(kept):
            a, b = pair_columns(dim, i, layout)
            angle = m * base ** (-2 * i / dim)
            xa, xb = float(x[row, a]), float(x[row, b])
            out[row, a] = xa * math.cos(angle) - xb * math.sin(angle)
            out[row, b] = xa * math.sin(angle) + xb * math.cos(angle)
    return out


@pytest.mark.parametrize(
    ("dim", "p", "pairs"),
    [
        (128, 0.25, 16),
        (128, 0.75, 48),
        (128, 1.0, 64),
        (128, 0.0, 0),
        (64, 0.5, 16),
        (10, 0.3, 1),  # ⌊1.5⌋
        (256, 0.1, 12),  # ⌊12.8⌋
        (96, 1 / 3, 16),
        (2, 0.5, 0),
        (2, 1.0, 1),
    ],
)
def test_the_count_of_rotated_pairs(dim, p, pairs):
    assert p_rope.rotated_pairs(dim, p) == pairs
    assert int((p_rope.p_rope_frequencies(dim, p) > 0).sum()) == pairs


@given(dims, fractions)
def test_the_kept_frequencies_are_ropes_fastest_exactly(dim, p):
    theta = p_rope.p_rope_frequencies(dim, p)
    kept = math.floor(p * dim / 2)
    assert torch.equal(theta[:kept], frequencies(dim)[:kept])
    assert bool((theta[kept:] == 0).all())


@given(st.integers(1, 16).map(lambda h: 2 * h), fractions, layouts, st.integers(0, 5000), seeds)
@settings(max_examples=20)
def test_equals_pair_by_pair_rotation(dim, p, layout, start, seed):
    x = random(3, dim, seed=seed)
    expected = reference_p_rope(x, range(start, start + 3), p, layout)
    got = p_rope.apply_p_rope(x, p, start, layout=layout)
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-9)


@given(dims, layouts, st.integers(0, 5000), seeds)
def test_p_one_is_rope_bit_for_bit(dim, layout, start, seed):
    x = random(2, 5, dim, seed=seed, dtype=torch.float32)
    expected = rope.apply_rope(x, torch.arange(start, start + 5), layout=layout)
    assert torch.equal(p_rope.apply_p_rope(x, 1.0, start, layout=layout), expected)
    assert torch.equal(p_rope.PRope(dim, 1.0, layout=layout)(x, start), expected)


@given(dims, layouts, st.integers(0, 5000), seeds)
def test_p_zero_is_the_identity(dim, layout, start, seed):
    x = random(2, 5, dim, seed=seed, dtype=torch.float32)
    assert torch.equal(p_rope.apply_p_rope(x, 0.0, start, layout=layout), x)
    assert torch.equal(p_rope.PRope(dim, 0.0, layout=layout)(x, start), x)


@given(dims, fractions, layouts, st.integers(0, 10**5), st.integers(0, 10**5), seeds)
def test_unrotated_pairs_carry_q_dot_k_unchanged_at_every_offset(dim, p, layout, m, n, seed):
    q, k = random(1, dim, seed=seed), random(1, dim, seed=seed + 1)
    q_m, k_n = (
        p_rope.apply_p_rope(q, p, m, layout=layout),
        p_rope.apply_p_rope(k, p, n, layout=layout),
    )
    for i in range(p_rope.rotated_pairs(dim, p), dim // 2):
        cols = list(pair_columns(dim, i, layout))
        assert float(q_m[0, cols] @ k_n[0, cols]) == pytest.approx(float(q[0, cols] @ k[0, cols]))


@given(dims, fractions, layouts, st.integers(0, 10**5), seeds)
def test_scores_depend_on_the_offset_only(dim, p, layout, shift, seed):
    q, k = random(6, dim, seed=seed), random(6, dim, seed=seed + 1)

    def scores(start):
        return p_rope.apply_p_rope(q, p, start, layout=layout) @ (
            p_rope.apply_p_rope(k, p, start, layout=layout).T
        )

    torch.testing.assert_close(scores(shift), scores(0), rtol=0, atol=1e-8)


def test_p_rope_is_not_neox_partial_rotary():
    """d = 128, p = 1/4: p-RoPE keeps θ_0 .. θ_15 = b^(-2i/128); GPT-NeoX rotates 32 coordinates
    with b^(-2i/32), i < 16: the same number of pairs, spread over RoPE's whole range."""
    contrast = p_rope.contrast_with_partial_rotary(128, 0.25)
    assert contrast.rotated_pairs == (16, 16)
    assert torch.equal(contrast.p_rope[:16], frequencies(128)[:16])
    neox = torch.tensor([10000.0 ** (-2 * i / 32) for i in range(16)], dtype=torch.float64)
    torch.testing.assert_close(contrast.partial_rotary[:16], neox)
    p_longest, neox_longest = contrast.longest_wavelengths
    assert p_longest == pytest.approx(2 * math.pi * 10000 ** (30 / 128)), p_longest  # ≈ 54.4
    assert neox_longest == pytest.approx(2 * math.pi * 10000 ** (30 / 32)), neox_longest  # ≈ 35333
    assert round(p_longest, 1) == 54.4 and round(neox_longest) == 35333, (
        f"longest wavelength: p-RoPE {p_longest:.1f}, NeoX partial rotary {neox_longest:.0f}"
    )


@given(st.integers(0, 3000), st.integers(1, 30), layouts, fractions)
@settings(max_examples=20)
def test_module_decoding_from_a_start_matches_the_function(start, length, layout, p):
    module = p_rope.PRope(16, p, layout=layout, max_len=8)
    x = random(2, start + length, 16)
    step = module(x[:, start:], start=start)
    torch.testing.assert_close(step, module(x)[:, start:], rtol=0, atol=1e-12)
    torch.testing.assert_close(
        step, p_rope.apply_p_rope(x[:, start:], p, start, layout=layout), rtol=0, atol=1e-12
    )


@pytest.mark.parametrize(("dim", "p"), [(64, 0.25), (64, 0.3), (256, 0.75), (10, 0.5), (8, 1.0)])
def test_frequencies_equal_transformers_proportional_rope(dim, p):
    """transformers' "proportional" RoPE (modeling_rope_utils._compute_proportional_rope_
    parameters, Gemma 4's global layers): int(p · head_dim // 2) pairs keep base^(-2i/head_dim),
    the rest get 0. Its float32 frequencies agree to float32 rounding."""
    pytest.importorskip("transformers")
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    config = LlamaConfig(
        hidden_size=4 * dim,
        num_attention_heads=4,
        head_dim=dim,
        rope_parameters={
            "rope_type": "proportional",
            "rope_theta": 10000.0,
            "partial_rotary_factor": p,
        },
    )
    inv_freq, _ = ROPE_INIT_FUNCTIONS["proportional"](config, "cpu")
    theta = p_rope.p_rope_frequencies(dim, p)
    assert torch.equal(inv_freq > 0, theta > 0)
    torch.testing.assert_close(inv_freq.double(), theta, rtol=1e-6, atol=0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: p_rope.rotated_pairs(64, -0.1), ValueError, "p must be in"),
        (lambda: p_rope.rotated_pairs(64, 1.1), ValueError, "p must be in"),
        (lambda: p_rope.rotated_pairs(64, float("nan")), ValueError, "p must be in"),
        (lambda: p_rope.rotated_pairs(64, True), TypeError, "p must be a real"),
        (lambda: p_rope.rotated_pairs(64, "0.5"), TypeError, "p must be a real"),
        (lambda: p_rope.rotated_pairs(63, 0.5), ValueError, "dim must be even"),
        (lambda: p_rope.p_rope_frequencies(64, 0.5, base=1.0), ValueError, "base"),
        (lambda: p_rope.apply_p_rope(torch.zeros(3, 7), 0.5), ValueError, "dim must be even"),
        (lambda: p_rope.apply_p_rope(torch.zeros(3, 8, dtype=torch.long), 0.5), TypeError, "x"),
        (lambda: p_rope.apply_p_rope(torch.zeros(3, 8), 0.5, -1), ValueError, "start"),
        (lambda: p_rope.apply_p_rope(torch.zeros(3, 8), 0.5, layout="x"), ValueError, "layout"),
        (lambda: p_rope.apply_p_rope(torch.zeros(3, 8), 2), ValueError, "p must be in"),
        (lambda: p_rope.PRope(8, 0.5)(torch.zeros(3, 6)), ValueError, "dim=8"),
        (lambda: p_rope.PRope(7, 0.5), ValueError, "dim must be even"),
        (lambda: p_rope.PRope(8, -1), ValueError, "p must be in"),
        (lambda: p_rope.PRope(8, 0.5)(torch.zeros(3, 8), 1.5), TypeError, "start"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
