"""``python -m pe_book grade``: grade submitted chapters by running their functions.

The exercises of chapters 1-14, graded the way a course needs them graded::

    python -m pe_book grade alice/03_sinusoidal.ipynb          # one or more submissions
    python -m pe_book grade --batch submitted/ --out grades/   # grades.csv, grades.json

Each submission (a chapter notebook, usually from the student edition) runs in a
fresh kernel (:class:`~pe_book.exercises.remote.Session`: the book's own set-up cell,
as nbgrader restores locked cells, then the submission's Exercises section, or every
other cell with ``--whole``; solution cells skipped; a time limit per cell and per
call). Then every exercise of the book's chapter is graded by its
own checker in this process, with the student's function reached through the
kernel: the comparison, the references and the expected values never enter the
student's process. Inputs are the checker's fixed cases plus cases drawn from a
secret seed (``--seed`` or ``$PE_BOOK_GRADE_SEED``, never passed to the kernel;
random when neither is given), so answers hard-coded for the fixed cases fail.

One row per student and exercise: status ``pass``, ``fail``, ``not attempted`` or
``error`` (the function raised or ran out of time), the points earned and possible
(points come from the book's stub cells, never from the submission), the checker's
message (what is wrong, without expected values) and marks that set the points to
0: the function reached the exercise's reference or a checker's code while graded,
switched off the grader's watch, started a process or read the package's source
while graded (:mod:`~pe_book.exercises.shim`), is the book's own solution, or the
submission holds the book's solution cell. Exit codes: 0 graded (whatever the grades), 1 with
``--strict`` when any exercise did not pass cleanly, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import io
import json
import os
import secrets
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from pe_book import exercises as checkers
from pe_book.exercises import graded, notebook, secret, shim
from pe_book.exercises.grading import NOT_ATTEMPTED, ExerciseMismatch
from pe_book.exercises.remote import CallRecord, Session

__all__ = ["Result", "grade_notebook", "main"]

BOOK = Path(__file__).resolve().parents[1] / "notebooks"
SEED_VARIABLE = "PE_BOOK_GRADE_SEED"
COLUMNS = [
    "student", "notebook", "chapter", "exercise", "name", "status",
    "points", "max_points", "marks", "message", "seconds",
]  # fmt: skip


@dataclass
class Result:
    """One student's grade on one exercise."""

    student: str
    notebook: str
    chapter: str
    exercise: str  # "3.1"
    name: str  # the checker's name: "sinusoidal_table"
    status: str  # pass | fail | not attempted | error
    points: float
    max_points: float
    marks: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0


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


def _solutions_in(nb: Any, chapter: Chapter) -> dict[int, str]:
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


def _definition(cells: list[tuple[int, str]], function: str) -> tuple[str | None, int | None]:
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


def _tampered(notes: dict[int, Any], chosen: Any) -> list[str]:
    return sorted(
        {what for i, note in notes.items() if chosen(i) for what in note.get("tamper", [])}
    )


def _run(session: Session, cells: list[tuple[int, str]]) -> tuple[dict[int, str], dict[int, Any]]:
    """Run the submission's cells, each followed by the shim's notes: (errors, notes) by
    cell index (notes: the watched functions each cell reached, the watch's tampering)."""
    errors, notes = {}, {}
    for index, text in cells:
        errors.update(_cell_errors([session.run(text)], [index]))
        notes[index] = _published(session.run("_shim.notes()"))
    return errors, notes


