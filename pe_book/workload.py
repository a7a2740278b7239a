"""What a course plan asks of a student each week, and what it leaves out (the instructor guide).

A plan of :mod:`pe_book.syllabus` sets, after each lecture, reading (the parts read after
it, and before the next lecture the sections it teaches and the chapter openings set
before it), exercises, written problems, and the weeks of its assignments. This module
turns that into hours and refuses a plan that asks too much (:func:`check_load`):

- **assignments**: each one's hours (an estimate of the work, not a measurement; only its
  CPU budget is measured) spread evenly over the weeks it runs, at most
  ``MAX_WEEKLY_HOURS`` in any week (:func:`weekly_load`);
- **the week's whole load**: reading at ``READING_WORDS_PER_MINUTE`` (and
  ``lecture.MINUTES_PER_CELL`` a cell), ``EXERCISE_HOURS`` an exercise, ``PROBLEM_HOURS`` a
  written problem, plus the assignments, at most ``MAX_STUDY_HOURS`` in any week
  (:func:`study_load`). The rates are estimates with their reasons below, not measurements
  of students: change them to yours.

**What a plan leaves out** is computed, never written: :func:`omitted` lists the parts a
plan only assigns as reading, the parts it cuts, and the exercises and written problems
it never sets; :func:`lost_text` says in sentences what that means (the chapters never
presented, how much of each other chapter is, how many exercises and problems are never
set, and from which chapters). Chapters 1-14; the guide's tables are in :mod:`pe_book.guide`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pe_book import lecture, problems
from pe_book.syllabus import (
    Assignment,
    Lecture,
    Plan,
    assignments,
    exercise_labels,
    units,
)

__all__ = [
    "EXERCISE_HOURS",
    "MAX_STUDY_HOURS",
    "MAX_WEEKLY_HOURS",
    "PROBLEM_HOURS",
    "READING_WORDS_PER_MINUTE",
    "Omitted",
    "WeekLoad",
    "check_load",
    "cut",
    "lost_text",
    "omitted",
    "reading_hours",
    "study_load",
    "weekly_load",
]

#: The most hours of assignment work a plan asks of a student in any one week: a
#: graduate module's student also does the week's exercises and written problems.
MAX_WEEKLY_HOURS = 8.0
#: Hours for one exercise (an estimate): a function of 5 to 15 lines written against a
#: checker that names the failing case, with its statement read and a failed attempt or
#: two, takes about half an hour.
EXERCISE_HOURS = 0.5
#: Hours for one written problem (an estimate): a derivation or short argument on paper,
#: worth 2 to 6 points, written up to be marked, takes about three quarters of an hour.
PROBLEM_HOURS = 0.75
#: Reading the book on one's own (an estimate): prose with formulas read closely at 50
#: words a minute, well below the 200-300 of ordinary prose, plus ``lecture.MINUTES_PER_CELL``
#: for each cell run and read.
READING_WORDS_PER_MINUTE = 50.0
#: The most hours of work outside the lecture a plan asks in any week: reading,
#: exercises, written problems and assignments together. A graduate module of 7.5 ECTS
#: credits is 187-225 hours of work (25-30 hours a credit, ECTS Users' Guide 2015); over a
#: 10-week term and its exam week that is 17-20 hours a week, of which the lecture takes
#: 1.5 and revision for the exam a part, leaving about 15 for the week's homework.
MAX_STUDY_HOURS = 15.0


@dataclass(frozen=True)
class Omitted:
    """What a plan leaves out: parts only read, parts cut, exercises and problems not set."""

    read: tuple[str, ...]
    cut: tuple[str, ...]
    exercises: tuple[str, ...]
    problems: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.read or self.cut or self.exercises or self.problems)


@dataclass(frozen=True)
class WeekLoad:
    """Hours of work in week ``week`` (from lecture ``week`` to the next, or to the exam)."""

    week: int
    reading: float
    exercises: float
    problems: float
    assignments: float

    @property
    def total(self) -> float:
        return self.reading + self.exercises + self.problems + self.assignments


def check_load(
    where: str,
    lectures: list[Lecture],
    schedule: Iterable[tuple[str, int, int]],
    tasks: dict[str, Assignment],
    parts: dict[str, lecture.SectionTime] | None = None,
) -> None:
    """Raise ValueError naming the weeks in which a plan's assignments pass
    ``MAX_WEEKLY_HOURS``, or (given the chapters' ``parts``) its whole load passes
    ``MAX_STUDY_HOURS``; ``where`` names the plan."""
    load = weekly_load(schedule, tasks)
    heavy = {week: round(hours, 1) for week, hours in load.items() if hours > MAX_WEEKLY_HOURS}
    if heavy:
        raise ValueError(
            f"{where}: assignments ask more than MAX_WEEKLY_HOURS = {MAX_WEEKLY_HOURS:g}"
            f" hours in weeks {heavy}"
        )
    if parts is not None:
        found = _loads(lectures, schedule, tasks, parts)
        heavy = {w.week: round(w.total, 1) for w in found if w.total > MAX_STUDY_HOURS}
        if heavy:
            raise ValueError(
                f"{where}: reading, exercises, problems and assignments ask more than"
                f" MAX_STUDY_HOURS = {MAX_STUDY_HOURS:g} hours in weeks {heavy}"
            )


def weekly_load(
    schedule: Iterable[tuple[str, int, int]], tasks: dict[str, Assignment] | None = None
) -> dict[int, float]:
    """Week -> hours of assignment work, each assignment's hours spread evenly over the
    weeks from the lecture it is set after to the one it is due before (week ``w`` runs
    from lecture ``w`` to lecture ``w + 1``)."""
    tasks = assignments() if tasks is None else tasks
    load: dict[int, float] = {}
    for task, start, due in schedule:
        for week in range(start, due):
            load[week] = load.get(week, 0.0) + tasks[task].hours / (due - start)
    return dict(sorted(load.items()))


def reading_hours(parts: Iterable[str], sections: dict[str, lecture.SectionTime]) -> float:
    """Hours to read ``parts`` on one's own: their words at ``READING_WORDS_PER_MINUTE`` and
    ``lecture.MINUTES_PER_CELL`` for each live cell."""
    minutes = sum(
        sections[u].words / READING_WORDS_PER_MINUTE + sections[u].cells * lecture.MINUTES_PER_CELL
        for u in parts
    )
    return minutes / 60


def _loads(
    lectures: list[Lecture],
    schedule: Iterable[tuple[str, int, int]],
    tasks: dict[str, Assignment],
    sections: dict[str, lecture.SectionTime],
) -> list[WeekLoad]:
    assigned = weekly_load(schedule, tasks)
    found = []
    for index, lec in enumerate(lectures):
        after = list(lec.self_study)
        if index + 1 < len(lectures):
            after += list(lectures[index + 1].read_before + lectures[index + 1].teach)
        found.append(
            WeekLoad(
                lec.number,
                reading_hours(after, sections),
                EXERCISE_HOURS * len(lec.exercises),
                PROBLEM_HOURS * len(lec.problems),
                assigned.get(lec.number, 0.0),
            )
        )
    return found


def study_load(plan: Plan, notebooks: Path) -> list[WeekLoad]:
    """Every week's hours of work outside the lecture, week ``w`` running from lecture ``w``
    to the next (the last to the exam): reading the parts set after lecture ``w`` and those
    to read before lecture ``w + 1`` (the openings set before it and the sections it
    teaches), lecture ``w``'s exercises and written problems, and the assignments' hours
    (:func:`weekly_load`). Estimates at the module's rates, not measurements."""
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a syllabus.Plan, got {type(plan).__name__}")
    return _loads(list(plan.lectures), plan.schedule, assignments(), units(notebooks))


def cut(plan: Plan, notebooks: Path) -> list[str]:
    """The parts of chapters 1-14 (Exercises aside) a plan neither teaches nor assigns."""
    covered = {u for lec in plan.lectures for u in lec.teach + lec.self_study + lec.read_before}
    return [u for u in units(notebooks) if u not in covered]


def omitted(plan: Plan, notebooks: Path) -> Omitted:
    """What ``plan`` leaves out, from its data alone: the parts it assigns as reading but
    does not present, the parts it cuts (:func:`cut`), and the chapters' exercises and
    written problems that no lecture sets, each in book order."""
    if not isinstance(plan, Plan):
        raise TypeError(f"plan must be a syllabus.Plan, got {type(plan).__name__}")
    taught = {u for lec in plan.lectures for u in lec.teach}
    read = {u for lec in plan.lectures for u in lec.self_study + lec.read_before}
    set_ex = {e for lec in plan.lectures for e in lec.exercises}
    set_pr = {p for lec in plan.lectures for p in lec.problems}
    return Omitted(
        tuple(u for u in units(notebooks) if u in read and u not in taught),
        tuple(cut(plan, notebooks)),
        tuple(e for e in exercise_labels(notebooks) if e not in set_ex),
        tuple(p.label for p in problems.problems() if p.label not in set_pr),
    )


def _chapters(labels: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(label.split(".")[0] for label in labels))


def _listed(items: list[str], noun: str = "") -> str:
    named = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
    return f"{noun}{'s' * (len(items) > 1)} {named}" if noun else named


def lost_text(plan: Plan, notebooks: Path) -> str:
    """What ``plan`` loses, in sentences computed from its lectures (:func:`omitted`): how
    many parts it presents, reads only and cuts; the chapters it never presents, and those
    it presents only in part (with how many of their parts); how many exercises and written
    problems it never sets, and of which chapters. Empty for a plan that omits nothing."""
    left = omitted(plan, notebooks)
    if not left:
        return ""
    every = list(units(notebooks))
    taught = {u for lec in plan.lectures for u in lec.teach}
    shown = {u.split(".")[0] for u in taught}
    never = [c for c in _chapters(every) if c not in shown]
    partly = []
    for c in _chapters(every):
        own = [u for u in every if u.split(".")[0] == c]
        if c in shown and any(u not in taught for u in own):
            presented = sum(u in taught for u in own)
            partly.append(f"{c} ({presented} of its {len(own)}{' parts' * (not partly)})")
    text = [
        f"The plan presents {len(taught)} of the {len(every)} parts of chapters 1-14,"
        f" sets {len(left.read)} as reading only and cuts {len(left.cut) or 'none'}."
    ]
    if never:
        text.append(
            f"It never presents {_listed(never, 'chapter')}: its parts are read"
            + (" or cut" if any(u.split(".")[0] in never for u in left.cut) else "")
            + ", not taught, and no cell of it is run in class."
        )
    if partly:
        text.append(
            "It presents only some parts of " + _listed(partly, "chapter") + "; the rest of"
            " each is read or cut, its cells not run in class."
        )
    total_ex, total_pr = len(exercise_labels(notebooks)), len(problems.problems())
    posed = [p.label for p in problems.problems()]
    for kind, missing, total, labels in (
        ("exercises", left.exercises, total_ex, exercise_labels(notebooks)),
        ("written problems", left.problems, total_pr, posed),
    ):
        if missing:
            bare = [
                c for c in _chapters(missing)
                if all(x in missing for x in labels if x.split(".")[0] == c)
            ]
            if bare == _chapters(missing):
                text.append(
                    f"It never sets {len(missing)} of the {total} {kind}: all those of"
                    f" {_listed(bare, 'chapter')}."
                )
                continue
            none = f"; of {_listed(bare, 'chapter')} none is set" if bare else ""
            text.append(
                f"It never sets {len(missing)} of the {total} {kind}, from"
                f" {_listed(_chapters(missing), 'chapter')}{none}."
            )
    return " ".join(text)
