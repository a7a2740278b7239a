"""Write it yourself: a checker fails an answer that calls the function it asks for (chapter 0).

Every exercise asks for a function the package already has (its *reference*, listed in
:data:`pe_book.exercises.graded.EXERCISES`). A function that simply calls that reference
would pass every case, and the reader would learn nothing; the grader gives it 0 points
(:mod:`pe_book.grade`). So the practice checkers say so too: while the reader's function
runs (:func:`pe_book.exercises.grading.attempt`), a profile hook notes every call of a
reference's code made from the reader's own code, and the checker fails the answer with a
message that names the function it called.

What is watched: a reference function's code; for a class, the functions of its body; for
a module, the functions it defines (less the exercise's ``allowed`` ones). A chapter's
exercise module may name more (:func:`also_watch`): package functions that hand over the
same answer by another road (exercise 4.1's matrix from ``symbolic.shift_block`` blocks, or
from RoPE applied to the identity). A call counts
when it comes from outside the package (the reader's cell) or from the checkers
themselves (the reader's function passed straight to its checker); what the package calls
internally does not. This is a hint for a reader practising, not a fence: the grader's
watch (:mod:`pe_book.exercises.shim`) is the one that marks submissions.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import sys
from collections.abc import Iterator
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

__all__ = ["also_watch", "called", "guard", "watching"]

_PACKAGE = str(Path(__file__).resolve().parents[1])
_CHECKERS = str(Path(__file__).resolve().parent)

#: The code objects the running checker's exercise asks the reader to write, by name.
_WATCHED: contextvars.ContextVar[dict[CodeType, str] | None] = contextvars.ContextVar(
    "pe_book_own_work", default=None
)


def _functions(owner: Any) -> Iterator[tuple[str, Any]]:
    """The plain functions defined in a class body or a module, by attribute name."""
    for attr, value in vars(owner).items():
        value = getattr(value, "__func__", value)  # staticmethod, classmethod
        value = getattr(value, "fget", value)  # property
        if inspect.isfunction(value) and (
            inspect.isclass(owner) or value.__module__ == owner.__name__
        ):
            yield attr, value


def _resolve(dotted: str) -> Any:
    """The object a dotted name points at (module, class or function), or None."""
    module, _, rest = dotted, "", []
    while module:
        try:
            obj: Any = importlib.import_module(module)
            break
        except ImportError:
            module, _, last = module.rpartition(".")
            rest.insert(0, last)
    else:
        return None
    for attr in rest:
        obj = getattr(obj, attr, None)
    return obj


#: Exercise name -> more package functions its practice checker watches (:func:`also_watch`).
_ALSO: dict[str, tuple[str, ...]] = {}


def also_watch(name: str, *dotted: str) -> None:
    """Watch ``dotted`` (package functions, classes or modules) for exercise ``name`` too,
    like its references: a chapter's exercise module names what else hands over the answer
    its statement asks the reader to build. Practice mode only (graded mode watches
    :data:`pe_book.exercises.graded.EXERCISES`)."""
    _ALSO[name] = tuple(dict.fromkeys((*_ALSO.get(name, ()), *dotted)))


def references(name: str) -> dict[CodeType, str]:
    """The code objects of exercise ``name``'s references, and of what its chapter's module
    named with :func:`also_watch`, each with its dotted name."""
    from pe_book.exercises.graded import entry  # graded imports the chapters' modules

    found = entry(name)
    codes: dict[CodeType, str] = {}
    for dotted in (*found.references, *_ALSO.get(name, ())):
        obj = inspect.unwrap(_resolve(dotted)) if _resolve(dotted) is not None else None
        if inspect.isfunction(obj):
            codes[obj.__code__] = dotted
        elif inspect.isclass(obj) or inspect.ismodule(obj):
            for attr, function in _functions(obj):
                if f"{dotted}.{attr}" not in getattr(found, "allowed", ()):
                    codes[function.__code__] = f"{dotted}.{attr}"
    return codes


@contextlib.contextmanager
def watching(name: str) -> Iterator[None]:
    """While a checker for exercise ``name`` runs, :func:`guard` watches its references."""
    token = _WATCHED.set(references(name))
    try:
        yield
    finally:
        _WATCHED.reset(token)


def _from_reader(caller: FrameType | None) -> bool:
    """True when a call comes from the reader's code (or straight from a checker)."""
    if caller is None:
        return True
    filename = str(Path(caller.f_code.co_filename).resolve()) if caller.f_code.co_filename else ""
    return not filename.startswith(_PACKAGE) or filename.startswith(_CHECKERS)


@contextlib.contextmanager
def guard() -> Iterator[list[str]]:
    """Run the reader's function under a profile hook; yields the list of references it
    called (filled when the block ends). The hook before it, if any, keeps being called."""
    codes = _WATCHED.get() or {}
    hits: list[str] = []
    if not codes:
        yield hits
        return
    previous = sys.getprofile()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes and _from_reader(frame.f_back):
            if codes[frame.f_code] not in hits:
                hits.append(codes[frame.f_code])
        if previous is not None:
            previous(frame, event, arg)

    sys.setprofile(hook)
    try:
        yield hits
    finally:
        sys.setprofile(previous)


def called(hits: list[str]) -> str:
    """The message for an answer that called its exercise's references."""
    names = ", ".join(f"`{name}`" for name in hits)
    return (
        f"your function calls {names}, the package's own answer to this exercise: "
        "write it yourself (the grader gives such an answer 0 points)."
    )
