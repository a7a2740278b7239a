"""How long a chapter takes to present, computed from what it contains (chapter 0).

The preface's lecture plan is not guessed: for each chapter it counts

- the words of prose up to the References, display math left out (the same
  count that holds every chapter to one lecture, ``LECTURE_WORDS``), spoken at
  ``WORDS_PER_MINUTE``;
- the code cells a lecturer runs live, those before the Exercises that the
  slides show (solutions are skipped), at ``MINUTES_PER_CELL`` each: run it,
  read its output or figure aloud;

    minutes = words / WORDS_PER_MINUTE + live cells * MINUTES_PER_CELL.

:func:`section_times` splits the same count by section ("3.2", and "3.intro",
"3.claims", "3.exercises", "3.summary" for the unnumbered parts), so that a lecture
covering part of a chapter can be timed (:mod:`pe_book.syllabus`, the instructor guide).

The plan is one lecture per chapter in a session of ``SESSION_MINUTES``, and
what presenting leaves of the session is exercise time in class:
:func:`lecture_plan` refuses a plan in which a lecture leaves less than
``EXERCISE_MINUTES``. The two rates are assumptions a lecturer can change, not
measurements of a class: 130 words a minute is near the slow end of the 125-150
that public speakers in the US usually speak at (S. E. Lucas, *The Art of
Public Speaking*, 8th ed., 2004, p. 300); one minute a cell is the book's own
allowance.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from pe_book._validate import validate_positive_float

__all__ = [
    "EXERCISE_MINUTES",
    "LECTURE_WORDS",
    "MINUTES_PER_CELL",
    "SESSION_MINUTES",
    "WORDS_PER_MINUTE",
    "ChapterTime",
    "Lecture",
    "SectionTime",
    "chapter_time",
    "lecture_plan",
    "live_cells",
    "prose_words",
    "section_times",
]

#: A chapter is one lecture: at most this many words of prose (BOOK.md).
LECTURE_WORDS = 2500
#: A lecturer explaining mathematics aloud (conversational English runs near 150).
WORDS_PER_MINUTE = 130.0
#: Running one cell live and reading its output or figure.
MINUTES_PER_CELL = 1.0
#: One lecture, one chapter, in a session of this many minutes.
SESSION_MINUTES = 90.0
#: Every lecture leaves at least this many minutes of its session for exercises in class.
EXERCISE_MINUTES = 25.0


def _cells(path: Path) -> list[dict]:
    if not isinstance(path, Path):
        raise TypeError(f"path must be a pathlib.Path to a notebook, got {type(path).__name__}")
    if path.suffix != ".ipynb" or not path.is_file():
        raise ValueError(f"path must be an existing .ipynb file, got {path}")
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _spoken(text: str) -> str:
    """Markdown without what is not read out: display math, and HTML comments (the
    solution markers of pe_book.exercises.notebook, invisible on the page)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)


def prose_words(path: Path) -> int:
    """Words of a chapter's Markdown up to its References, display math ($$...$$) and HTML
    comments left out."""
    text = "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")
    text = _spoken(text.split("## References")[0])
    return len(text.split())


def live_cells(path: Path) -> int:
    """Code cells before the Exercises that the slides show (slide type other than skip)."""
    count = 0
    for cell in _cells(path):
        if cell["cell_type"] == "markdown" and "".join(cell["source"]).startswith("## Exercises"):
            break
        shown = cell.get("metadata", {}).get("slideshow", {}).get("slide_type") != "skip"
        count += cell["cell_type"] == "code" and shown
    return count


@dataclass(frozen=True)
class ChapterTime:
    """One chapter's presenting time: words, live cells, and the minutes they make."""

    chapter: str
    words: int
    cells: int
    minutes: float


def chapter_time(
    path: Path,
    *,
    words_per_minute: float = WORDS_PER_MINUTE,
    minutes_per_cell: float = MINUTES_PER_CELL,
) -> ChapterTime:
    """words / words_per_minute + live cells * minutes_per_cell, for one notebook."""
    rate = validate_positive_float("words_per_minute", words_per_minute)
    per_cell = validate_positive_float("minutes_per_cell", minutes_per_cell)
    words, cells = prose_words(path), live_cells(path)
    return ChapterTime(path.stem.split("_")[0], words, cells, words / rate + cells * per_cell)


