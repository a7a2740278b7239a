"""The book as ``python -m pe_book grade`` reads it: chapters, solutions, submissions.

The grader of the exercises of chapters 1-14 takes from the book it is given (``--book``:
the instructor edition or a checkout's notebooks/) each chapter's exercises, set-up
cells and solution cells (:func:`load_book`), and the fingerprints of the solutions'
functions that the kernel's watch recognises (:func:`solution_prints`). In a
submission it finds the chapter (:func:`identify`), the book's solution cells
(:func:`solutions_in`), the function the student hands each checker
(:func:`function_name`) and a function's definition (:func:`definition`), to compare
with the book's; in a folder, every student's submission (:func:`submissions`).
:mod:`pe_book.grade` runs each submission and grades it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from pe_book.exercises import notebook, shim

__all__ = [
    "BOOK", "SOLUTION", "SOLUTION_FOLDERS", "Chapter", "definition", "function_name",
    "identify", "load_book", "solution_prints", "solutions_in", "submissions",
]  # fmt: skip

#: A checkout's notebooks (with solutions): the tests' and the instructor guide's book.
BOOK = Path(__file__).resolve().parents[2] / "notebooks"
#: Folders of a checkout whose files hold solutions (the book, its built editions).
SOLUTION_FOLDERS = (BOOK, BOOK.parent / "build")
#: How a hit on a fingerprint of the book's solution of exercise NAME is labelled.
SOLUTION = "solution:"


@dataclass(frozen=True)
class Chapter:
    """A chapter of the book as the grader knows it: its exercises and their solutions."""

    stem: str
    exercises: list[notebook.Exercise]
    solutions: dict[str, str]  # exercise name -> the solution cell's source
    setup: list[str]  # the set-up cells' sources (run in place of the submission's)


def load_book(book: Path) -> dict[str, Chapter]:
    """Every chapter of the book with exercises, from the book's own notebooks."""
    chapters = {}
    for path in sorted(book.glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        found = notebook.exercises(nb)
        if found:
            solutions = {
                ex.name: notebook.source(nb.cells[ex.solution])
                for ex in found
                if ex.solution is not None
            }
            setup = [
                notebook.source(cell)
                for cell, section in zip(nb.cells, notebook.sections(nb), strict=True)
                if cell.cell_type == "code" and section == "set-up"
            ]
            chapters[path.stem] = Chapter(path.stem, found, solutions, setup)
    return chapters


def identify(nb: Any, path: Path, book: dict[str, Chapter]) -> Chapter:
    """The book's chapter a submission is: the one whose exercises its checker calls name."""
    named = {name for cell in nb.cells for name, _ in notebook.checker_calls(notebook.source(cell))}
    scores = {stem: len(named & {ex.name for ex in ch.exercises}) for stem, ch in book.items()}
    best = max(scores, key=lambda stem: (scores[stem], path.name.startswith(stem[:3])))
    if scores[best] == 0 and not path.name.startswith(best[:3]):
        raise ValueError(f"{path}: no exercise of the book is called in it")
    return book[best]


def _normal(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def solutions_in(nb: Any, chapter: Chapter) -> dict[int, str]:
    """Cells of the submission that are solution cells: cell index -> exercise name."""
    known = {_normal(text): name for name, text in chapter.solutions.items()}
    found = {}
    for index, cell in enumerate(nb.cells):
        text = notebook.source(cell)
        tagged = notebook.SOLUTION_TAG in cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "code" and (tagged or _normal(text) in known):
            calls = notebook.checker_calls(text)
            found[index] = known.get(_normal(text)) or (calls[0][0] if calls else "")
    return found


def definition(cells: list[tuple[int, str]], function: str) -> tuple[str | None, int | None]:
    """ast.dump of the last ``def function`` in the cells run and its cell, or None."""
    found, where = None, None
    for index, text in cells:
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == function:
                found, where = ast.dump(node), index
    return found, where


def _codes(code: Any) -> list[Any]:
    """Every code object defined in ``code``, at any depth."""
    found = []
    for const in code.co_consts:
        if isinstance(const, type(code)):
            found += [const, *_codes(const)]
    return found


def solution_prints(chapter: Chapter) -> dict[str, str]:
    """{fingerprint: "solution:<exercise>"} of every function in the chapter's solution
    cells, compiled here: the kernel recognises the solution when it runs, however it
    got there, without ever holding its source."""
    found = {}
    for name, text in chapter.solutions.items():
        try:
            code = compile(text, f"<solution of {name}>", "exec")
        except SyntaxError:
            continue
        for inner in _codes(code):
            mark = shim.fingerprint(inner)
            if mark is not None:
                found[mark] = SOLUTION + name
    return found


def function_name(
    nb: Any, skip: dict[int, str], exercise: notebook.Exercise
) -> tuple[str, int | None]:
    """The function the submission hands the exercise's checker (the stub's, if renamed),
    and the cell that does it."""
    for index, cell in enumerate(nb.cells):
        if index not in skip:
            for name, function in notebook.checker_calls(notebook.source(cell)):
                if name == exercise.name:
                    return function, index
    return exercise.function, None


def submissions(folder: Path) -> list[tuple[str, Path]]:
    """(student, path) of every notebook under ``folder``: the first folder below it names
    the student (``submitted/alice/03_sinusoidal.ipynb``), else the file's name."""
    found = []
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        parts = path.relative_to(folder).parts
        found.append((parts[0] if len(parts) > 1 else path.stem, path))
    return found
