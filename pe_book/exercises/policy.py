"""The book's one answer policy: how every exercise checker judges an answer (chapter 0).

The preface (chapter 0) states the policy; the exercises of chapters 1 on use it, through
:mod:`pe_book.exercises.grading` (which runs the reader's code on the cases) or directly
(:func:`judge`, :func:`float32_note` inside a checker that tests a property).

- **Values, at the exercise's tolerance.** An answer passes if
  ``|answer - expected| <= atol + rtol·|expected|`` everywhere, computed in float64.
  Any floating dtype (float64, float32, float16, bfloat16), and a tensor, a NumPy array
  or a list alike, passes if its values meet that; whole-number answers must be exact
  (:func:`whole_number`). A dtype alone never fails an answer.
- **Float32 named when it is the likely cause.** When an answer misses by a small
  amount and is held in float32 or a 16-bit type, or holds float32 numbers converted
  to float64, or misses by an error that grows with the position (the signature of
  angles m·θ_i formed in float32), the message says so by name and gives the
  exercise's reason (a checker's ``float32=`` sentence), e.g. "form the angles in
  float64: positions reach 2,000 here, where float32 angles are off by 1e-4"
  (:func:`float32_note`).
- **Messages point, never answer.** A mismatch names the first index that misses and
  the decade of the largest error, never its digits (:func:`judge`), and shows the
  reader's answer by its shape and dtype (:func:`show`); it never prints the expected
  values. How a tolerance reads in the verdict: :func:`tolerance_text`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import torch

__all__ = [
    "float32_note",
    "judge",
    "show",
    "tolerance_text",
    "whole_number",
]

#: The reason given when a checker has none of its own: float32's unit roundoff.
FLOAT32_DEFAULT = (
    "float32 keeps about 7 significant digits (u = 2^-24, about 6e-8), fewer than this"
    " exercise's tolerance needs: compute in float64"
)

#: What a 16-bit answer's note says when the checker gives no reason of its own: its own
#: precision, not float32's (float32 may well be enough for the exercise).
_SIXTEEN_BIT = {
    "float16": "float16 keeps about 3 significant digits (u = 2^-11, about 5e-4)",
    "bfloat16": "bfloat16 keeps about 2 significant digits (u = 2^-8, about 4e-3)",
}

#: An answer held in one of these dtypes is named when it misses.
_LOW_PRECISION = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.complex64: "complex64",
}

#: Misses larger than this share of the answer's scale are not blamed on rounding.
_ROUNDING_SCALE = 0.05


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


def _decade(x: float) -> str:
    """An error as a miss reports it: its decade ("between 1e-8 and 1e-7"), never its digits.

    Two digits would give the answer away: your answer plus or minus a 2-digit error
    lands within the tolerance when the error is a few dozen times it.
    """
    if x <= 0 or not math.isfinite(x):
        return str(x)
    power = Decimal(x).adjusted()  # exact, from huge to subnormal: 10^power <= x < 10^(power+1)
    return f"between {_power_of_ten(power)} and {_power_of_ten(power + 1)}"


def _power_of_ten(power: int) -> str:
    """10^power as the messages print it, written out, never computed: 0.001, 1, 1,000, 1e6."""
    if 0 <= power <= 5:
        return f"{10**power:,}"
    if -3 <= power < 0:
        return "0." + "0" * (-power - 1) + "1"
    return f"1e{power}"


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
        try:
            values = torch.tensor(answer, dtype=torch.float64)
        except OverflowError as exc:  # only an int can be too large for float64
            raise TypeError(
                f"expected {what} within float64's range (up to about 1.8e308), got an"
                f" integer of {answer.bit_length()} bits"
            ) from exc
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
        if because is None and name in _SIXTEEN_BIT:
            because = (
                f"{_SIXTEEN_BIT[name]}, fewer than this exercise's tolerance needs: compute in"
                " float64"
            )
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
            f"off by a relative error {_decade(error / scale)}"
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
    problem = (
        f"{int(bad.sum()):,} of {bad.numel():,} entries miss ({_tolerance_phrase(atol, rtol)});"
        f" the first at {where}"
    )
    if want.dtype == torch.bool:
        return problem  # True/False entries have no size of error
    worst = float(error[bad].nan_to_num(nan=math.inf).max())
    largest = "NaN (your answer holds NaN)" if bool(error[bad].isnan().any()) else _decade(worst)
    problem += f"; the largest error is {largest}"
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
