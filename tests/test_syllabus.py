"""pe_book.syllabus and lecture.section_times: every plan's lectures fit 90 minutes with at
least 25 left, and every plan names only sections, exercises and problems that exist."""

import re
from pathlib import Path

import pytest
from notebook_cells import code, markdown, write

from pe_book import guide, lecture, problems, syllabus, workload

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))[1:]


def exercise_labels():
    found = []
    for path in CHAPTERS:
        text = path.read_text(encoding="utf-8")
        found += re.findall(r"\*\*Exercise (\d+\.\d+)", text)
    return found


@pytest.fixture(scope="module")
def plans():
    return syllabus.plans(NOTEBOOKS, exercises=exercise_labels())


def test_sections_split_the_chapter_s_count_exactly():
    for path in CHAPTERS:
        parts = lecture.section_times(path)
        assert sum(p.words for p in parts) == lecture.prose_words(path), path.name
        assert sum(p.cells for p in parts) == lecture.live_cells(path), path.name


def test_sections_follow_headings_anywhere_in_a_cell(tmp_path):
    path = write(
        tmp_path / "07_x.ipynb",
        [
            markdown("# 7 · Title\nintro words"),
            code(),
            markdown("## 7.1 First\none two three\n## An aside\nfour"),
            code(),
            code("skip"),
            markdown("text $$x = y$$ five\n## 7.2 Second\nsix"),
            markdown("## Claims checked"),
            code(),
            markdown("## Exercises\nseven"),
            code(),
            markdown("## Summary\neight"),
            code(),
            markdown("## References\nnine ten"),
        ],
    )
    parts = {p.unit: (p.words, p.cells) for p in lecture.section_times(path)}
    assert parts == {
        "7.intro": (6, 1),
        "7.1": (12, 1),
        "7.2": (4, 0),
        "7.claims": (3, 1),
        "7.exercises": (3, 0),
        "7.summary": (3, 0),
    }
    got = lecture.section_times(path, words_per_minute=2, minutes_per_cell=0.5)
    assert got[1].minutes == 12 / 2 + 1 * 0.5


def test_there_are_plans_of_6_8_10_12_and_14_weeks_one_lecture_a_week(plans):
    assert sorted(plans) == [6, 8, 10, 12, 14]
    assert all(len(p.lectures) == weeks for weeks, p in plans.items())


@pytest.mark.parametrize("weeks", [6, 8, 10, 12, 14])
def test_every_lecture_fits_90_minutes_and_leaves_25_for_exercises(plans, weeks):
    times = syllabus.lecture_times(plans[weeks], NOTEBOOKS)  # raises if one leaves < 25
    assert all(t.total <= 90 - 25 and t.left >= 25 for t in times)
    for t in times:
        assert t.total == pytest.approx((t.present + t.board) * (1 + syllabus.QUESTION_SHARE))


def test_the_model_refuses_a_plan_that_leaves_too_little_and_names_the_lecture(plans):
    with pytest.raises(ValueError, match=r"14-week plan.*lecture 10 \("):
        syllabus.lecture_times(plans[14], NOTEBOOKS, session_minutes=80)


def test_the_full_plan_teaches_every_part_and_sets_every_exercise_and_problem(plans):
    full = plans[14]
    assert workload.cut(full, NOTEBOOKS) == []
    taught = [u for lec in full.lectures for u in lec.teach]
    assert taught == list(syllabus.units(NOTEBOOKS))
    assert sorted(e for lec in full.lectures for e in lec.exercises) == sorted(exercise_labels())
    assert sorted(p for lec in full.lectures for p in lec.problems) == sorted(
        p.label for p in problems.problems()
    )


@pytest.mark.parametrize("weeks", [6, 8, 10, 12])
def test_a_shorter_plan_touches_every_chapter(plans, weeks):
    plan = plans[weeks]
    touched = {int(u.split(".")[0]) for lec in plan.lectures for u in lec.teach + lec.self_study}
    assert touched == set(range(1, 15))


def test_demos_and_boards_sit_on_sections_and_boards_cite_existing_problems():
    units = syllabus.units(NOTEBOOKS)
    assert set(syllabus.demos()) <= set(units) and set(syllabus.boards()) <= set(units)
    labels = {p.label for p in problems.problems()}
    for text in syllabus.boards().values():
        cited = re.findall(r"problems? (\d+\.\d+)", text) + re.findall(r", (\d+\.\d+)\)", text)
        assert cited and set(cited) <= labels, text


def test_assignments_have_rubrics_of_100_and_every_plan_s_weights_add_to_100(plans):
    tasks = syllabus.assignments()
    assert set(tasks) == {"A", "B", "C"}
    assert all(sum(p for _, p in t.rubric) == 100 for t in tasks.values())
    assert all(sum(p.weights.values()) == 100 for p in plans.values())


def test_an_unknown_exercise_or_section_is_refused():
    with pytest.raises(ValueError, match=r"lecture 1: exercises \['1.1', '1.2'"):
        syllabus.plans(NOTEBOOKS, exercises=["2.1"])
    with pytest.raises(ValueError, match="notebooks must be the folder"):
        syllabus.plans(NOTEBOOKS / "missing")
    with pytest.raises(ValueError, match="is not a part of a chapter"):
        syllabus._expand(["3.9"], list(syllabus.units(NOTEBOOKS)))


def test_the_tables_have_a_row_per_lecture(plans):
    plan = plans[10]
    text = guide.markdown_plan(plan, syllabus.lecture_times(plan, NOTEBOOKS))
    first, second = text.split("\n\n")
    assert len(first.splitlines()) == len(second.splitlines()) == 2 + 10
    assert "| 3 | The sinusoidal encoding; shifts are rotations | 3.1, 4.1, 4.3 | 4.3 |" in text
    weights = guide.markdown_weights(plans).splitlines()
    assert len(weights) == 2 + 5 and weights[2].startswith("| 14 weeks | 10 | 20 | 15 |")
    assert "| criterion | points |" in guide.markdown_assignment(
        syllabus.assignments()["B"], plans
    )


def test_ranges_join_consecutive_sections_of_one_chapter():
    labels = ["1.1", "1.2", "1.3", "2.1", "3.intro", "3.1", "3.2", "11.9", "11.10", "12.1"]
    assert guide.ranges(labels) == "1.1–1.3, 2.1, 3.intro, 3.1–3.2, 11.9–11.10, 12.1"


def test_bad_arguments_are_named(plans):
    with pytest.raises(TypeError, match="plan must be"):
        syllabus.lecture_times("14", NOTEBOOKS)
    with pytest.raises(ValueError, match="board_minutes"):
        syllabus.lecture_times(plans[14], NOTEBOOKS, board_minutes=0)
    with pytest.raises(ValueError, match="words_per_minute"):
        syllabus.lecture_times(plans[14], NOTEBOOKS, words_per_minute=-1)
