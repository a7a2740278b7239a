"""Headless Chromium for the book's checks: find the browser, open pages, read what they did.

    python3 tools/browser.py   # which browser the checks would use (exit 1: none found)

Used by ``tools/book.py`` (``browse``, ``screenshot``) and by the browser tests
(``tests/test_book_in_browser.py``, ``tests/test_slides.py``).

The browser is driven through the Chrome DevTools Protocol over its websocket,
with ``websocket-client`` (a small pure-Python package that Jupyter's server
already depends on, pinned in the lock): no browser download, no driver binary,
and the protocol reports exactly what the checks need (every request a page
makes, console messages, uncaught exceptions, JavaScript results, screenshots).

Which browser: ``$PE_BOOK_CHROMIUM`` when set (a path or a command name), else
the first of ``/usr/bin/chromium`` (Debian's package; on GitHub's hosted Ubuntu
runners a link to a Chromium build), ``/usr/bin/chromium-browser``,
``google-chrome`` (preinstalled on the hosted runners), ``google-chrome-stable``,
``chromium`` on the PATH. On Ubuntu desktops ``chromium-browser`` is a snap that
cannot read files under /tmp: set ``PE_BOOK_CHROMIUM`` to another build there.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

ENV_VAR = "PE_BOOK_CHROMIUM"
CANDIDATES = (
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    "google-chrome",
    "google-chrome-stable",
    "chromium",
)
INSTALL_HINT = (
    "install Debian's chromium (apt-get install chromium; .ci/run does this as root), "
    f"or point {ENV_VAR} at a Chromium or Chrome binary"
)
# Quiet, offline, headless: no first-run page, no component updates, no sync, no
# background requests to Google hosts, and no name resolution for anything but
# this machine (a page that asks for a remote URL is still seen asking).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")


def find_chromium() -> str | None:
    """The browser to drive: ``$PE_BOOK_CHROMIUM`` or the first default found, else None."""
    wanted = os.environ.get(ENV_VAR)
    if wanted:
        return shutil.which(wanted) or (wanted if os.access(wanted, os.X_OK) else None)
    for candidate in CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


def require_for_tests() -> str:
    """The browser for a pytest test; skip loudly without one, or fail under CI=true.

    Skipping is for a developer's machine without apt or Chromium: the skip reason
    and a warning say so. In CI (``CI`` set, as GitHub Actions and ``.ci/run`` do) a
    missing browser means the run would not check the book in a browser at all,
    so it is a failure.
    """
    import warnings

    import pytest

    found = find_chromium()
    if found:
        return found
    wanted = os.environ.get(ENV_VAR)
    what = f"{ENV_VAR}={wanted} is not an executable" if wanted else "no Chromium or Chrome found"
    message = f"{what} (looked for {', '.join(CANDIDATES)}): {INSTALL_HINT}"
    if os.environ.get("CI", "").lower() not in ("", "0", "false"):
        pytest.fail(f"CI=true but {message}", pytrace=False)
    warnings.warn(f"BROWSER TESTS SKIPPED: {message}", stacklevel=2)
    pytest.skip(f"BROWSER TESTS SKIPPED: {message}")


def is_local(url: str, allowed_prefixes: tuple[str, ...] = ()) -> bool:
    """Whether a page may load ``url`` without the network (file://, data:, our own server)."""
    return url.startswith(LOCAL_SCHEMES) or url.startswith(allowed_prefixes)


@dataclass
class PageVisit:
    """What one page did while it loaded: its requests, errors and a JavaScript result."""

    url: str
    requests: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    _urls: dict[str, str] = field(default_factory=dict, repr=False)
    console_errors: list[str] = field(default_factory=list)
    result: Any = None

    def remote_requests(self, allowed_prefixes: tuple[str, ...] = ()) -> list[str]:
        """Requests that would have left this machine."""
        return [url for url in self.requests if not is_local(url, allowed_prefixes)]


class Chromium:
    """One headless Chromium process and its DevTools websocket (a context manager).

    >>> with Chromium() as browser:                                # doctest: +SKIP
    ...     visit = browser.visit(Path("page.html").as_uri(), "document.title")
    """

    def __init__(
        self,
        executable: str | None = None,
        *,
        width: int = 1280,
        height: int = 2400,
        timeout: float = 60.0,
    ) -> None:
        found = executable or find_chromium()
        if not found:
            raise FileNotFoundError(f"no Chromium found: {INSTALL_HINT}")
        self.executable = found
        self.width, self.height, self.timeout = width, height, timeout
        self._profile: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._socket: Any = None
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    # -- process and connection -------------------------------------------------

    def __enter__(self) -> Chromium:
        from websocket import create_connection

        self._profile = tempfile.TemporaryDirectory(prefix="pe_book_chromium_")
        profile = Path(self._profile.name)
        log = profile / "chromium-stderr.log"  # a file, not a pipe nobody drains
        with log.open("wb") as stderr:
            self._process = subprocess.Popen(
                [
                    self.executable,
                    *FLAGS,
                    f"--user-data-dir={profile}",
                    f"--window-size={self.width},{self.height}",
                    "--remote-debugging-address=127.0.0.1",
                    "--remote-debugging-port=0",  # any free port; written to DevToolsActivePort
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + self.timeout
        while not (port_file.is_file() and len(port_file.read_text().split()) >= 2):
            if self._process.poll() is not None:
                output = log.read_text(errors="replace")
                self._cleanup()
                raise RuntimeError(
                    f"{self.executable} exited with code {self._process.returncode} before "
                    f"opening its DevTools port:\n{output[-2000:]}"
                )
            if time.monotonic() > deadline:
                self._cleanup()
                raise TimeoutError(f"{self.executable} did not open its DevTools port in time")
            time.sleep(0.05)
        port, path = port_file.read_text().split()[:2]
        # Chrome refuses websocket handshakes that carry an Origin it does not allow.
        self._socket = create_connection(
            f"ws://127.0.0.1:{port}{path}", timeout=self.timeout, suppress_origin=True
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._cleanup()

    def _cleanup(self) -> None:
        """Close the browser (politely, then by signal), and remove its profile."""
        closed = False
        if self._socket is not None:
            try:
                self.send("Browser.close", timeout=10)
                closed = True
            except Exception:  # the browser may already be gone, or hang
                pass
            self._socket.close()
            self._socket = None
        if self._process is not None:
            if not closed and self._process.poll() is None:
                self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        if self._profile is not None:
            self._profile.cleanup()
            self._profile = None

    # -- protocol ---------------------------------------------------------------

    def send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Call one DevTools method and return its result (events seen meanwhile are kept)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._socket.send(json.dumps(message))
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._receive(deadline, f"the reply to {method}")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method} failed: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self._events.append(reply)

    def _receive(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        from websocket import WebSocketTimeoutException

        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"Chromium: timed out waiting for {waiting_for}")
        self._socket.settimeout(remaining)
        try:
            return json.loads(self._socket.recv())
        except WebSocketTimeoutException:
            raise TimeoutError(f"Chromium: timed out waiting for {waiting_for}") from None

    def _events_until(self, method: str, session: str, deadline: float) -> Iterator[dict[str, Any]]:
        """Every event of ``session`` up to and including the first ``method`` event."""
        while True:
            while self._events:
                event = self._events.pop(0)
                if event.get("sessionId") == session:
                    yield event
                    if event["method"] == method:
                        return
            reply = self._receive(deadline, method)
            if "method" in reply:
                self._events.append(reply)

    # -- pages ------------------------------------------------------------------

    def visit(
        self,
        url: str,
        expression: str = "null",
        *,
        screenshot: Path | None = None,
        viewport: tuple[int, int] | None = None,
    ) -> PageVisit:
        """Open ``url`` in a fresh tab, wait for its load event, then evaluate ``expression``.

        ``expression`` may return a promise (it is awaited) and should return a
        JSON-serialisable value. Everything the page requested, every request that
        failed and every console error or uncaught exception up to the end of the
        evaluation are recorded. With ``screenshot`` the viewport is saved as a PNG.
        ``viewport`` (width, height) sets the page's exact size in CSS pixels (the
        window size leaves less to a headless page: 1280x720 gives a 1280x633 page).
        """
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        visit = PageVisit(url)
        try:
            for domain in ("Page", "Runtime", "Network", "Log"):
                self.send(f"{domain}.enable", session=session)
            if viewport is not None:
                size = {"width": viewport[0], "height": viewport[1]}
                self.send(
                    "Emulation.setDeviceMetricsOverride",
                    {**size, "deviceScaleFactor": 1, "mobile": False},
                    session=session,
                )
            self.send("Page.navigate", {"url": url}, session=session)
            deadline = time.monotonic() + self.timeout
            for event in self._events_until("Page.loadEventFired", session, deadline):
                self._record(event, visit)
            visit.result = self._evaluate(expression, session)
            if screenshot is not None:
                shot = self.send("Page.captureScreenshot", {"format": "png"}, session=session)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
            # Events that arrived while evaluating (late requests, errors).
            self.send("Runtime.evaluate", {"expression": "0"}, session=session)
            for event in [e for e in self._events if e.get("sessionId") == session]:
                self._record(event, visit)
        finally:
            self._events = [e for e in self._events if e.get("sessionId") != session]
            self.send("Target.closeTarget", {"targetId": target})
        return visit

    def _evaluate(self, expression: str, session: str) -> Any:
        reply = self.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            session=session,
        )
        if "exceptionDetails" in reply:
            details = reply["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise RuntimeError(f"evaluating in the page failed: {text}")
        return reply["result"].get("value")

    @staticmethod
    def _record(event: dict[str, Any], visit: PageVisit) -> None:
        method, params = event["method"], event.get("params", {})
        if method == "Network.requestWillBeSent":
            visit.requests.append(params["request"]["url"])
            visit._urls[params["requestId"]] = params["request"]["url"]
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            url = visit._urls.get(params["requestId"], "?")
            visit.failed.append(f"{params.get('type', '?')} {url}: {params['errorText']}")
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text", "")
            visit.console_errors.append(f"uncaught exception: {text}")
        elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
            args = [str(a.get("value", a.get("description", ""))) for a in params["args"]]
            visit.console_errors.append("console.error: " + " ".join(args))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            entry = params["entry"]
            visit.console_errors.append(
                f"{entry['source']}: {entry['text']} {entry.get('url', '')}"
            )


def main() -> int:
    """Print the browser the checks would use and its version; 1 when there is none."""
    found = find_chromium()
    if not found:
        print(f"no Chromium or Chrome found: {INSTALL_HINT}", file=sys.stderr)
        return 1
    version = subprocess.run(
        [found, "--version"], capture_output=True, text=True, timeout=120, check=False
    )
    print(f"{found}: {version.stdout.strip() or version.stderr.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
