"""The grading framework every exercise checker is built on.

A checker takes the reader's function, runs it and ``pe_book``'s own
implementation on the same inputs, and either prints that every case agrees
or raises :class:`ExerciseMismatch` describing the first case that does not
(input, expected, got). A stub that still raises ``NotImplementedError`` is
reported as "not attempted yet" without failing, so a chapter runs top to
bottom before the reader has written anything.

Two ways to build a checker:

- :func:`check` compares the reader with a reference (or each case's
  expected answer) on a list of :class:`Case` inputs; most checkers are one
  call to it, and a course adds its own exercise with it in a notebook cell.
- :func:`grader` wraps a checker that tests a property instead (the reader's
  matrix reproduces a bilinear form, say): it calls the reader through
  :func:`attempt`, raises :class:`ExerciseMismatch` with the reason, and
  returns the verdict to print.
"""

from __future__ import annotations

import contextlib
import functools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "Case",
    "ExerciseMismatch",
    "attempt",
    "check",
    "grader",
    "growing_error_hint",
    "show",
    "whole_number",
]

#: A tensor with more entries is shown by its shape, dtype and first entries only.
SHOWN_ENTRIES = 20

NOT_ATTEMPTED = (
    "{name}: not attempted yet.\n"
    "  Fill in the stub above and rerun this cell; the solution is collapsed below."
)


class ExerciseMismatch(AssertionError):
    """The reader's function disagrees with the package on a case."""


class _NotAttempted(Exception):
    """The reader's stub still raises NotImplementedError."""


@dataclass(frozen=True)
class Case:
    """One input to an exercise: positional arguments, a readable description,
    and optionally the expected answer (otherwise the reference computes it)."""

    args: tuple[Any, ...]
    description: str
    expected: Any = None


def show(value: Any) -> str:
    """A value as a mismatch message prints it: tensors with their shape and dtype, and
    only their first entries when they hold more than :data:`SHOWN_ENTRIES`."""
    if isinstance(value, torch.Tensor):
        with torch.no_grad():
            head = f"tensor of shape {tuple(value.shape)}, dtype {value.dtype}"
            if value.numel() <= SHOWN_ENTRIES:
                if value.ndim == 1 and value.is_floating_point():
                    return f"{head}: [{', '.join(f'{x:.10g}' for x in value.tolist())}]"
                return f"{head}:\n{value}"
            first = ", ".join(
                f"{x:.10g}" if isinstance(x, float) else str(x)
                for x in value.flatten()[:6].tolist()
            )
            return f"{head}; first entries {first}, ..."
    return repr(value)


def _first_difference(expected: torch.Tensor, got: torch.Tensor, atol: float) -> str:
    """Where two tensors of one shape first differ by more than ``atol`` (NaN counts)."""
    if expected.dtype == torch.bool or got.dtype == torch.bool:
        bad = got != expected
    else:
        bad = ~((got.to(expected.dtype) - expected).abs() <= atol)
    index = tuple(int(i) for i in bad.nonzero()[0])
    return (
        f"first at index {list(index)}: expected {expected[index].item()!r},"
        f" got {got[index].item()!r}"
    )


