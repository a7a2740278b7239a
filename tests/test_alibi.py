"""pe_book.alibi: official slopes, the bias as a double loop, the row-constant trick."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book.alibi import (
    alibi_attention,
    alibi_bias,
    alibi_reach,
    alibi_slopes,
    bias_only_weights,
    flex_attention_available,
    mean_distance,
    row_constant_bias,
)
from pe_book.attention import attention


def official_get_slopes(n):
    """Transcribed from the ALiBi authors' code (github.com/ofirpress/
    attention_with_linear_biases, fairseq/models/transformer.py, get_slopes)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + official_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


@pytest.mark.parametrize("n_heads", range(1, 65))
def test_slopes_equal_the_official_algorithm(n_heads):
    expected = torch.tensor(official_get_slopes(n_heads), dtype=torch.float64)
    assert torch.allclose(alibi_slopes(n_heads), expected, rtol=1e-14, atol=0)


def test_eight_heads_give_one_half_to_one_over_256():
    assert alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]


@pytest.mark.parametrize("n_heads", [1, 2, 4, 16, 32])
def test_power_of_two_slopes_are_geometric_with_ratio_two_to_minus_8_over_n(n_heads):
    slopes = alibi_slopes(n_heads)
    ratio = 2.0 ** (-8.0 / n_heads)
    assert math.isclose(float(slopes[0]), ratio, rel_tol=1e-15)
    assert torch.allclose(
        slopes[1:] / slopes[:-1], torch.full((n_heads - 1,), ratio, dtype=torch.float64)
    )


def naive_bias(q_len, k_len, slopes, causal, start):
    bias = torch.empty(len(slopes), q_len, k_len, dtype=torch.float64)
    for h, s in enumerate(slopes.tolist()):
        for i in range(q_len):
            for j in range(k_len):
                r = start + i - j
                bias[h, i, j] = -s * (r if causal else abs(r))
    return bias


@given(st.integers(1, 9), st.integers(1, 12), st.integers(0, 5), st.integers(1, 6), st.booleans())
def test_bias_equals_a_double_loop(q_len, k_len, start, n_heads, causal):
    slopes = alibi_slopes(n_heads)
    got = alibi_bias(q_len, k_len, slopes, causal=causal, start=start)
    assert torch.equal(got, naive_bias(q_len, k_len, slopes, causal, start))


def test_bidirectional_bias_is_symmetric_and_never_positive():
    bias = alibi_bias(7, 7, alibi_slopes(4), causal=False)
    assert torch.equal(bias, bias.transpose(-1, -2)) and bool((bias <= 0).all())


