"""pe_book.sinks: StreamingLLM's rolling cache with attention sinks, and gpt-oss's sink logit.

References: the StreamingLLM authors' code (github.com/mit-han-lab/streaming-llm,
streaming_llm/kv_cache.py, StartRecentKVCache), transcribed below; OpenAI's reference
gpt-oss attention (github.com/openai/gpt-oss, gpt_oss/torch/model.py, sdpa), transcribed;
transformers' GptOssAttention (models/gpt_oss/modeling_gpt_oss.py) run on a tiny random
config (no weights).
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book.sinks import (
    cache_positions,
    sink_attention,
    softmax_with_sink,
    streaming_cache_slots,
)


def official_start_recent(kv, start_size, recent_size):
    """StartRecentKVCache.__call__ of the StreamingLLM repository, sequence dim 2."""
    seq_len = kv.size(2)
    if seq_len <= start_size + recent_size:
        return kv
    return torch.cat([kv[:, :, 0:start_size], kv[:, :, seq_len - recent_size : seq_len]], dim=2)


def official_gpt_oss_sdpa(Q, K, V, S, sm_scale):
    """OpenAI's gpt_oss/torch/model.py sdpa, without its sliding window."""
    n_tokens, n_heads, q_mult, _ = Q.shape
    K = K[:, :, None, :].expand(-1, -1, q_mult, -1)
    V = V[:, :, None, :].expand(-1, -1, q_mult, -1)
    S = S.reshape(n_heads, q_mult, 1, 1).expand(-1, -1, n_tokens, -1)
    mask = torch.triu(Q.new_full((n_tokens, n_tokens), -float("inf")), diagonal=1)
    QK = torch.einsum("qhmd,khmd->hmqk", Q, K) * sm_scale
    QK = torch.cat([QK + mask[None, None], S], dim=-1)
    W = torch.softmax(QK, dim=-1)[..., :-1]
    return torch.einsum("hmqk,khmd->qhmd", W, V).reshape(n_tokens, -1)


def test_paper_example_keeps_four_sinks_and_renumbers_the_cache():
    # Xiao et al. section 3.2: cache [0, 1, 2, 3, 6, 7, 8] decoding token 9 uses 0 .. 7
    assert streaming_cache_slots(9, 4, 3).tolist() == [0, 1, 2, 3, 6, 7, 8]
    keys, query = cache_positions(9, 4, 3)
    assert keys.tolist() == list(range(7)) and query == 7


def slots_by_streaming(seq_len, n_sink, window):
    """Read tokens one at a time, evicting the oldest non-sink token when the cache is full."""
    cache = []
    for token in range(seq_len):
        cache.append(token)
        if len(cache) > n_sink + window:
            del cache[n_sink]
    return cache


@given(st.integers(0, 80), st.integers(0, 6), st.integers(1, 12))
def test_slots_equal_token_by_token_eviction_and_the_official_cache(seq_len, n_sink, window):
    slots = streaming_cache_slots(seq_len, n_sink, window)
    assert slots.dtype == torch.int64
    assert slots.tolist() == slots_by_streaming(seq_len, n_sink, window)
    official = official_start_recent(torch.arange(seq_len)[None, None], n_sink, window)[0, 0]
    assert torch.equal(slots, official)


@given(st.integers(0, 200), st.integers(0, 8), st.integers(1, 30))
def test_positions_are_the_cache_slots_and_the_offset_stays_bounded(seq_len, n_sink, window):
    slots = streaming_cache_slots(seq_len, n_sink, window)
    keys, query = cache_positions(seq_len, n_sink, window)
    kept = min(seq_len, n_sink + window)  # full once the window has filled
    assert slots.numel() == kept and keys.tolist() == list(range(kept)) and query == kept
    offsets = query - keys
    assert all(0 < r <= n_sink + window for r in offsets.tolist())
    if seq_len > n_sink + window and n_sink > 0:
        # in the text the first sink lies seq_len tokens back; in the cache, kept tokens back
        assert int(slots[0]) == 0 and int(offsets[0]) == kept < seq_len


def sink_weights_by_formula(scores, sink):
    """exp(s) / (exp(z_h) + sum exp(s)), in float64 straight from the definition."""
    numerator = scores.double().exp()
    denominator = sink.double().exp()[:, None, None] + numerator.sum(-1, keepdim=True)
    return numerator / denominator


