"""The grader's hand inside a submission's kernel: call a function, send back its answer.

``python -m pe_book grade`` (the exercises of chapters 1-14) imports this module in the
student's kernel, after the chapter's set-up cell. :func:`install` starts the watch;
:func:`call` runs one of the student's functions on arguments the grader sent (pickled
by the grader, so they may hold tensors and functions) and publishes one report: the
answer in the :mod:`~.wire` format, or the exception it raised and where in the
student's code, and what the watch saw since the last report. :func:`notes` publishes
what the watch saw while a cell ran. Nothing here knows an expected value: the grader
compares in its own process. A callable argument the grader cannot send (a closure over
its tables) stays in the grader, and each call of it is a round trip over the kernel's
stdin channel.

**What the watch sees.** A profile hook (``sys.setprofile`` and
``threading.setprofile``) sees every Python function that runs, by any name, alias, copy
or thread. It recognises a reference by what runs, not by its name: a code object of a
watched module's file (every function of a module that holds an exercise's reference,
and of the checkers), or one whose *fingerprint* (:mod:`~.fingerprints`: its bytecode,
constants and global names; not its file, line or variable names) is that of a watched
module's function or of one of the book's solutions (the grader compiles the book's
solution cells in its own process and sends only their fingerprints). So a reference
cloned under another file name, or a reference or solution exec'd from source read at
run time, is seen when it runs. A hit is the outermost watched function the submission
called (what the reference calls in turn is not counted). A permanent audit hook
(``sys.addaudithook``, which no code can remove) reports what the profile hook cannot
see: the watch switched or replaced, a process started, the package's or the book's
files read outside an import or a traceback, a reference's code object taken, the
interpreter's objects searched (``gc``) or its memory reached (``ctypes``), another
process's memory or environment read.

**Out of reach of names.** The watch's state, its sanctioning of the functions the
grader sent and the key that signs its reports live in closures made once, when this
module is first imported, before the submission runs; the library functions they use
were captured then too. The module has no state a submission can change by name, and
replacing :func:`call` or :func:`notes` (or the display machinery) gives the grader a
report without a valid signature, which it marks. Code that digs into the closures
(``sys.getprofile().__closure__``), the interpreter's objects or its memory can still
switch the watch off: each report checks the watch's state (its counter back at 0, its
tables and hooks as installed), the grader reads the submission's source for those
names (:mod:`~.tamper`), and the references are stubs that raise while a function is
graded (:mod:`~.blocking`); the README's *Grading a class* says what stays out of sight.
"""

from __future__ import annotations

import _hashlib
import _json
import _thread
import importlib
import importlib.util
import os
import pickle
import secrets
import sys
import sysconfig
import threading
import time
import traceback
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pe_book.exercises import blocking, fingerprints, wire
from pe_book.exercises.grading import where_in_readers_code

__all__ = ["MIME", "call", "fingerprint", "install", "notes", "signature"]

#: The MIME type of the reports this module publishes.
MIME = "application/vnd.pe-book.grade+json"
#: Where the package's own source lives (its .py and .pyc files are watched for reads).
PACKAGE = str(Path(__file__).resolve().parents[1])


#: Audit events of a process started (its work is out of the watch's sight).
_PROCESS_EVENTS = frozenset(
    ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
     "os.forkpty", "pty.spawn")
)  # fmt: skip
_GC_EVENTS = frozenset(("gc.get_objects", "gc.get_referrers", "gc.get_referents"))
#: ctypes events that reach memory at an address, marked whoever calls; the others only
#: from the submission's own code (``import transformers`` loads libraries by ctypes).
_CTYPES_MEMORY = frozenset(("ctypes.cdata", "ctypes.cdata/buffer", "ctypes.string_at",
                            "ctypes.wstring_at", "ctypes.PyObj_FromPtr"))  # fmt: skip
#: Files of another process that hold its secrets: /proc/<pid>/environ, ...
_PROC_SECRETS = ("environ", "cmdline", "mem", "maps")


