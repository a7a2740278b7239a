"""Graded mode inside the grader's process: secret draws, references, fixed-answer tables.

Every checker is run here on the book's own solution (exec'd from its chapter) and on
a table of the answers to its fixed cases; pe_book.exercises.graded must know every
checker, and what it says a checker compares with must be what the checker calls.
"""

import contextlib
import io
import sys
from pathlib import Path

import nbformat
import pytest
import torch
from grade_helpers import book_solutions, fixed_answers, key

from pe_book import exercises
from pe_book.exercises import graded, notebook, secret
from pe_book.exercises.graded import _code_keys
from pe_book.exercises.grading import ExerciseMismatch

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHECKERS = sorted(
    name.removeprefix("check_") for name in exercises.__all__ if name.startswith("check_")
)


@pytest.fixture(scope="module")
def solutions():
    """{exercise name: the book's solution function}, from every chapter's solution cells."""
    found = {}
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        if notebook.exercises(nbformat.read(path, as_version=4)):
            found.update(book_solutions(path.stem))
    return found


def run(name, reader, seed=None):
    """The checker's printed verdict; raises ExerciseMismatch on a miss."""
    printed = io.StringIO()
    with contextlib.ExitStack() as stack:
        if seed is not None:
            stack.enter_context(secret.active(seed))
        stack.enter_context(contextlib.redirect_stdout(printed))
        getattr(exercises, f"check_{name}")(reader)
    return printed.getvalue()


def test_graded_mode_knows_every_checker():
    assert sorted(graded.EXERCISES) == CHECKERS
    for name, entry in graded.EXERCISES.items():
        assert entry.draw is not None or entry.fixed, f"{name}: no draw and no reason"
        for dotted in entry.references:
            _code_keys(dotted)  # resolves to a function or module of pe_book


def test_outside_graded_mode_nothing_changes():
    assert secret.current() is None
    assert all(secret.drawn(name) == [] for name in CHECKERS)
    assert torch.equal(
        torch.randn(5, generator=secret.seeded(7)),
        torch.randn(5, generator=torch.Generator().manual_seed(7)),
    )
    assert secret.shuffled("offset_only", [1, 2, 3]) == [1, 2, 3]
    with secret.active(1):
        assert not torch.equal(
            torch.randn(5, generator=secret.seeded(7)),
            torch.randn(5, generator=torch.Generator().manual_seed(7)),
        )
    assert secret.current() is None


@pytest.mark.parametrize("seed", [1, 2])
def test_the_books_solutions_pass_the_secret_cases(solutions, seed):
    assert len(solutions) >= 40  # every exercise a chapter sets (degradation and
    # mla_cache_ratio have checkers but no chapter exercise today)
    for name, solution in solutions.items():
        verdict = run(name, solution, seed)
        assert "not attempted" not in verdict and verdict.strip(), name
        if graded.EXERCISES[name].draw is not None:
            fixed = run(name, solution)
            assert fixed != verdict, f"{name}: graded mode ran no drawn case"


def _watched_codes(dotted):
    filename, keys = _code_keys(dotted)
    return filename, keys


def test_each_reference_is_reached_by_its_checker(solutions):
    for name, solution in solutions.items():
        references = graded.EXERCISES[name].references
        if not references:
            continue
        wanted = {dotted: _watched_codes(dotted) for dotted in references}
        reached = set()

        def profile(frame, event, arg, wanted=wanted, reached=reached):
            if event == "call":
                code = frame.f_code
                for dotted, (filename, keys) in wanted.items():
                    if code.co_filename == filename and (
                        None in keys or (filename, code.co_firstlineno) in keys
                    ):
                        reached.add(dotted)

        sys.setprofile(profile)
        try:
            run(name, solution, seed=3)
        finally:
            sys.setprofile(None)
        assert reached == set(references), (
            f"{name}: the checker never calls {set(references) - reached}"
        )


def test_a_table_of_the_fixed_answers_fails_in_graded_mode(solutions):
    """What a student builds by copying the fixed cases' answers (found by running the
    checker, or read off a reference) passes a reader's checker and fails the grader's."""
    for name, solution in solutions.items():
        table, order = fixed_answers(name, solution)
        if name == "direction_matrix":  # no inputs: the one right matrix is the answer
            continue

        def copied_reader(table=table, order=order):
            calls = iter(range(10**6))

            def copied(*args):
                index = next(calls)
                with contextlib.suppress(TypeError):
                    if key(args) in table:
                        return table[key(args)]
                return order[index] if index < len(order) else None

            return copied

        verdict = run(name, copied_reader())  # the reader's checker: passes
        assert verdict.strip() and "not attempted" not in verdict, name
        with pytest.raises(ExerciseMismatch):
            run(name, copied_reader(), seed=1)


def test_a_checker_that_cannot_judge_an_answer_gives_an_error_not_a_crash(monkeypatch):
    """One odd answer (an int past float64, which policy._values cannot convert today)
    must not stop a batch: the grader gives that exercise "error" and goes on."""
    from pe_book import grade

    def broken(reader):
        reader(4)
        raise OverflowError("int too large to convert to float")

    class Session:  # the kernel's stand-in: the student's function, called in-process
        def function(self, name, record, *blocked):
            return lambda *args: 10**3000

    monkeypatch.setattr(grade.checkers, "check_alibi_slopes", broken)
    exercise = next(
        ex for ex in grade.load_book(grade.BOOK)["09_alibi"].exercises if ex.name == "alibi_slopes"
    )
    status, message, _ = grade._grade_one(Session(), exercise, "my_slopes", 1)
    assert status == "error" and message == "the checker cannot judge it: OverflowError"
