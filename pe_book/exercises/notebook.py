"""Where a chapter's exercises sit in its notebook, and the student edition cut from it.

Every chapter from chapter 1 on ends with exercises in one shape (the exercise rule of
``tests/test_notebooks.py``): a Markdown statement "**Exercise N.M — ...**", a stub
cell that defines the reader's function, raises ``NotImplementedError`` and calls a
checker (``exercises.check_<name>(my_function)``), then the solution: a code cell
tagged ``hide-input`` (collapsed in the book), which calls the checker too.

The markers, after nbgrader's conventions where they fit this shape:

- **a solution cell** is the ``hide-input`` cell right after a stub. A solution here
  is a whole cell, the stub is a cell of its own, so there is no region to cut
  inside one cell; the tag is already there, the exercise rule keeps it there, and
  marker lines would show in the instructor edition and the book. A ``hide-input``
  cell anywhere else is an error, so that no other collapsed cell is taken for one.
- **a solution region** inside any cell, nbgrader's own markers: ``### BEGIN SOLUTION``
  / ``### END SOLUTION`` in code (the student edition keeps the lines around it and
  puts ``raise NotImplementedError`` in its place), and ``<!-- BEGIN SOLUTION -->`` /
  ``<!-- END SOLUTION -->`` in Markdown, invisible where it renders (the student
  edition drops what lies between; chapter 14's interview answers are marked so).
- **points** sit in the stub cell's metadata, ``{"pe_book": {"exercise": "3.1",
  "points": 1}}`` (nbgrader keeps them in cell metadata too; the grader reads them
  from the book's own notebooks, never from a submission).

:func:`student_edition` removes solution cells and regions (their outputs with them)
and :func:`program` picks the cells a grader runs from a submission.
"""

from __future__ import annotations

import ast
import copy
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Exercise",
    "ExerciseLayoutError",
    "checker_calls",
    "exercises",
    "program",
    "sections",
    "solution_cells",
    "strip_checker_calls",
    "student_edition",
]

SOLUTION_TAG = "hide-input"
CODE_REGION = re.compile(
    r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*(\n|$)", re.M | re.S
)
MARKDOWN_REGION = re.compile(r"[ \t]*<!--\s*BEGIN SOLUTION\s*-->.*?<!--\s*END SOLUTION\s*-->", re.S)
CHECKER_CALL = re.compile(r"\bexercises\.check_(\w+)\(\s*([A-Za-z_]\w*)")
STATEMENT = re.compile(r"\*\*Exercise (\d+\.\d+)\b")
#: Points of an exercise whose stub has none in its metadata.
DEFAULT_POINTS = 1.0


class ExerciseLayoutError(ValueError):
    """A notebook whose exercises do not follow the exercise rule."""


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter: its number, its checker, the stub's function, points."""

    number: str  # "3.1", from the statement
    name: str  # the checker's name without check_: "sinusoidal_table"
    function: str  # the function the stub defines and hands the checker: "my_table"
    points: float
    stub: int  # cell index of the stub
    solution: int | None  # cell index of the solution, if the notebook has one


def source(cell: Any) -> str:
    text = cell.get("source", "")
    return "".join(text) if isinstance(text, list) else text


def checker_calls(text: str) -> list[tuple[str, str]]:
    """(exercise name, function) for each ``exercises.check_<name>(function`` in ``text``."""
    return CHECKER_CALL.findall(text)


def _is_stub(cell: Any) -> bool:
    text = source(cell)
    return (
        cell["cell_type"] == "code" and "NotImplementedError" in text and bool(checker_calls(text))
    )


def _tagged(cell: Any) -> bool:
    return SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])


def solution_cells(nb: Any) -> list[int]:
    """Indices of the solution cells: the ``hide-input`` cell after each stub.

    Raises :class:`ExerciseLayoutError` for a ``hide-input`` cell anywhere else.
    """
    cells = nb["cells"]
    found = []
    for index, cell in enumerate(cells):
        if not _tagged(cell):
            continue
        if index == 0 or not _is_stub(cells[index - 1]):
            raise ExerciseLayoutError(
                f"cell {index} is tagged {SOLUTION_TAG} but does not follow an exercise stub:"
                " the student edition would not know whether to remove it"
            )
        found.append(index)
    return found


