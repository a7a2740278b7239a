"""The lecture decks (slides/NN_*.md, built by tools/decks.py): slides that project.

A deck is built once per test session (all decks, into a temporary folder shared by
pytest-xdist's workers), then every slide of every deck is opened in headless
Chromium at 1280x720 and measured through the DevTools protocol
(tools/decks.py MEASURE). A slide fails when anything on it leaves the 16:9
canvas or the screen, when a code or output block is wider or taller than its
box (a clipped line), when a figure is shown at another size than it was drawn
at, when it has no slide number, more than ``decks.WORDS`` words of prose or no
speaker notes. The sources are held to ``CODE_LINES`` lines of at most
``CODE_COLUMNS`` columns a code cell, ruff, no prompts or test markers, and every
result-like number in a deck's Markdown (slides and notes) must be printed by
the deck's own code or quoted from papers.toml (tests/test_prose_numbers.py's rule).

Without npm (to fetch reveal.js) or a browser the build or browser tests skip with
a warning, except under CI=true, where they fail (tools/browser.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import browser  # tools/browser.py
import decks  # tools/decks.py
from test_prose_numbers import PAPERS, printed, result_numbers

ROOT = Path(__file__).resolve().parents[1]
SOURCES = decks.decks()
#: the limits of issue 27: a slide holds a sentence (decks.WORDS words), a short cell or a figure
CODE_LINES = 15
CODE_COLUMNS = 79  # slides/ruff.toml, as in the chapters: 79 columns of 22 px code, 1,047 px
SLIDES_PER_DECK = range(15, 26)  # a 90-minute lecture, with time for exercises
#: lectures of the plan that have no deck yet, and why
NO_DECK_YET: dict[str, str] = {}  # every lecture has its deck today


def lectures() -> list[str]:
    chapters = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    return [p.stem[:2] for p in chapters if p.stem[:2] != "00"]


def test_every_lecture_of_the_plan_has_a_deck():
    have = {p.stem[:2] for p in SOURCES}
    missing = [n for n in lectures() if n not in have and n not in NO_DECK_YET]
    assert not missing, (
        f"lectures without a deck: {missing}; add slides/NN_<name>.md (tools/decks.py"
        " says how a source is written) or list the lecture in NO_DECK_YET with why"
    )
    strays = sorted(have - set(lectures()))
    assert not strays, f"decks for lectures that do not exist: {strays}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_deck_code_cells_are_short_and_fit_the_slide(source):
    long = []
    for cell in decks.read_deck(source).cells:
        if cell.cell_type != "code" or cell.metadata["slideshow"]["slide_type"] == "skip":
            continue
        lines = cell.source.splitlines()
        shown = "remove-input" not in cell.metadata.get("tags", [])
        if shown and len(lines) > CODE_LINES:
            long.append(f"cell {cell.id}: {len(lines)} lines (at most {CODE_LINES})")
        long += [
            f"cell {cell.id}: a line of {len(line)} columns (at most {CODE_COLUMNS}): {line!r}"
            for line in lines
            if len(line) > CODE_COLUMNS
        ]
    assert not long, f"{source.name}: " + "; ".join(long)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_deck_code_passes_ruff(source):
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.is_file():
        pytest.skip("no ruff beside this Python")
    cells = [c.source for c in decks.read_deck(source).cells if c.cell_type == "code"]
    done = subprocess.run(
        [
            str(ruff),
            "check",
            "--config",
            str(ROOT / "slides" / "ruff.toml"),
            "--stdin-filename",
            f"{source.stem}.py",
            "-",
        ],
        input="\n\n\n".join(cells) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"{source.name}: {done.stdout}{done.stderr}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_deck_sources_hold_no_prompts_or_test_markers(source):
    text = source.read_text(encoding="utf-8")
    found = re.findall(r"NBVAL\w*|In \[\d* ?\]:|Out\[\d+\]:|# noqa", text)
    assert not found, f"{source.name}: {found}"


# -- built decks ---------------------------------------------------------------


def _build_once(root: Path) -> Path:
    """Build every deck into ``root / "decks"`` once, whichever worker asks first."""
    out, record = root / "decks", root / "decks.json"
    with (root / "decks.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not record.is_file():
            try:
                decks.build(SOURCES, out, jobs=2)
                record.write_text(json.dumps({"error": None}))
            except BaseException:  # recorded for the other workers, then raised
                record.write_text(json.dumps({"error": traceback.format_exc()}))
                raise
    error = json.loads(record.read_text())["error"]
    if error:
        pytest.fail(f"building the decks failed (in another worker):\n{error}", pytrace=False)
    return out


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    if shutil.which("npm") is None and not (decks.CACHE / "reveal.js-4.6.1").is_dir():
        message = "building the decks fetches reveal.js with npm (Debian package npm)"
        if os.environ.get("CI", "").lower() not in ("", "0", "false"):
            pytest.fail(f"CI=true but {message}", pytrace=False)
        warnings.warn(f"DECK TESTS SKIPPED: {message}", stacklevel=2)
        pytest.skip(message)
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # one folder for all the workers of this session
    return _build_once(shared)


@pytest.fixture(scope="session")
def notebooks(built) -> dict[str, dict]:
    import nbformat

    return {p.stem: nbformat.read(built / f"{p.stem}.ipynb", as_version=4) for p in SOURCES}


@pytest.fixture(scope="session")
def measured(built) -> dict[str, dict]:
    executable = browser.require_for_tests()
    return decks.measure([built / f"{p.stem}.html" for p in SOURCES], executable)


def _outputs(notebook) -> str:
    texts = []
    for cell in notebook.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            for kind in ("text/plain", "text/markdown", "text/latex"):
                texts.append(out.get("data", {}).get(kind, ""))
    return "\n".join(texts)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_every_number_on_a_deck_is_printed_by_its_code(source, notebooks):
    notebook = notebooks[source.stem]
    haystack = _outputs(notebook) + "\n" + PAPERS
    missing = sorted(
        {
            number
            for cell in notebook.cells
            if cell.cell_type == "markdown"
            for number in result_numbers(re.sub(r"`[^`]*`", "", cell.source))
            if not printed(number, haystack)
        }
    )
    assert not missing, (
        f"{source.name}: numbers in the slides or notes that no cell of the deck prints:"
        f" {missing}. Compute them in a cell (IPython.display.Markdown for a sentence)"
        " or say them in words."
    )


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_decks_print_no_warnings(source, notebooks):
    errors = [
        out["text"]
        for cell in notebooks[source.stem].cells
        for out in cell.get("outputs", [])
        if out.get("name") == "stderr"
    ]
    assert not errors, f"{source.name}: the deck printed to stderr: {errors}"


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.stem)
def test_a_deck_is_one_lecture_long(source, measured):
    count = len(measured[source.stem]["slides"])
    assert count in SLIDES_PER_DECK, (
        f"{source.name}: {count} slides; a 90-minute lecture has"
        f" {SLIDES_PER_DECK.start} to {SLIDES_PER_DECK.stop - 1}"
    )


def test_every_slide_fits_1280x720_with_a_sentence_and_notes(measured):
    found = decks.problems(measured)
    assert not found, f"{len(found)} problems:\n" + "\n".join(found)


def test_decks_are_measured_on_the_16_9_canvas_at_1280x720(measured):
    for deck, seen in measured.items():
        assert seen["ready"], f"{deck}: reveal.js did not start"
        assert (seen["width"], seen["height"]) == (decks.WIDTH, decks.HEIGHT), deck
        assert seen["viewport"] == [decks.WIDTH, decks.HEIGHT], deck


def test_slides_are_numbered(measured):
    for deck, seen in measured.items():
        total = len(seen["slides"])
        numbers = [s["number"].replace(" ", "") for s in seen["slides"]]
        assert numbers == [f"{k}/{total}" for k in range(1, total + 1)], deck


def test_decks_render_offline_with_math_typeset(measured):
    for deck, seen in measured.items():
        visit = seen["visit"]
        assert not visit.remote_requests(), f"{deck} requested {visit.remote_requests()}"
        assert not visit.console_errors, f"{deck}: {visit.console_errors}"
        assert not visit.failed, f"{deck}: {visit.failed}"
        assert not seen["texErrors"], f"{deck}: MathJax errors {seen['texErrors']}"
        assert seen["speakerView"], f"{deck}: reveal.js's notes plugin (speaker view) missing"
    local = [u for seen in measured.values() for u in seen["visit"].requests]
    assert any(u.endswith("mathjax/tex-chtml.js") for u in local), "MathJax not loaded from disk"
    assert sum(seen["mathContainers"] for seen in measured.values()) > 0, "no formula typeset"


def test_built_decks_show_no_prompts_or_markers(built):
    for page in sorted(built.glob("[0-9][0-9]_*.html")):
        text = page.read_text(encoding="utf-8")
        found = re.findall(r"NBVAL\w*|In&nbsp;\[|In \[\d* ?\]:|Out\[\d+\]:|jp-InputPrompt", text)
        assert not found, f"{page.name}: {found}"
        assets = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]+)"', text)
        assert all((built / a).is_file() for a in assets), page.name
