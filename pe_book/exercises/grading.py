"""The grading framework every exercise checker is built on, and the book's one answer policy.

The preface (chapter 0) states the policy; the exercises of chapters 1 on use it.

A checker is three things: **cases** (inputs, each described and, where it matters,
labelled with its input class), a **reference** (``pe_book``'s own function, or a
property the answer must have) and the **policy** below, which this module alone
implements. It runs the reader's function on every case and either prints that all
agree or raises :class:`ExerciseMismatch` naming the first case that does not, its
input class and the first index that misses. A stub that still raises
``NotImplementedError`` is reported as "not attempted yet" without failing, so a
chapter runs top to bottom before the reader has written anything.

The policy (stated once, in the preface):

- **Values, at the exercise's tolerance.** An answer passes if
  ``|answer - expected| <= atol + rtol·|expected|`` everywhere, computed in float64.
  Any floating dtype (float64, float32, float16, bfloat16), and a tensor, a NumPy array
  or a list alike, passes if its values meet that; whole-number answers must be exact.
  A dtype alone never fails an answer.
- **Float32 named when it is the likely cause.** When an answer misses by a small
  amount and is held in float32 or a 16-bit type, or holds float32 numbers converted
  to float64, or misses by an error that grows with the position (the signature of
  angles m·θ_i formed in float32), the message says so by name and gives the
  exercise's reason (a checker's ``float32=`` sentence), e.g. "form the angles in
  float64: positions reach 2,000 here, where float32 angles are off by 1e-4".
- **Messages point, never answer.** A mismatch names the case, its input class, and
  the first index that misses with the largest error; it never prints the expected
  values. The reader's code raising is one short message (the exception and the line
  of the reader's code), not a traceback.

Two ways to build a checker:

- :func:`check` compares the reader with a reference (or each case's expected
  answer) on a list of :class:`Case` inputs; most checkers are one call to it, and
  a course adds its own exercise with it in a notebook cell.
- :func:`grader` wraps a checker that tests a property instead (the reader's
  matrix reproduces a bilinear form, say): it calls the reader through
  :func:`attempt`, raises :class:`ExerciseMismatch` with the reason a case fails
  (:func:`judge` and :func:`float32_note` apply the same policy), and returns the
  verdict to print.
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import math
import textwrap
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "Case",
    "ExerciseMismatch",
    "attempt",
    "check",
    "float32_note",
    "grader",
    "judge",
    "show",
    "tolerance_text",
    "whole_number",
]

NOT_ATTEMPTED = (
    "{name}: not attempted yet.\n"
    "  Replace the stub's `raise NotImplementedError` with your code (the statement\n"
    "  above says what to return), then rerun this cell."
)

#: Printed lines are wrapped to fit the book's 80-column output box.
WIDTH = 79

#: The reason given when a checker has none of its own: float32's unit roundoff.
FLOAT32_DEFAULT = (
    "float32 keeps about 7 significant digits (u = 2^-24, about 6e-8), fewer than this"
    " exercise's tolerance needs: compute in float64"
)

#: An answer held in one of these dtypes is named when it misses.
_LOW_PRECISION = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.complex64: "complex64",
}

#: Misses larger than this share of the answer's scale are not blamed on rounding.
_ROUNDING_SCALE = 0.05


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


def show(value: Any) -> str:
    """The reader's answer as a message prints it: a tensor or array by its shape and
    dtype (its entries are the reader's to print), anything else by its repr."""
    if isinstance(value, torch.Tensor | np.ndarray):
        return f"{type(value).__name__} of shape {tuple(value.shape)}, dtype {value.dtype}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _number(x: float) -> str:
    """A tolerance or error as the messages print it: 1e-6, 3.2e-5, 0.25, 31."""
    if x == 0 or not math.isfinite(x):
        return str(x)
    if abs(x) >= 1e-3:
        return f"{x:.2g}"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa.removesuffix('.0')}e{int(exponent)}"


def tolerance_text(atol: float, rtol: float) -> str:
    """How an exercise's tolerance reads: "exactly", "to within 1e-6", "to a relative 1e-9"."""
    if atol == 0 and rtol == 0:
        return "exactly"
    if rtol == 0:
        return f"to within {_number(atol)}"
    if atol == 0:
        return f"to a relative {_number(rtol)}"
    return f"to within {_number(atol)} + {_number(rtol)} relative"


def _tolerance_phrase(atol: float, rtol: float) -> str:
    """The tolerance inside a mismatch message: "tolerance 1e-6", "an exact match is asked"."""
    if atol == 0 and rtol == 0:
        return "an exact match is asked"
    if rtol == 0:
        return f"tolerance {_number(atol)}"
    if atol == 0:
        return f"tolerance: a relative {_number(rtol)}"
    return f"tolerance {_number(atol)} plus a relative {_number(rtol)}"


