"""The written problems' worked answers and the exam bank stay out of the pe_book package
(issue 27 review, item 8: they shipped in every install through pe_book/data/problems.toml).
They live in the repository's instructor/answers.toml; the package reads them from there
and says clearly what to do when they are absent."""

import tomllib
from pathlib import Path

import pytest

import pe_book
from pe_book import problems

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(pe_book.__file__).resolve().parent


def fragments(text):
    return [line.strip() for line in text.splitlines() if len(line.strip()) >= 40]


def test_the_answers_file_is_outside_the_package_and_holds_every_answer():
    assert problems.ANSWERS == ROOT / "instructor" / "answers.toml"
    assert PACKAGE not in problems.ANSWERS.parents
    found = problems.answers()
    assert set(found) == {p.label for p in problems.problems()}
    assert 10 <= len(problems.exam()) <= 15


def test_no_file_of_the_package_holds_a_line_of_an_answer_or_the_exam_bank():
    secret = [f for text in problems.answers().values() for f in fragments(text)]
    secret += [f for q in problems.exam() for f in fragments(q.question + "\n" + q.answer)]
    assert len(secret) > 100
    leaks = {}
    for path in PACKAGE.rglob("*"):
        if path.suffix in (".toml", ".py", ".txt", ".json", ".md"):
            text = path.read_text(encoding="utf-8", errors="replace")
            hits = [line for line in secret if line in text]
            if hits:
                leaks[str(path.relative_to(PACKAGE))] = hits[0][:60]
    assert not leaks, f"answers inside the package: {leaks}"


def test_package_data_ships_only_the_package_s_own_data_folder():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    shipped = config["tool"]["setuptools"]["package-data"]["pe_book"]
    assert all(glob.startswith("data/") for glob in shipped), shipped
    assert config["tool"]["setuptools"]["packages"]["find"]["include"] == ["pe_book*"]


def test_without_the_answers_file_the_questions_work_and_answers_fail_clearly(
    monkeypatch, tmp_path
):
    monkeypatch.setenv("PE_BOOK_ANSWERS", str(tmp_path / "absent.toml"))
    text = problems.render(include_answers=False)
    assert "**Problem 9.3**" in text and "Exam bank" not in text
    assert len(problems.problems()) >= 3 * 14
    with pytest.raises(problems.AnswersMissing, match="ship with the book's repository"):
        problems.render(include_answers=True)
    with pytest.raises(problems.AnswersMissing, match="PE_BOOK_ANSWERS"):
        problems.exam()
    with pytest.raises(problems.AnswersMissing):
        _ = problems.problems()[0].answer


def test_an_answer_for_a_problem_that_does_not_exist_is_refused(monkeypatch, tmp_path):
    spoiled = tmp_path / "answers.toml"
    spoiled.write_text(
        problems.ANSWERS.read_text(encoding="utf-8").replace('"1.1" = ', '"1.9" = ', 1),
        encoding="utf-8",
    )
    monkeypatch.setenv("PE_BOOK_ANSWERS", str(spoiled))
    with pytest.raises(ValueError, match="do not exist"):
        problems.answers()
