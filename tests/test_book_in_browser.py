"""The built HTML book in a real browser: every chapter page, opened from disk in headless Chromium.

For each chapter of the table of contents the page must show every formula typeset
by MathJax (no raw ``$…$``, ``\\(``, ``\\[`` or ``$$`` left in the text, no MathJax
error, no undefined macro, at least one formula on a chapter whose text has TeX),
every image loaded, no console error or uncaught exception, and no request other
than local files (tools/book.py's ``page_problems`` lists what it checks).

The book is built once per test run from the stored outputs (``tools/book.py build
--no-execute --out <tmp>``, about 15 s, shared by the xdist workers), or taken from
``$PE_BOOK_HTML`` when that names a build (``make browser-check`` does this after
``make html-check``). Which browser: tools/browser.py (``$PE_BOOK_CHROMIUM``). Without
one the tests are skipped with a warning, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import book  # tools/book.py
import browser  # tools/browser.py

ROOT = book.ROOT

CHAPTERS = book.toc_chapters()


@pytest.fixture(scope="module")
def chrome() -> Iterator[browser.Chromium]:
    """One headless Chromium for this module (per xdist worker)."""
    with browser.Chromium(browser.require_for_tests()) as chromium:
        yield chromium


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The HTML book: ``$PE_BOOK_HTML``, or built once for this test run."""
    given = os.environ.get("PE_BOOK_HTML")
    if given:
        html = Path(given).resolve()
        assert (html / "index.html").is_file(), (
            f"PE_BOOK_HTML={given} holds no index.html: build the book first (make html-check)"
        )
        return html
    # With xdist, the workers share the base temp folder's parent: the first builds.
    shared = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        shared = shared.parent
    root = shared / "book"
    with (shared / "book.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / "built"
        if not done.is_file():
            result = subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "tools" / "book.py"),
                    "build",
                    "--no-execute",
                    "--out",
                    str(root),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            assert result.returncode == 0, (
                "building the HTML book failed (run `make html-check` to see why):\n"
                + (result.stdout + result.stderr)[-4000:]
            )
            done.touch()
    return root / "_build" / "html"


@pytest.mark.parametrize("stem", CHAPTERS)
def test_chapter_page_renders_in_chromium(
    chrome: browser.Chromium, built_book: Path, stem: str
) -> None:
    page = built_book / f"{stem}.html"
    assert page.is_file(), f"chapter {stem} has no page {page}: the book build lost it"
    visit = chrome.visit(page.as_uri(), book.PAGE_PROBE)
    problems = book.page_problems(visit, book.has_math(stem))
    assert not problems, (
        f"{page.name} in {chrome.executable}: {len(problems)} problems\n  "
        + "\n  ".join(problems)
        + "\nReproduce with `make browser-check`; a raw or untypeset formula is a TeX"
        " delimiter MyST did not parse (see the chapter's Markdown), an image or request"
        " points at a missing or remote file."
    )
    seen = visit.result
    assert seen["images"] or not book.notebook_title_and_figures(stem)[1], seen


BROKEN_PAGE = """<!doctype html>
<html><head>
<script>window.MathJax = {{"options": {{"processHtmlClass": "math"}}}}</script>
<script defer src="{mathjax}"></script>
</head><body class="tex2jax_ignore mathjax_ignore">
<p>A formula MyST did not parse: $x^2$ stays as text.</p>
<p>Typeset: <span class="math">\\(\\frac{{1}}{{2}}\\)</span></p>
<p>Undefined: <span class="math">\\(\\nosuchmacro\\)</span></p>
<p>Error: <span class="math">\\(\\frac{{1}}\\)</span></p>
<img src="missing.png" alt="missing">
<img src="https://example.invalid/remote.png" alt="remote">
<script>console.error("deliberate console error")</script>
<table><tr><td>{wide}</td></tr></table>
</body></html>
"""


def test_the_page_check_sees_what_it_looks_for(
    chrome: browser.Chromium, built_book: Path, tmp_path: Path
) -> None:
    """The check is not vacuous: a page with each kind of fault fails each way."""
    mathjax = (built_book / book.MATHJAX).as_uri()
    page = tmp_path / "broken.html"
    page.write_text(BROKEN_PAGE.format(mathjax=mathjax, wide="x" * 800), encoding="utf-8")
    visit = chrome.visit(page.as_uri(), book.PAGE_PROBE)
    problems = "\n".join(book.page_problems(visit, expect_math=True))
    for expected in (
        "raw TeX left in the text: 'A formula MyST did not parse: $x^2$",
        "undefined TeX macro shown: '\\\\nosuchmacro'",
        "MathJax error:",
        "image did not load: missing.png",
        "image did not load: https://example.invalid/remote.png",
        "console: console.error: deliberate console error",
        "network: requested https://example.invalid/remote.png",
        "table wider than the text column:",
    ):
        assert expected in problems, f"the check missed {expected!r}; it found:\n{problems}"
    assert visit.result["containers"] >= 3, visit.result
