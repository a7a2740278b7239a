"""The book as one PDF (``make pdf``, tools/pdf.py): every chapter, no broken reference, no error.

The checks of a built PDF run on the file named by ``$PE_BOOK_PDF`` (``make pdf-check``,
a step of ``make test``, builds it and sets it); without it they are skipped, as the
build takes minutes and needs TeX. The chapter titles are read from notebooks/_toc.yml
and the notebooks, so renumbered or added chapters need no change here. The helpers
the checks rest on are tested on small inputs every time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import book  # tools/book.py
import book_sphinx  # tools/book_sphinx.py
import pdf  # tools/pdf.py


@pytest.fixture(scope="module")
def built() -> tuple[Path, pdf.Findings]:
    given = os.environ.get("PE_BOOK_PDF")
    if not given:
        pytest.skip("no PDF to check: `make pdf-check` builds one and sets PE_BOOK_PDF")
    path = Path(given)
    assert path.is_file(), f"PE_BOOK_PDF={given} is not a file: run `make pdf` first"
    return path, pdf.check(path)


def test_pdf_holds_every_chapter_title_of_the_table_of_contents(built):
    titles = pdf.chapter_titles()
    assert len(titles) == len(book.toc_pages()) >= 14
    missing = [p for p in built[1].problems if p.startswith("chapter title")]
    assert not missing, "\n".join(missing)


def test_pdf_page_count_is_that_of_the_whole_book(built):
    assert built[1].pages in pdf.PAGES, (
        f"{built[1].pages} pages, expected {pdf.PAGES.start}..{pdf.PAGES.stop - 1}"
    )


def test_pdf_has_no_unresolved_cross_reference(built):
    assert "??" not in pdf.pdf_text(built[0])


def test_latex_log_has_no_error_undefined_reference_or_missing_glyph(built):
    log = built[0].with_suffix(".log")
    assert log.is_file(), f"no LaTeX log beside the PDF ({log})"
    errors = pdf.latex_errors(log.read_text(errors="replace"))
    assert not errors, "\n".join(errors[:20])


def test_no_code_line_or_table_runs_into_the_margin(built):
    wide = [(page, pt) for page, pt in built[1].overfull if pt > pdf.OVERFULL_PT]
    assert not wide, f"lines over the margin by more than {pdf.OVERFULL_PT} pt: {wide[:20]}"


# -- the helpers, on small inputs ------------------------------------------------------


def test_latex_errors_finds_errors_undefined_references_and_missing_glyphs():
    log = "\n".join(
        [
            "(./book.tex",
            "! Undefined control sequence.",
            "LaTeX Warning: Reference `sec:x' on page 3 undefined on input line 9.",
            "Missing character: There is no 中 (U+4E2D) in font FreeSerif",
            "Overfull \\hbox (1.0pt too wide) in paragraph",
        ]
    )
    found = pdf.latex_errors(log)
    assert len(found) == 3, found
    assert pdf.latex_errors("(./book.tex) [1] [2]") == []


def test_overfull_boxes_belong_to_the_page_shipped_next():
    log = "[1] [2]\nOverfull \\hbox (30.5pt too wide) in paragraph\n[3] [4\n\n]"
    assert pdf.overfull_boxes(log) == [(3, 30.5)]


def test_table_columns_fit_the_line_and_keep_their_longest_word():
    short = book_sphinx.column_widths([["a", "bb"], ["ccc", "d"]], line=90)
    assert sum(short) <= 90
    long_text = " ".join(["word"] * 200)
    cells = [["004-some-claim-id", long_text, "holds"], ["x", "y", "does not hold"]]
    widths = book_sphinx.column_widths(cells, line=90)
    assert sum(widths) == pytest.approx(90)
    assert widths[1] > widths[0] > 5 and widths[2] >= len("holds") + 1
    # a column of code counts wider than the same characters of text
    mono = [[True, False, False], [True, False, False]]
    assert book_sphinx.column_widths(cells, line=90, mono=mono)[0] > widths[0]


def test_cjk_characters_are_collected_for_the_cjk_font():
    assert book_sphinx.cjk_characters("RoPE 旋转位置编码（RoPE）") == sorted("旋转位置编码（）")
    assert book_sphinx.cjk_characters("θ_i = b^(−2i/d)") == []


def test_long_code_runs_in_tables_get_break_points():
    broken = book_sphinx.breakable_code("004_87f13edf937f0989.txt")
    assert broken.replace(book_sphinx.ZWSP, "") == "004_87f13edf937f0989.txt"
    pieces = broken.replace("_", " ").replace(book_sphinx.ZWSP, " ").split()
    assert max(map(len, pieces)) <= book_sphinx.CODE_PIECE + len(".txt")
    assert book_sphinx.breakable_code("seq_len") == "seq_len"