def whole_number(value: Any, what: str) -> int:
    """``value`` as an int if it is a whole number (an int, or a float like 4.0).

    A checker uses it where the answer counts something, so that 4.5 is reported
    rather than truncated to 4; raises TypeError naming ``what`` otherwise.
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    elif isinstance(value, np.ndarray | np.generic) and value.size == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected a whole number of {what}, got {type(value).__name__}")
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"expected a whole number of {what}, got {value!r}")
    return int(value)


# ---- reading an answer's values ------------------------------------------------------


def _dtype_name(answer: Any) -> str | None:
    """The low-precision dtype an answer is held in ("float32", "bfloat16", ...), or None."""
    if isinstance(answer, torch.Tensor):
        return _LOW_PRECISION.get(answer.dtype)
    if isinstance(answer, np.ndarray | np.generic) and answer.dtype in (np.float32, np.float16):
        return str(answer.dtype)
    if isinstance(answer, list | tuple) and answer:
        names = {_dtype_name(x) for x in answer}
        return names.pop() if len(names) == 1 else None
    return None


def _values(answer: Any, what: str = "numbers") -> torch.Tensor:
    """An answer's numbers as a float64 tensor (bool stays bool); TypeError if it has none."""
    if isinstance(answer, torch.Tensor):
        values = answer.detach()
    elif isinstance(answer, np.ndarray | np.generic):
        try:
            values = torch.from_numpy(np.array(answer, copy=True))
        except TypeError as exc:
            raise TypeError(f"expected {what}, got an array of {answer.dtype}") from exc
    elif isinstance(answer, bool):
        values = torch.tensor(answer)
    elif isinstance(answer, int | float):
        values = torch.tensor(answer, dtype=torch.float64)
    elif isinstance(answer, list | tuple):
        try:
            values = torch.from_numpy(np.array([_values(x).numpy() for x in answer]))
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"expected {what}, got a {type(answer).__name__} that does not hold them ({exc})"
            ) from exc
    else:
        raise TypeError(
            f"expected {what} (a tensor, a NumPy array or a list), got {type(answer).__name__}"
        )
    if values.is_complex():
        raise TypeError("expected real numbers, got complex ones")
    return values if values.dtype == torch.bool else values.to(torch.float64)


def _float32_valued(got: torch.Tensor, expected: torch.Tensor) -> bool:
    """True if every finite entry of ``got`` is a float32 number while ``expected`` is not
    all float32 numbers: the values were computed in float32 and converted at the end."""
    finite = got.isfinite()
    if not finite.any() or bool((got[finite] == got[finite].round()).all()):
        return False  # whole numbers say nothing about the arithmetic
    exact32 = got[finite].float().double() == got[finite]
    return bool(exact32.all()) and not bool((expected.float().double() == expected).all())


def float32_note(answer: Any, expected: Any, because: str | None = None) -> str | None:
    """The policy's sentence naming float32 (or a 16-bit type) for an answer that missed.

    Returns None unless ``answer`` is held in a low-precision dtype, or holds float32
    numbers where ``expected`` does not; ``because`` is the exercise's reason, else
    :data:`FLOAT32_DEFAULT`.
    """
    name = _dtype_name(answer)
    if name is not None:
        return f"Your answer is {name}, the likely cause: {because or FLOAT32_DEFAULT}."
    try:
        rounded = _float32_valued(_values(answer), _values(expected))
    except TypeError:
        return None
    if not rounded:
        return None
    return (
        "Your values are float32 numbers (converted to float64 at the end), the likely"
        f" cause: {because or FLOAT32_DEFAULT}."
    )


def _growing_error(error: torch.Tensor, positions: torch.Tensor, atol: float) -> str | None:
    """A sentence if the error (one row per position) is within the tolerance up to
    position 100 and grows with the position: what angles m·θ_i formed in float32 give.
    None when the pattern is not there."""
    error = error.reshape(len(positions), -1).amax(-1)
    start, near = positions.abs() <= 100, positions.abs() <= 1000
    if not start.any() or near.all() or not bool(error.isfinite().all()):
        return None
    if float(error[start].max()) > atol or float(error[~near].max()) < 2 * float(error[near].max()):
        return None  # wrong from the start, or no growth: not the float32-angle pattern
    worst = int(error.argmax())
    return (
        f"Your error grows with the position ({_number(float(error[start].max()))} up to"
        f" position 100, {_number(float(error[worst]))} at {int(positions[worst]):,}), as"
        " angles formed in float32 make it, the likely cause"
    )


