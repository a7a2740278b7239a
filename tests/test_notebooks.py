"""Static checks of the chapters: shape, hygiene, stored outputs (nbval re-runs them)."""

import base64
import configparser
import json
import re
import struct
from pathlib import Path

import pytest
import yaml

from pe_book.lecture import LECTURE_WORDS, prose_words

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))  # the chapters
#: Every executed page of the book: the chapters, the appendix notebooks (the study in
#: full) and the instructor pages (the guide, the written problems); the rules about a
#: chapter's shape, exercises and length apply to chapters only.
PAGES = NOTEBOOKS + sorted((ROOT / "notebooks").glob("appendix_*.ipynb"))
PAGES += sorted((ROOT / "notebooks").glob("instructor_*.ipynb"))
MACHINE_PATH = re.compile(r"/root/|/tmp/|/home/|/Users/|site-packages/|/work/")
CHAPTER_SECTIONS = ["## Claims checked", "## Exercises", "## Summary", "## References"]
# The rules below are the book's; each failure names its rule, its limit, this file, and
# the command that fixes it (always through the venv: `make ...`).
MAX_CELL_LINES = 20  # a code cell is read in one glance (STYLE.md: about 15 lines)
MAX_NOTEBOOK_KB = 260  # figures as palette PNGs at most 720 px wide, no widget state
VALID_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # nbformat 4.5


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def text(cell: dict) -> str:
    return "".join(cell["source"])


