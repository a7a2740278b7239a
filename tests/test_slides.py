"""Offline slides: tools/slides.py export, then the deck in headless Chromium.

The browser is found and driven by tools/browser.py, as for the book's pages
(tests/test_book_in_browser.py): without one the browser tests are skipped with a
warning, except under CI=true, where they fail.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import browser  # tools/browser.py

ROOT = Path(__file__).parents[1]

# Waits for reveal.js to start and for MathJax's first typesetting (20 s at most).
SLIDES_PROBE = r"""
(async () => {
  const started = Date.now();
  const mathjax = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
  while (!(document.querySelector(".reveal.ready") && mathjax())) {
    if (Date.now() - started > 20000) break;
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  if (mathjax()) await MathJax.startup.promise;
  return {
    ready: Boolean(document.querySelector(".reveal.ready")),
    containers: document.querySelectorAll("mjx-container").length,
    texErrors: [...document.querySelectorAll("mjx-merror")]
      .map(e => e.getAttribute("data-mjx-error")),
  };
})()
"""


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    if shutil.which("npm") is None:
        pytest.skip("exporting slides fetches reveal.js with npm")
    out = tmp_path_factory.mktemp("slides")
    chapter = ROOT / "notebooks" / "13_review.ipynb"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "slides.py"),
            "export",
            str(chapter),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return out / "13_review.slides.html"


def test_slides_load_nothing_from_the_network(slides):
    html = slides.read_text(encoding="utf-8")
    assets = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
    assert assets, "no scripts or stylesheets found"
    remote = [a for a in assets if re.match(r"(https?:)?//", a)]
    assert not remote, remote
    for asset in assets:
        assert (slides.parent / asset).is_file(), asset


@pytest.fixture(scope="module")
def slides_in_chromium(slides: Path) -> Iterator[browser.PageVisit]:
    """The exported deck, opened from disk at its second slide in headless Chromium."""
    with browser.Chromium(browser.require_for_tests()) as chrome:
        yield chrome.visit(slides.as_uri() + "#/1", SLIDES_PROBE)


def test_slides_render_offline_in_chromium_with_math_typeset(
    slides_in_chromium: browser.PageVisit,
) -> None:
    seen = slides_in_chromium.result
    assert seen["ready"], "reveal.js did not start (no .reveal.ready after 20 s)"
    assert seen["containers"] > 0, "MathJax did not typeset the slides"
    assert not seen["texErrors"], f"MathJax errors: {seen['texErrors']}"
    local = [url for url in slides_in_chromium.requests if browser.is_local(url)]
    assert any(url.endswith("tex-chtml.js") for url in local), "MathJax not loaded from disk"


def test_slides_request_nothing_from_the_network(
    slides_in_chromium: browser.PageVisit,
) -> None:
    remote = slides_in_chromium.remote_requests()
    assert not remote, f"the slides requested {remote}"
    assert not slides_in_chromium.console_errors, slides_in_chromium.console_errors
