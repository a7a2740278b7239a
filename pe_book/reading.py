"""Show readers the code a chapter relies on, without its docstring (chapter 2 first)."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable

__all__ = ["body"]


def body(function: Callable) -> str:
    """The body of ``function`` after its docstring, dedented, without ``# fmt:`` markers."""
    source = inspect.getsource(function).split('"""')[-1]
    lines = [line for line in source.splitlines() if "# fmt:" not in line]
    return textwrap.dedent("\n".join(lines)).strip()
