"""Offline slides: tools/slides.py export, then the page in headless Chromium (if installed)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


@pytest.fixture(scope="module")
def slides(tmp_path_factory):
    if shutil.which("npm") is None:
        pytest.skip("exporting slides fetches reveal.js with npm")
    out = tmp_path_factory.mktemp("slides")
    chapter = ROOT / "notebooks" / "11_review.ipynb"
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
    return out / "11_review.slides.html"


def test_slides_load_nothing_from_the_network(slides):
    html = slides.read_text(encoding="utf-8")
    assets = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', html)
    assert assets, "no scripts or stylesheets found"
    remote = [a for a in assets if re.match(r"(https?:)?//", a)]
    assert not remote, remote
    for asset in assets:
        assert (slides.parent / asset).is_file(), asset


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium")
def test_slides_render_offline_in_chromium_with_math_typeset(slides):
    done = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=8000",
            "--dump-dom",
            slides.as_uri() + "#/1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    dom = done.stdout
    assert re.search(r'class="reveal [^"]*\bready\b', dom), "reveal.js did not start"
    assert "mjx-container" in dom, "MathJax did not typeset the slides"
