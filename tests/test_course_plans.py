"""What a course plan leaves out, when it sets its assignments and what they cost (issue 27's
review: the 10-week plan never set exercises 4.2 and 13.2 and 18 of the 62 written problems
while its text said nothing was cut; its assignments A and B were set before chapter 11 and
overlapped at about 27 hours in weeks 7-11; rubric A asked for "the stated time" with none
stated)."""

import dataclasses
import re
from pathlib import Path

import pytest

from pe_book import guide, problems, syllabus, workload

ROOT = Path(__file__).parents[1]
NOTEBOOKS = ROOT / "notebooks"
RESULTS = ROOT / "results"
WEEKS = [6, 8, 10, 12, 14]


@pytest.fixture(scope="module")
def plans():
    return syllabus.plans(NOTEBOOKS)


def book_exercises():
    found = []
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))[1:]:
        found += re.findall(r"\*\*Exercise (\d+\.\d+)", path.read_text(encoding="utf-8"))
    return found


def expand(text):
    """Labels named in a rendered list: "2.4, 4.3–4.4, 14.claims" -> {2.4, 4.3, 4.4, 14.claims}."""
    named = set()
    for item in text.split(", "):
        first, _, last = item.strip().partition("–")
        if last:
            chapter, low = first.split(".")
            named |= {f"{chapter}.{k}" for k in range(int(low), int(last.split(".")[1]) + 1)}
        elif item.strip() != "none":
            named.add(first)
    return named


def rendered_lists(plan):
    text = guide.markdown_omitted(plan, NOTEBOOKS)
    return {
        name: expand(found)
        for name, found in re.findall(r"(?m)^- \*\*(.+?):\*\* (.*)$", text)
    }


def not_set(plan):
    """Recomputed here from the lectures, not through workload.omitted."""
    exercises = {e for lec in plan.lectures for e in lec.exercises}
    posed = {p for lec in plan.lectures for p in lec.problems}
    return (
        {e for e in book_exercises() if e not in exercises},
        {p.label for p in problems.problems() if p.label not in posed},
    )


@pytest.mark.parametrize("weeks", WEEKS)
def test_the_lost_list_names_every_exercise_and_problem_a_plan_never_sets(plans, weeks):
    lists = rendered_lists(plans[weeks])
    exercises, posed = not_set(plans[weeks])
    assert lists["Exercises never set"] == exercises
    assert lists["Written problems never set"] == posed


@pytest.mark.parametrize("weeks", WEEKS)
def test_the_lost_list_names_every_part_a_plan_reads_or_cuts(plans, weeks):
    plan = plans[weeks]
    taught = {u for lec in plan.lectures for u in lec.teach}
    read = {u for lec in plan.lectures for u in lec.self_study + lec.read_before} - taught
    everything = set(syllabus.units(NOTEBOOKS))
    lists = rendered_lists(plan)
    assert lists["Read, not presented"] == read
    assert lists["Cut entirely (neither presented nor read)"] == everything - taught - read


def test_a_homework_dropped_from_a_plan_appears_in_its_lost_list(plans):
    """The check the review asked for: drop exercise 4.2 and problem 4.2 from the 14-week plan
    and the rendered list names them (it named nothing before)."""
    full = plans[14]
    assert not workload.omitted(full, NOTEBOOKS)
    fourth = full.lectures[3]
    spoiled = dataclasses.replace(
        fourth,
        exercises=tuple(e for e in fourth.exercises if e != "4.2"),
        problems=tuple(p for p in fourth.problems if p != "4.2"),
    )
    lectures = (*full.lectures[:3], spoiled, *full.lectures[4:])
    lists = rendered_lists(dataclasses.replace(full, lectures=lectures))
    assert lists["Exercises never set"] == {"4.2"}
    assert lists["Written problems never set"] == {"4.2"}


@pytest.mark.parametrize("weeks", WEEKS)
def test_a_plan_s_own_words_name_no_section_and_claim_nothing_cut_only_when_true(plans, weeks):
    plan = plans[weeks]
    assert not re.search(r"\d+\.\d+", plan.lost), f"{weeks} weeks: 'lost' names a section"
    if workload.omitted(plan, NOTEBOOKS):
        assert not re.search(r"(?i)nothing (is )?(cut|dropped|lost)|^nothing", plan.lost)


