"""pe_book.cost: every method measured against NoPE in one run."""

import pytest

from pe_book.cost import cost_study
from pe_book.results import STUDIED


def test_cost_rows_cover_every_method_and_length_with_nope_as_baseline():
    rows = cost_study((16, 32), batch=2, dim=16, n_heads=2, repeats=1)
    assert [(r.seq_len, r.position) for r in rows] == [(n, p) for n in (16, 32) for p in STUDIED]
    for row in rows:
        assert row.train_ms > 0 and row.infer_ms > 0
        assert 0 < row.largest_alloc_mib <= row.total_alloc_mib
        if row.position == "none":
            assert row.train_ratio == row.infer_ratio == 1.0
    by_key = {(r.seq_len, r.position): r.parameters for r in rows}
    assert by_key[(32, "learned")] - by_key[(32, "none")] == 32 * 16  # the table grows with L


def test_cost_study_needs_the_nope_baseline():
    with pytest.raises(ValueError, match="none"):
        cost_study((16,), positions=("rope",))


def test_allocations_see_the_l_by_l_bias_whatever_the_allocator_did():
    import torch

    from pe_book.alibi import alibi_attention, alibi_slopes
    from pe_book.bench import allocations_mib

    q, k, v = torch.randn(3, 1, 4, 512, 16).unbind(0)
    slopes = alibi_slopes(4)
    largest, total = allocations_mib(lambda: alibi_attention(q, k, v, slopes))
    assert total >= largest
    assert largest >= 4 * 512 * 512 * 4 / 2**20  # the (H, L, L) float32 bias: 4 MiB
    plain, _ = allocations_mib(
        lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    )
    assert plain < 1  # the output only: 0.125 MiB
