"""The instructor guide's tables, from the course plans of :mod:`pe_book.syllabus` (ch. 01-14).

Every table and list the guide shows is printed from the data by these functions, so
the guide cannot disagree with the plans: what each lecture teaches and its minutes
(:func:`markdown_plan`), what a plan leaves out (:func:`markdown_omitted`, from
:func:`pe_book.workload.omitted`), the assignments' load per week
(:func:`markdown_load`), the weights (:func:`markdown_weights`), and each assignment
with its rubric, its schedule in every plan and its CPU budget, measured from the
study's stored runs (:func:`markdown_assignment`, :func:`run_minutes`), and for every
lecture that takes parts of chapters, which slides of which chapter's deck to show
(:func:`lecture_slides`, :func:`markdown_slides`, from the ``[deck_parts]`` of
``pe_book/data/syllabus.toml``), with every lecture's number of slides held to
``SLIDES_PER_LECTURE`` (:func:`slide_counts`).
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterable
from pathlib import Path

from pe_book import syllabus, workload
from pe_book._toml import read_data_toml
from pe_book.syllabus import Assignment, Lecture, LectureTime, Plan

__all__ = [
    "SLIDES_PER_LECTURE",
    "deck_titles",
    "lecture_slides",
    "markdown_assignment",
    "markdown_load",
    "markdown_omitted",
    "markdown_plan",
    "markdown_slides",
    "markdown_weights",
    "measured_budget",
    "ranges",
    "rounded_up",
    "run_minutes",
    "slide_counts",
]

#: The slides a 90-minute lecture shows (issue 27): enough to carry it, few enough to
#: leave time for the board, questions and at least 25 minutes of exercises.
SLIDES_PER_LECTURE = range(15, 26)


def _follows(a: str, b: str) -> bool:
    (head_a, _, tail_a), (head_b, _, tail_b) = a.rpartition("."), b.rpartition(".")
    numbered = tail_a.isdigit() and tail_b.isdigit()
    return head_a == head_b and numbered and int(tail_a) + 1 == int(tail_b)


def ranges(labels: Iterable[str]) -> str:
    """Consecutive labels of one chapter joined: 1.1, 1.2, 1.3, 2.1 -> "1.1–1.3, 2.1"."""
    runs: list[list[str]] = []
    for label in labels:
        if runs and _follows(runs[-1][-1], label):
            runs[-1].append(label)
        else:
            runs.append([label])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs)


def _teaches(lec: Lecture) -> str:
    whole = [g for g in lec.given if g.isdigit()]
    parts = [g for g in lec.given if not g.isdigit()]
    return ", ".join([f"ch. {g}" for g in whole] + ([ranges(parts)] if parts else []))


def _homework(lec: Lecture) -> str:
    text = [f"ex. {ranges(lec.exercises)}"] if lec.exercises else []
    return "; ".join(text + ([f"pr. {ranges(lec.problems)}"] if lec.problems else []))


def rounded_up(minutes: float, step: int = 5) -> int:
    """Minutes rounded up to a multiple of ``step``: the model is not finer than that, and a
    table of them does not change with every edit of a chapter's prose."""
    return step * math.ceil(minutes / step - 1e-9)


def markdown_plan(plan: Plan, times: list[LectureTime], slides: Path | None = None) -> str:
    """Two Markdown tables for a plan: what each lecture teaches and its minutes (rounded up
    to 5, the rest of the session rounded down), with its number of slides when ``slides``
    (the decks' folder) is given; then what is run live, read before and after, and set as
    homework."""
    live = syllabus.demos()
    counts = slide_counts(plan, slides) if slides is not None else None
    extra = (" slides |", " --: |") if counts else ("", "")
    first = [
        f"| # | lecture | teaches | board | min | left |{extra[0]}",
        f"| --- | --- | --- | --- | --: | --: |{extra[1]}",
    ]
    second = [
        "| # | read before | run live | read after | homework |",
        "| --- | --- | --- | --- | --- |",
    ]
    for index, (lec, t) in enumerate(zip(plan.lectures, times, strict=True)):
        board = ", ".join(lec.boards) or "-"
        total = rounded_up(t.total)
        count = f" {counts[index]} |" if counts else ""
        first.append(
            f"| {lec.number} | {lec.title} | {_teaches(lec)} | {board} |"
            f" {total} | {round(t.total + t.left) - total} |{count}"
        )
        shown = ranges([u for u in lec.teach if u in live]) or "-"
        before = _reading(lec.read_before) or "-"
        after = _reading(lec.self_study) or "-"
        second.append(f"| {lec.number} | {before} | {shown} | {after} | {_homework(lec)} |")
    return "\n".join(first) + "\n\n" + "\n".join(second)


