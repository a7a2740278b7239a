"""Course plans of 6 to 14 weeks, each lecture timed from chapters 1-14 (the instructor guide).

The plans live as data in ``pe_book/data/syllabus.toml``: one 90-minute lecture a week,
each naming the parts of chapters 1-14 it teaches, its board derivations, what is read
on one's own afterwards, and the homework (exercises and written problems by number).
This module reads them, checks them against the chapters, and times every lecture.

**The time model.** A lecture presents the parts it teaches at the preface's rates
(:mod:`pe_book.lecture`: prose at ``WORDS_PER_MINUTE``, ``MINUTES_PER_CELL`` for each
cell run live), derives ``BOARD_MINUTES`` for each derivation done on the board, and
adds ``QUESTION_SHARE`` of all that for questions from the room:

    minutes = (Σ parts' words / 130 + live cells · 1 + boards · 6) · 1.1.

What the session leaves is for exercises or discussion in class, and
:func:`lecture_times` refuses a plan in which a lecture leaves less than
``lecture.EXERCISE_MINUTES`` (25) of ``lecture.SESSION_MINUTES`` (90). The rates are a
model, not a measurement of a class: change them to yours. The model counts every word
of the parts taught, although a lecturer speaks to slides rather than reading the text;
the allowance for board work and questions is what makes it a lecturing pace.

**Reading** is placed by the plan, not only by its data: a part is set as reading once
(the first time the data names it), and a chapter's opening (``"3.intro"``) that no
lecture presents is read *before* the first lecture that teaches from the chapter
(``Lecture.read_before``), never after it.

**Assignments** name the chapters they need; a plan may set one no earlier than the lecture
after which the last of those chapters is taught or read. What a plan leaves out, and
what it asks of a student each week (reading, exercises, written problems, assignments,
within a bound), are computed by :mod:`pe_book.workload`, which :func:`plans` calls to
refuse a plan too heavy in any week. The guide's tables are in :mod:`pe_book.guide`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pe_book import lecture, problems
from pe_book._toml import read_data_toml
from pe_book._validate import validate_positive_float

__all__ = [
    "BOARD_MINUTES",
    "QUESTION_SHARE",
    "Assignment",
    "Lecture",
    "LectureTime",
    "Plan",
    "assignments",
    "boards",
    "demos",
    "exercise_labels",
    "lecture_times",
    "plans",
    "ready_after",
    "units",
]

#: One derivation worked on the board, beyond the slide that states it.
BOARD_MINUTES = 6.0
#: Questions from the room, as a share of the presenting and board time.
QUESTION_SHARE = 0.10


@dataclass(frozen=True)
class Lecture:
    """One lecture of a plan: parts taught and read afterwards (expanded), homework."""

    number: int
    title: str
    teach: tuple[str, ...]  # units, e.g. "3.1", "3.intro"
    boards: tuple[str, ...]
    self_study: tuple[str, ...]
    exercises: tuple[str, ...]
    problems: tuple[str, ...]
    given: tuple[str, ...]  # ``teach`` as the data writes it ("3" for the whole chapter)
    read_before: tuple[str, ...] = ()  # chapter openings read before it, not presented


@dataclass(frozen=True)
class Assignment:
    """A larger assignment spanning chapters, with its rubric (criterion, points).

    ``chapters`` are those it needs taught before it is set. ``cpu_minutes`` is the CPU
    budget of its runs (0: none to run); ``measured`` names the study's methods whose
    stored runs (``results/study/lm``) the budget is measured from, ``runs`` how many such
    runs the assignment trains."""

    id: str
    title: str
    chapters: tuple[int, ...]
    hours: int
    statement: str
    rubric: tuple[tuple[str, int], ...]
    cpu_minutes: int = 0
    measured: tuple[str, ...] = ()
    runs: int = 0


@dataclass(frozen=True)
class Plan:
    """A course of ``weeks`` lectures; ``schedule`` holds (assignment id, set after, due before)."""

    weeks: int
    summary: str
    lost: str
    weights: dict[str, int]
    schedule: tuple[tuple[str, int, int], ...]
    lectures: tuple[Lecture, ...]


@dataclass(frozen=True)
class LectureTime:
    """A lecture's minutes: the parts presented, the board, questions, total, and what is left."""

    number: int
    present: float
    board: float
    questions: float
    total: float
    left: float


