"""pe_book.lecture: the preface's presenting times, from a chapter's words and live cells."""

import pytest
from notebook_cells import code, markdown, write

from pe_book import lecture


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


def test_every_chapter_leaves_the_exercise_minutes_of_its_lecture():
    from pathlib import Path

    chapters = sorted((Path(__file__).parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    plan = lecture.lecture_plan(chapters)  # raises if one leaves too little
    assert all(p.exercises >= lecture.EXERCISE_MINUTES for p in plan)


def test_a_plan_is_one_lecture_per_chapter_with_the_rest_for_exercises(tmp_path):
    paths = [
        write(tmp_path / "01_a.ipynb", [markdown("w " * 1300), code()]),  # 10 + 1 minutes
        write(tmp_path / "02_b.ipynb", [markdown("w " * 2600), code(), code()]),  # 20 + 2
    ]
    plan = lecture.lecture_plan(paths, session_minutes=90, exercise_minutes=25)
    assert [(p.number, p.time.chapter) for p in plan] == [(1, "01"), (2, "02")]
    assert [p.exercises for p in plan] == [90 - 11, 90 - 22]


def test_a_lecture_that_leaves_too_little_for_exercises_is_refused_by_name(tmp_path):
    paths = [
        write(tmp_path / "01_a.ipynb", [markdown("w " * 130)]),  # 1 minute
        write(tmp_path / "02_b.ipynb", [markdown("w " * 130 * 70)]),  # 70 minutes
    ]
    with pytest.raises(ValueError, match=r"exercise_minutes = 25.*02 \(20 min\)"):
        lecture.lecture_plan(paths, session_minutes=90, exercise_minutes=25)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda p: lecture.prose_words(str(p)), TypeError, "path must be a pathlib.Path"),
        (lambda p: lecture.prose_words(p.with_suffix(".md")), ValueError, "existing .ipynb"),
        (lambda p: lecture.chapter_time(p, words_per_minute=0), ValueError, "words_per_minute"),
        (lambda p: lecture.chapter_time(p, minutes_per_cell=-1), ValueError, "minutes_per_cell"),
        (lambda p: lecture.lecture_plan(p), TypeError, "non-empty list"),
        (lambda p: lecture.lecture_plan([p], session_minutes=0), ValueError, "session_minutes"),
        (lambda p: lecture.lecture_plan([p], exercise_minutes=-5), ValueError, "exercise_minutes"),
    ],
)
def test_bad_input_is_named(tmp_path, call, error, message):
    path = write(tmp_path / "01_x.ipynb", [markdown("a")])
    with pytest.raises(error, match=message):
        call(path)
