"""A submission's own kernel, and its functions called from the grader's process.

``python -m pe_book grade`` (the exercises of chapters 1-14) starts a fresh kernel
per submission (nbclient), with the grader's environment minus its secret and a
scratch working directory, runs the submission's cells there with a time limit per
cell, then hands each checker a :class:`RemoteFunction` in place of the student's
function. The checker runs in the grader's process as it does in a notebook; each
call crosses to the kernel (arguments pickled by the grader, the answer back as
:mod:`~.wire` JSON, never unpickled), so the student's code never shares a process
with a checker, its references or its expected values, and reading the caller's
frames finds only :mod:`~.shim`. Every report the kernel sends is signed with a key
the shim made (in a closure) before the submission ran and sent once, with a fresh
nonce per request: a report forged by a submission that replaced the shim's functions,
replayed, or missing, raises :class:`Forged`, and the grader marks it. A callable
argument that cannot be pickled (a closure over a checker's tables) stays in the
grader: :mod:`~.shim` asks for each call over the kernel's stdin channel, and the
grader answers with the wire format.
"""

from __future__ import annotations

import base64
import hmac
import io
import json
import os
import pickle
import secrets
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

from pe_book.exercises import blocking, shim, wire

__all__ = ["CallRecord", "Forged", "RemoteFunction", "Session", "SubmissionError", "TimeLimit"]

#: Environment variables a kernel never inherits (the grader's secret seed).
SECRET_VARIABLES = ("PE_BOOK_GRADE_SEED",)


class SubmissionError(Exception):
    """Raised in the grader for an exception the student's function raised in its kernel;
    its class is renamed after the student's exception (ValueError, IndexError, ...)."""


class TimeLimit(SubmissionError):
    """The student's function ran past the time limit (the kernel was interrupted)."""


class Forged(SubmissionError):
    """The kernel's answer to a request was not one report signed by the grader's shim."""


#: The mark a missing or forged report gives.
FORGED = "the grader's report was missing or not signed by its shim"


class CallRecord:
    """What the calls of one exercise's function did: raised, timed out, reached a reference."""

    def __init__(self) -> None:
        self.calls = 0
        self.raised: list[str] = []  # "ValueError: ... (in my_table, line 3)"
        self.not_implemented = False
        self.timed_out = False
        self.hits: set[str] = set()  # watched functions reached
        self.unwatched = False  # the profile hook was gone after a call
        self.tamper: set[str] = set()  # what the kernel's audit hook saw: a process, ...
        self.missing = False  # no such function in the kernel
        self.seconds = 0.0


class _Arguments(pickle.Pickler):
    """Pickles a call's arguments; a callable that cannot be pickled becomes a callback."""

    def __init__(self, buffer: io.BytesIO, callbacks: list[Callable[..., Any]]) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.callbacks = callbacks

    def persistent_id(self, obj: Any) -> Any:
        if not callable(obj) or isinstance(obj, type):
            return None
        try:
            return ("sent", pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, AttributeError, TypeError):
            self.callbacks.append(obj)
            return ("callback", len(self.callbacks) - 1)


def _exception(report: dict[str, Any]) -> Exception:
    """The grader-side exception for a student's exception report."""
    if report.get("not_implemented"):
        return NotImplementedError(report.get("message", ""))
    kind = type(str(report.get("type", "Exception"))[:60], (SubmissionError,), {})
    message = f"{report.get('message', '')}{report.get('where', '')}".strip()
    return kind(message)


