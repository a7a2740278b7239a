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
a reference reached by any name, an alias, a copy made before grading or a thread. It
runs in the student's process, which could switch it off, so a permanent audit hook
(``sys.addaudithook``, which no code can remove) reports what the profile hook cannot
see: the watch switched or replaced, a process started (a reference run in a
subprocess), a package module's source or a book notebook read (a reference copied
with ``inspect.getsource``, a solution read from disk), a thread started outside it.
The report says all of it, and whether the watch was still in place after each call.
"""

from __future__ import annotations

import _thread
import builtins
import importlib
import inspect
import json
import linecache
import os
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
_BOOK = str(Path(_PACKAGE).parent / "notebooks")
_state: dict[str, Any] = {
    "watched": {}, "files": frozenset(), "hits": [], "depth": 0, "tamper": set(), "armed": False
}  # fmt: skip
_SETPROFILE, _SETTRACE = threading.setprofile.__code__, threading.settrace.__code__
_THREAD_START = threading.Thread.start.__code__
_THREAD_BOOTSTRAP = threading.Thread._bootstrap_inner.__code__


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
    if _state["depth"]:
        return
    if event == "c_call":
        if arg is _thread.start_new_thread and not (
            frame.f_code is _THREAD_START and threading._profile_hook is _profile
        ):
            _state["tamper"].add("started a thread the grader does not watch")
        return
    if event != "call":
        return
    code = frame.f_code
    if code is _SETPROFILE or code is _SETTRACE:
        _state["tamper"].add("changed the grader's watch")
        return
    filename = code.co_filename
    if filename not in _state["files"]:
        return
    for key in ((filename, code.co_firstlineno), (filename, None)):
        name = _state["watched"].get(key)
        if name is not None:
            _state["hits"].append(name)
            return


#: Audit events of a process started (its work is out of the watch's sight).
_PROCESS_EVENTS = frozenset(
    ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
     "os.forkpty", "pty.spawn")
)  # fmt: skip
#: Files whose frames read source for their own reasons: imports, warnings, tracebacks.
_READERS = ("warnings.py", "traceback.py")


def _reads_source(path: Any) -> bool:
    """An ``open`` of a package module's source or of a book notebook, not by an import,
    a warning or a traceback."""
    if not isinstance(path, str):
        return False
    path = os.path.abspath(path)
    if not (
        (path.startswith(_PACKAGE + os.sep) and path.endswith(".py"))
        or (path.startswith(_BOOK + os.sep) and path.endswith(".ipynb"))
    ):
        return False
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<frozen importlib") or filename.endswith(_READERS):
            return False
        frame = frame.f_back
    return True


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The permanent audit hook (sys.addaudithook: no code can remove it): what the
    profile hook cannot see, a process started, the watch switched, the source read."""
    if not _state["armed"] or _state["depth"]:
        return
    if event in _PROCESS_EVENTS:
        _state["tamper"].add("started a process")
    elif event in ("sys.setprofile", "sys.settrace"):
        caller = sys._getframe(1).f_code
        if not (caller is _THREAD_BOOTSTRAP and threading._profile_hook is _profile):
            _state["tamper"].add("changed the grader's watch")
    elif event == "open" and args and _reads_source(args[0]):
        _state["tamper"].add("read pe_book's or the book's source")


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
    threading.setprofile(_profile)  # first: the profile hook would see this call
    sys.setprofile(_profile)
    if not _state["armed"]:
        sys.addaudithook(_audit)
        _state["armed"] = True


def _watching() -> bool:
    return sys.getprofile() is _profile and threading._profile_hook is _profile


def notes() -> None:
    """Publish what the cells did since :func:`install` or the last notes (watched
    functions reached, the watch tampered with) and forget it."""
    hits, _state["hits"] = _state["hits"], []
    tamper, _state["tamper"] = _state["tamper"], set()
    _publish({"hits": sorted(set(hits)), "tamper": sorted(tamper), "watching": _watching()})


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


def _own(function: Callable[..., Any], *args: Any) -> Any:
    """Run the shim's own work (reading the student's traceback) out of the watch's sight."""
    _state["depth"] += 1
    try:
        return function(*args)
    finally:
        _state["depth"] -= 1


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
    _state["hits"], _state["depth"], _state["tamper"] = [], 0, set()
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
                "where": _own(_where, exc),
                "not_implemented": isinstance(exc, NotImplementedError),
            }
        else:
            try:
                report["answer"] = wire.encode(answer)
            except Exception as exc:
                report["answer"] = wire.encode(wire.Opaque(type(answer).__name__))
                report["encode_error"] = type(exc).__name__
    report["seconds"] = time.perf_counter() - started
    report["watching"] = _watching()
    report["hits"] = sorted(set(_state["hits"]))
    report["tamper"] = sorted(_state["tamper"])
    _publish(report)
