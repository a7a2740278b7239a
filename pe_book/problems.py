"""Written problems: pen-and-paper questions for chapters 1-14 and an exam bank (instructor guide).

The questions live as data in ``pe_book/data/problems.toml``: for each chapter 1 to 14,
three to five questions (derivations, computations by hand, "what if", reading a
figure) with point values. Their worked answers and the exam bank, whose questions span
chapters, live in the repository's ``instructor/answers.toml``, outside the package, so
the package's wheel (what a student installs) carries no answer. :func:`answers` and
:func:`exam` read that file (or the one ``$PE_BOOK_ANSWERS`` names) and raise
:class:`AnswersMissing`, saying where to get it, when it is absent. :func:`render` writes
the problems as MyST Markdown, the instructor's copy with the answers and the student's
without (``include_answers=False``: the answers are left out, not hidden; it needs no
answers file). Every number an answer states is recomputed with pe_book by
``tests/test_problems_numbers.py``.

The file is checked when it is read (:func:`validate`): every chapter has
``MIN_PER_CHAPTER`` to ``MAX_PER_CHAPTER`` problems numbered 1, 2, ...; points are
positive integers; questions and answers are not empty; kinds come from :data:`KINDS`;
the exam bank holds ``EXAM_SIZE`` questions numbered 1, 2, ... on existing chapters.
"""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pe_book._toml import read_data_toml

__all__ = [
    "ANSWERS",
    "CHAPTERS",
    "EXAM_SIZE",
    "KINDS",
    "MAX_PER_CHAPTER",
    "MIN_PER_CHAPTER",
    "AnswersMissing",
    "ExamQuestion",
    "Problem",
    "answers",
    "answers_path",
    "data",
    "exam",
    "problems",
    "render",
    "titles",
    "validate",
]

#: The chapters that have written problems (the preface has none).
CHAPTERS = tuple(range(1, 15))
#: Each chapter has this many problems at least ...
MIN_PER_CHAPTER = 3
#: ... and at most.
MAX_PER_CHAPTER = 5
#: The exam bank holds between these many questions (inclusive).
EXAM_SIZE = (10, 15)
#: What a problem asks for: prove, compute by hand, predict a change, read a figure.
KINDS = ("derivation", "computation", "what if", "figure")
#: The worked answers and the exam bank: in the repository, beside the package, never in it.
ANSWERS = Path(__file__).resolve().parents[1] / "instructor" / "answers.toml"


class AnswersMissing(FileNotFoundError):
    """The answers file is not on this machine: pe_book was installed without its repository."""


@dataclass(frozen=True)
class Problem:
    """One written problem of a chapter: ``label`` is "chapter.number", e.g. "9.3"."""

    chapter: int
    number: int
    points: int
    kind: str
    question: str

    @property
    def label(self) -> str:
        return f"{self.chapter}.{self.number}"

    @property
    def answer(self) -> str:
        """The worked answer, from the answers file (:class:`AnswersMissing` without it)."""
        return answers()[self.label]


@dataclass(frozen=True)
class ExamQuestion:
    """One question of the exam bank, on one or more chapters; ``label`` is "E<number>"."""

    number: int
    points: int
    chapters: tuple[int, ...]
    question: str
    answer: str

    @property
    def label(self) -> str:
        return f"E{self.number}"