@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 6), st.integers(1, 7), st.integers())
def test_softmax_with_sink_equals_its_definition(batch, heads, q_len, k_len, seed):
    g = torch.Generator().manual_seed(seed % 2**32)
    scores = 3 * torch.randn(batch, heads, q_len, k_len, generator=g, dtype=torch.float64)
    sink = 3 * torch.randn(heads, generator=g, dtype=torch.float64)
    weights = softmax_with_sink(scores, sink)
    assert weights.shape == scores.shape
    assert torch.allclose(weights, sink_weights_by_formula(scores, sink), rtol=1e-12, atol=0)
    assert bool((weights.sum(-1) < 1).all())


def test_sink_at_minus_infinity_is_softmax_and_sink_zero_is_off_by_one():
    scores = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    plain = torch.softmax(scores, dim=-1)
    for sink in (torch.full((3,), -math.inf), torch.full((3,), -1e300, dtype=torch.float64)):
        weights = softmax_with_sink(scores, sink)
        assert torch.allclose(weights, plain, atol=1e-15)
        assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))
    off_by_one = scores.exp() / (1 + scores.exp().sum(-1, keepdim=True))  # Miller's softmax_1
    assert torch.allclose(softmax_with_sink(scores, torch.zeros(3)), off_by_one, atol=1e-15)


def test_the_sink_is_a_key_with_a_fixed_score_and_a_zero_value():
    q, k, v = (torch.randn(2, 4, 7, 8, dtype=torch.float64) for _ in range(3))
    sink = torch.randn(4, dtype=torch.float64)
    scores = q @ k.transpose(-1, -2) / math.sqrt(8)
    scores = scores.masked_fill(torch.ones(7, 7, dtype=torch.bool).triu(1), -math.inf)
    extra = sink[None, :, None, None].expand(2, 4, 7, 1)
    with_column = torch.softmax(torch.cat((scores, extra), -1), -1)  # (2, 4, 7, 8)
    v_zero = torch.cat((v, torch.zeros(2, 4, 1, 8, dtype=torch.float64)), -2)
    assert torch.allclose(softmax_with_sink(scores, sink), with_column[..., :-1], atol=1e-15)
    assert torch.allclose(sink_attention(q, k, v, sink), with_column @ v_zero, atol=1e-14)


def test_no_nan_from_masked_rows_or_extreme_sinks():
    scores = torch.randn(1, 2, 4, 4).masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), -1e9)
    scores[..., 0, :] = -math.inf  # a row with nothing to attend to: all mass on the sink
    for sink in ([-1e30, 5.0], [1e4, -1e4], [3e38, -3e38]):
        weights = softmax_with_sink(scores, torch.tensor(sink))
        assert not bool(torch.isnan(weights).any())
        assert bool((weights[..., 0, :] == 0).all())
    big = torch.full((1, 1, 2, 3), 1e4)  # scores that overflow exp() unless shifted first
    assert torch.allclose(softmax_with_sink(big, torch.tensor([1e4])).sum(-1), torch.tensor(0.75))
    with pytest.raises(ValueError, match="sink"):
        softmax_with_sink(scores, torch.tensor([-math.inf, 0.0]))


def test_decoding_one_query_matches_the_last_row_of_the_full_pass():
    q, k, v = (torch.randn(1, 3, 9, 4, dtype=torch.float64) for _ in range(3))
    sink = torch.randn(3, dtype=torch.float64)
    full = sink_attention(q, k, v, sink)
    for t in (0, 4, 8):
        step = sink_attention(q[..., t : t + 1, :], k[..., : t + 1, :], v[..., : t + 1, :], sink)
        assert torch.allclose(step[..., 0, :], full[..., t, :], atol=1e-14)