@dataclass(frozen=True)
class SectionTime:
    """One part of a chapter and its presenting time (the instructor guide).

    ``unit`` is "N.k" for section k of chapter N, or "N.intro" (title to the first
    numbered section, unnumbered openings included), "N.claims", "N.exercises",
    "N.summary"; an unnumbered heading elsewhere belongs to the part before it.
    """

    unit: str
    words: int
    cells: int
    minutes: float


_HEADING = re.compile(r"^## (\S+)")
_PARTS = {"Claims": "claims", "Exercises": "exercises", "Summary": "summary"}


def section_times(
    path: Path,
    *,
    words_per_minute: float = WORDS_PER_MINUTE,
    minutes_per_cell: float = MINUTES_PER_CELL,
) -> list[SectionTime]:
    """The words, live cells and minutes of each part of a chapter, in order, up to its
    References; the words add up to :func:`prose_words`, the cells before the Exercises to
    :func:`live_cells`: code cells from the Exercises on count as none (they are not presented)."""
    rate = validate_positive_float("words_per_minute", words_per_minute)
    per_cell = validate_positive_float("minutes_per_cell", minutes_per_cell)
    chapter = int(path.stem.split("_")[0]) if path.stem[:2].isdigit() else path.stem
    unit, words, cells, past_exercises = f"{chapter}.intro", {}, {}, False
    for cell in _cells(path):
        if cell["cell_type"] != "markdown":
            shown = cell.get("metadata", {}).get("slideshow", {}).get("slide_type") != "skip"
            live = shown and not past_exercises
            cells[unit] = cells.get(unit, 0) + (cell["cell_type"] == "code" and live)
            continue
        text = _spoken("".join(cell["source"]))
        for line in text.splitlines():
            heading = _HEADING.match(line)
            if heading and heading.group(1) == "References":
                unit = ""
            elif heading and re.fullmatch(r"\d+\.\d+", heading.group(1)):
                unit = heading.group(1)
            elif heading and heading.group(1) in _PARTS:
                unit = f"{chapter}.{_PARTS[heading.group(1)]}"
                past_exercises = past_exercises or unit.endswith(".exercises")
            if unit:
                words[unit] = words.get(unit, 0) + len(line.split())
                cells.setdefault(unit, 0)
    return [
        SectionTime(
            name,
            words.get(name, 0),
            cells[name],
            words.get(name, 0) / rate + cells[name] * per_cell,
        )
        for name in cells
        if name
    ]


@dataclass(frozen=True)
class Lecture:
    """One lecture of the plan: its chapter's presenting time and the minutes left for exercises."""

    number: int
    time: ChapterTime
    exercises: float


def lecture_plan(
    paths: list[Path],
    *,
    session_minutes: float = SESSION_MINUTES,
    exercise_minutes: float = EXERCISE_MINUTES,
    words_per_minute: float = WORDS_PER_MINUTE,
    minutes_per_cell: float = MINUTES_PER_CELL,
) -> list[Lecture]:
    """One lecture per chapter, in the order given: exercises = session - presenting time.

    Raises ValueError naming every chapter that leaves less than ``exercise_minutes``.
    """
    if not isinstance(paths, list) or not paths:
        raise TypeError("paths must be a non-empty list of pathlib.Path notebooks")
    session = validate_positive_float("session_minutes", session_minutes)
    floor = validate_positive_float("exercise_minutes", exercise_minutes)
    plan = []
    for number, path in enumerate(paths, start=1):
        time = chapter_time(
            path, words_per_minute=words_per_minute, minutes_per_cell=minutes_per_cell
        )
        plan.append(Lecture(number, time, session - time.minutes))
    short = [f"{p.time.chapter} ({p.exercises:.0f} min)" for p in plan if p.exercises < floor]
    if short:
        raise ValueError(
            f"every lecture must leave at least exercise_minutes = {floor:g} of its"
            f" {session:g} for exercises; these leave less: {', '.join(short)}"
        )
    return plan
