"""Graded mode's secret: inputs the student never sees (the exercises of chapters 1-14).

In a reader's notebook every checker runs its fixed cases, and its random inputs come
from fixed seeds, so a chapter's outputs never change. ``python -m pe_book grade``
runs the same checkers in its own process under :func:`active` with a secret seed,
and then:

- :func:`seeded` generators, which checkers use for their random inputs (tensors,
  matrices, tables), are keyed by the secret as well as their own number;
- :func:`drawn` adds cases drawn for that exercise (:mod:`~.graded` holds a draw per
  exercise) after the fixed ones, described by their input class only, so a report
  names the kind of input that failed without giving its values;
- :func:`shuffled` puts a property checker's fixed inputs in a secret order, so that
  answers given by call count fail.

A table of answers to the fixed cases therefore fails, and so does any answer read
from the checker: the comparison never runs in the student's process.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import torch

if TYPE_CHECKING:
    from pe_book.exercises import grading

__all__ = ["DRAWN", "active", "current", "drawn", "drawn_args", "rng", "seeded", "shuffled"]

#: How a drawn case is described in a mismatch: its input class, never its values.
DRAWN = "drawn from the grader's secret seed (the values are not shown)"

_SECRET: ContextVar[int | None] = ContextVar("pe_book_grade_secret", default=None)
Item = TypeVar("Item")


@contextlib.contextmanager
def active(seed: int) -> Iterator[None]:
    """Run checkers in graded mode with the secret ``seed`` (an int) inside this block."""
    token = _SECRET.set(int(seed))
    try:
        yield
    finally:
        _SECRET.reset(token)


def current() -> int | None:
    """The active secret seed, or None in a reader's notebook."""
    return _SECRET.get()


def _mix(*parts: Any) -> int:
    """A 63-bit seed from the parts (stable across processes, unlike hash())."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big") >> 1


def seeded(number: int) -> torch.Generator:
    """``torch.Generator().manual_seed(number)``; in graded mode, keyed by the secret too."""
    secret = current()
    return torch.Generator().manual_seed(number if secret is None else _mix(secret, number))


def rng(name: str) -> np.random.Generator:
    """The generator exercise ``name`` draws its secret cases from (graded mode only)."""
    secret = current()
    if secret is None:
        raise RuntimeError("rng() draws secret cases: only in graded mode (active(seed))")
    return np.random.default_rng(_mix(secret, name))


def drawn_args(name: str) -> list[tuple[Any, ...]]:
    """The argument tuples drawn for exercise ``name`` ([] outside graded mode)."""
    return [draw.args for draw in _draws(name)]


def drawn(name: str) -> list[grading.Case]:
    """Cases drawn for exercise ``name`` from the secret ([] outside graded mode)."""
    from pe_book.exercises.grading import Case

    return [Case(draw.args, DRAWN, expected=draw.expected, kind=draw.kind) for draw in _draws(name)]


def _draws(name: str) -> list[Any]:
    if current() is None:
        return []
    from pe_book.exercises import graded

    entry = graded.EXERCISES.get(name)
    return [] if entry is None or entry.draw is None else list(entry.draw(rng(name)))


def shuffled(name: str, items: Sequence[Item]) -> list[Item]:
    """``items`` as given; in graded mode in an order drawn from the secret."""
    if current() is None:
        return list(items)
    order = rng(f"{name}/order").permutation(len(items))
    return [items[int(i)] for i in order]
