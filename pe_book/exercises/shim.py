"""The grader's hand inside a submission's kernel: call a function, send back its answer.

``python -m pe_book grade`` (the exercises of chapters 1-14) imports this module in the
student's kernel, after the chapter's set-up cell. :func:`install` starts watching the
exercises' reference functions; :func:`call` runs one of the student's functions on
arguments the grader sent (pickled by the grader, so they may hold tensors and
functions) and publishes one report: the answer in the :mod:`~.wire` format, or the
exception it raised and where in the student's code, and every watched function the
call reached. Nothing here knows an expected value: the grader compares in its own
process. A callable argument the grader cannot send (a closure over its tables) stays
in the grader, and each call of it is a round trip over the kernel's stdin channel.

The watch is a profile hook (``sys.setprofile`` and ``threading.setprofile``): it sees
a reference reached by any name, an alias, a copy made before grading or a thread, but
runs in the student's process, which could switch it off; the report says whether it
was still in place after each call.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
import json
import linecache
import pickle
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pe_book.exercises import wire

__all__ = ["MIME", "PROMPT", "call", "install", "notes"]

#: The MIME type of the report :func:`call` publishes.
MIME = "application/vnd.pe-book.grade+json"
#: What a callback's stdin request starts with.
PROMPT = "pe_book-callback:"

_PACKAGE = str(Path(__file__).resolve().parents[1])
_state: dict[str, Any] = {"watched": {}, "files": frozenset(), "hits": [], "depth": 0}


def _code_keys(dotted: str) -> tuple[str, set[tuple[str, int] | None]]:
    """The (file, first line) of the function ``dotted`` names, or (file, {None}) for a
    module: every function in that file."""
    module_name, _, attribute = dotted.rpartition(".")
    try:
        module = importlib.import_module(dotted)
        return str(Path(inspect.getfile(module)).resolve()), {None}
    except ImportError:
        pass
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    function = inspect.unwrap(
        getattr(target, "__init__", target) if isinstance(target, type) else target
    )
    code = function.__code__
    return str(Path(code.co_filename).resolve()), {
        (str(Path(code.co_filename).resolve()), code.co_firstlineno)
    }


def _profile(frame: Any, event: str, arg: Any) -> None:
    if event != "call":
        return
    code = frame.f_code
    filename = code.co_filename
    if filename not in _state["files"] or _state["depth"]:
        return
    for key in ((filename, code.co_firstlineno), (filename, None)):
        name = _state["watched"].get(key)
        if name is not None:
            _state["hits"].append(name)
            return


def install(watched: list[str]) -> None:
    """Watch the functions ``watched`` names (dotted: ``pe_book.alibi.alibi_slopes``; a
    module name watches every function in its file) from now on, in every thread."""
    table: dict[tuple[str, int | None], str] = {}
    for dotted in watched:
        filename, keys = _code_keys(dotted)
        for key in keys:
            table[key if key is not None else (filename, None)] = dotted
    _state["watched"] = table
    _state["files"] = frozenset(filename for filename, _ in table)
    sys.setprofile(_profile)
    threading.setprofile(_profile)


def notes() -> None:
    """Publish the watched functions reached so far (the cells' own calls) and forget them."""
    hits, _state["hits"] = _state["hits"], []
    _publish({"hits": sorted(set(hits)), "watching": sys.getprofile() is _profile})


class _Sanctioned:
    """A function the grader sent (an input of the exercise): what it calls is not the
    student's doing, so the watch looks away while it runs."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self._function = function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _state["depth"] += 1
        try:
            return self._function(*args, **kwargs)
        finally:
            _state["depth"] -= 1


class _Callback:
    """A function that stays in the grader: each call asks the grader over stdin."""

    def __init__(self, index: int, ask: Callable[[str], str]) -> None:
        self._index, self._ask = index, ask

    def __call__(self, *args: Any) -> Any:
        reply = json.loads(self._ask(PROMPT + json.dumps([self._index, wire.encode(list(args))])))
        if "raised" in reply:
            kind = getattr(builtins, reply["raised"], None)
            kind = kind if isinstance(kind, type) and issubclass(kind, Exception) else RuntimeError
            raise kind(reply["message"])
        return wire.decode(reply["value"])


class _Arguments(pickle.Unpickler):
    def __init__(self, data: bytes, ask: Callable[[str], str]) -> None:
        import io

        super().__init__(io.BytesIO(data))
        self._ask = ask

    def persistent_load(self, pid: Any) -> Any:
        kind, value = pid
        if kind == "sent":
            return _Sanctioned(pickle.loads(value))
        if kind == "callback":
            return _Callback(int(value), self._ask)
        raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")


def _where(exc: BaseException) -> str:
    """ " (in my_table, line 3: `angle = ...`)": the innermost frame of the student's code."""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if not frame.filename.startswith(_PACKAGE)
        and "site-packages" not in frame.filename
        and not frame.filename.startswith("<")
    ]
    if not frames:
        return ""
    frame = frames[-1]
    line = (frame.line or linecache.getline(frame.filename, frame.lineno)).strip()
    code = f": `{line}`" if line and len(line) <= 70 else ""
    return f" (in {frame.name}, line {frame.lineno}{code})"


def _publish(report: dict[str, Any]) -> None:
    from IPython.display import display

    display({MIME: report}, raw=True)


def call(name: str, arguments: bytes) -> None:
    """Call the student's ``name`` on the pickled ``arguments``; publish the report."""
    import IPython

    shell = IPython.get_ipython()
    ask = shell.kernel.raw_input if shell is not None and hasattr(shell, "kernel") else input
    namespace = shell.user_ns if shell is not None else vars(sys.modules["__main__"])
    args = _Arguments(arguments, ask).load()
    _state["hits"], _state["depth"] = [], 0
    report: dict[str, Any] = {}
    function = namespace.get(name)
    started = time.perf_counter()
    if not callable(function):
        report["missing"] = True
    else:
        try:
            answer = function(*args)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            message = str(exc).strip().splitlines()
            report["raised"] = {
                "type": type(exc).__name__,
                "message": message[0][:300] if message else "",
                "where": _where(exc),
                "not_implemented": isinstance(exc, NotImplementedError),
            }
        else:
            try:
                report["answer"] = wire.encode(answer)
            except Exception as exc:
                report["answer"] = wire.encode(wire.Opaque(type(answer).__name__))
                report["encode_error"] = type(exc).__name__
    report["seconds"] = time.perf_counter() - started
    report["watching"] = sys.getprofile() is _profile
    report["hits"] = sorted(set(_state["hits"]))
    _publish(report)