def _chapter_paths(notebooks: Path) -> list[Path]:
    if not isinstance(notebooks, Path) or not notebooks.is_dir():
        raise ValueError(f"notebooks must be the folder of the chapters, got {notebooks!r}")
    paths = [p for p in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")) if p.stem[:2] != "00"]
    if [int(p.stem[:2]) for p in paths] != list(problems.CHAPTERS):
        raise ValueError(f"{notebooks} must hold chapters 01 to 14, one notebook each")
    return paths


def units(notebooks: Path, **rates: float) -> dict[str, lecture.SectionTime]:
    """Every part of chapters 1-14 but their Exercises, in book order, with its time."""
    return {
        part.unit: part
        for path in _chapter_paths(notebooks)
        for part in lecture.section_times(path, **rates)
        if not part.unit.endswith(".exercises")
    }


@cache
def _data() -> dict[str, Any]:
    return read_data_toml("syllabus.toml")


def boards() -> dict[str, str]:
    """Section id -> the derivation a lecturer works on the board there."""
    return dict(_data()["boards"])


def demos() -> dict[str, str]:
    """Section id -> what a lecturer runs live there."""
    return dict(_data()["demos"])


def assignments() -> dict[str, Assignment]:
    """The larger assignments by id; each rubric's points add up to 100."""
    found = {}
    for entry in _data()["assignment"]:
        rubric = tuple((str(c), int(p)) for c, p in entry["rubric"])
        if sum(p for _, p in rubric) != 100 or any(p <= 0 for _, p in rubric):
            raise ValueError(f"assignment {entry['id']}: rubric points must be > 0 and add to 100")
        text = {key: entry[key] for key in ("id", "title", "hours")}
        chapters, statement = tuple(entry["chapters"]), entry["statement"].strip()
        found[entry["id"]] = Assignment(
            **text,
            chapters=chapters,
            statement=statement,
            rubric=rubric,
            cpu_minutes=int(entry.get("cpu_minutes", 0)),
            measured=tuple(entry.get("measured", ())),
            runs=int(entry.get("runs", 0)),
        )
    return found


def exercise_labels(notebooks: Path) -> list[str]:
    """Every exercise of chapters 1-14 by label ("3.1"), in book order."""
    found: list[str] = []
    for path in _chapter_paths(notebooks):
        found += re.findall(r"\*\*Exercise (\d+\.\d+)", path.read_text(encoding="utf-8"))
    return found


def _expand(specs: Iterable[str], known: list[str], taught: set[str] = frozenset()) -> list[str]:
    """Unit ids from the data's shorthand: "3" is every part of chapter 3 not in ``taught``."""
    out: list[str] = []
    for spec in specs:
        if re.fullmatch(r"\d+", spec):
            out += [u for u in known if u.split(".")[0] == spec and u not in taught]
        elif spec in known:
            out.append(spec)
        else:
            raise ValueError(f"{spec!r} is not a part of a chapter (e.g. '3', '3.2', '3.intro')")
    return out


def _labels(kind: str, labels: list[str], known: set[str], where: str) -> tuple[str, ...]:
    missing = [x for x in labels if x not in known]
    if missing:
        raise ValueError(f"{where}: {kind} {missing} do not exist")
    return tuple(labels)


def plans(notebooks: Path, exercises: Iterable[str] | None = None) -> dict[int, Plan]:
    """The plans by number of weeks, checked against the chapters in ``notebooks``.

    ``exercises`` (labels such as "3.1") are the exercises that exist (default: those of
    the chapters); a homework naming another is refused. Every part a plan teaches or
    assigns must exist, every board derivation must be on a section the lecture teaches,
    the weights must add up to 100 and name the plan's assignments, an assignment must be
    set no earlier than the lecture after which its chapters are taught (:func:`ready_after`),
    and no week may ask more than ``MAX_WEEKLY_HOURS`` of assignment work (:func:`weekly_load`).
    """
    known = list(units(notebooks))
    exercises = exercise_labels(notebooks) if exercises is None else list(exercises)
    posed = {p.label for p in problems.problems()}
    board_text, tasks = boards(), assignments()
    found = {}
    for entry in _data()["plan"]:
        weeks = int(entry["weeks"])
        taught: set[str] = set()
        lectures = []
        for number, raw in enumerate(entry["lecture"], start=1):
            where = f"{weeks}-week plan, lecture {number}"
            teach = _expand(raw["teach"], known)
            taught |= set(teach)
            bad = [b for b in raw.get("boards", []) if b not in teach or b not in board_text]
            if bad:
                raise ValueError(
                    f"{where}: boards {bad} are not sections it teaches with a derivation"
                )
            lectures.append((number, raw, teach, where))
        before = _openings(lectures, known, taught)
        built, read = [], {u for found in before.values() for u in found}
        for number, raw, teach, where in lectures:
            study = [
                u for u in dict.fromkeys(_expand(raw.get("self_study", []), known, taught))
                if u not in read
            ]
            read |= set(study)
            ex = raw.get("exercises", [])
            built.append(
                Lecture(
                    number,
                    raw["title"],
                    tuple(teach),
                    tuple(raw.get("boards", [])),
                    tuple(study),
                    _labels("exercises", ex, set(exercises), where),
                    _labels("problems", raw.get("problems", []), posed, where),
                    tuple(raw["teach"]),
                    before.get(number, ()),
                )
            )
        schedule = tuple((a["id"], int(a["set"]), int(a["due"])) for a in entry["assignments"])
        _check_plan(weeks, built, entry["weights"], schedule, tasks, units(notebooks))
        found[weeks] = Plan(
            weeks, entry["summary"], entry["lost"], dict(entry["weights"]), schedule, tuple(built)
        )
    return found


def _openings(
    lectures: list[tuple[int, dict, list[str], str]], known: list[str], taught: set[str]
) -> dict[int, tuple[str, ...]]:
    """Lecture number -> the chapter openings read before it: for every chapter a plan
    teaches from, its ``N.intro`` when no lecture presents it, before the first lecture
    that teaches a part of the chapter."""
    found: dict[int, list[str]] = {}
    seen: set[str] = set()
    for number, _, teach, _ in lectures:
        for chapter in dict.fromkeys(u.split(".")[0] for u in teach):
            opening = f"{chapter}.intro"
            if chapter in seen or opening in taught or opening not in known:
                seen.add(chapter)
                continue
            seen.add(chapter)
            found.setdefault(number, []).append(opening)
    return {n: tuple(units_) for n, units_ in found.items()}


def _check_plan(
    weeks: int,
    lectures: list[Lecture],
    weights: dict[str, int],
    schedule: tuple[tuple[str, int, int], ...],
    tasks: dict[str, Assignment],
    parts: dict[str, lecture.SectionTime] | None = None,
) -> None:
    where = f"{weeks}-week plan"
    if len(lectures) != weeks:
        raise ValueError(f"{where}: {len(lectures)} lectures, one a week expected")
    if sum(weights.values()) != 100 or any(w <= 0 for w in weights.values()):
        raise ValueError(f"{where}: weights must be positive and add up to 100, got {weights}")
    if set(weights) - {"exercises", "problems", "exam"} != {i for i, _, _ in schedule}:
        raise ValueError(f"{where}: weights must name exactly its assignments {schedule}")
    for task, start, due in schedule:
        if task not in tasks or not 1 <= start < due <= weeks + 1:
            raise ValueError(f"{where}: assignment {task} set {start}, due {due} is not possible")
        ready = ready_after(lectures, tasks[task].chapters)
        if start < ready:
            raise ValueError(
                f"{where}: assignment {task} is set after lecture {start}, but its chapters"
                f" {list(tasks[task].chapters)} are taught by lecture {ready}"
            )
    from pe_book import workload  # imports this module: the load lives there

    workload.check_load(where, lectures, schedule, tasks, parts)


def ready_after(lectures: Iterable[Lecture], chapters: Iterable[int]) -> int:
    """The last lecture that teaches, or sets as reading, a part of one of ``chapters``
    (0 when none does): an assignment needing them is set after it, not before."""
    wanted = {str(c) for c in chapters}
    return max(
        (lec.number for lec in lectures for u in lec.teach + lec.self_study + lec.read_before
         if u.split(".")[0] in wanted),
        default=0,
    )


def lecture_times(
    plan: Plan,
    notebooks: Path,
    *,
    session_minutes: float = lecture.SESSION_MINUTES,
    exercise_minutes: float = lecture.EXERCISE_MINUTES,
    board_minutes: float = BOARD_MINUTES,
    question_share: float = QUESTION_SHARE,
    words_per_minute: float = lecture.WORDS_PER_MINUTE,
    minutes_per_cell: float = lecture.MINUTES_PER_CELL,
) -> list[LectureTime]:
    """Every lecture's minutes by the model above; raises ValueError naming each lecture
    that leaves less than ``exercise_minutes`` of ``session_minutes``."""
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a syllabus.Plan, got {type(plan).__name__}")
    session = validate_positive_float("session_minutes", session_minutes)
    floor = validate_positive_float("exercise_minutes", exercise_minutes)
    per_board = validate_positive_float("board_minutes", board_minutes)
    share = validate_positive_float("question_share", question_share)
    parts = units(notebooks, words_per_minute=words_per_minute, minutes_per_cell=minutes_per_cell)
    times = []
    for lec in plan.lectures:
        present = sum(parts[u].minutes for u in lec.teach)
        board = per_board * len(lec.boards)
        questions = share * (present + board)
        total = present + board + questions
        times.append(LectureTime(lec.number, present, board, questions, total, session - total))
    short = [f"lecture {t.number} ({t.left:.0f} min)" for t in times if t.left < floor]
    if short:
        raise ValueError(
            f"{plan.weeks}-week plan: every lecture must leave at least exercise_minutes ="
            f" {floor:g} of its {session:g}; these leave less: {', '.join(short)}"
        )
    return times
