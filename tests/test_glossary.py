"""pe_book.glossary: complete entries, unique English terms, chapters that exist."""

from pathlib import Path

from pe_book import glossary


def test_entries_are_complete_unique_and_point_at_existing_chapters():
    terms = glossary.terms()
    assert len(terms) >= 20
    assert len({t.english.lower() for t in terms}) == len(terms)
    chapters = {p.name[:2] for p in (Path(__file__).parents[1] / "notebooks").glob("*.ipynb")}
    for t in terms:
        assert t.english and t.chinese and t.sources
        assert t.chapter in chapters, t
        assert set(t.sources) <= {"000", "001", "003", "004"}, t


def test_markdown_table_has_a_row_per_term():
    table = glossary.markdown_table().splitlines()
    assert len(table) == 2 + len(glossary.terms())
    assert (
        "| rotary position embedding (RoPE) | 旋转位置编码 / 旋转位置嵌入 | 001, 004 | 7 |" in table
    )