def test_every_chapter_is_in_the_table_of_contents():
    toc = yaml.safe_load((ROOT / "notebooks" / "_toc.yml").read_text())
    listed = {toc["root"]} | {c["file"] for part in toc["parts"] for c in part["chapters"]}
    # the appendices written from the package (api.md, api_positions.md) are pages, not chapters
    listed -= {stem for stem in listed if (ROOT / "notebooks" / f"{stem}.md").is_file()}
    pages = {p.stem for p in PAGES}
    assert listed == pages, (
        "every chapter and appendix notebook must be listed in notebooks/_toc.yml (the book's"
        f" table of contents), and nothing else: listed only {sorted(listed - pages)},"
        f" missing {sorted(pages - listed)}"
    )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_cell_ids_are_unique_and_well_formed(path):
    """A merge that duplicates an id corrupts silently (nbformat only warns and renames)."""
    ids = [cell.get("id") for cell in load(path)["cells"]]
    bad = [i for i in ids if not isinstance(i, str) or not VALID_ID.match(i)]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not bad and not duplicates, (
        f"{path.name}: cell ids must be unique and match {VALID_ID.pattern} (nbformat 4.5);"
        f" malformed {bad}, duplicated {duplicates}. `make execute NB=notebooks/{path.name}`"
        " gives the later duplicate a new id (and keeps every other id)."
    )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_notebook_size_is_bounded(path):
    size = path.stat().st_size / 1024
    assert size <= MAX_NOTEBOOK_KB, (
        f"{path.name} is {size:.0f} KB; the rule (MAX_NOTEBOOK_KB in tests/test_notebooks.py)"
        f" is {MAX_NOTEBOOK_KB} KB. `make execute NB=notebooks/{path.name}` stores figures as"
        " small palette PNGs and no widget state; otherwise draw fewer or smaller figures."
    )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_no_widget_state_is_stored(path):
    nb = load(path)
    views = [
        text(cell)[:60]
        for cell in nb["cells"]
        for out in cell.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in out.get("data", {})
    ]
    assert "widgets" not in nb["metadata"] and not views, (
        f"{path.name} stores widget state (it churns on every run); the static figure beside"
        f" each slider stands in for it. Fix: `make execute NB=notebooks/{path.name}`."
    )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_notebook_was_run_top_to_bottom_without_errors(path):
    cells = [c for c in load(path)["cells"] if c["cell_type"] == "code" and text(c).strip()]
    counts = [c["execution_count"] for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: execution counts {counts} are not 1, 2, 3, ...: the stored outputs"
        " must come from one run, top to bottom, in a fresh kernel."
        f" Fix: `make execute NB=notebooks/{path.name}`"
    )
    for cell in cells:
        for out in cell["outputs"]:
            where = f"{path.name}, cell id {cell.get('id')}"
            assert out["output_type"] != "error", (
                f"{where} stored an error: a chapter must run without one. {text(cell)[:120]!r}"
            )
            assert out.get("name") != "stderr", (
                f"{where} printed to stderr, which nbval compares and a reader takes for"
                " an error (a warning, a progress bar): silence it at its source."
                f" {text(cell)[:120]!r}"
            )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_no_machine_paths_in_sources_or_outputs(path):
    blob = path.read_text(encoding="utf-8")
    found = MACHINE_PATH.search(blob)
    assert not found, (
        f"{path.name} holds a path of the machine that ran it ({found.group(0) if found else ''}):"
        " print paths relative to the book, or let notebooks/nbval_sanitize.cfg mask them"
    )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_every_figure_cell_stored_its_figure(path):
    """A cell that draws must have stored a PNG (a non-inline backend would silently drop it)."""
    for cell in load(path)["cells"]:
        draws = "plt.show()" in text(cell) and "widgets.interact" not in text(cell)
        if cell["cell_type"] == "code" and draws:  # a slider's figure lives in the widget
            kinds = [k for out in cell["outputs"] for k in out.get("data", {})]
            assert "image/png" in kinds, (
                f"{path.name}, cell id {cell.get('id')}: calls plt.show() but stored no PNG (the"
                " inline backend must be active; `make execute NB=...` stores it)"
            )


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_figures_are_small_pngs(path):
    for cell in load(path)["cells"]:
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                raw = base64.b64decode(png)
                width, height = struct.unpack(">II", raw[16:24])
                assert width <= 1000 and height <= 800 and len(raw) < 150_000, (
                    f"{path.name}, cell id {cell.get('id')}: a {width}x{height} PNG of"
                    f" {len(raw):,} bytes; the rule (tests/test_notebooks.py) is at most"
                    " 1000x800 and 150,000 bytes: `make execute` stores figures at most 720 px"
                    " wide as palette PNGs; else draw a smaller figure (figsize, dpi <= 100)"
                )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_chapter_shape(path):
    cells = load(path)["cells"]
    assert cells[0]["cell_type"] == "markdown" and text(cells[0]).startswith("# "), (
        f"{path.name}: a chapter opens with a Markdown cell holding its '# ' title"
        " (BOOK.md, chapter shape)"
    )
    if path.stem == "00_preface":
        return
    markdown = "\n".join(text(c) for c in cells if c["cell_type"] == "markdown")
    assert "**What you will learn**" in markdown and "**Prerequisites**" in markdown, (
        f"{path.name}: a chapter states **What you will learn** and **Prerequisites**"
        " (BOOK.md, chapter shape)"
    )
    positions = [markdown.find(section) for section in CHAPTER_SECTIONS]
    assert -1 not in positions and positions == sorted(positions), (
        "sections missing or out of order"
    )


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.stem != "00_preface"], ids=lambda p: p.stem
)
def test_exercises_have_stub_checker_and_collapsed_solution(path):
    cells = load(path)["cells"]
    stubs = [i for i, c in enumerate(cells) if "raise NotImplementedError" in text(c)]
    assert len(stubs) >= 3, (
        f"{path.name}: {len(stubs)} exercise stubs; the rule (tests/test_notebooks.py) is at"
        " least three per chapter, each a cell that raises NotImplementedError"
    )
    checker = re.compile(r"exercises\.check(_\w+)?\(")  # a book checker or exercises.check
    rule = (
        "the exercise rule (tests/test_notebooks.py): a stub cell that raises"
        " NotImplementedError and calls a checker (exercises.check_<name>(...), or"
        " exercises.check(name, reader, reference, cases) for a course's own exercise),"
        " then a solution cell tagged hide-input with source_hidden that calls it too"
    )
    for i in stubs:
        where = f"{path.name}, cell {i}: {text(cells[i])[:60]!r}"
        assert checker.search(text(cells[i])), f"{where}: no checker call; {rule}"
        solution = cells[i + 1]
        assert "hide-input" in solution["metadata"].get("tags", []), (
            f"{where}: solution not collapsed in HTML; {rule}"
        )
        assert solution["metadata"].get("jupyter", {}).get("source_hidden"), (
            f"{where}: solution not collapsed in JupyterLab; {rule}"
        )
        assert checker.search(text(solution)), f"{where}: solution not checked; {rule}"


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_code_cells_stay_short(path):
    for cell in load(path)["cells"]:
        lines = len(text(cell).splitlines())
        if cell["cell_type"] == "code" and lines > MAX_CELL_LINES:
            pytest.fail(
                f"{path.name}, cell id {cell.get('id')}: {lines} lines, over the"
                f" {MAX_CELL_LINES}-line rule for code cells (MAX_CELL_LINES in"
                " tests/test_notebooks.py; blank and comment lines count). Split the cell,"
                f" or move a helper into pe_book. Starts: {text(cell)[:80]!r}"
            )


