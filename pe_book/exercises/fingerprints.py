"""What a code object computes: the fingerprint by which the grader knows a reference.

``python -m pe_book grade`` (the exercises of chapters 1-14) recognises a reference or
one of the book's solutions by what runs, not by its name: a code object's
*fingerprint* is a digest of its bytecode, constants and global names (not its file,
line or variable names), so a copy under another name, file or module has the same.
The shim (:mod:`~.shim`) builds its fingerprint functions with :func:`make` once, when
it is imported in the student's kernel, before the submission runs: every library
function they call and :data:`MIN_INSTRUCTIONS` are bound in their closure then, so a
submission that replaces them by name later changes nothing they compute.
"""

from __future__ import annotations

import _hashlib
import types
from collections.abc import Callable
from typing import Any

__all__ = ["MIN_INSTRUCTIONS", "make"]

#: Code objects with fewer instructions have no fingerprint: too common to tell a copy.
#: A one-line formula is below it: ``return [2.0 ** (-8.0 * (h + 1) / n) for h in
#: range(n)]``, the paper's slopes typed by hand, is 14 and must count as the reader's own.
MIN_INSTRUCTIONS = 20


def make() -> tuple[Callable[[Any], str | None], Callable[[Any, str], list[tuple[Any, str]]]]:
    """``(fingerprint, nested)``: what a code object computes (None for one too small to
    tell a copy from a coincidence), and (code, label) of every function defined in a
    code object, at any depth, labelled ``prefix.qualname``."""
    isinstance_, repr_, sorted_, str_, type_ = isinstance, repr, sorted, str, type
    sum_, frozenset_, code_type = sum, frozenset, types.CodeType
    sha256, min_instructions = _hashlib.openssl_sha256, MIN_INSTRUCTIONS

    def digest(code: Any) -> str:
        parts = [
            code.co_code.hex(),
            str_(code.co_argcount),
            str_(code.co_posonlyargcount),
            str_(code.co_kwonlyargcount),
            "|".join(code.co_names),
        ]
        for const in code.co_consts:
            if isinstance_(const, code_type):
                parts.append("code:" + digest(const))
            elif isinstance_(const, frozenset_):
                parts.append("frozenset:" + "|".join(sorted_(repr_(c) for c in const)))
            else:
                parts.append(type_(const).__name__ + ":" + repr_(const))
        return sha256("\x00".join(parts).encode()).hexdigest()

    def fingerprint(code: Any) -> str | None:
        """What a code object computes, whatever its file, line, name or local names;
        None for a code object too small to tell a copy from a coincidence, and for a
        comprehension, generator expression or lambda (``<listcomp>``, ...): idioms such
        as ``[float(x) for x in s]`` recur in every library (its enclosing function's
        fingerprint covers it)."""
        if code.co_name[:1] == "<":
            return None
        instructions = sum_(1 for op in code.co_code[::2] if op)  # op 0 is a CACHE entry
        return digest(code) if instructions >= min_instructions else None

    def nested(code: Any, prefix: str) -> list[tuple[Any, str]]:
        """(code, label) of every function defined in ``code``, at any depth."""
        found = []
        for const in code.co_consts:
            if isinstance_(const, code_type):
                found.append((const, f"{prefix}.{const.co_qualname}"))
                found += nested(const, prefix)
        return found

    return fingerprint, nested