def _reading(parts: Iterable[str]) -> str:
    by_chapter: dict[str, list[str]] = {}
    for unit in parts:
        by_chapter.setdefault(unit.split(".")[0], []).append(unit)
    return ", ".join(ranges(found) for found in by_chapter.values())


def markdown_omitted(plan: Plan, notebooks: Path) -> str:
    """What a plan leaves out, computed from its data (:func:`pe_book.workload.omitted`):
    the parts only read, the parts cut, the exercises and problems never set; then the
    plan's own words on what that loses."""
    left = workload.omitted(plan, notebooks)
    lines = [
        f"- **{name}:** {ranges(labels) if labels else 'none'}"
        for name, labels in [
            ("Read, not presented", left.read),
            ("Cut entirely (neither presented nor read)", left.cut),
            ("Exercises never set", left.exercises),
            ("Written problems never set", left.problems),
        ]
    ]
    computed = workload.lost_text(plan, notebooks)
    return "\n".join(lines) + "\n\n**What is lost.** " + " ".join(
        t for t in (computed, plan.lost) if t
    )


def markdown_load(plan: Plan, notebooks: Path | None = None) -> str:
    """The plan's assignment hours in its busiest week, against their bound; with
    ``notebooks``, every week's whole load (reading, exercises, written problems and
    assignments, :func:`pe_book.workload.study_load`) as a table, against its bound."""
    load = workload.weekly_load(plan.schedule)
    if not load:
        text = "**Assignment load:** no assignment."
    else:
        top = max(load.values())
        weeks = [w for w, h in load.items() if h > top - 1e-9]
        where = ranges(f"w.{w}" for w in weeks).replace("w.", "")
        text = (
            f"**Assignment load:** at most {top:.1f} hours in a week"
            f" ({'weeks' if len(weeks) > 1 else 'week'} {where}),"
            f" within the bound of {workload.MAX_WEEKLY_HOURS:g}; each assignment's hours"
            " (an estimate) spread evenly from the lecture it is set after to the one it is"
            " due before."
        )
    if notebooks is None:
        return text
    weeks_ = workload.study_load(plan, notebooks)
    busiest = max(weeks_, key=lambda w: w.total)
    rows = [
        "| week | " + " | ".join(str(w.week) for w in weeks_) + " |",
        "| --- |" + " --: |" * len(weeks_),
    ]
    for name, attr in (
        ("reading", "reading"),
        ("exercises", "exercises"),
        ("written problems", "problems"),
        ("assignments", "assignments"),
        ("**total**", "total"),
    ):
        rows.append(f"| {name} | " + " | ".join(f"{getattr(w, attr):.1f}" for w in weeks_) + " |")
    return (
        text
        + f"\n\n**Weekly load** (hours outside the lecture; estimates at"
        f" {workload.EXERCISE_HOURS:g} h an exercise, {workload.PROBLEM_HOURS:g} h a written"
        f" problem, reading at {workload.READING_WORDS_PER_MINUTE:g} words a minute): at"
        f" most {busiest.total:.1f} hours (week {busiest.week}), within the bound of"
        f" {workload.MAX_STUDY_HOURS:g}.\n\n" + "\n".join(rows)
    )