def _text(where: str, field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: {field} must be non-empty text, got {value!r}")
    return value.strip()


def _positive(where: str, field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: {field} must be a positive integer, got {value!r}")
    return value


def _numbered(where: str, numbers: list[int]) -> None:
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"{where}: problems must be numbered 1, 2, ... in order, got {numbers}")


def validate(
    data: dict[str, Any], with_answers: bool = True
) -> tuple[tuple[Problem, ...], tuple[ExamQuestion, ...]]:
    """Check the parsed problems (:func:`data`) and return its problems and exam questions.

    With ``with_answers`` every problem needs its answer and the exam bank must be there;
    without, both are ignored and no exam question is returned. Raises ValueError naming
    the chapter and problem at fault.
    """
    if not isinstance(data, dict):
        raise TypeError(f"data must be the parsed TOML (a dict), got {type(data).__name__}")
    names = data.get("titles", {})
    missing = [c for c in CHAPTERS if not str(names.get(str(c), "")).strip()]
    if missing:
        raise ValueError(f"titles: chapters {missing} have no title")
    found: list[Problem] = []
    for entry in data.get("problem", []):
        chapter = entry.get("chapter")
        where = f"problem {chapter}.{entry.get('number')}"
        if chapter not in CHAPTERS:
            raise ValueError(f"{where}: chapter must be one of {CHAPTERS[0]}..{CHAPTERS[-1]}")
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ValueError(f"{where}: kind must be one of {KINDS}, got {kind!r}")
        if with_answers:
            _text(where, "answer", entry.get("answer"))
        found.append(
            Problem(
                chapter,
                _positive(where, "number", entry.get("number")),
                _positive(where, "points", entry.get("points")),
                kind,
                _text(where, "question", entry.get("question")),
            )
        )
    for chapter in CHAPTERS:
        numbers = [p.number for p in found if p.chapter == chapter]
        if not MIN_PER_CHAPTER <= len(numbers) <= MAX_PER_CHAPTER:
            raise ValueError(
                f"chapter {chapter}: {len(numbers)} problems, expected"
                f" {MIN_PER_CHAPTER} to {MAX_PER_CHAPTER}"
            )
        _numbered(f"chapter {chapter}", numbers)
    if not with_answers:
        return tuple(found), ()
    questions: list[ExamQuestion] = []
    for entry in data.get("exam", []):
        where = f"exam question {entry.get('number')}"
        chapters = tuple(entry.get("chapters", ()))
        if not chapters or not set(chapters) <= set(CHAPTERS):
            raise ValueError(f"{where}: chapters must be a non-empty list from 1..14")
        questions.append(
            ExamQuestion(
                _positive(where, "number", entry.get("number")),
                _positive(where, "points", entry.get("points")),
                chapters,
                _text(where, "question", entry.get("question")),
                _text(where, "answer", entry.get("answer")),
            )
        )
    if not EXAM_SIZE[0] <= len(questions) <= EXAM_SIZE[1]:
        low, high = EXAM_SIZE
        raise ValueError(f"exam: {len(questions)} questions, expected {low} to {high}")
    _numbered("exam", [q.number for q in questions])
    return tuple(found), tuple(questions)


def answers_path() -> Path:
    """The answers file: ``$PE_BOOK_ANSWERS`` when set, else :data:`ANSWERS`."""
    return Path(os.environ.get("PE_BOOK_ANSWERS") or ANSWERS)


@cache
def _answers_file(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise AnswersMissing(
            f"the written problems' answers and the exam bank are not in this installation:"
            f" no {path}. They ship with the book's repository (instructor/answers.toml),"
            " never in the pe_book package; build the instructor edition from a clone, or"
            " set PE_BOOK_ANSWERS to the file. The questions need no answers:"
            " render(include_answers=False)."
        )
    return tomllib.loads(path.read_text(encoding="utf-8"))


def data(with_answers: bool = True) -> dict[str, Any]:
    """The parsed problems file, a fresh copy; ``with_answers`` adds each problem's
    ``answer`` and the ``exam`` bank from :func:`answers_path`."""
    found = copy.deepcopy(read_data_toml("problems.toml"))
    if with_answers:
        extra = copy.deepcopy(_answers_file(answers_path()))
        worked = extra.get("answers", {})
        labels = {f"{p.get('chapter')}.{p.get('number')}" for p in found.get("problem", [])}
        if set(worked) - labels:
            raise ValueError(f"answers for problems that do not exist: {set(worked) - labels}")
        for entry in found.get("problem", []):
            label = f"{entry.get('chapter')}.{entry.get('number')}"
            if label in worked:
                entry["answer"] = worked[label]
        found["exam"] = extra.get("exam", [])
    return found


@cache
def _loaded() -> tuple[tuple[Problem, ...], dict[int, str]]:
    parsed = data(with_answers=False)
    found, _ = validate(parsed, with_answers=False)
    return found, {int(c): t for c, t in parsed["titles"].items()}


@cache
def _worked(path: Path) -> tuple[dict[str, str], tuple[ExamQuestion, ...]]:
    parsed = data(with_answers=True)
    _, questions = validate(parsed)
    return {f"{p['chapter']}.{p['number']}": p["answer"].strip() for p in parsed["problem"]}, (
        questions
    )


def answers() -> dict[str, str]:
    """Problem label ("9.3") -> its worked answer, from the answers file; raises
    :class:`AnswersMissing` when pe_book runs without its repository."""
    return dict(_worked(answers_path())[0])


def problems(chapter: int | None = None) -> tuple[Problem, ...]:
    """Every chapter's problems in order, or those of one chapter (1-14)."""
    if chapter is not None and chapter not in CHAPTERS:
        raise ValueError(f"chapter must be one of 1..14 or None, got {chapter!r}")
    return tuple(p for p in _loaded()[0] if chapter is None or p.chapter == chapter)


def exam() -> tuple[ExamQuestion, ...]:
    """The exam bank, in order, from the answers file (:class:`AnswersMissing` without it)."""
    return _worked(answers_path())[1]


def titles() -> dict[int, str]:
    """Chapter number -> the chapter's title, as its notebook heads it."""
    return dict(_loaded()[1])


#: a line that starts a part of a question or answer: "(a) ", "(iv) "
_PART = re.compile(r"\n(?=\((?:[a-h]|i{1,3}|iv|v)\) )")


def _paragraphs(text: str) -> str:
    """Each part "(a) ...", "(b) ..." and each display formula ($$ ... $$ on a line of its
    own) its own paragraph: Markdown joins adjacent lines, and LaTeX then sets a display
    formula inside a paragraph as text."""
    text = re.sub(r"(?m)^(\$\$.*\$\$)$", "\n\\1\n", _PART.sub("\n\n", text))
    return re.sub(r"\n{3,}", "\n\n", text)


def _answer(label: str, text: str) -> list[str]:
    return [f":::{{admonition}} Answer {label}", ":class: tip", _paragraphs(text), ":::", ""]


def _points(n: int) -> str:
    return f"{n} point" if n == 1 else f"{n} points"


def render(
    include_answers: bool = True,
    *,
    chapters: Iterable[int] | None = None,
    exam_bank: bool = True,
    heading: str = "##",
) -> str:
    """The problems as MyST Markdown: a section per chapter, then the exam bank.

    ``include_answers=False`` leaves every answer out (the student edition) and the exam
    bank too, whose questions live with the answers; ``include_answers=True`` needs the
    answers file (:class:`AnswersMissing`); ``chapters`` picks chapters (default all);
    ``exam_bank=False`` leaves the bank out;
    ``heading`` is the Markdown level of each section ("##" by default).
    """
    if not isinstance(include_answers, bool):
        raise TypeError(f"include_answers must be True or False, got {include_answers!r}")
    if heading not in ("#", "##", "###", "####"):
        raise ValueError(f"heading must be '#' to '####', got {heading!r}")
    wanted = CHAPTERS if chapters is None else tuple(chapters)
    if not wanted or not set(wanted) <= set(CHAPTERS):
        raise ValueError(f"chapters must be chapter numbers from 1..14, got {chapters!r}")
    lines: list[str] = []
    names = titles()
    for chapter in wanted:
        found = problems(chapter)
        total = sum(p.points for p in found)
        lines += [f"{heading} Chapter {chapter} · {names[chapter]}", ""]
        lines += [f"{len(found)} problems, {total} points.", ""]
        for p in found:
            lines += [f"**Problem {p.label}** ({_points(p.points)}; {p.kind})", ""]
            lines += [_paragraphs(p.question), ""]
            lines += _answer(p.label, p.answer) if include_answers else []
    if exam_bank and include_answers:
        bank = exam()
        lines += [f"{heading} Exam bank", ""]
        lines += [f"{len(bank)} questions, {sum(q.points for q in bank)} points.", ""]
        for q in bank:
            on = ", ".join(str(c) for c in q.chapters)
            word = "chapter" if len(q.chapters) == 1 else "chapters"
            lines += [f"**Question {q.label}** ({_points(q.points)}; {word} {on})", ""]
            lines += [_paragraphs(q.question), ""]
            lines += _answer(q.label, q.answer) if include_answers else []
    return "\n".join(lines).rstrip() + "\n"
