"""alibi_slopes and the row-constant bias against BLOOM in Hugging Face `transformers`.

Reference (a pinned test-only dependency): transformers.models.bloom.modeling_bloom
.build_alibi_tensor, which returns the official code's +s_h * n form, shape
(batch * heads, 1, seq_len). BLOOM (BigScience, 2022) is a model trained with ALiBi.
"""

import pytest
import torch
from transformers.models.bloom.modeling_bloom import build_alibi_tensor

from pe_book.alibi import alibi_slopes, row_constant_bias


@pytest.mark.parametrize("n_heads", [1, 2, 3, 5, 8, 12, 16, 32, 64, 112])
def test_row_constant_bias_equals_bloom(n_heads):
    # BLOOM-176B has 112 heads, not a power of two.
    seq_len = 40
    reference = build_alibi_tensor(torch.ones(1, seq_len), n_heads, torch.float64)
    ours = row_constant_bias(seq_len, alibi_slopes(n_heads))
    assert torch.allclose(ours, reference, rtol=1e-6, atol=0)