def markdown_weights(found: dict[int, Plan]) -> str:
    """One Markdown table of every plan's assessment weights, in percent."""
    keys = ["exercises", "problems", *sorted(syllabus.assignments()), "exam"]
    names = {"exercises": "exercises", "problems": "written problems", "exam": "exam"}
    head = "| plan | " + " | ".join(names.get(k, f"assignment {k}") for k in keys) + " |"
    rows = [head, "| --- |" + " --: |" * len(keys)]
    for weeks, plan in sorted(found.items(), reverse=True):
        cells = [str(plan.weights[k]) if k in plan.weights else "-" for k in keys]
        rows.append(f"| {weeks} weeks | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def run_minutes(results: Path, methods: Iterable[str], design: str = "lm") -> dict[str, list]:
    """Method -> the minutes each stored run of the study took (its ``wall_seconds``, on
    one thread, so no less than its CPU time), from ``results/study/<design>/seed*/``."""
    if not isinstance(results, Path) or not (results / "study" / design).is_dir():
        raise ValueError(f"results must be the folder holding study/{design}, got {results!r}")
    return {
        m: [
            json.loads(path.read_text(encoding="utf-8"))["wall_seconds"] / 60
            for path in sorted((results / "study" / design).glob(f"seed*/{m}.json"))
        ]
        for m in methods
    }


def measured_budget(task: Assignment, results: Path) -> tuple[float, int]:
    """The CPU-minutes an assignment's runs need by the study's own runs, and how many runs
    that rests on: ``task.runs`` times the slowest median per-run time among the methods
    it is measured from (a median, so one run slowed by a busy machine does not set it)."""
    found = run_minutes(results, task.measured)
    if not task.measured or not all(found.values()):
        raise ValueError(f"assignment {task.id}: no stored runs of {list(task.measured)}")
    slowest = max(statistics.median(times) for times in found.values())
    return task.runs * slowest, sum(len(times) for times in found.values())


def _budget(task: Assignment, results: Path | None) -> list[str]:
    if not task.cpu_minutes:
        return []
    text = (
        f"**CPU budget:** {task.cpu_minutes} CPU-minutes for every run the assignment needs,"
        " on a machine like the book's (2 cores; two runs side by side)"
    )
    if results is not None and task.measured:
        need, _ = measured_budget(task, results)
        which = task.measured[0] if len(task.measured) == 1 else (
            f"{', '.join(task.measured[:-1])} and {task.measured[-1]} (the slower median)"
        )
        text += (
            f": the study's own stored runs of {which} took a median of"
            f" {need / task.runs:.0f} minutes each on one thread, so its {task.runs} runs need"
            f" about {need:.0f}; the rest is for the extra readings and a slower machine"
        )
    return ["", text + "."]


def markdown_assignment(
    task: Assignment, found: dict[int, Plan], results: Path | None = None
) -> str:
    """An assignment's statement, its CPU budget (measured from ``results`` when given),
    its rubric as a table, and when each plan sets it."""
    when = [
        f"{w} weeks: after lecture {s}, due before "
        + (f"lecture {d}" if d <= w else "the exam week")
        for w, plan in sorted(found.items(), reverse=True)
        for i, s, d in plan.schedule
        if i == task.id
    ]
    lines = [
        f"**Assignment {task.id}: {task.title}** (needs chapters"
        f" {ranges(map(str, task.chapters))}; about {task.hours} hours, an estimate of the"
        " work, not measured: only the CPU budget below is measured)",
        "",
        task.statement,
        *_budget(task, results),
        "",
        "| criterion | points |",
        "| --- | --: |",
    ]
    lines += [f"| {criterion} | {points} |" for criterion, points in task.rubric]
    lines += ["", "Set in the plans of " + ("; ".join(when) if when else "none") + "."]
    return "\n".join(lines)


# -- which slides a lecture shows ------------------------------------------------------


def deck_titles(path: Path) -> list[str]:
    """A deck source's slide titles in order, as tools/decks.py cuts it: the title slide (its
    line "# Title"), then one slide per line "## Heading" outside fenced code; slide k is
    item k - 1."""
    titles, fenced = [], False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,2} ", line):
            titles.append(line.split(" ", 1)[1].strip())
    return titles


