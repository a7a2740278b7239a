"""pe_book.lecture: the preface's presenting times, from a chapter's words and live cells."""

import json

import pytest

from pe_book import lecture


def write(path, cells):
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    return path


def markdown(text):
    return {"cell_type": "markdown", "source": [text], "metadata": {}}


def code(slide="-"):
    return {"cell_type": "code", "source": ["1"], "metadata": {"slideshow": {"slide_type": slide}}}


def test_words_stop_at_references_and_leave_display_math_out(tmp_path):
    path = write(
        tmp_path / "05_x.ipynb",
        [markdown("one two $$a + b = c$$ three"), markdown("## References\n- many more words")],
    )
    assert lecture.prose_words(path) == 3


def test_live_cells_skip_solutions_and_stop_at_the_exercises(tmp_path):
    cells = [code(), code("skip"), code(), markdown("## Exercises"), code(), code()]
    assert lecture.live_cells(write(tmp_path / "05_x.ipynb", cells)) == 2


def test_minutes_are_words_at_the_rate_plus_a_minute_per_live_cell(tmp_path):
    path = write(tmp_path / "07_x.ipynb", [markdown("w " * 260), code(), code(), code()])
    got = lecture.chapter_time(path, words_per_minute=130, minutes_per_cell=1.0)
    assert got == lecture.ChapterTime("07", 260, 3, 260 / 130 + 3)


def test_every_chapter_fits_a_lecture_by_these_rates():
    from pathlib import Path

    for path in sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert lecture.chapter_time(path).minutes < 60, path.name


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p: lecture.prose_words(str(p)), TypeError, "path must be a pathlib.Path"),
        (lambda p: lecture.prose_words(p.with_suffix(".md")), ValueError, "existing .ipynb"),
        (lambda p: lecture.chapter_time(p, words_per_minute=0), ValueError, "words_per_minute"),
        (lambda p: lecture.chapter_time(p, minutes_per_cell=-1), ValueError, "minutes_per_cell"),
    ],
)
def test_bad_input_is_named(tmp_path, call, error, message):
    path = write(tmp_path / "01_x.ipynb", [markdown("a")])
    with pytest.raises(error, match=message):
        call(path)