def _qkv(heads=4, q_len=10, k_len=10, dim=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(2, heads, q_len, dim, generator=g, dtype=torch.float64)
    k = torch.randn(2, heads, k_len, dim, generator=g, dtype=torch.float64)
    v = torch.randn(2, heads, k_len, dim, generator=g, dtype=torch.float64)
    return q, k, v


def test_official_row_constant_bias_agrees_under_a_causal_mask_only():
    # The official code adds +s_h * n (the same in every row) instead of -s_h * (m - n):
    # the two differ by s_h * m, a constant per row, which softmax ignores.
    q, k, v = _qkv()
    slopes = alibi_slopes(4)
    row_constant = row_constant_bias(10, slopes)
    assert torch.equal(row_constant[0, 0], 0.25 * torch.arange(10, dtype=torch.float64))
    for causal in (True, False):
        ours = alibi_attention(q, k, v, slopes, causal=causal)
        official = attention(q, k, v, bias=row_constant.expand(4, 10, 10), causal=causal)
        assert torch.allclose(ours, official, atol=1e-12) == causal


@given(st.integers(1, 64), st.floats(0.01, 100.0))
def test_reach_is_the_first_distance_where_the_penalty_passes(n_heads, nats):
    slopes = alibi_slopes(n_heads)
    reach = alibi_reach(slopes, nats)
    assert bool((slopes * reach >= nats).all())
    assert bool((slopes * (reach - 1) < nats).all())


def test_eight_heads_reach_ten_nats_at_20_to_2560():
    assert alibi_reach(alibi_slopes(8)).tolist() == [20 * 2**h for h in range(8)]


@given(st.floats(0.001, 2.0), st.integers(0, 300))
def test_mean_distance_is_the_mean_of_r_under_the_bias_only_weights(slope, m):
    slopes = torch.tensor([slope], dtype=torch.float64)
    weights = bias_only_weights(slopes, m)[0]
    by_loop = sum(r * float(weights[r]) for r in range(m + 1))
    assert math.isclose(float(mean_distance(slopes, m)[0]), by_loop, rel_tol=1e-12, abs_tol=1e-12)


def test_mean_distance_reaches_its_closed_form_far_into_the_text():
    slopes = torch.tensor([0.5, 1 / 16, 0.0], dtype=torch.float64)
    far = mean_distance(slopes, 2000)
    assert math.isclose(float(far[0]), 1 / (math.exp(0.5) - 1), rel_tol=1e-12)
    assert math.isclose(float(far[1]), 1 / (math.exp(1 / 16) - 1), rel_tol=1e-9)
    assert float(far[2]) == 1000.0  # s = 0: uniform weights, mean m / 2


def test_decoding_one_query_matches_the_last_row_of_the_full_pass():
    q, k, v = _qkv(q_len=12, k_len=12)
    slopes = alibi_slopes(4)
    full = alibi_attention(q, k, v, slopes)
    for t in (0, 5, 11):
        step = alibi_attention(q[..., t : t + 1, :], k[..., : t + 1, :], v[..., : t + 1, :], slopes)
        assert torch.allclose(step[..., 0, :], full[..., t, :], atol=1e-12)


@given(st.integers(1, 6), st.integers(0, 6), st.booleans())
def test_decoding_bias_is_a_block_of_the_full_bias(q_len, start, causal):
    # KV-cache decoding: queries at positions start .. start + q_len - 1 see the
    # rows of the full bias at those positions, for every key so far.
    slopes, k_len = alibi_slopes(3), start + q_len
    full = alibi_bias(k_len, k_len, slopes, causal=causal)
    block = alibi_bias(q_len, k_len, slopes, causal=causal, start=start)
    assert torch.equal(block, full[:, start:, :])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: alibi_slopes(0), ValueError, "n_heads"),
        (lambda: alibi_slopes(2.5), TypeError, "n_heads"),
        (lambda: alibi_bias(-1, 4, alibi_slopes(2)), ValueError, "q_len"),
        (lambda: alibi_bias(4, 0, alibi_slopes(2)), ValueError, "k_len"),
        (lambda: alibi_bias(4, 4, alibi_slopes(2), start=-1), ValueError, "start"),
        (lambda: alibi_bias(4, 4, torch.ones(2, 2)), ValueError, "slopes"),
        (lambda: alibi_bias(4, 4, torch.tensor([0.5, float("nan")])), ValueError, "slopes"),
        (lambda: alibi_attention(*_qkv(), alibi_slopes(3)), ValueError, "slopes"),
        (lambda: row_constant_bias(0, alibi_slopes(2)), ValueError, "k_len"),
        (lambda: alibi_reach(alibi_slopes(2), nats=0), ValueError, "nats"),
        (lambda: alibi_reach(torch.tensor([0.5, 0.0])), ValueError, "slopes"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.skipif(not flex_attention_available(), reason="FlexAttention not in this torch")
@pytest.mark.parametrize(
    ("q_len", "k_len", "causal"), [(64, 64, True), (100, 100, False), (3, 130, True)]
)
def test_fused_path_equals_the_materialised_bias(q_len, k_len, causal):
    # float32: FlexAttention's compiled CPU kernel; 3 queries after 127 cached keys
    # is the KV-cache decoding case.
    q, k, v = (t.float() for t in _qkv(q_len=q_len, k_len=k_len, dim=16, seed=q_len))
    slopes = alibi_slopes(4)
    fused = alibi_attention(q, k, v, slopes, causal=causal, fused=True)
    materialised = alibi_attention(q, k, v, slopes, causal=causal)
    assert torch.allclose(fused, materialised, atol=2e-5)


def test_alibi_benchmark_reports_every_path_against_sdpa():
    from pe_book import bench

    rows = bench.alibi_benchmark(seq_lens=(32,), batch=1, heads=2, dim=8, repeats=1)
    names = [name for _, name, _, _, _ in rows]
    assert names == list(bench.ALIBI_PATHS) and rows[0][3] == 1.0
    assert all(ms > 0 and largest > 0 for _, _, ms, _, largest in rows)


def test_compiled_buffers_sees_a_score_tensor_made_inside_compiled_code():
    """The profiler nets out a compiled region; reading the generated code does not."""
    from pe_book import measure

    q = torch.randn(4, 128, 16)
    scores_inside = torch.compile(lambda q: torch.softmax(q @ q.transpose(-1, -2), -1) @ q)
    assert (4, 128, 128) in measure.compiled_buffers(lambda: scores_inside(q))


def test_flex_alibi_allocates_nothing_larger_than_its_output():
    from pe_book import bench

    buffers = bench.flex_alibi_buffers(batch=1, heads=2, seq_len=256, dim=16)
    assert buffers and all(math.prod(shape) <= 1 * 2 * 256 * 16 for shape in buffers), buffers
