"""The grader's reading of a submission's source: the ways into the watch, named.

``python -m pe_book grade`` (the exercises of chapters 1-14) watches a submission's
kernel from inside it (:mod:`~.shim`), and everything inside the kernel can be reached
by the submission's code: the profile hook from ``sys.getprofile()``, its state from
the hook's ``__closure__``, the grader's frames from ``sys._getframe``. What the
submission did at run time can be hidden; what its cells say cannot. So the grader
reads the cells it runs, in its own process, and marks (every exercise) code that
names what no exercise needs:

- the interpreter's frames, hooks and closures: ``sys.getprofile``, ``sys.setprofile``,
  ``threading.setprofile``, ``sys._getframe``, ``inspect.currentframe``, ``f_back``,
  ``__closure__``, ``cell_contents``, ``__code__``, ``gc.get_referrers``, a code
  object's fields (``co_consts``, ...) and the types that make functions from them;
- the grader's own modules (``pe_book.exercises.shim``, ...);
- source read by the machinery of tracebacks (``linecache``, ``FrameSummary``) or a
  module's loader (``__loader__``, ``inspect.getsource``);
- ``ctypes``; and names the reading cannot see: ``exec``, ``eval``, ``compile``,
  ``getattr`` (``setattr``, ``hasattr``, ``delattr``) passed around as a value or with
  a name built inside the call (``getattr(sys, "".join(...))``),
  ``operator.attrgetter``, ``vars()[...]``, a module imported by a computed name,
  ``pickle.loads``.

A name counts as an attribute, a variable, a keyword, an import or a word inside a string (so
``getattr(sys, "getprofile")`` counts). ``import sys`` and ``sys.getsizeof``,
``inspect.signature``, ``getattr(x, "name")``, ``getattr(config, field)`` over a
dataclass's fields (the book does it), ``model.eval()`` or ``re.compile`` are honest
code and do not count, nor does any code cell of the book. A name built at run
time and kept in a variable before ``getattr`` reads it is out of the scan's sight: the
README's *Grading a class* says what that leaves.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

__all__ = ["scan"]

#: Names that reach the watch's hooks, the frames of the grader's calls or a closure.
WATCH = frozenset(
    ("getprofile", "setprofile", "gettrace", "settrace", "_getframe", "currentframe",
     "_current_frames", "f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "cr_frame",
     "ag_frame", "last_traceback", "__closure__", "cell_contents", "co_freevars", "__code__",
     "__globals__", "get_referrers", "get_referents", "get_objects", "_profile_hook",
     "_trace_hook", "addaudithook", "getclosurevars", "getouterframes", "getinnerframes",
     "walk_stack", "FunctionType", "CodeType", "co_code", "co_consts", "co_names",
     "co_filename", "co_qualname", "co_firstlineno", "co_varnames", "co_cellvars")
)  # fmt: skip
#: Names that read source outside an import: tracebacks' machinery, a module's loader.
SOURCE = frozenset(
    ("linecache", "FrameSummary", "getsource", "getsourcelines", "__loader__", "get_data")
)
#: The grader's modules, which a submission has no reason to import.
GRADER = frozenset(("shim", "blocking", "remote", "fingerprints", "secret", "tamper", "wire"))
#: Calls that run or reach code by a name the scan cannot read.
DYNAMIC = frozenset(("exec", "eval", "compile", "__import__", "breakpoint"))
#: Attribute reads by a name: honest only with the name written out.
BY_NAME = frozenset(("getattr", "setattr", "delattr", "hasattr"))
#: Functions that reach attributes or objects by computed names.
COMPUTED = frozenset(("attrgetter", "methodcaller", "getattr_static", "__getattribute__"))

_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _marks(tree: ast.AST) -> set[str]:
    """What one cell's code names, as the marks say it."""
    found: set[str] = set()
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}

    def name(word: str) -> None:
        if word in WATCH:
            found.add(f"reaches the interpreter's frames, hooks or closures ({word})")
        elif word in SOURCE:
            found.add(f"reads source through {word}")
        elif word == "ctypes":
            found.add("uses ctypes")
        elif word == "shim":
            found.add("reaches the grader's code or a computed name (shim)")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name(node.attr)
            if node.attr in ("shim", "_shim") or node.attr in COMPUTED:
                found.add(f"reaches the grader's code or a computed name ({node.attr})")
        elif isinstance(node, ast.Name):
            name(node.id)
            if node.id in DYNAMIC or node.id in COMPUTED:
                found.add(f"runs or reaches code the grader cannot read ({node.id})")
            elif node.id in BY_NAME and id(node) not in called:
                found.add(f"reaches attributes by computed names ({node.id} as a value)")
        elif isinstance(node, ast.keyword) and node.arg:  # code.replace(co_filename=...)
            name(node.arg)
        elif isinstance(node, ast.alias):
            for part in node.name.split("."):
                name(part)
                if (part in GRADER and node.name.startswith("pe_book")) or part in COMPUTED:
                    found.add(f"reaches the grader's code or a computed name ({part})")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pe_book"):
            for alias in node.names:
                if alias.name in GRADER:
                    found.add(f"reaches the grader's code or a computed name ({alias.name})")
        elif _constant(node):
            for word in _WORDS.findall(node.value):  # type: ignore[attr-defined]
                name(word)
        if isinstance(node, ast.Call):
            found |= _call(node)
        elif isinstance(node, ast.Subscript) and not _constant(node.slice):
            base = node.value
            if isinstance(base, ast.Call) and getattr(base.func, "id", "") in ("vars", "globals"):
                found.add("reaches attributes by computed names (vars()[...])")
            elif isinstance(base, ast.Attribute) and base.attr == "__dict__":
                found.add("reaches attributes by computed names (__dict__[...])")
    return found


def _call(node: ast.Call) -> set[str]:
    """A call that reaches a name computed at run time."""
    func = node.func
    what = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if isinstance(func, ast.Name) and what in BY_NAME and len(node.args) >= 2:
        if not isinstance(node.args[1], ast.Constant | ast.Name):  # built in the call
            return {f"reaches attributes by computed names ({what})"}
    if what == "import_module" and not (node.args and _constant(node.args[0])):
        return {"reaches attributes by computed names (import_module)"}
    owner = getattr(func, "value", None)
    if what in ("loads", "load") and getattr(owner, "id", "") in ("pickle", "marshal"):
        return {f"runs or reaches code the grader cannot read ({owner.id}.{what})"}  # type: ignore[union-attr]
    return set()


def scan(cells: Iterable[tuple[int, str]]) -> list[tuple[int, str]]:
    """``(cell index, mark)`` for each way into the watch the cells' code names, in order.

    A cell that does not parse (IPython magics, a syntax error) is read without its
    lines that start with ``%`` or ``!``; one that still does not parse is skipped (it
    raised when it ran)."""
    found = []
    for index, text in cells:
        lines = [line for line in text.splitlines() if not line.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        found += [(index, mark) for mark in sorted(_marks(tree))]
    return found
