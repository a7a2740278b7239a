"""pe_book.rope against trusted implementations (pinned test-only dependencies).

- transformers: Llama's `apply_rotary_pos_emb` (rotate_half, the "half" layout) and the
  context-extension formulas of `transformers.modeling_rope_utils` (v5 `rope_parameters` API),
  LongRoPE (`longrope`, Phi-3) and `partial_rotary_factor`; GPT-NeoX's partial rotation;
- rotary-embedding-torch (lucidrains): `RotaryEmbedding.rotate_queries_or_keys`, interleaved pairs.
"""

import pytest
import torch
from rotary_embedding_torch import RotaryEmbedding
from transformers import GPTNeoXConfig, LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.gpt_neox.modeling_gpt_neox import GPTNeoXRotaryEmbedding
from transformers.models.gpt_neox.modeling_gpt_neox import (
    apply_rotary_pos_emb as neox_apply_rotary_pos_emb,
)
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from pe_book import rope, rope_scaling


def test_half_layout_equals_llama_apply_rotary_pos_emb():
    q, k = (
        torch.randn(2, 4, 50, 64, dtype=torch.float64),
        torch.randn(2, 4, 50, 64, dtype=torch.float64),
    )
    angles = rope.rope_angles(50, 64)  # float64, (50, 32)
    emb = torch.cat((angles, angles), dim=-1)[None]  # Llama's (1, L, d) layout of cos/sin
    q_ref, k_ref = apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
    torch.testing.assert_close(rope.apply_rope(q, layout="half"), q_ref, rtol=0, atol=1e-6)
    torch.testing.assert_close(rope.apply_rope(k, layout="half"), k_ref, rtol=0, atol=1e-6)


def test_interleaved_layout_equals_rotary_embedding_torch():
    x = torch.randn(2, 4, 300, 32)
    expected = RotaryEmbedding(dim=32).rotate_queries_or_keys(x)
    # both in float32; the reference forms its angles in float32, pe_book in float64
    torch.testing.assert_close(rope.apply_rope(x), expected, rtol=0, atol=2e-4)


def hf_inverse_frequencies(rope_parameters, dim=64, max_positions=4096, seq_len=None):
    config = LlamaConfig(
        hidden_size=4 * dim,
        num_attention_heads=4,
        head_dim=dim,
        max_position_embeddings=max_positions,
        rope_parameters=rope_parameters,
    )
    function = ROPE_INIT_FUNCTIONS[rope_parameters["rope_type"]]
    return function(config, "cpu", seq_len=seq_len) if seq_len else function(config, "cpu")


