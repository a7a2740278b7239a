"""Speaker notes type no results (issue 27 review, item 5): the notes of decks 03, 05, 07 and
09 typed numbers that matched the chapters only as long as nothing changed (the paper's
wavelength ratio 1.037, the zero crossing 0.62 b, the bfloat16 range 32,000, the 4.5e-5
weight), which tests/test_decks.py let through because they were printed somewhere in the
deck. A slide's numbers come from its cells at build time; its notes refer to them in
words ("printed under the figure"), and may quote a paper's number (pe_book/data/papers.toml)
or name parameters, sections and sources. Reads the deck sources only: no build."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import decks  # tools/decks.py
from test_prose_numbers import PAPERS, printed, result_numbers

SOURCES = decks.decks()


def notes(source: Path) -> list[str]:
    return [
        c.source
        for c in decks.read_deck(source).cells
        if c.cell_type == "markdown" and c.metadata["slideshow"]["slide_type"] == "notes"
    ]


def typed_results(text: str) -> list[str]:
    """Result-like numbers (decimals, percentages, thousands separators: the rule of
    tests/test_prose_numbers.py) in a note, code spans aside, that papers.toml does not quote."""
    return [n for n in result_numbers(re.sub(r"`[^`]*`", "", text)) if not printed(n, PAPERS)]


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_speaker_notes_type_no_result(source):
    found = {n for text in notes(source) for n in typed_results(text)}
    assert not found, (
        f"{source.name}: numbers typed in speaker notes: {sorted(found)}. Print them in a"
        " cell (a `notes`-tagged cell puts what it displays in the notes) or refer to the"
        " slide's printed value in words."
    )


def test_the_check_catches_the_numbers_the_review_found():
    assert typed_results("the paper's ratio is about 1.037, so its 256 pairs") == ["~1.037"]
    assert typed_results("at every 50th position up to 32,000.") == ["32,000"]
    assert typed_results("The integral's zero crossing is x0 b, about 0.62 b.") == ["~0.62"]
    assert typed_results("BLEU 25.7 for both") == []  # quoted from papers.toml
    assert typed_results("section 8.1 and chapter 11") == []