# ---- judging -----------------------------------------------------------------------


def judge(
    expected: Any,
    got: Any,
    *,
    atol: float = 0.0,
    rtol: float = 0.0,
    float32: str | None = None,
    locate: Callable[[tuple[int, ...]], str] | None = None,
    positions: torch.Tensor | None = None,
) -> str | None:
    """None if ``got`` meets ``expected`` under the book's policy, else what is wrong.

    The reason names the first index that misses (``locate(index)`` says what it is,
    e.g. "position 1,025, column 0") and the largest error, never the expected values;
    it names float32 when the policy says it is the likely cause (``float32``: this
    exercise's reason; ``positions``: the position of each row, to recognise an error
    that grows with it).
    """
    if expected is None or isinstance(expected, str | bool | np.bool_):
        if isinstance(expected, bool | np.bool_) and not (
            isinstance(got, bool | np.bool_) or (isinstance(got, torch.Tensor) and got.numel() == 1)
        ):
            return f"expected True or False, got {show(got)}"
        same = got is None if expected is None else (got is not None and bool(got == expected))
        return None if same else f"your answer {show(got)} is not this case's answer"
    if isinstance(expected, int | float | np.number):  # one number
        try:
            value = _values(got, "a number")
        except TypeError as exc:
            return str(exc)
        if value.dtype == torch.bool or value.numel() != 1:
            return f"expected a number, got {show(got)}"
        error = abs(float(value.flatten()[0]) - float(expected))
        if error <= atol + rtol * abs(float(expected)):
            return None
        scale = max(abs(float(expected)), 1e-300)
        if isinstance(expected, int | np.integer):
            return f"your answer {show(got)} is not this case's answer"
        size = (
            f"off by a relative {_number(error / scale)}"
            if error / scale <= 1e-3
            else "more than 0.1% off"
        )
        problem = f"your answer {show(got)} is {size} ({_tolerance_phrase(atol, rtol)})"
        note = float32_note(got, expected, float32) if error / scale <= _ROUNDING_SCALE else None
        return f"{problem}. {note}" if note else problem
    want = _values(expected)
    try:
        have = _values(got)
    except TypeError as exc:
        return str(exc)
    if have.shape != want.shape:
        return f"shape {tuple(have.shape)} where {tuple(want.shape)} is asked"
    if want.dtype == torch.bool or have.dtype == torch.bool:
        if have.dtype != want.dtype:
            wanted = "True/False" if want.dtype == torch.bool else "numbers"
            return f"expected {wanted}, got {show(got)}"
        bad = have != want
        error = bad.double()
    else:
        error = (have - want).abs()
        bad = ~(error <= atol + rtol * want.abs())  # NaN misses too
    if not bad.any():
        return None
    index = tuple(int(i) for i in bad.nonzero()[0])
    where = f"index {list(index)}" + (f" ({locate(index)})" if locate else "")
    worst = float(error[bad].nan_to_num(nan=math.inf).max())
    largest = "NaN (your answer holds NaN)" if bool(error[bad].isnan().any()) else _number(worst)
    problem = (
        f"{int(bad.sum()):,} of {bad.numel():,} entries miss ({_tolerance_phrase(atol, rtol)});"
        f" the first at {where}; the largest error is {largest}"
    )
    if want.dtype == torch.bool:
        return problem
    note = None
    if worst <= _ROUNDING_SCALE * max(1.0, float(want.abs().max())) or _dtype_name(got) in (
        "float16",
        "bfloat16",
    ):
        note = float32_note(got, want, float32)
        if note is None and positions is not None:
            grows = _growing_error(error.nan_to_num(nan=math.inf), positions, atol)
            note = f"{grows}: {float32 or FLOAT32_DEFAULT}." if grows else None
    return f"{problem}. {note}" if note else problem


# ---- running the reader --------------------------------------------------------------

_LIBRARY_DIRS = (  # torch, numpy and pe_book itself: frames there are not the reader's
    *(str(Path(module.__file__).resolve().parent) for module in (torch, np) if module.__file__),
    str(Path(__file__).resolve().parents[1]),
)


def _where_in_readers_code(exc: BaseException) -> str:
    """Where the reader's code raised: " (in my_table, line 3: `angle = ...`)" for the
    innermost frame outside the libraries, or "" when there is none."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not str(Path(frame.filename).resolve()).startswith(_LIBRARY_DIRS)
        and "site-packages" not in frame.filename
        and frame.filename != "<string>"
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
    return f"raised {type(exc).__name__}{said}{_where_in_readers_code(exc)}"


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
    cases = list(cases)
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
