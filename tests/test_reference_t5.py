"""t5_bucket against T5 in Hugging Face `transformers` (a pinned test-only dependency).

Reference: transformers.models.t5.modeling_t5.T5Attention._relative_position_bucket, itself
adapted from Mesh TensorFlow. It takes memory_position - query_position = n - m, the negative
of the book's r = m - n.
"""

import pytest
import torch
from transformers.models.t5.modeling_t5 import T5Attention

from pe_book.relative import t5_bucket

OFFSETS = torch.arange(-2000, 2001)


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize(
    ("num_buckets", "max_distance"),
    [(32, 128), (16, 64), (64, 256), (32, 1000), (8, 20), (128, 128)],
)
def test_t5_bucket_equals_transformers_for_every_offset(bidirectional, num_buckets, max_distance):
    reference = T5Attention._relative_position_bucket(
        -OFFSETS, bidirectional=bidirectional, num_buckets=num_buckets, max_distance=max_distance
    )
    assert torch.equal(t5_bucket(OFFSETS, bidirectional, num_buckets, max_distance), reference)
