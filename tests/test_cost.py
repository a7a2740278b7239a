"""pe_book.cost: every method measured against NoPE in one run."""

import pytest

from pe_book.cost import cost_study
from pe_book.model import POSITIONS


def test_cost_rows_cover_every_method_and_length_with_nope_as_baseline():
    rows = cost_study((16, 32), batch=2, dim=16, n_heads=2, repeats=1)
    assert [(r.seq_len, r.position) for r in rows] == [
        (n, p) for n in (16, 32) for p in POSITIONS
    ]
    for row in rows:
        assert row.train_ms > 0 and row.infer_ms > 0 and row.peak_mib >= 0
        if row.position == "none":
            assert row.train_ratio == row.infer_ratio == 1.0
    by_key = {(r.seq_len, r.position): r.parameters for r in rows}
    assert by_key[(32, "learned")] - by_key[(32, "none")] == 32 * 16  # the table grows with L


def test_cost_study_needs_the_nope_baseline():
    with pytest.raises(ValueError, match="none"):
        cost_study((16,), positions=("rope",))
