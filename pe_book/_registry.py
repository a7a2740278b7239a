"""Name -> entry tables with the book's two registry errors, written once.

Claims and their evidence (``pe_book.claims``), quoted paper tables
(``pe_book.papers``) and position methods (``pe_book.positions``) are all
looked up by name: an unknown name raises a ``KeyError`` that lists the known
names, and a name registered twice raises a ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

__all__ = ["add", "lookup"]

V = TypeVar("V")


def lookup(table: Mapping[str, V], name: str, what: str) -> V:
    """``table[name]``; for an unknown name, a KeyError naming ``what`` and the known names."""
    try:
        return table[name]
    except KeyError:
        raise KeyError(f"unknown {what} {name!r}; known: {sorted(table)}") from None


def add(table: dict[str, V], name: str, entry: V, what: str) -> V:
    """Put ``entry`` in ``table`` under ``name`` and return it; a second ``name`` is an error."""
    if name in table:
        raise ValueError(f"{what} {name!r} is registered twice (first: {table[name]!r})")
    table[name] = entry
    return entry
