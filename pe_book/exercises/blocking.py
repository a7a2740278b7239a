"""The references blocked in a submission's kernel while its function is graded.

``python -m pe_book grade`` (the exercises of chapters 1-14) calls a student's function
through :func:`~.shim.call`. For that call only, every function of the modules that hold
the exercise's references, and of the checkers, has its code swapped for a stub that
raises ``RuntimeError("the grader blocks pe_book.alibi.alibi_slopes while ...")``: a
function that calls its reference, by any name, alias or object taken earlier, gets no
answer, whatever it did to the watch's profile hook. The stubs and the original code
were made when the watch was installed (after the chapter's set-up, before the
submission ran) and nothing is read back at a call, so a function whose code the
submission swapped itself is put back to the original too. What the exercise's
statement allows (``allowed``), the functions the grader sent as inputs, and what those
call by name in the blocked modules run unblocked. A copy of a reference made from its
code object or its source is not blocked: the watch's fingerprints and the grader's
scan of the submission's source (:mod:`~.tamper`) are what see those.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["BLOCKED", "make"]

#: How a stub's message starts; the grader reads the blocked function's name after it.
BLOCKED = "the grader blocks "


def _stub_source(freevars: tuple[str, ...]) -> str:
    """A stub with the free variables of the code it stands in for (``__class__``...)."""
    names = "".join(f"    {name} = None\n" for name in freevars)
    use = f"        ({', '.join(freevars)},)\n" if freevars else ""
    return (
        f"def outer():\n{names}    def stub(*args, **kwargs):\n{use}"
        "        raise RuntimeError('MESSAGE')\n    return stub\n"
    )


def _names(code: Any) -> set[str]:
    """The global and attribute names a code object (and the code nested in it) uses."""
    found = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= _names(const)
    return found


def make() -> tuple[Callable[..., Any], ...]:
    """``(register, block, restore)``, sharing the stubs in this closure."""
    function_type, isinstance_, id_, vars_, getattr_ = (
        types.FunctionType, isinstance, id, vars, getattr
    )  # fmt: skip
    names_of, within = _names, _within  # bound now: the module's names may be replaced later
    stubs: dict[str, list[tuple[str, Any, Any, Any]]] = {}  # module -> (label, f, code, stub)
    templates: dict[tuple[str, ...], Any] = {}
    swapped: list[tuple[Any, Any]] = []  # (function, its original code) while blocked

    def stub_for(label: str, code: Any) -> Any:
        if code.co_freevars not in templates:
            namespace: dict[str, Any] = {}
            exec(_stub_source(code.co_freevars), namespace)  # our own template
            templates[code.co_freevars] = namespace["outer"]().__code__
        template = templates[code.co_freevars]
        message = f"{BLOCKED}{label} while your function is graded: write it yourself"
        consts = tuple(message if c == "MESSAGE" else c for c in template.co_consts)
        return template.replace(
            co_consts=consts, co_name=code.co_name, co_qualname=code.co_qualname,
            co_filename=code.co_filename, co_firstlineno=code.co_firstlineno,
        )  # fmt: skip

    def register(name: str, module: Any) -> None:
        """Make the stubs of module ``name``'s functions (and its classes' methods)."""
        found = stubs.setdefault(name, [])
        filename = getattr_(module, "__file__", None)
        for value in [*vars_(module).values()]:
            owner = isinstance_(value, type)
            for item in [value, *(vars_(value).values() if owner else [])]:
                item = getattr_(getattr_(item, "__func__", item), "fget", item)
                if isinstance_(item, function_type) and item.__code__.co_filename == filename:
                    label = f"{name}.{item.__qualname__}"
                    found.append((label, item, item.__code__, stub_for(label, item.__code__)))

    def block(modules: Iterable[str], allowed: Iterable[str], sent: Iterable[Any]) -> None:
        """Swap in the stubs of ``modules`` but what is ``allowed``, what was ``sent``
        and what those call by name; put back what an earlier block swapped first."""
        restore()
        entries = [entry for module in modules for entry in stubs.get(module, [])]
        sent_ids = {  # a function, a method's function, a partial's function
            id_(getattr_(inner, "__func__", inner))
            for item in sent
            for inner in (item, getattr_(item, "func", None))
        }
        allowed = (*allowed, *(e[0] for e in entries if id_(e[1]) in sent_ids))
        free, names = [e for e in entries if within(e[0], allowed)], set()
        while free:  # what the free functions call by name runs free too
            for entry in free:
                names |= names_of(entry[2])
            free = [e for e in entries if e[1].__name__ in names and not within(e[0], allowed)]
            allowed += tuple(e[0] for e in free)
        for label, function, code, stub in entries:
            if not within(label, allowed):
                swapped.append((function, code))
                function.__code__ = stub

    def restore() -> None:
        """Put back every function's original code (the one seen at install)."""
        while swapped:
            function, code = swapped.pop()
            function.__code__ = code

    return register, block, restore


def _within(label: str, allowed: tuple[str, ...]) -> bool:
    return any(label == ok or label.startswith(ok + ".") for ok in allowed)