@pytest.mark.parametrize(
    ("parameters", "scaling", "seq_len", "max_positions"),
    [
        (
            {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
            rope_scaling.LinearScaling(4.0),
            None,
            4096,
        ),
        (
            {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0},
            rope_scaling.DynamicNTKScaling(2.0, 4096),
            10_000,
            4096,
        ),
        (
            {"rope_type": "dynamic", "factor": 4.0, "rope_theta": 500000.0},
            rope_scaling.DynamicNTKScaling(4.0, 4096),
            3000,
            4096,
        ),
        (
            {
                "rope_type": "yarn",
                "factor": 8.0,
                "rope_theta": 10000.0,
                "original_max_position_embeddings": 4096,
            },
            rope_scaling.YaRNScaling(8.0, 4096),
            None,
            32768,
        ),
        (
            {
                "rope_type": "yarn",
                "factor": 4.0,
                "rope_theta": 1e6,
                "original_max_position_embeddings": 2048,
                "beta_fast": 16.0,
                "beta_slow": 2.0,
            },
            rope_scaling.YaRNScaling(4.0, 2048, 16.0, 2.0),
            None,
            8192,
        ),
        (
            {
                "rope_type": "llama3",
                "factor": 8.0,
                "rope_theta": 500000.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192,
            },
            rope_scaling.Llama3Scaling(),
            None,
            131072,
        ),
    ],
)
def test_scaling_matches_transformers_rope_utils(parameters, scaling, seq_len, max_positions):
    expected, expected_factor = hf_inverse_frequencies(
        parameters, seq_len=seq_len, max_positions=max_positions
    )
    got, factor = rope_scaling.scaled_frequencies(
        64, parameters["rope_theta"], scaling, seq_len=seq_len
    )
    torch.testing.assert_close(
        got.float(), expected, rtol=1e-6, atol=0
    )  # transformers uses float32
    assert factor == pytest.approx(expected_factor)


PHI3_SHORT = [1.0 + 0.02 * i for i in range(32)]  # made-up lists, d = 64: one per pair
PHI3_LONG = [1.0 + 1.5 * i for i in range(32)]


@pytest.mark.parametrize(
    ("parameters", "max_positions", "seq_len", "factor"),
    [
        # Phi-3's configs give no factor: transformers takes max_positions / L_orig
        ({}, 131072, None, 32.0),
        ({}, 131072, 4096, 32.0),  # L = L_orig: still the short list
        ({}, 131072, 4097, 32.0),  # beyond: the long list
        ({"factor": 8.0}, 4096, 10_000, 8.0),
        ({"factor": 8.0, "attention_factor": 1.25}, 4096, 100, 8.0),
        ({"factor": 1.0}, 4096, 10_000, 1.0),  # no extension: attention factor 1
    ],
)
def test_longrope_matches_transformers_rope_utils(parameters, max_positions, seq_len, factor):
    hf = {
        "rope_type": "longrope",
        "rope_theta": 10000.0,
        "short_factor": PHI3_SHORT,
        "long_factor": PHI3_LONG,
        "original_max_position_embeddings": 4096,
        **parameters,
    }
    expected, expected_factor = hf_inverse_frequencies(
        hf, seq_len=seq_len, max_positions=max_positions
    )
    scaling = rope_scaling.LongRoPEScaling(
        PHI3_SHORT, PHI3_LONG, 4096, factor, parameters.get("attention_factor")
    )
    got, attention = rope_scaling.scaled_frequencies(64, 10000.0, scaling, seq_len=seq_len)
    torch.testing.assert_close(got.float(), expected, rtol=1e-6, atol=0)
    assert attention == pytest.approx(expected_factor, rel=1e-12)


@pytest.mark.parametrize(
    ("parameters", "scaling"),
    [
        ({"rope_type": "linear", "factor": 4.0}, rope_scaling.LinearScaling(4.0)),
        (
            {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 1024},
            rope_scaling.YaRNScaling(8.0, 1024),
        ),
        (
            {
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 1024,
            },
            rope_scaling.Llama3Scaling(8.0, 1.0, 4.0, 1024),
        ),
        (
            {
                "rope_type": "longrope",
                "short_factor": PHI3_SHORT[:8],
                "long_factor": PHI3_LONG[:8],
                "factor": 4.0,
                "original_max_position_embeddings": 1024,
            },
            rope_scaling.LongRoPEScaling(PHI3_SHORT[:8], PHI3_LONG[:8], 1024, 4.0),
        ),
    ],
)
def test_partial_rotary_matches_transformers_partial_rotary_factor(parameters, scaling):
    # partial_rotary_factor 0.25 of d = 64: inv_freq holds 64 * 0.25 / 2 = 8 frequencies,
    # b^(-2i/16); pe_book pads them with zeros (unrotated pairs) up to d/2 = 32
    hf = {**parameters, "rope_theta": 10000.0, "partial_rotary_factor": 0.25}
    expected, expected_factor = hf_inverse_frequencies(hf, max_positions=8192, seq_len=2048)
    got, factor = rope_scaling.partial_rotary_frequencies(64, 0.25, 10000.0, scaling, seq_len=2048)
    assert expected.shape == (rope_scaling.rotary_dim(64, 0.25) // 2,) == (8,)
    torch.testing.assert_close(got[:8].float(), expected, rtol=1e-6, atol=0)
    assert bool((got[8:] == 0).all())
    assert factor == pytest.approx(expected_factor)


def test_partial_rotation_equals_gpt_neox_apply_rotary_pos_emb():
    # GPT-NeoX-20B's rotary_pct = 0.25 with d = 96: rotate 24 coordinates, pass 72
    config = GPTNeoXConfig(hidden_size=4 * 96, num_attention_heads=4, rotary_pct=0.25)
    inv_freq, _ = GPTNeoXRotaryEmbedding.compute_default_rope_parameters(config, "cpu")
    theta, _ = rope_scaling.partial_rotary_frequencies(96, 0.25)
    torch.testing.assert_close(theta[:12].float(), inv_freq, rtol=1e-6, atol=0)
    q, k = torch.randn(2, 1, 4, 50, 96, dtype=torch.float64).unbind(0)
    angles = torch.arange(50, dtype=torch.float64)[:, None] * theta[None, :12]
    emb = torch.cat((angles, angles), dim=-1)[None]  # cos/sin of the 24 rotated coordinates
    q_ref, k_ref = neox_apply_rotary_pos_emb(q, k, emb.cos(), emb.sin())
    rotated = rope_scaling.rotary_dim(96, 0.25)
    for x, ref in ((q, q_ref), (k, k_ref)):
        ours = torch.cat((rope.apply_rope(x[..., :rotated], layout="half"), x[..., rotated:]), -1)
        torch.testing.assert_close(ours, ref, rtol=0, atol=1e-6)