def _agree(expected: Any, got: Any, atol: float) -> str | None:
    """None if the two agree, else the reason they do not."""
    if isinstance(expected, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"expected a torch.Tensor, got {type(got).__name__}"
        if got.shape != expected.shape:
            return f"shape {tuple(got.shape)} instead of {tuple(expected.shape)}"
        if expected.dtype == torch.bool or got.dtype == torch.bool:
            if got.dtype != expected.dtype:
                return f"dtype {got.dtype} instead of {expected.dtype}"
            if torch.equal(got, expected):
                return None
            return f"values differ, {_first_difference(expected, got, atol)}"
        worst = float((got.to(expected.dtype) - expected).abs().max()) if got.numel() else 0.0
        if worst <= atol:
            return None
        return (
            f"values differ by up to {worst:.3g} (tolerance {atol:g}),"
            f" {_first_difference(expected, got, atol)}"
        )
    if isinstance(expected, float):
        if not isinstance(got, int | float) or isinstance(got, bool):
            return f"expected a number, got {type(got).__name__}"
        close = math.isclose(got, expected, rel_tol=1e-9, abs_tol=atol)
        return None if close else "values differ"
    return None if got == expected else "values differ"


def _wrong_dtype(got: Any, dtype: torch.dtype | None) -> str | None:
    """None if no dtype is required or ``got`` is a tensor of it, else what is wrong."""
    if dtype is None:
        return None
    if not isinstance(got, torch.Tensor):
        return f"expected a torch.Tensor of dtype {dtype}, got {type(got).__name__}"
    if got.dtype != dtype:
        return f"dtype {got.dtype}, but the exercise asks for {dtype}"
    return None


def whole_number(value: Any, what: str) -> int:
    """``value`` as an int if it is a whole number (an int, or a float like 4.0).

    A checker uses it where the answer counts something, so that 4.5 is reported
    rather than truncated to 4; raises TypeError naming ``what`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a whole number of {what}, got {type(value).__name__}")
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"expected a whole number of {what}, got {value!r}")
    return int(value)


def growing_error_hint(
    expected: torch.Tensor, got: Any, positions: torch.Tensor, *, small: int = 1000
) -> str | None:
    """A sentence when an answer is right for small positions and wrong for large ones.

    That pattern is the signature of angles m·θ_i (or r·θ_i) computed in float32:
    float32 keeps about 7 significant digits, so the angle's absolute error grows
    with the position (about 0.004 rad at 10^5). ``expected`` and ``got`` hold one
    row per entry of ``positions``; None when the pattern is not there.
    """
    try:
        got = torch.as_tensor(got, dtype=torch.float64)
    except (TypeError, ValueError, RuntimeError):
        return None
    if got.shape != expected.shape:
        return None
    error = (got - expected.to(torch.float64)).abs().reshape(len(positions), -1).amax(-1)
    start, near = positions.abs() <= small // 10, positions.abs() <= small
    if not start.any() or near.all():
        return None
    grows = float(error[~near].max()) >= 2 * float(error[near].max())
    if float(error[start].max()) > 1e-5 or float(error.max()) <= 1e-6 or not grows:
        return None  # wrong from the start, or no growth: not the float32-angle pattern
    worst = int(error.argmax())
    return (
        f"Right to 1e-5 up to position {small // 10:,} but off by {float(error[worst]):.2g} at"
        f" {int(positions[worst]):,}: an error that grows with the position is what angles"
        " computed in torch.float32 give; compute θ_i and the angles in torch.float64"
    )


def attempt(reader: Callable[..., Any], *args: Any) -> Any:
    """``reader(*args)``; a stub's NotImplementedError ends the grading as "not attempted"."""
    try:
        return reader(*args)
    except NotImplementedError as exc:
        raise _NotAttempted from exc


@contextlib.contextmanager
def _grading(name: str) -> Iterator[None]:
    """Run a checker's body; a stub met by :func:`attempt` prints "not attempted yet"."""
    try:
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
    used) into an ExerciseMismatch that names it.
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
                    f"{name}: your function or its answer raised {type(exc).__name__}: {exc}"
                ) from exc
            print(f"{name}: {verdict}")

    return graded


def check(
    name: str,
    reader: Callable[..., Any],
    reference: Callable[..., Any] | None,
    cases: Iterable[Case],
    *,
    atol: float = 1e-5,
    against: str = "pe_book",
    as_tensor: torch.dtype | None = None,
    dtype: torch.dtype | None = None,
    diagnose: Callable[[Case, Any], str | None] | None = None,
) -> None:
    """Compare ``reader`` with ``reference`` (or each case's ``expected``) on every case.

    Prints that all cases agree, or that the reader's stub still raises
    NotImplementedError ("not attempted yet"); raises ExerciseMismatch on the
    first disagreement or on any other exception from the reader's code.

    The book's ``check_*`` functions are built on it, and a course adds its own
    exercise in a notebook cell with no package edit::

        exercises.check("double", my_double, lambda x: 2 * x,
                        [Case((3,), "x = 3"), Case((0.5,), "x = 0.5", expected=1.0)],
                        against="the course's answer")

    ``against`` names what the reader is compared with in the final message;
    ``as_tensor`` (a dtype) converts the reader's answer to a tensor of that dtype
    first, so a list, an array or a float32 answer is accepted; ``dtype`` instead
    requires a tensor of exactly that dtype (for an exercise whose statement names
    it). ``diagnose(case, answer)`` may add a sentence to a mismatch that explains a
    common mistake (angles computed in float32, say), or return None.
    """
    cases = list(cases)
    with _grading(name):
        for index, case in enumerate(cases, start=1):
            if case.expected is None and reference is None:
                raise ValueError(f"{name}: case {index} has no expected answer and no reference")
            expected = reference(*case.args) if case.expected is None else case.expected
            try:
                got = attempt(reader, *case.args)
                if as_tensor is not None:
                    got = torch.as_tensor(got, dtype=as_tensor)
            except _NotAttempted:
                raise
            except Exception as exc:
                raise ExerciseMismatch(
                    f"{name}: case {index} of {len(cases)} ({case.description}) raised "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            problem = _wrong_dtype(got, dtype)
            if problem is None:
                problem = _agree(expected, got, atol)
                hint = diagnose(case, got) if problem and diagnose is not None else None
                problem = f"{problem}. {hint}" if hint else problem
            if problem:
                raise ExerciseMismatch(
                    f"{name}: case {index} of {len(cases)} does not match: {problem}.\n"
                    f"input: {case.description}\nexpected: {show(expected)}\ngot: {show(got)}"
                )
        print(f"{name}: all {len(cases)} cases agree with {against}.")