def sanitize(line: str) -> str:
    """Apply notebooks/nbval_sanitize.cfg the way nbval does (regex, replace; in file order)."""
    config = configparser.ConfigParser()
    config.read(ROOT / "notebooks" / "nbval_sanitize.cfg", encoding="utf-8")
    for section in config.sections():
        line = re.sub(config[section]["regex"], config[section]["replace"], line)
    return line


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("<Foo at 0x7f3a2b1c4d90>", "<Foo at 0xADDRESS>"),
        ("/home/ada/book/.venv/lib/python3.11/site-packages/x.py", "PATH"),
        ("the step took 12.5 ms", "the step took TIME"),
        ("ratio = 1.25, 12 tokens", "ratio = 1.25, 12 tokens"),  # numbers are left alone
    ],
)
def test_sanitizer_masks_addresses_paths_and_timings_only(raw, clean):
    assert sanitize(raw) == clean


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.stem)
def test_printed_lines_fit_the_html_page(path):
    """Printed output is read in a fixed-width box about 80 characters wide."""
    for cell in load(path)["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                for line in "".join(out["text"]).splitlines():
                    assert len(line) <= 80, (
                        f"{path.name}, cell id {cell.get('id')}: a printed line of {len(line)}"
                        " characters, over the 80-column rule for printed output (the HTML"
                        " book's output box; tests/test_notebooks.py). Wrap it (textwrap) or"
                        f" print less: {line[:60]!r}"
                    )


def test_every_chapter_carries_slide_metadata_by_the_rule():
    # RISE presents a chapter from these; tools/slides.py holds the rule.
    import subprocess
    import sys

    tool = Path(__file__).parents[1] / "tools" / "slides.py"
    done = subprocess.run(
        [sys.executable, str(tool), "check"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_chapter_fits_one_lecture(path):
    words = prose_words(path)
    assert words <= LECTURE_WORDS, (
        f"{path.name}: {words} words of prose; the rule (LECTURE_WORDS in"
        f" pe_book/lecture.py, from BOOK.md) is at most {LECTURE_WORDS} per chapter."
        " Cut repetition, or move a topic to the chapter that owns it."
    )


@pytest.mark.parametrize(
    "path", [p for p in NOTEBOOKS if p.stem != "00_preface"], ids=lambda p: p.stem
)
def test_a_chapter_closes_with_key_ideas(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    box = re.search(r":::\{admonition\} Key ideas\n:class: important\n((?:- .+\n)+):::", text)
    assert box, (
        f"{path.name}: no Key ideas box; the rule (tests/test_notebooks.py) is a"
        " ':::{admonition} Key ideas' with ':class: important' and 3 to 5 bullets"
        " before the References"
    )
    bullets = box.group(1).count("\n- ") + 1
    assert 3 <= bullets <= 5, f"{path.name}: {bullets} key ideas; the rule is 3 to 5"
    assert box.start() > text.index("## Summary"), f"{path.name}: Key ideas must close the chapter"
