"""pe_book.irope: Llama 4's layer plan, temperature tuning, chunked mask and q, k norm.

References: transformers' Llama 4 (models/llama4/modeling_llama4.py, configuration_llama4.py,
masking_utils.chunked_causal_mask_function) run on tiny random configs (no weights), and
Meta's llama-models (models/llama4/model.py), whose functions are transcribed below because
that package needs fairscale and CUDA.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pe_book.attention import causal_mask
from pe_book.irope import (
    chunked_causal_mask,
    qk_norm,
    rope_layers,
    scale_queries,
    temperature_scale,
)
from pe_book.rope import apply_rope


def meta_attn_scales(start_pos, seqlen, floor_scale, attn_scale):
    """Transcribed from Meta's llama-models, models/llama4/model.py, Attention.forward."""
    seq_positions = torch.arange(start_pos, start_pos + seqlen, dtype=torch.float32)
    return torch.log(torch.floor((seq_positions + 1.0) / floor_scale) + 1.0) * attn_scale + 1.0


def meta_chunked_mask(seq_len, attention_chunk_size):
    """Transcribed from Meta's llama-models, models/llama4/model.py."""
    block_pos = torch.abs(
        (torch.arange(seq_len).unsqueeze(0) // attention_chunk_size)
        - (torch.arange(seq_len).unsqueeze(1) // attention_chunk_size)
    )
    token_pos = torch.arange(seq_len).unsqueeze(0) - torch.arange(seq_len).unsqueeze(1)
    return (block_pos == 0) & (token_pos <= 0)


def test_llama4_makes_every_fourth_layer_nope():
    assert rope_layers(8) == (True, True, True, False, True, True, True, False)
    assert rope_layers(5, None) == (True,) * 5
    assert rope_layers(3, 1) == (False,) * 3
    assert rope_layers(0) == ()


@given(st.integers(0, 60), st.integers(1, 9))
def test_nope_layers_are_every_interval_th_counted_from_one(n_layers, interval):
    plan = rope_layers(n_layers, interval)
    nope = [layer for layer, rotates in enumerate(plan) if not rotates]
    assert nope == list(range(interval - 1, n_layers, interval))
    assert len(nope) == n_layers // interval


@settings(max_examples=15)
@given(st.integers(1, 48), st.integers(1, 8))
def test_layer_plan_equals_transformers_llama4_config(n_layers, interval):
    transformers = pytest.importorskip("transformers")
    config = transformers.Llama4TextConfig(
        num_hidden_layers=n_layers, no_rope_layer_interval=interval, attention_chunk_size=16
    )
    plan = rope_layers(n_layers, interval)
    assert plan == tuple(bool(flag) for flag in config.no_rope_layers)
    # transformers gives the RoPE layers the chunked mask, the NoPE layers full attention
    assert config.layer_types == [
        "chunked_attention" if rotates else "full_attention" for rotates in plan
    ]


def test_temperature_is_one_until_floor_scale_then_steps_by_log():
    scale = temperature_scale(5 * 8192)  # Llama 4 defaults: floor_scale 8192, attn_scale 0.1
    assert scale.dtype == torch.float64 and scale.shape == (5 * 8192,)
    assert bool((scale[:8191] == 1).all())
    for k in range(1, 5):  # m + 1 = k * 8192: exactly 1 + 0.1 log(k + 1)
        assert math.isclose(float(scale[k * 8192 - 1]), 1 + 0.1 * math.log(k + 1), rel_tol=1e-15)
        assert float(scale[k * 8192 - 2]) < float(scale[k * 8192 - 1])


def test_temperature_equals_meta_expression_far_out():
    positions = torch.arange(0, 2_000_000, 97)
    ours = temperature_scale(positions)
    meta = torch.cat([meta_attn_scales(int(m), 1, 8192.0, 0.1) for m in positions[::50]])
    diff = (ours[::50] - meta.double()).abs().max().item()
    assert diff < 2e-7, diff  # float32 rounding of the reference's log


@given(
    st.lists(st.integers(0, 10**7), min_size=1, max_size=30),
    st.integers(1, 20_000),
    st.floats(0.0, 2.0),
)
def test_temperature_properties(positions, floor_scale, attn_scale):
    m = torch.tensor(sorted(positions))
    scale = temperature_scale(m, floor_scale, attn_scale)
    assert bool((scale[m + 1 < floor_scale] == 1).all())
    assert bool((scale[1:] >= scale[:-1]).all())  # non-decreasing in m
    # floor(x) in (x - 1, x]: log(x) < log(1 + floor x) <= log(1 + x) for x = (m + 1)/floor_scale
    x = (m.double() + 1) / floor_scale
    far = x >= 1
    growth = scale[far] - 1
    assert bool((growth >= attn_scale * torch.log(x[far]) - 1e-12).all())
    assert bool((growth <= attn_scale * torch.log1p(x[far]) + 1e-12).all())


def test_zero_attn_scale_leaves_queries_alone():
    q = torch.randn(2, 3, 40, 8)
    assert torch.equal(scale_queries(q, start=10**6, floor_scale=4, attn_scale=0.0), q)


def tiny_llama4(**overrides):
    transformers = pytest.importorskip("transformers")
    config = transformers.Llama4TextConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=8,
        num_hidden_layers=4,
        intermediate_size=16,
        intermediate_size_mlp=16,
        vocab_size=8,
        floor_scale=4,  # small, so a few tokens cross several floors
        attn_scale=0.3,
        attention_chunk_size=5,
        **overrides,
    )
    config._attn_implementation = "eager"
    return config


def captured_queries(monkeypatch, layer_idx, calls, config):
    """Run a Llama4TextAttention layer on the given inputs and return the query its
    attention function receives, (batch, H, q_len, d), for each call (a cache links them)."""
    modeling = pytest.importorskip("transformers.models.llama4.modeling_llama4")
    from transformers import DynamicCache

    seen = []
    original = modeling.eager_attention_forward

    def spy(module, query, *args, **kwargs):
        seen.append(query)
        return original(module, query, *args, **kwargs)

    monkeypatch.setattr(modeling, "eager_attention_forward", spy)
    torch.manual_seed(0)
    layer = modeling.Llama4TextAttention(config, layer_idx).double().eval()
    rotary = modeling.Llama4TextRotaryEmbedding(config)
    cache, start = DynamicCache(config=config), 0
    with torch.no_grad():
        for x in calls:
            positions = torch.arange(start, start + x.shape[1])[None]
            layer(x, rotary(x, positions), None, cache=cache)
            start += x.shape[1]
    return layer, seen


def heads(layer, x):
    """q_proj(x) as (batch, H, L, d): the query before any position treatment."""
    return layer.q_proj(x).view(*x.shape[:2], -1, layer.head_dim).transpose(1, 2)


def test_nope_layer_query_equals_transformers_temperature_tuning(monkeypatch):
    config = tiny_llama4()
    prefill = torch.randn(2, 11, 32, dtype=torch.float64)
    step = torch.randn(2, 6, 32, dtype=torch.float64)  # decoding after 11 cached tokens
    layer, seen = captured_queries(monkeypatch, 3, [prefill, step], config)
    assert not layer.use_rope and not hasattr(layer, "qk_norm")
    with torch.no_grad():
        first = scale_queries(heads(layer, prefill), floor_scale=4, attn_scale=0.3)
        second = scale_queries(heads(layer, step), start=11, floor_scale=4, attn_scale=0.3)
    diff = max((first - seen[0]).abs().max().item(), (second - seen[1]).abs().max().item())
    assert diff < 1e-6, diff  # transformers forms the factors in float32
    assert not torch.allclose(second, heads(layer, step).detach())  # the tuning did act


def test_rope_layer_query_is_interleaved_rope_then_qk_norm(monkeypatch):
    config = tiny_llama4(use_qk_norm=True)
    x = torch.randn(2, 9, 32, dtype=torch.float64)
    layer, seen = captured_queries(monkeypatch, 0, [x], config)
    assert layer.use_rope and hasattr(layer, "qk_norm")
    with torch.no_grad():
        rotated = apply_rope(heads(layer, x), base=config.rope_parameters["rope_theta"])
        ours = qk_norm(rotated, eps=config.rms_norm_eps)
    diff = (ours - seen[0]).abs().max().item()
    assert diff < 1e-5, diff  # transformers rotates in float32


def test_qk_norm_equals_transformers_l2norm_and_is_an_rms_norm():
    modeling = pytest.importorskip("transformers.models.llama4.modeling_llama4")
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        x = (torch.randn(3, 4, 10, 16) * 5).to(dtype)
        expected = modeling.Llama4TextL2Norm(1e-5)(x)
        tolerance = 0 if dtype != torch.float64 else 1e-6  # the reference goes via float32
        assert (qk_norm(x) - expected).abs().max().item() <= tolerance
    x = torch.randn(50, 64, dtype=torch.float64)
    norms = qk_norm(x, eps=1e-12).norm(dim=-1)
    assert torch.allclose(norms, torch.full_like(norms, 8.0))  # sqrt(d), not 1
    assert torch.allclose(qk_norm(3 * x, eps=1e-12), qk_norm(x, eps=1e-12))


def chunked_by_loop(q_len, k_len, chunk, start):
    mask = torch.zeros(q_len, k_len, dtype=torch.bool)
    for i in range(q_len):
        for n in range(k_len):
            m = start + i
            mask[i, n] = n <= m and n // chunk == m // chunk
    return mask


@given(st.integers(1, 25), st.integers(1, 8), st.data())
def test_chunked_mask_equals_a_double_loop_and_meta(seq_len, chunk, data):
    q_len = data.draw(st.integers(1, seq_len))
    start = data.draw(st.integers(0, seq_len - q_len))
    got = chunked_causal_mask(seq_len, chunk, q_len=q_len, start=start)
    assert torch.equal(got, chunked_by_loop(q_len, seq_len, chunk, start))
    full = chunked_causal_mask(seq_len, chunk)
    assert torch.equal(full, meta_chunked_mask(seq_len, chunk))
    assert torch.equal(got, full[start : start + q_len])  # decoding sees rows of the full mask


@pytest.mark.parametrize(("seq_len", "chunk", "q_len"), [(5, 3, 5), (20, 4, 20), (13, 5, 3)])
def test_chunked_mask_equals_transformers_mask_function(seq_len, chunk, q_len):
    masking = pytest.importorskip("transformers.masking_utils")
    expected = masking.sdpa_mask(
        batch_size=1,
        q_length=q_len,
        kv_length=seq_len,
        q_offset=seq_len - q_len,
        mask_function=masking.chunked_causal_mask_function(chunk, torch.zeros(1, dtype=int)),
        allow_is_causal_skip=False,
    )[0, 0]
    assert torch.equal(chunked_causal_mask(seq_len, chunk, q_len=q_len), expected)


def test_chunk_longer_than_the_text_is_the_causal_mask_and_chunk_one_the_diagonal():
    assert torch.equal(chunked_causal_mask(9, 9), causal_mask(9, 9))
    assert torch.equal(chunked_causal_mask(9, 100), causal_mask(9, 9))
    assert torch.equal(chunked_causal_mask(6, 1), torch.eye(6, dtype=torch.bool))


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: rope_layers(-1), ValueError, "n_layers"),
        (lambda: rope_layers(4, 0), ValueError, "interval"),
        (lambda: rope_layers(4, 2.0), TypeError, "interval"),
        (lambda: temperature_scale(-3), ValueError, "seq_len"),
        (lambda: temperature_scale(torch.tensor([0, -1])), ValueError, "positions"),
        (lambda: temperature_scale(torch.tensor([0.5])), TypeError, "positions"),
        (lambda: temperature_scale(4, floor_scale=0), ValueError, "floor_scale"),
        (lambda: temperature_scale(4, attn_scale=-0.1), ValueError, "attn_scale"),
        (lambda: temperature_scale(4, attn_scale=float("nan")), ValueError, "attn_scale"),
        (lambda: temperature_scale(4, attn_scale=True), TypeError, "attn_scale"),
        (lambda: scale_queries(torch.ones(4, 2), start=-1), ValueError, "start"),
        (lambda: scale_queries(torch.ones(4, 2, dtype=torch.int64)), TypeError, "q"),
        (lambda: chunked_causal_mask(0, 4), ValueError, "seq_len"),
        (lambda: chunked_causal_mask(8, 0), ValueError, "chunk"),
        (lambda: chunked_causal_mask(4, 2, q_len=5), ValueError, "q_len"),
        (lambda: chunked_causal_mask(4, 2, q_len=2, start=3), ValueError, "start"),
        (lambda: qk_norm(torch.ones(3), eps=0), ValueError, "eps"),
        (lambda: qk_norm(torch.ones(3, dtype=torch.int32)), TypeError, "x"),
    ],
)
def test_bad_input_is_refused(call, error, message):
    with pytest.raises(error, match=message):
        call()
