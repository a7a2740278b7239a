"""The papers chapter 11 sets beside its own results load, render and keep their key numbers."""

import pytest

from pe_book import papers

IDS = ["kazemnejad2023-length-generalization", "ruoss2023-randomized", "press2022-short-vs-long"]


@pytest.mark.parametrize("table_id", IDS)
def test_the_quoted_tables_load_and_render(table_id):
    table = papers.get(table_id)
    text = table.markdown()
    assert table.paper in text and table.table in text and table.note in text
    assert all(len(row) == len(table.columns) for row in table.rows)
    assert "not quoted" in table.note or "Not quoted" in table.note


def test_nope_ranks_first_and_ape_last_in_figure_1():
    mrr = {row[0]: row[1] for row in papers.get(IDS[0]).rows}
    assert mrr["No Positional Encoding"] == 0.69 and mrr["Absolute Position Embedding"] == 0.22
    assert list(mrr) == sorted(mrr, key=mrr.get, reverse=True)


def test_randomized_encodings_quote_no_per_task_accuracy():
    table = papers.get(IDS[1])
    assert table.row("algorithmic reasoning tasks")["value"] == 15
    assert "Table 1 is not quoted" in table.note


def test_alibi_trained_short_beats_sinusoidal_trained_long_with_less_memory():
    table = papers.get(IDS[2])
    short, long = table.row("CC100 ALiBi L=1024"), table.row("CC100 sinusoidal L=2048")
    assert short["L_valid"] == long["L_valid"] == 2048
    assert round(long["valid perplexity"] - short["valid perplexity"], 2) == 0.09  # Section 4.2
    assert round(long["memory (GB)"] - short["memory (GB)"], 1) == 3.1  # Section 4.2
    assert short["train hours (k)"] == long["train hours (k)"]  # trained for the same time
    # at the training length ALiBi is behind sinusoidal for L = 64 and 128 (Table 5)
    for length in (64, 128):
        alibi, sinusoidal = (table.row(f"WT103 {m} L={length}") for m in ("ALiBi", "sinusoidal"))
        assert alibi["valid perplexity"] > sinusoidal["valid perplexity"]
