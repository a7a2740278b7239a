"""The grading framework every exercise checker is built on: cases, a reference, a verdict.

The preface (chapter 0) states the answer policy; the exercises of chapters 1 on use it.

A checker is three things: **cases** (inputs, each described and, where it matters,
labelled with its input class), a **reference** (``pe_book``'s own function, or a
property the answer must have) and the **policy**, which :mod:`pe_book.exercises.policy`
alone implements (values at the exercise's tolerance, in any dtype; float32 named when
it is the likely cause of a miss; messages that point and never answer). This module
runs the reader's function on every case and either prints that all agree or raises
:class:`ExerciseMismatch` naming the first case that does not, its input class and the
first index that misses. The reader's code raising is one short message (the exception
and the line of the reader's code), not a traceback. A stub that still raises
``NotImplementedError`` is reported as "not attempted yet" without failing, so a
chapter runs top to bottom before the reader has written anything.

Two ways to build a checker:

- :func:`check` compares the reader with a reference (or each case's expected
  answer) on a list of :class:`Case` inputs; most checkers are one call to it, and
  a course adds its own exercise with it in a notebook cell.
- :func:`grader` wraps a checker that tests a property instead (the reader's
  matrix reproduces a bilinear form, say): it calls the reader through
  :func:`attempt`, raises :class:`ExerciseMismatch` with the reason a case fails
  (:func:`~pe_book.exercises.policy.judge` and
  :func:`~pe_book.exercises.policy.float32_note` apply the same policy), and returns the
  verdict to print.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import textwrap
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pe_book.exercises import own_work, secret
from pe_book.exercises.policy import judge, tolerance_text

__all__ = [
    "Case",
    "ExerciseMismatch",
    "attempt",
    "check",
    "grader",
]

NOT_ATTEMPTED = (
    "{name}: not attempted yet.\n"
    "  Replace the stub's `raise NotImplementedError` with your code (the statement\n"
    "  above says what to return), then rerun this cell."
)

#: Printed lines are wrapped to fit the book's 80-column output box.
WIDTH = 79


class ExerciseMismatch(AssertionError):
    """The reader's answer is wrong on a case; the message says where, not what is expected.

    In a notebook it is shown as its message alone, without a traceback
    (IPython calls ``_render_traceback_``).
    """

    def _render_traceback_(self) -> list[str]:
        lines = []
        for line in str(self).splitlines():
            lines += textwrap.wrap(line, 100, subsequent_indent="  ", break_on_hyphens=False)
        return lines


def _say(text: str) -> None:
    """Print a verdict wrapped to :data:`WIDTH` columns."""
    print(textwrap.fill(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False))


class _NotAttempted(Exception):
    """The reader's stub still raises NotImplementedError."""


@dataclass(frozen=True)
class Case:
    """One input to an exercise: positional arguments, a readable description of them,
    optionally the expected answer (otherwise the reference computes it) and the
    input class the case stands for ("a negative shift", "positions in the thousands"),
    which a mismatch names."""

    args: tuple[Any, ...]
    description: str
    expected: Any = None
    kind: str = ""


# ---- running the reader --------------------------------------------------------------

_LIBRARY_DIRS = (  # torch, numpy and pe_book itself: frames there are not the reader's
    *(str(Path(module.__file__).resolve().parent) for module in (torch, np) if module.__file__),
    str(Path(__file__).resolve().parents[1]),
)


def where_in_readers_code(exc: BaseException) -> str:
    """Where the reader's code raised: " (in my_table, line 3: `angle = ...`)" for the
    innermost frame outside the libraries (torch, NumPy, pe_book, site-packages) and
    outside code compiled from a string ("<string>", "<mine>"), or "" when there is none.
    The grader's shim says it for a graded submission's function too."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not str(Path(frame.filename).resolve()).startswith(_LIBRARY_DIRS)
        and "site-packages" not in frame.filename
        and not frame.filename.startswith("<")
    ]
    if not frames:
        return ""
    frame = frames[-1]
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    code = f": `{line}`" if line and len(line) <= 70 else ""
    return f" (in {frame.name}, line {frame.lineno}{code})"


def _raised(exc: Exception) -> str:
    """One line for an exception raised by the reader's code, with its place in that code."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    said = f": {message}" if message else ""
    return f"raised {type(exc).__name__}{said}{where_in_readers_code(exc)}"


def attempt(reader: Callable[..., Any], *args: Any) -> Any:
    """``reader(*args)``; a stub's NotImplementedError ends the grading as "not attempted"."""
    try:
        with own_work.guard() as hits:
            answer = reader(*args)
    except NotImplementedError as exc:
        raise _NotAttempted from exc
    if hits:  # the reader's function called the package's own answer
        raise ExerciseMismatch(own_work.called(hits))
    return answer