class Session:
    """A fresh kernel for one submission: run its cells, then call its functions.

    Use as a context manager; the kernel is shut down on exit.
    """

    def __init__(self, *, cell_timeout: float = 60.0, call_timeout: float = 20.0) -> None:
        self.cell_timeout, self.call_timeout = cell_timeout, call_timeout
        self._scratch = tempfile.TemporaryDirectory(prefix="pe_book_grade_")
        self._nb = nbformat.v4.new_notebook()
        self._kc: BlockingKernelClient | None = None
        self._key: bytes | None = None
        self.python = ""  # the kernel's sys.version (fingerprints are the same only in one)
        self._context: Any = None
        self.client: NotebookClient | None = None

    def __enter__(self) -> Session:
        scratch = Path(self._scratch.name)
        km = AsyncKernelManager(kernel_name="python3", transport="ipc", ip=str(scratch / "kernel"))
        self.client = NotebookClient(
            self._nb,
            km=km,
            timeout=self.cell_timeout,
            allow_errors=True,
            interrupt_on_timeout=True,
            error_on_timeout={
                "ename": "TimeLimit",
                "evalue": f"the cell ran longer than {self.cell_timeout:g} s",
                "traceback": [],
            },
        )
        env = {k: v for k, v in os.environ.items() if k not in SECRET_VARIABLES}
        env.setdefault("OMP_NUM_THREADS", "1")
        work = scratch / "work"
        work.mkdir()
        self._context = self.client.setup_kernel(env=env, cwd=str(work), cleanup_kc=True)
        self._context.__enter__()
        self._kc = BlockingKernelClient()
        self._kc.load_connection_info(km.get_connection_info())
        self._kc.start_channels()
        self._kc.wait_for_ready(timeout=60)
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            if self._kc is not None:
                self._kc.stop_channels()
            if self._context is not None:  # stops the channels, shuts the kernel down
                self._context.__exit__(None, None, None)
        finally:
            self._scratch.cleanup()

    def run(self, text: str) -> dict[str, Any]:
        """Run one cell of code; its executed cell (outputs, and an error if it raised)."""
        assert self.client is not None, "use Session as a context manager"
        cell = nbformat.v4.new_code_cell(text)
        self._nb.cells.append(cell)
        self.client.execute_cell(cell, len(self._nb.cells) - 1)
        return cell

    def run_cells(self, texts: Iterable[str]) -> list[dict[str, Any]]:
        return [self.run(text) for text in texts]

    def install(self, watched: list[str], solutions: dict[str, str], folders: list[str]) -> None:
        """Start the shim's watch (:func:`~.shim.install`) and keep the key it signs with."""
        code = (
            "from pe_book.exercises import shim as _shim\n"
            f"_shim.install({watched!r}, {solutions!r}, {folders!r})"
        )
        found = [report for report in self._reports(code) if "key" in report]
        if len(found) != 1:
            raise SubmissionError("the grader's watch did not start in the kernel")
        self._key = bytes.fromhex(found[0]["key"])
        self.python = str(found[0].get("python", ""))

    def published(
        self, code: Callable[[str], str], hook: Callable[[dict[str, Any]], None] | None = None
    ) -> Any:
        """Run ``code(nonce)`` (a call into :mod:`~.shim` with a fresh nonce) and return
        the report it publishes, checked against the shim's key.

        Raises TimeLimit after ``call_timeout`` seconds (the kernel is interrupted), and
        Forged when the answer is not one report signed for this nonce.
        """
        nonce = secrets.token_hex(16)
        reports = self._reports(code(nonce), hook)
        signed = [
            json.loads(report["payload"])
            for report in reports
            if self._key is not None
            and isinstance(report.get("payload"), str)
            and hmac.compare_digest(
                str(report.get("mac")), shim.signature(self._key, nonce, report["payload"])
            )
        ]
        if len(reports) != 1 or len(signed) != 1:
            raise Forged(FORGED)
        return signed[0]

    def notes(self) -> dict[str, Any]:
        """What the shim's watch saw since its last report (:func:`~.shim.notes`)."""
        return self.published(
            lambda nonce: f"from pe_book.exercises import shim as _shim\n_shim.notes({nonce!r})"
        )

    def _reports(
        self, code: str, hook: Callable[[dict[str, Any]], None] | None = None
    ) -> list[Any]:
        """Run ``code`` in the kernel (no history kept) and collect what it publishes in the
        shim's MIME type."""
        assert self._kc is not None and self.client is not None, "use Session as a context manager"
        reports: list[Any] = []

        def output(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "display_data" and shim.MIME in msg["content"]["data"]:
                reports.append(msg["content"]["data"][shim.MIME])

        def stdin(msg: dict[str, Any]) -> None:
            self._kc.input(hook(msg) if hook else "")  # type: ignore[union-attr]

        try:
            self._kc.execute_interactive(
                code,
                store_history=False,
                allow_stdin=True,
                stdin_hook=stdin,
                output_hook=output,
                timeout=self.call_timeout,
            )
        except TimeoutError as exc:
            run_sync(self.client.km.interrupt_kernel)()
            self._drain()
            raise TimeLimit(f"ran longer than the time limit of {self.call_timeout:g} s") from exc
        return reports

    def _drain(self) -> None:
        """Wait for the interrupted request's reply, so the next call starts clean."""
        assert self._kc is not None
        while True:
            try:
                msg = self._kc.get_shell_msg(timeout=30)
            except Exception:  # queue.Empty: the kernel did not answer
                return
            if msg["msg_type"] == "execute_reply":
                return

    def function(
        self, name: str, record: CallRecord, blocked: tuple[list[str], list[str]] = ([], [])
    ) -> RemoteFunction:
        return RemoteFunction(self, name, record, blocked)


class RemoteFunction:
    """The student's function ``name`` in the session's kernel, callable from the grader;
    ``blocked``: the modules whose functions are blocked while it runs, and those allowed
    (:mod:`~.blocking`)."""

    def __init__(
        self,
        session: Session,
        name: str,
        record: CallRecord,
        blocked: tuple[list[str], list[str]] = ([], []),
    ) -> None:
        self.session, self.name, self.record, self.blocked = session, name, record, blocked
        self.__name__ = name

    def __call__(self, *args: Any) -> Any:
        buffer, callbacks = io.BytesIO(), []
        _Arguments(buffer, callbacks).dump(args)
        payload = base64.b64encode(buffer.getvalue()).decode("ascii")

        def code(nonce: str) -> str:
            return (
                "import base64 as _b64\n"
                "from pe_book.exercises import shim as _shim\n"
                f"_shim.call({self.name!r}, _b64.b64decode({payload!r}), {nonce!r},"
                f" *{self.blocked!r})"
            )

        self.record.calls += 1
        try:
            report = self.session.published(code, lambda msg: _answer(msg, callbacks))
        except TimeLimit:
            self.record.timed_out = True
            raise
        except Forged:
            self.record.tamper.add(FORGED)
            self.record.raised.append(FORGED)
            raise
        self.record.seconds += float(report.get("seconds", 0.0))
        self.record.hits.update(report.get("hits", []))
        self.record.unwatched |= not report.get("watching", True)
        self.record.tamper.update(report.get("tamper", []))
        if report.get("missing"):
            self.record.missing = True
            raise NotImplementedError(f"no function {self.name} in the submission")
        if "raised" in report:
            said = str(report["raised"].get("message", ""))
            if said.startswith(blocking.BLOCKED):  # it called a function blocked meanwhile
                self.record.hits.add(said.removeprefix(blocking.BLOCKED).split(" ")[0])
            exception = _exception(report["raised"])
            if isinstance(exception, NotImplementedError):
                self.record.not_implemented = True
            else:
                self.record.raised.append(f"{type(exception).__name__}: {exception}")
            raise exception
        return wire.decode(report["answer"])


def _answer(msg: dict[str, Any], callbacks: list[Callable[..., Any]]) -> str:
    """The grader's reply to a callback request from the kernel (wire JSON)."""
    prompt = msg["content"].get("prompt", "")
    if not prompt.startswith(wire.PROMPT):
        return ""  # the student's own input(): an empty line
    try:
        index, arguments = json.loads(prompt[len(wire.PROMPT) :])
        value = callbacks[int(index)](*wire.decode(arguments))
        return json.dumps({"value": wire.encode(value)})
    except Exception as exc:  # the student's arguments were wrong: say so in their kernel
        return json.dumps({"raised": type(exc).__name__, "message": str(exc)[:300]})