def test_the_ten_week_plan_sets_every_exercise_but_the_review_s(plans):
    """The second lecturer review (S1): the last week held ten exercises, six problems, the
    review to read and the assignment; the review's exercises are now optional revision."""
    assert workload.omitted(plans[10], NOTEBOOKS).exercises == ("14.1", "14.2", "14.3")
    assert "optional revision" in plans[10].lost


@pytest.mark.parametrize("weeks", WEEKS)
def test_assignments_are_set_after_the_lecture_teaching_their_last_chapter(plans, weeks):
    tasks = syllabus.assignments()
    for task, start, due in plans[weeks].schedule:
        chapters = {str(c) for c in tasks[task].chapters}
        last = max(
            lec.number
            for lec in plans[weeks].lectures
            for u in lec.teach + lec.self_study
            if u.split(".")[0] in chapters
        )
        assert start >= last, f"{weeks} weeks: {task} set after lecture {start}, needs {last}"
        assert due > start


@pytest.mark.parametrize("weeks", WEEKS)
def test_assignment_work_stays_within_the_weekly_bound(plans, weeks):
    tasks = syllabus.assignments()
    load = {}
    for task, start, due in plans[weeks].schedule:
        for week in range(start, due):
            load[week] = load.get(week, 0) + tasks[task].hours / (due - start)
    assert load == pytest.approx(workload.weekly_load(plans[weeks].schedule))
    assert max(load.values()) <= workload.MAX_WEEKLY_HOURS == 8


def test_the_old_ten_week_schedule_is_refused(plans):
    plan = plans[10]
    old = (("A", 7, 10), ("B", 9, 11))
    with pytest.raises(ValueError, match=r"assignment A is set after lecture 7.*by lecture 9"):
        weights = {"exercises": 10, "problems": 20, "A": 35, "exam": 35}
        syllabus._check_plan(10, list(plan.lectures), weights, old[:1], syllabus.assignments())
    heavy = (("A", 9, 11), ("B", 9, 11))
    assert max(workload.weekly_load(heavy).values()) == pytest.approx(13.5)
    weights = {"exercises": 10, "problems": 20, "A": 15, "B": 20, "exam": 35}
    with pytest.raises(ValueError, match="MAX_WEEKLY_HOURS"):
        syllabus._check_plan(10, list(plan.lectures), weights, heavy, syllabus.assignments())


def test_every_assignment_needing_runs_states_a_budget_the_study_s_runs_fit():
    tasks = syllabus.assignments()
    for task in tasks.values():
        if any("time" in criterion for criterion, _ in task.rubric):
            assert task.cpu_minutes > 0, f"assignment {task.id}'s rubric asks for a time"
        if task.cpu_minutes:
            need, runs = guide.measured_budget(task, RESULTS)
            assert runs >= 1 and 0 < need <= task.cpu_minutes, (task.id, need)
    rubric_a = " ".join(c for c, _ in tasks["A"].rubric)
    assert "stated time" not in rubric_a and "CPU budget" in rubric_a
    text = guide.markdown_assignment(tasks["A"], {}, RESULTS)
    assert f"**CPU budget:** {tasks['A'].cpu_minutes} CPU-minutes" in text
    assert "stored runs" in text


def test_run_minutes_reads_the_records_and_refuses_a_wrong_folder():
    found = guide.run_minutes(RESULTS, ["rope"])
    assert found["rope"] and all(m > 0 for m in found["rope"])
    with pytest.raises(ValueError, match="results must be the folder"):
        guide.run_minutes(RESULTS / "missing", ["rope"])


def test_omitted_refuses_what_is_not_a_plan():
    with pytest.raises(TypeError, match="plan must be"):
        workload.omitted("10", NOTEBOOKS)


# -- which slides a shared lecture shows (issue 27 review, item 4) ----------------------

SLIDES = ROOT / "slides"


