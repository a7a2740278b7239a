"""pe_book.cost: every method measured against NoPE in one run."""

import pytest

from pe_book.cost import cost_study


def test_cost_rows_cover_every_method_path_and_length_with_nope_as_baseline():
    from pe_book import positions

    rows = cost_study((16, 32), tokens=64, dim=16, n_heads=2, repeats=1)
    keys = [(r.seq_len, r.position, r.fused) for r in rows]
    fast = {p for p in positions.names() if positions.build(
        positions.ModelConfig(p, vocab_size=5)).fast_path}  # fmt: skip
    expected = [(n, p, f) for n in (16, 32) for p in positions.names()
                for f in ((True, False) if p in fast else (True,))]  # fmt: skip
    assert keys == expected
    for row in rows:
        assert row.train_ms > 0 and row.infer_ms > 0 and row.batch == 64 // row.seq_len
        assert 0 < row.largest_alloc_mib <= row.total_alloc_mib
        if row.position == "none":
            assert row.train_ratio == row.infer_ratio == 1.0
        uses_kernel = row.fused and row.position in {"shaw", "t5", "alibi", "kerple", "fire"}
        assert (row.kernel_calls > 0) == uses_kernel and (row.scratch_mib > 0) == uses_kernel
    by_key = {(r.seq_len, r.position): r.parameters for r in rows}
    assert by_key[(32, "learned")] - by_key[(32, "none")] == 32 * 16  # the table grows with L


def test_a_path_past_the_memory_budget_is_not_run_at_the_longer_length():
    rows = cost_study((16, 64), tokens=64, dim=16, n_heads=2, repeats=1,
                      positions=("none", "t5"), budget_mib=0.05)  # fmt: skip
    assert [(r.seq_len, r.position, r.fused) for r in rows] == [
        (16, "none", True), (16, "t5", True), (16, "t5", False), (64, "none", True)]  # fmt: skip


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