@contextlib.contextmanager
def _grading(name: str) -> Iterator[None]:
    """Run a checker's body; a stub met by :func:`attempt` prints "not attempted yet"."""
    try:
        with own_work.watching(name):
            yield
    except _NotAttempted:
        print(NOT_ATTEMPTED.format(name=name))


def grader(
    checker: Callable[[Callable[..., Any]], str],
) -> Callable[[Callable[..., Any]], None]:
    """Make ``check_<name>(reader)`` from a function that grades by a property.

    The wrapped function calls the reader through :func:`attempt`, raises
    :class:`ExerciseMismatch` with the reason a case fails, and returns the
    verdict; the wrapper prefixes both with the exercise's name (the function's
    name without ``check_``), prints "not attempted yet" for a stub, and turns
    any other exception (the reader's code failed, or its answer could not be
    used) into one short ExerciseMismatch that names it and the reader's line.
    """
    name = checker.__name__.removeprefix("check_")

    @functools.wraps(checker)
    def graded(reader: Callable[..., Any]) -> None:
        with _grading(name):
            try:
                verdict = checker(reader)
            except ExerciseMismatch as mismatch:
                raise ExerciseMismatch(f"{name}: {mismatch}") from None
            except _NotAttempted:
                raise
            except Exception as exc:  # the reader's code raised, or its answer has the wrong type
                raise ExerciseMismatch(
                    f"{name}: your function or its answer {_raised(exc)}"
                ) from exc
            _say(f"{name}: {verdict}")

    return graded


def _heading(name: str, index: int, total: int, case: Case) -> str:
    kind = f" ({case.kind})" if case.kind else ""
    return f"{name}: case {index} of {total}{kind}"


def check(
    name: str,
    reader: Callable[..., Any],
    reference: Callable[..., Any] | None,
    cases: Iterable[Case],
    *,
    atol: float = 1e-6,
    rtol: float = 0.0,
    against: str = "pe_book",
    float32: str | None = None,
    locate: Callable[[Case, tuple[int, ...]], str] | None = None,
    positions: Callable[[Case], torch.Tensor] | None = None,
    dtype: torch.dtype | None = None,
    as_tensor: torch.dtype | None = None,
) -> None:
    """Compare ``reader`` with ``reference`` (or each case's ``expected``) on every case.

    Prints that all cases agree, or that the reader's stub still raises
    NotImplementedError ("not attempted yet"); raises ExerciseMismatch on the
    first disagreement or on any other exception from the reader's code, judged by
    :func:`judge` (the book's policy: values at ``atol + rtol·|expected|``).

    The book's ``check_*`` functions are built on it, and a course adds its own
    exercise in a notebook cell with no package edit::

        exercises.check("double", my_double, lambda x: 2 * x,
                        [Case((3,), "x = 3"), Case((0.5,), "x = 0.5", expected=1.0)],
                        against="the course's answer")

    ``against`` names what the reader is compared with in the final message;
    ``float32`` is the exercise's reason float32 is not enough (the message gives
    it when float32 is the likely cause of a miss); ``locate(case, index)`` says what
    an index of the answer is ("position 5, column 2"); ``positions(case)`` gives the
    position of each row of the answer, so that an error growing with it is named.
    ``dtype`` and ``as_tensor`` are accepted and ignored, so that exercises written for
    the framework's first version still run: the policy judges values, never dtypes.
    """
    del dtype, as_tensor  # the policy: a dtype alone never fails an answer
    cases = list(cases) + secret.drawn(name)  # graded mode adds cases from a secret seed
    numeric = False
    with _grading(name):
        for index, case in enumerate(cases, start=1):
            if case.expected is None and reference is None:
                raise ValueError(f"{name}: case {index} has no expected answer and no reference")
            expected = reference(*case.args) if case.expected is None else case.expected
            numeric = numeric or not (expected is None or isinstance(expected, str | bool))
            heading = _heading(name, index, len(cases), case)
            try:
                got = attempt(reader, *case.args)
            except _NotAttempted:
                raise
            except ExerciseMismatch as mismatch:  # it called the exercise's reference
                raise ExerciseMismatch(f"{heading}: {mismatch}") from None
            except Exception as exc:
                raise ExerciseMismatch(
                    f"{heading}: your function {_raised(exc)}\ninput: {case.description}"
                ) from exc
            problem = judge(
                expected,
                got,
                atol=atol,
                rtol=rtol,
                float32=float32,
                locate=(lambda i, case=case: locate(case, i)) if locate else None,
                positions=positions(case) if positions else None,
            )
            if problem:
                raise ExerciseMismatch(
                    f"{heading} does not match.\ninput: {case.description}\n{problem}"
                )
        how = f" {tolerance_text(atol, rtol)}" if numeric else ""
        _say(f"{name}: all {len(cases)} cases agree with {against}{how}.")