def _deck(slides: Path, chapter: str) -> Path:
    found = sorted(Path(slides).glob(f"{int(chapter):02d}_*.md"))
    if len(found) != 1:
        raise ValueError(f"{slides}: expected one deck for chapter {chapter}, found {found}")
    return found[0]


def _part_slides(slides: Path, chapter: str) -> dict[str, list[int]]:
    """A chapter's parts -> the slide numbers of its deck that present them."""
    parts = read_data_toml("syllabus.toml")["deck_parts"]
    deck = _deck(slides, chapter)
    titles = deck_titles(deck)
    starts = []
    for unit, title in parts.items():
        if unit.split(".")[0] != chapter:
            continue
        if title not in titles:
            raise ValueError(f"[deck_parts] {unit}: no slide titled {title!r} in {deck.name}")
        starts.append((titles.index(title) + 1, unit))
    if [u for _, u in sorted(starts)] != [u for _, u in starts]:
        raise ValueError(f"[deck_parts]: chapter {chapter}'s parts are out of order in {deck.name}")
    bounds = [1] + [k for k, _ in starts] + [len(titles) + 1]
    units = [f"{chapter}.intro"] + [u for _, u in starts]
    return {u: list(range(a, b)) for u, a, b in zip(units, bounds[:-1], bounds[1:], strict=True)}


def lecture_slides(lec: Lecture, slides: Path) -> dict[str, list[int]]:
    """Deck file name -> the slides (numbers as the built deck shows them) presenting what
    ``lec`` teaches, in order; a part with no slide of its own adds none."""
    found: dict[str, list[int]] = {}
    for chapter in dict.fromkeys(u.split(".")[0] for u in lec.teach):
        parts = _part_slides(slides, chapter)
        shown = sorted(k for u in lec.teach if u.split(".")[0] == chapter for k in parts.get(u, []))
        if shown:
            found[_deck(slides, chapter).name] = shown
    return found


def _spans(numbers: list[int]) -> str:
    return ranges(f"s.{k}" for k in numbers).replace("s.", "")


def slide_counts(plan: Plan, slides: Path) -> list[int]:
    """Every lecture's number of slides (those :func:`lecture_slides` names); raises
    ValueError naming each lecture outside ``SLIDES_PER_LECTURE``."""
    counts = [sum(len(ks) for ks in lecture_slides(lec, slides).values()) for lec in plan.lectures]
    bad = [
        f"lecture {lec.number} ({n})"
        for lec, n in zip(plan.lectures, counts, strict=True)
        if n not in SLIDES_PER_LECTURE
    ]
    if bad:
        low, high = SLIDES_PER_LECTURE.start, SLIDES_PER_LECTURE.stop - 1
        raise ValueError(
            f"{plan.weeks}-week plan: a lecture shows {low} to {high} slides; these do not:"
            f" {', '.join(bad)}"
        )
    return counts


def markdown_slides(plan: Plan, slides: Path) -> str:
    """For each lecture that takes parts of chapters (not whole ones), the slides of each
    chapter's deck to show; the parts it teaches that no slide presents."""
    lines = []
    for lec in plan.lectures:
        if all(g.isdigit() for g in lec.given):
            continue
        shown = lecture_slides(lec, slides)
        decks = "; ".join(f"`{name}` slides {_spans(ks)}" for name, ks in shown.items())
        bare = [
            u for u in lec.teach
            if not _part_slides(slides, u.split(".")[0]).get(u)
        ]
        extra = f" (no slide: {ranges(bare)}, from the chapter)" if bare else ""
        lines.append(f"- lecture {lec.number}: {decks}{extra}")
    if not lines:
        return "**Slides:** every lecture is whole chapters: show each chapter's deck, all of it."
    head = (
        "**Slides for the lectures that take parts of chapters** (numbers as the built deck"
        " shows them; `make slides`, then jump with the slide number):"
    )
    return head + "\n\n" + "\n".join(lines)
