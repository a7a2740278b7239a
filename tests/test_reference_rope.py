"""pe_book.rope against trusted implementations (pinned test-only dependencies).

- transformers: Llama's `apply_rotary_pos_emb` (rotate_half, the "half" layout) and the
  context-extension formulas of `transformers.modeling_rope_utils` (v5 `rope_parameters` API);
- rotary-embedding-torch (lucidrains): `RotaryEmbedding.rotate_queries_or_keys`, interleaved pairs.
"""

import pytest
import torch
from rotary_embedding_torch import RotaryEmbedding
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
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
