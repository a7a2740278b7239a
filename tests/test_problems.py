"""pe_book.problems: the written problems file is complete and consistent, and renders with and
without its answers (the student edition has none)."""

import copy
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from pe_book import problems

NOTEBOOKS = Path(__file__).parents[1] / "notebooks"


def test_every_chapter_has_three_to_five_problems_and_the_bank_ten_to_fifteen():
    counts = Counter(p.chapter for p in problems.problems())
    assert set(counts) == set(problems.CHAPTERS)
    assert all(3 <= n <= 5 for n in counts.values()), counts
    assert 10 <= len(problems.exam()) <= 15
    assert all(p.points > 0 for p in problems.problems())


def test_the_points_an_answer_awards_add_up_to_the_problem_s_points():
    for item in (*problems.problems(), *problems.exam()):
        awarded = [int(n) for n in re.findall(r"\[(\d+) points?", item.answer)]
        assert awarded, f"answer {item.label} gives no [n points] per part"
        assert sum(awarded) == item.points, f"answer {item.label}: {awarded} != {item.points}"


def test_titles_are_the_chapters_own():
    for chapter, title in problems.titles().items():
        (path,) = NOTEBOOKS.glob(f"{chapter:02d}_*.ipynb")
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"]
        heading = "".join(first).splitlines()[0]
        assert heading == f"# {chapter} · {title}", (path.name, heading)


def test_references_to_other_problems_exist():
    labels = {p.label for p in problems.problems()}
    for item in (*problems.problems(), *problems.exam()):
        for ref in re.findall(r"problems? (\d+\.\d+)", item.question + item.answer):
            assert ref in labels, f"{item.label} refers to problem {ref}, which does not exist"


def test_the_instructor_rendering_holds_every_question_and_answer():
    text = problems.render()
    for item in (*problems.problems(), *problems.exam()):
        assert f"Answer {item.label}\n" in text
        assert item.answer.splitlines()[0][:60] in text
    assert text.count(":::{admonition} Answer") == len(problems.problems()) + len(problems.exam())


def test_the_student_rendering_leaves_every_answer_and_the_exam_bank_out():
    text = problems.render(include_answers=False)
    assert ":::{admonition} Answer" not in text and ":::" not in text
    assert "Exam bank" not in text
    for q in problems.exam():
        assert q.question.splitlines()[0][:60] not in text, f"exam question {q.label} leaks"
    for item in problems.problems():
        assert item.question.splitlines()[0][:60] in text
        for line in item.answer.splitlines():
            if len(line) > 40:
                assert line[:40] not in text, f"answer {item.label} leaks: {line[:40]!r}"


def test_parts_become_paragraphs_and_sections_can_be_chosen():
    text = problems.render(chapters=[9], exam_bank=False, heading="###")
    assert text.startswith("### Chapter 9 · ALiBi")
    assert "Exam bank" not in text and "Chapter 8" not in text
    assert "\n\n(b) List them" in text and "\n\n\n" not in text


def test_display_formulas_are_paragraphs_of_their_own():
    """Inside a paragraph, MyST turns $$...$$ into a dollar sign and inline math (the PDF showed
    nine such formulas as text before render() set them apart)."""
    text = problems.render()
    displays = re.findall(r"(?m)^\$\$.*\$\$$", text)
    assert len(displays) >= 9
    for formula in displays:
        assert f"\n\n{formula}\n\n" in text, formula[:40]


def data():
    return copy.deepcopy(problems.data())


def first_problem_of(chapter, table):
    return next(p for p in table["problem"] if p["chapter"] == chapter)


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda d: d["problem"].remove(first_problem_of(14, d)), r"chapter 14: 2 problems"),
        (lambda d: d["problem"].append({**first_problem_of(1, d), "number": 99}), "numbered"),
        (lambda d: first_problem_of(3, d).update(points=0), "3.1: points must be a positive"),
        (lambda d: first_problem_of(3, d).update(points=True), "points must be a positive"),
        (lambda d: first_problem_of(3, d).update(answer="  "), "3.1: answer must be non-empty"),
        (lambda d: first_problem_of(5, d).update(kind="essay"), "kind must be one of"),
        (lambda d: first_problem_of(5, d).update(chapter=15), "chapter must be one of"),
        (lambda d: d["titles"].pop("7"), r"chapters \[7\] have no title"),
        (lambda d: d.update(exam=d["exam"][:9]), "exam: 9 questions"),
        (lambda d: d["exam"][0].update(chapters=[0]), "exam question 1: chapters"),
    ],
)
def test_a_spoiled_file_is_refused_by_name(spoil, message):
    spoiled = data()
    spoil(spoiled)
    with pytest.raises(ValueError, match=message):
        problems.validate(spoiled)


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="include_answers"):
        problems.render(include_answers="no")
    with pytest.raises(ValueError, match="chapters"):
        problems.render(chapters=[0])
    with pytest.raises(ValueError, match="heading"):
        problems.render(heading="=")
    with pytest.raises(ValueError, match="chapter"):
        problems.problems(15)
    with pytest.raises(TypeError, match="data"):
        problems.validate([])