def _function_name(
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


def _cell_errors(cells: list[dict[str, Any]], indices: list[int]) -> dict[int, str]:
    errors = {}
    for index, cell in zip(indices, cells, strict=True):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                errors[index] = f"{output.get('ename')}: {str(output.get('evalue'))[:200]}"
    return errors


def _grade_one(session: Session, exercise: notebook.Exercise, function: str, seed: int) -> Any:
    """Run the exercise's checker on the remote function: (status, message, record)."""
    record = CallRecord()
    checker = getattr(checkers, f"check_{exercise.name}")
    printed = io.StringIO()
    mismatch = None
    with secret.active(seed), contextlib.redirect_stdout(printed):
        try:
            checker(session.function(function, record))
        except ExerciseMismatch as exc:
            mismatch = str(exc)
        except Exception as exc:  # a checker that cannot judge an answer: an error, not a crash
            record.raised.append(mismatch := f"the checker cannot judge it: {type(exc).__name__}")
    said = printed.getvalue().strip()
    if record.missing or said == NOT_ATTEMPTED.format(name=exercise.name).strip():
        return "not attempted", "not attempted: the stub still raises NotImplementedError", record
    if mismatch is None:
        return "pass", " ".join(said.split()), record
    status = "error" if record.raised or record.timed_out else "fail"
    return status, mismatch, record


def _marks(exercise: notebook.Exercise, record: CallRecord, copied: bool, has_solution: bool):
    marks = []
    references = set(graded.entry(exercise.name).references)
    if record.hits & references:
        marks.append(f"calls the reference {', '.join(sorted(record.hits & references))}")
    if record.hits & set(graded.CHECKER_MODULES):
        marks.append("calls a checker's code")
    if record.unwatched:
        marks.append("switched off the grader's watch")
    marks += [f"{what} while graded" for what in sorted(record.tamper)]
    if copied:
        marks.append("the function is the book's solution")
    if has_solution:
        marks.append("the book's solution cell is in the submission")
    return marks


def grade_notebook(
    path: Path,
    book: dict[str, Chapter],
    seed: int,
    *,
    student: str | None = None,
    whole: bool = False,
    cell_timeout: float = 120.0,
    call_timeout: float = 30.0,
) -> list[Result]:
    """Grade one submission: one :class:`Result` per exercise of its chapter."""
    nb = nbformat.read(path, as_version=4)
    chapter = identify(nb, path, book)
    solutions = _solutions_in(nb, chapter)
    cells = notebook.program(nb, whole=whole, skip=frozenset(solutions))
    in_setup = [section == "set-up" for section in notebook.sections(nb)]
    rest = [(i, text) for i, text in cells if not in_setup[i]]
    watched = sorted({name for ex in chapter.exercises for name in graded.watched(ex.name)})
    rows = []
    with Session(cell_timeout=cell_timeout, call_timeout=call_timeout) as session:
        session.run_cells(chapter.setup)  # the book's set-up, as nbgrader restores locked cells
        session.run(f"from pe_book.exercises import shim as _shim\n_shim.install({watched!r})")
        errors, notes = _run(session, rest)
        early = {name for note in notes.values() for name in note.get("hits", [])}
        for exercise in chapter.exercises:
            function, stub = _function_name(nb, solutions, exercise)
            status, message, record = _grade_one(session, exercise, function, seed)
            if status == "not attempted" and stub in errors:
                status, message = "error", f"the exercise's cell raised {errors[stub]}"
            references = set(graded.entry(exercise.name).references)
            if early & references:
                message += f" (note: its cells call {', '.join(sorted(early & references))})"
            book_solution, _ = _definition(
                [(0, chapter.solutions.get(exercise.name, ""))], exercise.function
            )
            mine, where = _definition(cells, function)
            own = {where, stub} - {None}  # what its cells did counts as its calls did
            record.tamper.update(_tampered(notes, lambda i, own=own: i in own))
            others = _tampered(notes, lambda i, own=own: i not in own)
            if others:
                message += f" (note: other cells of the submission {'; '.join(others)})"
            copied = book_solution is not None and mine == book_solution
            marks = _marks(exercise, record, copied, exercise.name in solutions.values())
            earned = exercise.points if status == "pass" and not marks else 0.0
            rows.append(
                Result(
                    student=student or path.stem,
                    notebook=path.name,
                    chapter=chapter.stem,
                    exercise=exercise.number,
                    name=exercise.name,
                    status=status,
                    points=earned,
                    max_points=exercise.points,
                    marks=marks,
                    message=message,
                    seconds=round(record.seconds, 3),
                )
            )
    return rows


def _published(cell: dict[str, Any]) -> dict[str, Any]:
    """The report :mod:`~pe_book.exercises.shim` published in an executed cell, or {}."""
    for output in cell.get("outputs", []):
        if shim.MIME in output.get("data", {}):
            return dict(output["data"][shim.MIME])
    return {}


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


def write_reports(rows: list[Result], out: Path, seed_source: str) -> None:
    """``out/grades.csv`` and ``out/grades.json``: one row per student and exercise."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "grades.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for row in rows:
            writer.writerow({**asdict(row), "marks": "; ".join(row.marks)})
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        total = totals.setdefault(row.student, {"points": 0.0, "max_points": 0.0})
        total["points"] += row.points
        total["max_points"] += row.max_points
    report = {"seed": seed_source, "totals": totals, "rows": [asdict(row) for row in rows]}
    (out / "grades.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")


def _seed(given: int | None) -> tuple[int, str]:
    if given is not None:
        return given, "--seed"
    if os.environ.get(SEED_VARIABLE):
        return int(os.environ[SEED_VARIABLE]), f"${SEED_VARIABLE}"
    return secrets.randbits(63), "random"


def _print(rows: list[Result]) -> None:
    for row in rows:
        marks = f" [{'; '.join(row.marks)}]" if row.marks else ""
        print(
            f"{row.student:<12} {row.exercise:>5} {row.name:<22} {row.status:<13}"
            f" {row.points:g}/{row.max_points:g}{marks}"
        )
        if row.status != "pass":
            print("    " + row.message.replace("\n", "\n    "))


def main(argv: list[str] | None = None) -> int:
    """``python -m pe_book grade``; returns the exit code (0 graded, 1 --strict and not all
    passed, 2 bad arguments)."""
    parser = argparse.ArgumentParser(
        prog="python -m pe_book grade",
        description="Grade submitted chapter notebooks in fresh kernels (see README).",
    )
    parser.add_argument("submissions", nargs="*", type=Path, help="submitted .ipynb files")
    parser.add_argument("--batch", type=Path, help="a folder of submissions (one per student)")
    parser.add_argument("--out", type=Path, help="write grades.csv and grades.json here")
    parser.add_argument("--seed", type=int, help=f"the secret seed (else ${SEED_VARIABLE})")
    parser.add_argument("--book", type=Path, default=BOOK, help="the book's notebooks")
    parser.add_argument("--whole", action="store_true", help="run every cell, not only set-up")
    parser.add_argument("--cell-timeout", type=float, default=120.0, help="seconds per cell")
    parser.add_argument("--call-timeout", type=float, default=30.0, help="seconds per call")
    parser.add_argument("--student", help="the student's name (one submission)")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless all pass")
    args = parser.parse_args(argv)
    found = [(args.student or p.stem, p) for p in args.submissions]
    if args.batch is not None:
        if not args.batch.is_dir():
            parser.error(f"--batch {args.batch}: not a folder")
        found += submissions(args.batch)
    if not found:
        parser.error("name submissions, or a folder with --batch")
    missing = [str(p) for _, p in found if not p.is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)}")
    book = load_book(args.book)
    if not book:
        parser.error(f"--book {args.book}: no chapter notebooks with exercises")
    seed, source = _seed(args.seed)
    rows: list[Result] = []
    for student, path in found:
        graded_rows = grade_notebook(
            path,
            book,
            seed,
            student=student,
            whole=args.whole,
            cell_timeout=args.cell_timeout,
            call_timeout=args.call_timeout,
        )
        _print(graded_rows)
        rows += graded_rows
    if args.out is not None:
        write_reports(rows, args.out, source)
        print(f"grades: {args.out / 'grades.csv'}, {args.out / 'grades.json'}")
    clean = all(row.status == "pass" and not row.marks for row in rows)
    return 1 if args.strict and not clean else 0


if __name__ == "__main__":
    sys.exit(main())
