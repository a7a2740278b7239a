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
0 (:mod:`~pe_book.exercises.shim` watches the kernel):

- the exercise's reference, any function of its module, or a checker's code was
  called while the exercise was graded; or the reference itself was called anywhere
  in the submission (another cell, another exercise's function: answers tabulated
  from it); or a function of its module was called in a cell;
- the book's solution runs (recognised by its compiled code, even exec'd from source
  read at run time), the function's definition is the book's solution, or the
  submission holds the book's solution cell;
- anywhere in the submission: the watch switched off, its state changed or its reports
  forged, a process started, the package's or the book's files read, a reference's code
  object taken, the interpreter's objects or memory reached, or a cell's source naming
  the interpreter's frames, hooks or closures (:mod:`~pe_book.exercises.tamper`); these
  mark every exercise. While a function is graded its references are blocked (they
  raise: :mod:`~pe_book.exercises.blocking`).

``--book`` (required) names the book whose solutions, set-up and points the grader
uses: the instructor edition (``make editions``: build/editions/instructor/notebooks)
or a checkout's notebooks/. It has no default, so that where the solutions sit on the
grading machine is the course's decision; the kernel's reads of that folder, of a
checkout's notebooks/ and build/ and of the package's source are marked.
Exit codes: 0 graded (whatever the grades), 1 with ``--strict`` when any exercise did
not pass cleanly, 2 bad arguments.
"""

from __future__ import annotations

import argparse
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
from pe_book.exercises import graded, notebook, secret, tamper
from pe_book.exercises.book import (
    BOOK,
    SOLUTION,
    SOLUTION_FOLDERS,
    Chapter,
    definition,
    function_name,
    identify,
    load_book,
    solution_prints,
    solutions_in,
    submissions,
)
from pe_book.exercises.grading import NOT_ATTEMPTED, ExerciseMismatch
from pe_book.exercises.remote import FORGED, CallRecord, Forged, Session

__all__ = ["Result", "grade_notebook", "main"]

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


def _run(session: Session, cells: list[tuple[int, str]]) -> tuple[dict[int, str], dict[int, Any]]:
    """Run the submission's cells, each followed by the shim's notes: (errors, notes) by
    cell index (notes: the watched functions each cell reached, the watch's tampering)."""
    errors, notes = {}, {}
    for index, text in cells:
        errors.update(_cell_errors([session.run(text)], [index]))
        notes[index] = _notes(session)
    return errors, notes


def _notes(session: Session) -> dict[str, Any]:
    try:
        return session.notes()
    except Forged:
        return {"hits": [], "tamper": [FORGED], "watching": True}


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
            checker(session.function(function, record, graded.blocked(exercise.name)))
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


def _is(label: str, dotted: str) -> bool:
    return label == dotted or label.startswith(dotted + ".")


class _Uses:
    """What the submission called and did, and where: the marks they give each exercise."""

    def __init__(self, chapter: Chapter) -> None:
        self.exercises = chapter.exercises
        self.modules = {ex.name: graded.modules(ex.name) for ex in chapter.exercises}
        self.checkers = set(graded.CHECKER_MODULES)
        self.known = {m for found in self.modules.values() for m in found} | self.checkers
        self.hits: list[tuple[str, str, str | None]] = []  # (label, where, exercise graded)
        self.tamper: list[tuple[str, str, str | None]] = []

    def add(self, note: dict[str, Any], where: str, graded_as: str | None = None) -> None:
        """What a cell (``graded_as`` None) or an exercise's calls reached and did."""
        allowed = graded.entry(graded_as).allowed if graded_as else ()
        for label in note.get("hits", []):
            if not any(_is(label, ok) for ok in allowed):
                self.hits.append((label, where, graded_as))
        tamper = list(note.get("tamper", []))
        if not note.get("watching", True):
            tamper.append("switched off the grader's watch")
        self.tamper += [(what, where, graded_as) for what in tamper]

    def _why(self, label: str, exercise: notebook.Exercise, graded_as: str | None) -> str:
        """Why ``label``, reached by a cell or an exercise's calls, marks ``exercise``."""
        mine = graded_as in (None, exercise.name)
        if any(_is(label, ok) for ok in graded.entry(exercise.name).allowed):
            return ""
        if label.startswith(SOLUTION):
            solved = label.removeprefix(SOLUTION)
            if solved == exercise.name:
                return "runs the book's solution"
            return f"runs the book's solution of {solved}" if graded_as == exercise.name else ""
        if any(_is(label, ref) for ref in graded.entry(exercise.name).references):
            return f"calls its reference {label}"
        declared = any(  # another exercise's reference: a cell calling it concerns that one
            _is(label, ref) for ex in self.exercises for ref in graded.entry(ex.name).references
        )
        if graded_as is None and declared:
            return ""
        module = max((m for m in self.known if _is(label, m)), key=len, default="")
        if mine and module in self.checkers:
            return "calls a checker's code"
        if mine and module in self.modules[exercise.name]:
            return f"calls {label}, of its reference's module"
        return ""

    def _place(self, where: str, graded_as: str | None, exercise: notebook.Exercise) -> str:
        if graded_as is None or graded_as == exercise.name:
            return where
        number = next(ex.number for ex in self.exercises if ex.name == graded_as)
        return f"while exercise {number} is graded"

    def marks(self, exercise: notebook.Exercise) -> list[str]:
        """The marks of ``exercise``: what concerns it, and all tampering."""
        marks = set()
        for label, where, graded_as in self.hits:
            why = self._why(label, exercise, graded_as)
            if why:
                marks.add(f"{why} {self._place(where, graded_as, exercise)}")
        places: dict[str, list[str]] = {}  # tampering: where first seen, and how often
        for what, where, graded_as in self.tamper:
            found = places.setdefault(what, [])
            found += [p for p in [self._place(where, graded_as, exercise)] if p not in found]
        for what, found in places.items():
            marks.add(f"{what} {found[0]}" + (f" (and {len(found) - 1} more)" * (len(found) > 1)))
        return sorted(marks)


def grade_notebook(
    path: Path,
    book: dict[str, Chapter],
    seed: int,
    *,
    student: str | None = None,
    whole: bool = False,
    cell_timeout: float = 120.0,
    call_timeout: float = 30.0,
    book_folder: Path | None = None,
) -> list[Result]:
    """Grade one submission: one :class:`Result` per exercise of its chapter.

    ``book_folder`` is where ``book`` was read from: reads of its files are marked, with
    those of a checkout's notebooks/ and build/."""
    nb = nbformat.read(path, as_version=4)
    chapter = identify(nb, path, book)
    solutions = solutions_in(nb, chapter)
    cells = notebook.program(nb, whole=whole, skip=frozenset(solutions))
    in_setup = [section == "set-up" for section in notebook.sections(nb)]
    rest = [(i, text) for i, text in cells if not in_setup[i]]
    watched = sorted({m for ex in chapter.exercises for m in graded.modules(ex.name)})
    folders = sorted({str(Path(f).resolve()) for f in (book_folder or BOOK, *SOLUTION_FOLDERS)})
    uses = _Uses(chapter)
    uses.tamper += [(what, f"in cell {i + 1}", None) for i, what in tamper.scan(rest)]
    graded_calls = []
    with Session(cell_timeout=cell_timeout, call_timeout=call_timeout) as session:
        session.run_cells(chapter.setup)  # the book's set-up, as nbgrader restores locked cells
        session.install([*watched, *graded.CHECKER_MODULES], solution_prints(chapter), folders)
        other_python = session.python != sys.version  # its bytecode is not the grader's
        errors, notes = _run(session, rest)
        for index, note in notes.items():
            uses.add(note, f"in cell {index + 1}")
        for exercise in chapter.exercises:
            function, stub = function_name(nb, solutions, exercise)
            status, message, record = _grade_one(session, exercise, function, seed)
            if status == "not attempted" and stub in errors:
                status, message = "error", f"the exercise's cell raised {errors[stub]}"
            seen = {"hits": sorted(record.hits), "tamper": sorted(record.tamper)}
            uses.add({**seen, "watching": not record.unwatched}, "while graded", exercise.name)
            graded_calls.append((exercise, function, status, message, record))
        uses.add(_notes(session), "by the end of grading")
    rows = []
    for exercise, function, status, message, record in graded_calls:
        book_solution, _ = definition(
            [(0, chapter.solutions.get(exercise.name, ""))], exercise.function
        )
        mine, _ = definition(cells, function)
        marks = uses.marks(exercise)
        if book_solution is not None and mine == book_solution:
            marks.append("the function is the book's solution")
        if exercise.name in solutions.values():
            marks.append("the book's solution cell is in the submission")
        earned = exercise.points if status == "pass" and not marks else 0.0
        if other_python:
            message += " (note: the kernel runs another Python than the grader, so the book's"
            message += " solutions are recognised by their definitions only)"
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
    parser.add_argument(
        "--book",
        type=Path,
        required=True,
        help="the book's notebooks, with solutions: the instructor edition"
        " (build/editions/instructor/notebooks) or a checkout's notebooks/",
    )
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
            book_folder=args.book,
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
