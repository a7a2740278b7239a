"""make editions: the student edition keeps every exercise running and no solution.

tools/editions.py writes both editions from notebooks/; here into a temporary folder.
The fast tests check the notebooks; the slow ones execute a student chapter in a
fresh kernel and build the student edition's HTML.
"""

import contextlib
import io
import json
import shutil
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from pe_book.exercises import notebook

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import editions  # noqa: E402  (tools/editions.py)

CHAPTERS = sorted(p.stem for p in editions.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("editions")
    assert editions.build(out, html=False) == 0
    return out


def _student(built, stem):
    return json.loads((built / "student" / "notebooks" / f"{stem}.ipynb").read_text())


def test_no_solution_survives_in_the_student_edition(built):
    assert editions.check_student(built) == []
    for stem in CHAPTERS:
        original = json.loads((editions.NOTEBOOKS / f"{stem}.ipynb").read_text())
        student = _student(built, stem)
        text = "\n".join(notebook.source(c) for c in student["cells"])
        stubs = [notebook.source(c) for c in original["cells"]]
        for index in notebook.solution_cells(original):
            for line in notebook.source(original["cells"][index]).splitlines():
                own = line.strip() and not any(line in s for i, s in enumerate(stubs) if i != index)
                assert not (own and line in text), f"{stem}: solution line {line!r} survives"
        assert not any(notebook.source(c).startswith("# Solution") for c in student["cells"])
        assert not any("hide-input" in c["metadata"].get("tags", []) for c in student["cells"])
        assert student["metadata"]["pe_book"] == {"edition": "student"}


def test_the_interview_answers_are_gone_and_the_questions_stay(built):
    student = "\n".join(notebook.source(c) for c in _student(built, "14_review")["cells"])
    assert "*Why does a Transformer need positional encoding?*" in student
    assert "9. *How would you design something better than sinusoids?*" in student
    assert "permutation-equivariant: reordering the tokens" not in student
    assert "SOLUTION" not in student
    instructor = (built / "instructor" / "notebooks" / "14_review.ipynb").read_text()
    assert "permutation-equivariant: reordering the tokens" in instructor


def test_instructor_pages_are_left_out_and_the_problems_lose_their_answers(built):
    pages = {p.name for p in (built / "student" / "notebooks").iterdir()}
    assert not {name for name in pages if name.startswith("instructor")}
    toc = (built / "student" / "notebooks" / "_toc.yml").read_text()
    assert "instructor" not in toc
    if (editions.NOTEBOOKS / "instructor_problems.ipynb").is_file():
        assert "problems.md" in pages and "file: problems" in toc
        from pe_book import problems

        text = (built / "student" / "notebooks" / "problems.md").read_text()
        assert all(f"**Problem {p.label}**" in text for p in problems.problems())
    assert {p.name for p in editions.NOTEBOOKS.glob("*.ipynb")} <= {
        p.name for p in (built / "instructor" / "notebooks").iterdir()
    }


def test_the_check_catches_a_solution_left_in(built, tmp_path):
    """The check itself: the instructor's notebooks in the student's place fail it."""
    shutil.copytree(built / "instructor", tmp_path / "student")
    problems = editions.check_student(tmp_path)
    chapters = {problem.split(":")[0] for problem in problems}
    assert {f"{stem}.ipynb" for stem in CHAPTERS if stem != "00_preface"} <= chapters
    assert any("instructor page" in problem for problem in problems) or not list(
        editions.NOTEBOOKS.glob("instructor*")
    )


def test_every_checker_runs_in_the_student_edition(built):
    """Each chapter's set-up and Exercises section, run as a reader runs them: every
    exercise says "not attempted yet" and nothing raises."""
    for stem in CHAPTERS[1:]:
        nb = nbformat.from_dict(_student(built, stem))
        namespace: dict = {}
        exercises = notebook.exercises(nb)
        sections = notebook.sections(nb)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or sections[index] not in ("set-up", "## Exercises"):
                continue
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(
                    compile(notebook.source(nb.cells[index]), f"{stem}:{index}", "exec"), namespace
                )
            stub = next((ex for ex in exercises if ex.stub == index), None)
            if stub is not None:
                assert f"{stub.name}: not attempted yet." in printed.getvalue(), (stem, stub)
        assert len(exercises) >= 3


@pytest.mark.slow
def test_a_student_chapter_runs_top_to_bottom(built):
    """Chapter 3's student edition in a fresh kernel: no error, every stub says so."""
    path = built / "student" / "notebooks" / "03_sinusoidal.ipynb"
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    for exercise in notebook.exercises(nb):
        printed = "".join(out.get("text", "") for out in nb.cells[exercise.stub].outputs)
        assert f"{exercise.name}: not attempted yet." in printed


@pytest.mark.slow
def test_the_student_html_holds_no_solution(tmp_path):
    """The student edition's HTML book (tools/book.py on its copy): built, checked, and
    no solution line or worked answer on any page."""
    out = tmp_path / "editions"
    assert editions.build(out, html=True) == 0
    html = out / "student" / "html"
    assert (html / "03_sinusoidal.html").is_file() and not list(html.glob("instructor*"))
    text = editions._html_text(html / "03_sinusoidal.html")
    assert "Solution 3.1" not in text and "not attempted yet" in text
    assert "Solution 3.1" in editions._html_text(out / "instructor" / "html" / "03_sinusoidal.html")
