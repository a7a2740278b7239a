"""departures_from_paper rejects source 003's buggy tables, accepts pe_book's; quoted papers."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pe_book import exhibits, papers
from pe_book.sinusoidal import departures_from_paper, offset_distances, sinusoidal_table

dims = st.integers(2, 40).map(lambda half: 2 * half)


@given(st.integers(2, 50), dims, st.sampled_from(["interleaved", "half"]))
def test_pe_book_tables_pass_the_audit(seq_len, dim, layout):
    assert departures_from_paper(sinusoidal_table(seq_len, dim, layout=layout), layout=layout) == []


@given(st.integers(3, 30), dims)
def test_the_questions_code_fails_the_audit(seq_len, dim):
    found = departures_from_paper(exhibits.question_table(seq_len, dim))
    assert any("row 0" in f for f in found)
    assert any("do not turn" in f for f in found)


@given(st.integers(3, 30), dims)
def test_answer_1_breaks_the_pairs(seq_len, dim):
    found = departures_from_paper(exhibits.answer1_table(seq_len, dim))
    assert any("share a frequency" in f for f in found)  # which dimensions share one?
    assert any("row 0" in f for f in found)  # the padding row


@given(st.integers(3, 30), st.integers(3, 40).map(lambda half: 2 * half))
def test_tensor2tensor_differs_only_in_its_frequencies(seq_len, dim):
    found = departures_from_paper(exhibits.tensor2tensor_timing_signal(seq_len, dim), layout="half")
    assert len(found) == 2 and "do not turn" in found[0] and "entries differ" in found[1]
    theta_last = np.arctan2(
        exhibits.tensor2tensor_timing_signal(2, dim)[1, dim // 2 - 1],
        exhibits.tensor2tensor_timing_signal(2, dim)[1, -1],
    )
    assert math.isclose(2 * math.pi / theta_last, 2 * math.pi * 1e4, rel_tol=1e-9)


def test_low_precision_angles_merge_positions_and_pe_book_does_not():
    naive = exhibits.low_precision_table(300, 8, dtype=torch.bfloat16)
    assert torch.equal(naive[256], naive[257])  # 257 is not a bfloat16 number
    ours = sinusoidal_table(300, 8, dtype=torch.bfloat16)
    assert not torch.equal(ours[256], ours[257])
    assert torch.isnan(exhibits.low_precision_table(70_000, 4, dtype=torch.float16)[-1]).all()


def test_audit_tolerance_for_low_precision_tables():
    table = sinusoidal_table(3000, 8, dtype=torch.float16)
    assert departures_from_paper(table, atol=2e-3) == []
    assert departures_from_paper(exhibits.low_precision_table(3000, 8), atol=2e-3)


def test_audit_rejects_bad_shapes():
    with pytest.raises(ValueError, match="even number of columns"):
        departures_from_paper(torch.zeros(4, 3))
    with pytest.raises(ValueError, match=">= 2 rows"):
        departures_from_paper(torch.zeros(1, 4))


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=20), dims)
def test_offset_distances_equal_table_distances(offsets, dim):
    positions = torch.tensor(offsets)
    table = sinusoidal_table(
        torch.cat((torch.tensor([7]), positions + 7)), dim, dtype=torch.float64
    )
    direct = (table[1:] - table[0]).norm(dim=-1)
    torch.testing.assert_close(offset_distances(positions, dim), direct, rtol=0, atol=1e-9)


def test_exhibit_source_drops_the_docstring():
    text = exhibits.source(exhibits.answer1_table)
    assert text.startswith("# keep dim 0 for padding") and '"""' not in text
    assert "fmt:" not in text


def test_quoted_table3_rows():
    table = papers.get("vaswani2017-table3")
    assert table.row("base")["BLEU (dev)"] == 25.8 and table.row("(E)")["BLEU (dev)"] == 25.7
    assert "Vaswani" in table.markdown() and "| base |" in table.markdown()
    with pytest.raises(KeyError, match="rows"):
        table.row("(F)")
    with pytest.raises(KeyError, match="known"):
        papers.get("nope")
