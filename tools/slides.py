"""Slide metadata for the chapters, so each presents as a deck with RISE in JupyterLab.

    python tools/slides.py annotate [NOTEBOOK ...]   write the metadata (default: every chapter)
    python tools/slides.py check [NOTEBOOK ...]      exit 1 if a chapter's metadata differs
    python tools/slides.py export [NOTEBOOK ...] [--out DIR]   offline HTML slides (build/slides/)

export writes <chapter>.slides.html next to a copy of reveal.js (from npm, fetched once
with `npm pack`, the only step that needs the npm registry) and of the MathJax 3 that
the book already serves (from the sphinx-mathjax-offline package): the slides open
from file:// with no network.

The rule (one place, so a lecturer can predict the deck):
- the title and every "## " section start a new slide;
- an exercise ("**Exercise ...") starts a sub-slide, and so does any other text
  cell that follows a code cell (text, then its code and output, form one step);
- collapsed solutions are skipped (reveal them in the notebook, not on a slide);
- everything else continues the current slide.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SLIDES = ROOT / "build" / "slides"
TEMPLATES = Path(__file__).resolve().parent / "slides_template"
REVEAL = "reveal.js@4.6.1"  # the layout nbconvert's reveal template expects (dist/, plugin/)


def _fetch_reveal(target: Path) -> None:
    """Unpack reveal.js from the npm registry into ``target`` (once)."""
    if (target / "dist" / "reveal.js").is_file():
        return
    if shutil.which("npm") is None:
        raise SystemExit("export needs npm (Debian package npm) to fetch " + REVEAL)
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            ["npm", "pack", REVEAL, "--silent"], cwd=scratch, check=True, capture_output=True
        )
        (tarball,) = Path(scratch).glob("reveal.js-*.tgz")
        with tarfile.open(tarball) as archive:
            archive.extractall(scratch, filter="data")
        shutil.copytree(Path(scratch) / "package", target, dirs_exist_ok=True)


def _copy_mathjax(target: Path) -> None:
    source = (
        Path(sysconfig.get_paths()["purelib"]) / "sphinx-mathjax-offline" / "static" / "mathjax"
    )
    if not (target / "tex-chtml.js").is_file():
        shutil.copytree(source, target, dirs_exist_ok=True)


def export(paths: list[Path], out: Path = SLIDES) -> list[Path]:
    """Offline reveal.js slides for each notebook; returns the HTML files written."""
    from nbconvert import SlidesExporter

    out.mkdir(parents=True, exist_ok=True)
    _fetch_reveal(out / "reveal.js")
    _copy_mathjax(out / "mathjax")
    exporter = SlidesExporter(
        template_name="book_reveal",
        extra_template_basedirs=[str(TEMPLATES)],
        reveal_url_prefix="reveal.js",
        # "white" loads its font from reveal.js's own folder; nbconvert's default
        # "simple" @imports two Google Fonts stylesheets, which offline slides cannot
        reveal_theme="white",
    )
    written = []
    for path in paths:
        body, _ = exporter.from_filename(
            str(path), resources={"book_mathjax_url": "mathjax/tex-chtml.js"}
        )
        target = out / f"{path.stem}.slides.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
        print(target)
    return written


def slide_type(cell: dict, previous: dict | None) -> str:
    """The RISE slide type of ``cell`` given the cell before it."""
    source = "".join(cell["source"])
    if cell["cell_type"] == "markdown":
        if source.startswith(("# ", "## ")):
            return "slide"
        if source.startswith("**Exercise") or (previous and previous["cell_type"] == "code"):
            return "subslide"
        return "-"
    if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
        return "skip"
    return "-"


def expected(notebook: dict) -> list[str]:
    cells = notebook["cells"]
    return [slide_type(c, cells[i - 1] if i else None) for i, c in enumerate(cells)]


def chapters(args: list[str]) -> list[Path]:
    return [Path(a) for a in args] or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("annotate", "check", "export"):
        print(__doc__)
        return 2
    args = argv[1:]
    out = SLIDES
    if "--out" in args:
        at = args.index("--out")
        out, args = Path(args[at + 1]), args[:at] + args[at + 2 :]
    command, paths = argv[0], chapters(args)
    if command == "export":
        export(paths, out)
        return 0
    stale = []
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        types = expected(notebook)
        found = [
            c.get("metadata", {}).get("slideshow", {}).get("slide_type") for c in notebook.cells
        ]
        if found == types:
            continue
        if command == "check":
            stale.append(path.name)
            continue
        for cell, kind in zip(notebook.cells, types, strict=True):
            cell.metadata["slideshow"] = {"slide_type": kind}
        nbformat.write(notebook, path)
        print(f"{path.name}: slide metadata written")
    if stale:
        print(
            "slide metadata out of date (rule: tools/slides.py, slide_type); fix with"
            " `make annotate` (= .venv/bin/python tools/slides.py annotate):",
            *stale,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