def _make() -> tuple[Callable[..., Any], ...]:
    """The watch: its state and the functions that read it, all in this closure.

    Every library function the watch calls after the submission starts is bound here,
    at import (before the submission runs), so replacing it by name later changes
    nothing here.
    """
    # ---- captured library functions -------------------------------------------------
    isinstance_, len_, sorted_, str_, type_, id_ = isinstance, len, sorted, str, type, id
    any_, callable_, bytes_ = any, callable, bytes
    function_type, package = types.FunctionType, PACKAGE
    process_events, gc_events, proc_secrets = _PROCESS_EVENTS, _GC_EVENTS, _PROC_SECRETS
    hmac_digest, token_bytes = _hashlib.hmac_digest, secrets.token_bytes
    make_encoder, encode_string = _json.make_encoder, _json.encode_basestring_ascii
    getframe, get_ident = sys._getframe, _thread.get_ident
    start_new_thread = _thread.start_new_thread
    set_profile, get_profile = sys.setprofile, sys.getprofile
    thread_set_profile, add_audit_hook = threading.setprofile, sys.addaudithook
    realpath, fsdecode, sep = os.path.realpath, os.fsdecode, os.sep
    own_pid = str(os.getpid())
    ctypes_memory, bootstrap = _CTYPES_MEMORY, importlib._bootstrap.__dict__  # type: ignore
    library = tuple({realpath(p) + sep for k, p in sysconfig.get_paths().items() if "lib" in k})
    ctypes_origin: str = importlib.util.find_spec("ctypes").origin  # type: ignore[union-attr]
    ctypes_dir = realpath(ctypes_origin).rpartition(sep)[0] + sep
    perf_counter, unpickler, pickle_loads = time.perf_counter, pickle.Unpickler, pickle.loads
    setprofile_code, settrace_code = threading.setprofile.__code__, threading.settrace.__code__
    thread_start_code = threading.Thread.start.__code__
    thread_bootstrap_code = threading.Thread._bootstrap_inner.__code__
    find_and_load_code = importlib._bootstrap._find_and_load.__code__  # type: ignore[attr-defined]
    readers = [traceback.__dict__, warnings.__dict__]  # frames that read source for a traceback

    # ---- state ------------------------------------------------------------------------
    key = token_bytes(32)  # signs every report; the grader learns it from install's report
    main_thread = get_ident()
    own = [0]  # > 0 while the shim does its own work in the main thread
    armed = [False]
    files: set[str] = set()  # the watched modules' source files, as code objects name them
    modules: dict[str, str] = {}  # file -> module name
    prints: dict[str, str] = {}  # fingerprint -> label ("pe_book.alibi.alibi_slopes", ...)
    functions: set[int] = set()  # ids of the watched modules' functions (their __code__ read)
    readable: list[str] = []  # folders whose files a submission may not read (the book's)
    seen: dict[int, tuple[Any, str | None]] = {}  # id(code) -> (code, label or None)
    sent: dict[int, Any] = {}  # id -> a function the grader sent (an input of the exercise)
    hits: set[str] = set()
    tamper: set[str] = set()
    display: list[Callable[..., Any]] = []

    fingerprint, nested = fingerprints.make()  # its closure binds what it calls
    register, block, restore = blocking.make()  # the stubs of the references, in its closure
    wire_encode, opaque, callback = wire.encode, wire.Opaque, wire.Callback
    where = where_in_readers_code
    sizes: list[tuple[Any, ...]] = []  # the tables' sizes and hooks' code at install

    # ---- the profile hook ---------------------------------------------------------------
    def classify(code: Any) -> str | None:
        entry = seen.get(id_(code))
        if entry is None or entry[0] is not code:
            if code is setprofile_code or code is settrace_code:
                label = "!watch"
            elif code.co_filename in files:
                label = f"{modules[code.co_filename]}.{code.co_qualname}"
            else:
                label = prints.get(fingerprint(code) or "")
            entry = seen[id_(code)] = (code, label)
        return entry[1]

    def sanctioned(frame: Any) -> bool:
        """The frame runs the wrapper of a function the grader sent, that function."""
        if frame is None or frame.f_code is not wrapper_code:
            return False
        function = frame.f_locals.get("function")
        return sent.get(id_(function)) is function

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            label = classify(frame.f_code)
            if label is None or (own[0] and get_ident() == main_thread):
                return
            if label == "!watch":
                tamper.add("changed the grader's watch")
                return
            back = frame.f_back
            if back is not None and (classify(back.f_code) is not None or sanctioned(back)):
                return  # called by a watched function (or one the grader sent): not a hit
            hits.add(label)
        elif event == "c_call" and arg is start_new_thread:
            if not (frame.f_code is thread_start_code and threading._profile_hook is profile):
                tamper.add("started a thread the grader does not watch")

    def watching() -> bool:
        return get_profile() is profile and threading._profile_hook is profile

    # ---- the audit hook -----------------------------------------------------------------
    def reads_source(path: Any) -> bool:
        """An open of the package's source, the book's files or another process's secrets
        not by an import, nor a warning or traceback reading the package's source."""
        if isinstance_(path, bytes_):
            path = fsdecode(path)
        if not isinstance_(path, str_):
            return False
        path = realpath(path)
        parts = path.split(sep)
        secret = len_(parts) == 4 and parts[1] == "proc" and parts[3] in proc_secrets
        source = path.startswith(package + sep) and path.endswith((".py", ".pyc"))
        book = any_(path.startswith(d + sep) for d in readable)
        if not (secret or source or book):
            return False
        if secret:
            return parts[2] not in ("self", "thread-self", own_pid) or parts[3] == "mem"
        frame = getframe(2)
        while frame is not None:
            if frame.f_code is find_and_load_code or (
                not book and any_(frame.f_globals is reader for reader in readers)
            ):
                return False
            frame = frame.f_back
        return True

    def submission_calls_ctypes() -> bool:
        """The innermost frame outside ctypes is the submission's: no library's, no import's."""
        frame = getframe(2)
        while frame is not None and realpath(frame.f_code.co_filename).startswith(ctypes_dir):
            frame = frame.f_back
        if frame is None or frame.f_globals is bootstrap:
            return False
        path = realpath(frame.f_code.co_filename)
        return not (path.startswith(library) or path.startswith(package + sep))

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "object.__getattr__":  # first: the profile hook's every frame.f_code
            if args[1] == "__code__" and id_(args[0]) in functions and armed[0]:
                tamper.add("took a reference's code object")  # the shim never does, armed
            return
        if not armed[0] or (own[0] and get_ident() == main_thread):
            return
        if event == "open":
            if args and reads_source(args[0]):
                tamper.add("read pe_book's or the book's source")
        elif event in process_events:
            tamper.add("started a process")
        elif event in ("sys.setprofile", "sys.settrace"):
            caller = getframe(1).f_code
            if not (caller is thread_bootstrap_code and threading._profile_hook is profile):
                tamper.add("changed the grader's watch")
        elif event in gc_events:
            tamper.add("searched the interpreter's objects (gc)")
        elif event.startswith("ctypes.") and (event in ctypes_memory or submission_calls_ctypes()):
            tamper.add("reached the interpreter's memory (ctypes)")

    # ---- reports ------------------------------------------------------------------------
    def dumps(value: Any) -> str:
        encode = make_encoder({}, _unencodable, encode_string, None, ":", ",", True, False, True)
        return "".join(encode(value, 0))

    def publish(report: dict[str, Any], nonce: str) -> None:
        payload = dumps(report)
        mac = hmac_digest(key, f"{nonce}\n{payload}".encode(), "sha256").hex()
        display[0]({MIME: {"payload": payload, "mac": mac}}, raw=True)

    def take() -> dict[str, Any]:
        """What the watch saw since the last report, and forget it."""
        if not intact():
            tamper.add("changed the grader's watch (its state)")
        seen_hits, seen_tamper = sorted_(hits), sorted_(tamper)
        hits.clear()
        tamper.clear()
        return {"hits": seen_hits, "tamper": seen_tamper, "watching": watching()}

    def intact() -> bool:
        """The watch as install left it: armed, no work of its own under way (``own``
        is 0 between reports), its tables' sizes and its hooks' code unchanged."""
        state = (len_(files), len_(prints), len_(functions), profile.__code__, audit.__code__)
        return armed[0] and not own[0] and [state] == sizes

    # ---- functions the grader sends -------------------------------------------------------
    def wrap(function: Any) -> Callable[..., Any]:
        sent[id_(function)] = function

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return function(*args, **kwargs)

        return wrapper

    wrapper_code = wrap(len).__code__
    sent.clear()

    class Arguments(unpickler):  # type: ignore[misc, valid-type]
        def __init__(self, data: bytes, ask: Callable[[str], str]) -> None:
            import io

            super().__init__(io.BytesIO(data))
            self._ask = ask

        def persistent_load(self, pid: Any) -> Any:
            kind, value = pid
            if kind == "sent":
                return wrap(pickle_loads(value))
            if kind == "callback":
                return callback(int(value), self._ask)
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")

    # ---- the public functions --------------------------------------------------------------
    def install(watched: list[str], solutions: dict[str, str], folders: list[str]) -> None:
        """Watch every function of the modules ``watched`` names, the book's solutions
        (``solutions``: fingerprint -> label) and reads of the files under ``folders``,
        from now on, in every thread; publish the key that signs the reports. Once."""
        if armed[0]:
            tamper.add("installed the grader's watch again")
            return
        from IPython.display import display as show

        display.append(show)
        for name in watched:
            module = importlib.import_module(name)
            register(name, module)
            spec = importlib.util.find_spec(name)
            code = spec.loader.get_code(name)  # type: ignore[union-attr]
            for filename in (code.co_filename, module.__file__ or "", realpath(code.co_filename)):
                files.add(filename)
                modules[filename] = name
            for inner, label in nested(code, name):
                prints.setdefault(fingerprint(inner) or "", label)
            for value in [*vars(module).values()]:
                for item in [value, *(vars(value).values() if isinstance_(value, type) else [])]:
                    item = getattr(item, "__func__", item)
                    if isinstance_(item, function_type) and item.__code__.co_filename in files:
                        functions.add(id_(item))
        prints.pop("", None)
        prints.update(solutions)
        readable.extend(realpath(folder) for folder in folders)
        try:
            from IPython.core import ultratb  # tracebacks IPython draws read source too

            readers.append(ultratb.__dict__)
        except ImportError:  # pragma: no cover - the kernel always has IPython
            pass
        thread_set_profile(profile)  # first: the profile hook would see this call
        set_profile(profile)
        armed[0] = True
        sizes.append((len_(files), len_(prints), len_(functions), profile.__code__, audit.__code__))
        add_audit_hook(audit)
        display[0]({MIME: {"key": key.hex(), "python": sys.version}}, raw=True)

    def notes(nonce: str = "") -> None:
        """Publish what the watch saw since the last report (while a cell ran)."""
        publish(take(), nonce)

    def call(
        name: str, arguments: bytes, nonce: str = "", blocked: Any = (), allowed: Any = ()
    ) -> None:
        """Call the student's ``name`` on the pickled ``arguments``, the functions of the
        modules ``blocked`` names (but ``allowed``) blocked meanwhile; publish the report."""
        import IPython

        shell = IPython.get_ipython()
        ask = shell.kernel.raw_input if shell is not None and hasattr(shell, "kernel") else input
        namespace = shell.user_ns if shell is not None else vars(sys.modules["__main__"])
        own[0] += 1
        try:
            args = Arguments(arguments, ask).load()
            block(blocked, allowed, [*sent.values()])
        finally:
            own[0] -= 1
        report: dict[str, Any] = {}
        function = namespace.get(name)
        started = perf_counter()
        if not callable_(function):
            report["missing"] = True
        else:
            try:
                answer = function(*args)
            except BaseException as exc:
                if isinstance_(exc, KeyboardInterrupt):
                    raise
                own[0] += 1
                try:
                    message = str_(exc).strip().splitlines()
                    report["raised"] = {
                        "type": type_(exc).__name__,
                        "message": message[0][:300] if message else "",
                        "where": where(exc),
                        "not_implemented": isinstance_(exc, NotImplementedError),
                    }
                finally:
                    own[0] -= 1
            else:
                try:
                    report["answer"] = wire_encode(answer)
                except Exception as exc:
                    report["answer"] = wire_encode(opaque(type_(answer).__name__))
                    report["encode_error"] = type_(exc).__name__
        report["seconds"] = perf_counter() - started
        restore()
        report.update(take())
        publish(report, nonce)

    return install, notes, call, fingerprint


def _unencodable(value: Any) -> Any:
    raise TypeError(f"a report holds a {type(value).__name__}")


install, notes, call, fingerprint = _make()


def signature(key: bytes, nonce: str, payload: str) -> str:
    """The grader's side of a report's signature (HMAC-SHA256 of the nonce and payload)."""
    return _hashlib.hmac_digest(key, f"{nonce}\n{payload}".encode(), "sha256").hex()