def test_deck_parts_name_slides_of_their_chapter_s_deck_in_order():
    from pe_book._toml import read_data_toml

    parts = read_data_toml("syllabus.toml")["deck_parts"]
    assert set(parts) <= set(syllabus.units(NOTEBOOKS))
    for chapter in range(1, 15):
        found = guide._part_slides(SLIDES, str(chapter))  # raises on a missing or misordered title
        numbers = [k for ks in found.values() for k in ks]
        total = len(guide.deck_titles(guide._deck(SLIDES, str(chapter))))
        assert numbers == list(range(1, total + 1)), f"chapter {chapter}: every slide, once"


def test_slide_numbers_are_those_the_deck_build_gives():
    """guide.deck_titles counts slides as tools/decks.py cuts a deck into them."""
    import sys

    sys.path.insert(0, str(ROOT / "tools"))
    import decks  # tools/decks.py

    for source in decks.decks():
        built = [
            c.source.split("\n", 1)[0].lstrip("#").strip()
            for c in decks.read_deck(source).cells
            if c.cell_type == "markdown" and c.metadata["slideshow"]["slide_type"] == "slide"
        ]
        assert built == guide.deck_titles(source), source.name


@pytest.mark.parametrize("weeks", WEEKS)
def test_every_lecture_taking_parts_of_chapters_names_slides_that_exist(plans, weeks):
    text = guide.markdown_slides(plans[weeks], SLIDES)
    for lec in plans[weeks].lectures:
        if all(g.isdigit() for g in lec.given):
            continue
        shown = guide.lecture_slides(lec, SLIDES)
        chapters = {u.split(".")[0] for u in lec.teach}
        assert {name[:2].lstrip("0") for name in shown} == chapters, (weeks, lec.number)
        for name, numbers in shown.items():
            total = len(guide.deck_titles(SLIDES / name))
            assert numbers and set(numbers) <= set(range(1, total + 1)), (weeks, name)
        assert f"- lecture {lec.number}: " in text
    if weeks == 14:
        assert "every lecture is whole chapters" in text


def test_a_slide_title_that_no_deck_has_is_refused(monkeypatch):
    from pe_book import _toml

    real = _toml.read_data_toml("syllabus.toml")
    spoiled = {**real, "deck_parts": {**real["deck_parts"], "3.2": "No such slide"}}
    monkeypatch.setattr(guide, "read_data_toml", lambda name: spoiled)
    with pytest.raises(ValueError, match=r"3.2: no slide titled 'No such slide'"):
        guide._part_slides(SLIDES, "3")


# -- slides per lecture (second lecturer review, S1) -----------------------------------


@pytest.mark.parametrize("weeks", WEEKS)
def test_every_lecture_of_every_plan_shows_15_to_25_slides(plans, weeks):
    """The 10-week plan's lecture 10 showed 30 slides (12_cost.md 1-12 and 17-19, 13_models.md
    1-4, 7-16 and 20; 31 once deck 13 gained its iRoPE study slide), against 15 to 25."""
    plan = plans[weeks]
    counts = guide.slide_counts(plan, SLIDES)  # raises naming a lecture outside the range
    for lec, count in zip(plan.lectures, counts, strict=True):
        shown = guide.lecture_slides(lec, SLIDES)
        assert count == sum(len(ks) for ks in shown.values())
        assert 15 <= count <= 25, (weeks, lec.number, count)
    assert guide.SLIDES_PER_LECTURE == range(15, 26)
    table = guide.markdown_plan(plan, syllabus.lecture_times(plan, NOTEBOOKS), SLIDES)
    rows = [line for line in table.split("\n\n")[0].splitlines()[2:]]
    assert [int(row.rstrip(" |").rsplit("|", 1)[1]) for row in rows] == counts


def test_a_lecture_with_too_many_slides_is_refused(plans):
    plan = plans[10]
    crowded = dataclasses.replace(
        plan.lectures[-1],
        teach=("12.intro", "12.1", "12.2", "12.3", "12.7", "13.intro", "13.1", "13.3", "13.4",
               "13.5", "13.summary"),
    )
    old = dataclasses.replace(plan, lectures=(*plan.lectures[:-1], crowded))
    with pytest.raises(ValueError, match=r"10-week plan: a lecture shows 15 to 25 slides.*"
                                         r"lecture 10 \(3[01]\)"):
        guide.slide_counts(old, SLIDES)