def exercises(nb: Any) -> list[Exercise]:
    """The exercises of a chapter notebook, in order."""
    cells = nb["cells"]
    found = []
    number = ""
    for index, cell in enumerate(cells):
        if cell["cell_type"] == "markdown":
            numbers = STATEMENT.findall(source(cell))
            number = numbers[-1] if numbers else number
            continue
        if not _is_stub(cell):
            continue
        name, function = checker_calls(source(cell))[0]
        meta = cell.get("metadata", {}).get("pe_book", {})
        following = index + 1 < len(cells) and _tagged(cells[index + 1])
        found.append(
            Exercise(
                number=str(meta.get("exercise", number)),
                name=name,
                function=function,
                points=float(meta.get("points", DEFAULT_POINTS)),
                stub=index,
                solution=index + 1 if following else None,
            )
        )
    return found


def _stub_region(match: re.Match[str]) -> str:
    return f'{match.group(1)}raise NotImplementedError("your code here"){match.group(2)}'


def student_edition(nb: Any) -> Any:
    """A copy of ``nb`` without its solutions: solution cells removed (outputs and all),
    solution regions cut from the other cells, outputs of cells that had one cleared."""
    student = copy.deepcopy(nb)
    drop = set(solution_cells(nb))
    kept = []
    for index, cell in enumerate(student["cells"]):
        if index in drop:
            continue
        text = source(cell)
        if cell["cell_type"] == "code" and CODE_REGION.search(text):
            cell["source"] = CODE_REGION.sub(_stub_region, text)
            cell["outputs"], cell["execution_count"] = [], None
        elif cell["cell_type"] == "markdown" and MARKDOWN_REGION.search(text):
            cell["source"] = MARKDOWN_REGION.sub("", text)
        kept.append(cell)
    student["cells"] = kept
    student.setdefault("metadata", {})["pe_book"] = {"edition": "student"}
    return student


def strip_checker_calls(text: str) -> str:
    """``text`` without its top-level ``exercises.check...(...)`` statements (the grader
    calls the checkers itself, in its own process); unchanged if it does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    lines = text.splitlines(keepends=True)
    for node in reversed(tree.body):
        call = node.value if isinstance(node, ast.Expr) else None
        target = call.func if isinstance(call, ast.Call) else None
        if (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == "exercises"
            and target.attr.startswith("check")
        ):
            start, end = node.lineno - 1, node.end_lineno or node.lineno
            lines[start:end] = ["pass\n"] if _only_statement(tree, node) else []
    return "".join(lines)


def _only_statement(tree: ast.Module, node: ast.stmt) -> bool:
    return len(tree.body) == 1 and tree.body[0] is node


def _heading(cell: Any) -> str:
    text = source(cell)
    return (
        text.splitlines()[0] if cell["cell_type"] == "markdown" and text.startswith("## ") else ""
    )


def sections(nb: Any) -> list[str]:
    """The section each cell belongs to: its last heading of level 2 (a Markdown cell
    starting "## "), or "set-up" before the first."""
    found, section = [], "set-up"
    for cell in nb["cells"]:
        section = _heading(cell) or section
        found.append(section)
    return found


def program(
    nb: Any, *, whole: bool = False, skip: frozenset[int] = frozenset()
) -> list[tuple[int, str]]:
    """The (index, source) of the code cells a grader runs from a submission.

    The set-up (code before the first section of level 2) and the Exercises section, or
    every cell with ``whole``; never a cell of ``skip`` (the solutions it found);
    checker calls stripped.
    """
    chosen = []
    for index, (cell, section) in enumerate(zip(nb["cells"], sections(nb), strict=True)):
        wanted = whole or section == "set-up" or section.startswith("## Exercises")
        if cell["cell_type"] == "code" and wanted and index not in skip:
            chosen.append((index, strip_checker_calls(source(cell))))
    return chosen