def test_sink_attention_equals_openai_reference_sdpa():
    n_tokens, n_kv, q_mult, d_head = 10, 2, 3, 8  # grouped queries: 6 heads share 2 k, v
    Q = torch.randn(n_tokens, n_kv, q_mult, d_head, dtype=torch.float64)
    K, V = (torch.randn(n_tokens, n_kv, d_head, dtype=torch.float64) for _ in range(2))
    S = torch.randn(n_kv * q_mult, dtype=torch.float64)
    expected = official_gpt_oss_sdpa(Q, K, V, S, 1 / math.sqrt(d_head))
    q = Q.reshape(n_tokens, -1, d_head).transpose(0, 1)  # (H, L, d)
    k, v = (t.repeat_interleave(q_mult, dim=1).transpose(0, 1) for t in (K, V))
    ours = sink_attention(q, k, v, S).transpose(0, 1).reshape(n_tokens, -1)
    assert (ours - expected).abs().max().item() < 1e-12


def test_sink_attention_equals_transformers_gpt_oss_eager_attention():
    transformers = pytest.importorskip("transformers")
    modeling = pytest.importorskip("transformers.models.gpt_oss.modeling_gpt_oss")
    config = transformers.GptOssConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=8,
        num_hidden_layers=2,
        intermediate_size=16,
        num_local_experts=2,
        vocab_size=8,
    )
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    layer = modeling.GptOssAttention(config, layer_idx=1).double().eval()  # a full-attention layer
    assert layer.sliding_window is None
    with torch.no_grad():
        layer.sinks.copy_(2 * torch.randn(4))
        x = torch.randn(2, 7, 32, dtype=torch.float64)
        cos, sin = modeling.GptOssRotaryEmbedding(config)(x, torch.arange(7)[None])
        mask = torch.full((7, 7), -math.inf, dtype=torch.float64).triu(1)[None, None]
        expected, expected_weights = layer(x, (cos, sin), mask)

        def split(proj):
            return proj(x).view(2, 7, -1, 8).transpose(1, 2)  # (batch, heads, L, d)

        q, k = modeling.apply_rotary_pos_emb(split(layer.q_proj), split(layer.k_proj), cos, sin)
        k, v = k.repeat_interleave(2, dim=1), split(layer.v_proj).repeat_interleave(2, dim=1)
        heads = sink_attention(q, k, v, layer.sinks)  # (2, 4, 7, 8)
        ours = layer.o_proj(heads.transpose(1, 2).reshape(2, 7, 32))
        weights = softmax_with_sink(q @ k.transpose(-1, -2) * layer.scaling + mask, layer.sinks)
    assert (ours - expected).abs().max().item() < 1e-12
    assert (weights - expected_weights).abs().max().item() < 1e-12
    assert bool((weights.sum(-1) < 1).all())


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: streaming_cache_slots(-1, 4, 8), ValueError, "seq_len"),
        (lambda: streaming_cache_slots(10, -1, 8), ValueError, "n_sink"),
        (lambda: streaming_cache_slots(10, 4, 0), ValueError, "window"),
        (lambda: streaming_cache_slots(10, 4.0, 8), TypeError, "n_sink"),
        (lambda: cache_positions(10, 4, True), TypeError, "window"),
        (lambda: softmax_with_sink(torch.zeros(3, 4), torch.zeros(3)), ValueError, "scores"),
        (lambda: softmax_with_sink(torch.zeros(2, 3, 4), torch.zeros(3)), ValueError, "sink"),
        (lambda: softmax_with_sink(torch.zeros(2, 3, 4), torch.zeros(2, 1)), ValueError, "sink"),
        (
            lambda: softmax_with_sink(torch.zeros(2, 3, 4), torch.zeros(2, dtype=int)),
            TypeError,
            "sink",
        ),
        (
            lambda: softmax_with_sink(torch.full((2, 3, 4), math.nan), torch.zeros(2)),
            ValueError,
            "scores",
        ),
        (
            lambda: softmax_with_sink(torch.full((2, 3, 4), math.inf), torch.zeros(2)),
            ValueError,
            "scores",
        ),
        (
            lambda: softmax_with_sink(torch.zeros(2, 3, 4), torch.tensor([0, math.inf])),
            ValueError,
            "sink",
        ),
        (
            lambda: sink_attention(
                torch.ones(2, 3, 4), torch.ones(2, 3, 5), torch.ones(2, 3, 5), torch.zeros(2)
            ),
            ValueError,
            "q and k",
        ),
        (
            lambda: sink_attention(
                torch.ones(2, 5, 4), torch.ones(2, 3, 4), torch.ones(2, 3, 4), torch.zeros(2)
            ),
            ValueError,
            "q_len",
        ),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
